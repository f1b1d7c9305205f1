"""The UI's block model, fed with the events of real scripted runs (Runtime + FunctionModel)."""

from __future__ import annotations

import asyncio
import contextlib
import unicodedata
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from subagents.cli.ui.blocks import (
    COLLAPSED_MESSAGES,
    EXPANDED_MESSAGES,
    AgentBlock,
    BlockTree,
    block_status,
    format_duration,
    format_tokens,
)
from subagents.config import load_config
from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.testing import FunctionModel, text_response, tool_call_response, tool_calls_response

LS_CALLS = 12
PROMPT = "Survey the folders and report."


def agent(name: str) -> AgentDefinition:
    return AgentDefinition(
        name=name, description=f"The {name} agent.", system_prompt=f"I am {name}."
    )


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def task(subagent_type: str, prompt: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    arguments = {"description": f"{subagent_type} job", "prompt": prompt}
    arguments["subagent_type"] = subagent_type
    arguments.update(extra)
    return ("Task", arguments)


def main_model(request: ModelRequest) -> ModelResponse:
    if not results(request):
        return tool_calls_response(
            [
                task("lister", "List every folder, one by one."),
                task("broken", "Try your best."),
                task("watcher", "Watch in the background.", run_in_background=True),
            ],
            text="Delegating to three agents.",
        )
    return text_response("All agents reported.")


def lister_model(request: ModelRequest) -> ModelResponse:
    done = len(results(request))
    if done < LS_CALLS:
        return tool_call_response("LS", {"path": f"d{done:02d}"})
    return text_response(f"Listed {done} folders.")


def broken_model(request: ModelRequest) -> ModelResponse:
    raise RuntimeError("provider exploded")


def workspace(tmp_path: Path) -> Path:
    for index in range(LS_CALLS):
        (tmp_path / f"d{index:02d}").mkdir()
        (tmp_path / f"d{index:02d}" / "file.txt").write_text("x")
    return tmp_path


def scripted_runtime(tmp_path: Path, *handlers: ev.EventHandler, stream: bool = True) -> Runtime:
    return Runtime(
        cwd=workspace(tmp_path),
        agents=[agent("lister"), agent("broken"), agent("watcher")],
        model=FunctionModel(main_model, name="scripted:main"),
        agent_models={
            "lister": FunctionModel(lister_model, name="scripted:lister"),
            "broken": FunctionModel(broken_model, name="scripted:broken"),
            "watcher": FunctionModel(lambda r: "Nothing happened.", name="scripted:watcher"),
        },
        permission_mode="bypassPermissions",
        events=EventBus(list(handlers)),
        stream=stream,
    )


async def recorded_run(tmp_path: Path) -> tuple[BlockTree, list[ev.Event], Runtime]:
    events: list[ev.Event] = []
    tree = BlockTree(prompt=PROMPT)
    runtime = scripted_runtime(tmp_path, events.append, tree)
    result = await runtime.run(PROMPT)
    assert result.status == "completed"
    tree.finish_run(result)
    return tree, events, runtime


def by_type(tree: BlockTree) -> dict[str, AgentBlock]:
    return {block.agent_type: block for block in tree.ordered()}


async def test_a_run_becomes_a_tree_of_blocks_in_start_order(tmp_path: Path) -> None:
    tree, events, _ = await recorded_run(tmp_path)

    main = tree.main
    assert main is not None and main.agent_type == "main" and main.parent_id is None
    assert tree.roots == [main.agent_id]
    started = [e.agent_id for e in events if isinstance(e, ev.SubagentStarted)]
    assert main.children == started
    assert tree.ordered()[0] is main
    assert {tree[child].agent_type for child in main.children} == {"lister", "broken", "watcher"}
    assert all(tree.depth(tree[child]) == 1 for child in main.children)
    assert tree.errors == []

    blocks = by_type(tree)
    assert blocks["main"].status == "completed"
    assert blocks["lister"].status == "completed"
    assert blocks["watcher"].status == "completed" and blocks["watcher"].background
    assert blocks["broken"].status == "error"
    assert "provider exploded" in (blocks["broken"].error or "")
    assert blocks["lister"].model == "scripted:lister"
    assert blocks["lister"].description == "lister job"
    assert blocks["main"].output == "All agents reported."


async def test_message_windows_show_the_last_two_or_ten_messages(tmp_path: Path) -> None:
    tree, _, _ = await recorded_run(tmp_path)
    lister = by_type(tree)["lister"]

    # the Task prompt, 12 LS calls, the final answer
    assert lister.message_count == 1 + LS_CALLS + 1
    assert all(m.kind != "user" for m in lister.messages)  # the prompt scrolled out
    collapsed = lister.window(expanded=False)
    assert len(collapsed) == COLLAPSED_MESSAGES
    assert collapsed[0].kind == "tool" and '"d11"' in collapsed[0].text
    assert collapsed[1].kind == "assistant" and collapsed[1].text == "Listed 12 folders."
    expanded = lister.window(expanded=True)
    assert len(expanded) == EXPANDED_MESSAGES
    assert [m.text for m in expanded[:-1]] == [
        f'LS {{"path": "d{i:02d}"}}' for i in range(LS_CALLS - 9, LS_CALLS)
    ]
    assert all(m.outcome == "ok" and "file.txt" in m.result for m in expanded[:-1])

    assert lister.window() == collapsed  # blocks start collapsed
    tree.toggle(lister.agent_id)
    assert lister.window() == expanded


async def test_prompts_and_tool_outcomes_are_kept_per_block(tmp_path: Path) -> None:
    tree, _, runtime = await recorded_run(tmp_path)
    blocks = by_type(tree)
    main, broken, watcher = blocks["main"], blocks["broken"], blocks["watcher"]

    assert [m.kind for m in main.messages][:2] == ["user", "assistant"]
    assert main.messages[0].text == PROMPT
    assert main.messages[1].text == "Delegating to three agents."
    tasks = [m for m in main.messages if m.tool_name == "Task"]
    assert len(tasks) == 3 and all(m.outcome is not None for m in tasks)
    assert [(m.kind, m.text) for m in broken.messages] == [("user", "Try your best.")]
    assert watcher.messages[0].text == "Watch in the background."
    assert watcher.messages[-1].text == "Nothing happened."

    assert runtime.last_delegation is not None
    spawns = {s.subagent_type: s for s in runtime.last_delegation.spawn_results}
    lister = blocks["lister"]
    assert lister.tool_calls == LS_CALLS == spawns["lister"].tool_use_count
    assert lister.tokens == spawns["lister"].input_tokens + spawns["lister"].output_tokens > 0
    assert main.tool_calls == 3
    assert main.turns >= 2
    assert all(b.duration_ms is not None and b.duration_ms >= 0 for b in tree.ordered())
    assert tree.counts() == {"completed": 3, "error": 1}


async def test_streamed_text_shows_while_a_turn_runs_and_clears_at_the_response(
    tmp_path: Path,
) -> None:
    _, events, _ = await recorded_run(tmp_path)
    responded = next(
        i for i, e in enumerate(events) if isinstance(e, ev.ModelResponded) and e.response.text
    )
    response = events[responded]
    assert isinstance(response, ev.ModelResponded)

    replay = BlockTree()
    for event in events[:responded]:
        replay.handle(event)
    block = replay[response.agent_id]
    assert block.streaming == response.response.text
    assert block.status == "active"
    replay.handle(response)
    assert block.streaming == ""
    assert block.messages[-1].text == response.response.text


async def test_late_subscriber_builds_blocks_for_sessions_it_never_saw_start(
    tmp_path: Path,
) -> None:
    tree, events, _ = await recorded_run(tmp_path)
    lister_id = by_type(tree)["lister"].agent_id
    main_id = by_type(tree)["main"].agent_id
    middle = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, ev.ToolCallFinished) and e.agent_id == lister_id and "d05" in str(e.call)
    )

    late = BlockTree()
    for event in events[middle:]:
        late.handle(event)

    assert late.errors == []
    lister = late[lister_id]
    assert lister.status == "completed" and lister.agent_type == "lister"
    assert lister.parent_id == main_id  # learnt from SubagentFinished
    assert late[main_id].status == "completed"
    assert late.roots == [main_id]
    assert len(late.ordered()) == len(late)


async def test_a_cancelled_run_leaves_every_open_block_cancelled(tmp_path: Path) -> None:
    never = asyncio.Event()

    async def stuck(request: ModelRequest) -> ModelResponse:
        await never.wait()
        return text_response("unreachable")

    def main(request: ModelRequest) -> ModelResponse:
        return tool_calls_response([task("stuck", "wait"), task("stuck", "wait too")])

    tree = BlockTree(prompt="go")
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("stuck")],
        model=FunctionModel(main, name="scripted:main"),
        agent_models={"stuck": FunctionModel(stuck, name="scripted:stuck")},
        permission_mode="bypassPermissions",
        events=EventBus([tree]),
    )
    running = asyncio.create_task(runtime.run("go"))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if sum(b.status == "active" for b in tree.ordered()) == 3:
            break
    assert [b.status for b in tree.ordered()] == ["active", "active", "active"]
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    tree.finish_run(None, cancelled=True)
    assert [b.status for b in tree.ordered()] == ["cancelled"] * 3
    assert all(not b.streaming for b in tree.ordered())


async def test_more_than_a_hundred_concurrent_subagents(tmp_path: Path) -> None:
    count = 120

    def main(request: ModelRequest) -> ModelResponse:
        if results(request):
            return text_response("all done")
        return tool_calls_response([task("worker", f"job {i}") for i in range(count)])

    (tmp_path / ".subagents").mkdir()
    (tmp_path / ".subagents" / "config.toml").write_text("[subagents]\nmax_concurrent = 200\n")
    tree = BlockTree(prompt="fan out")
    runtime = Runtime(
        cwd=tmp_path,
        config=load_config(tmp_path),
        agents=[agent("worker")],
        model=FunctionModel(main, name="scripted:main"),
        agent_models={"worker": FunctionModel(lambda r: "ok", name="scripted:worker")},
        permission_mode="bypassPermissions",
        events=EventBus([tree]),
        stream=True,
    )
    result = await runtime.run("fan out")
    assert result.status == "completed"
    main_block = tree.main
    assert main_block is not None and len(main_block.children) == count
    assert len(tree.ordered()) == count + 1
    prompts = sorted(tree[c].messages[0].text for c in main_block.children)
    assert prompts == sorted(f"job {i}" for i in range(count))
    assert tree.counts() == {"completed": count + 1}
    assert tree.errors == []


def test_a_failing_update_is_kept_and_never_raised_into_the_bus() -> None:
    tree = BlockTree()
    bus = EventBus([tree])
    call = ToolCall("c1", "Read", {"file_path": "x"})
    bus.emit(ev.SessionStarted("s1", "main", None, "m:1", 0))
    bus.emit(ev.ToolCallStarted("s1", call))
    bus.emit(ev.ToolCallFinished("s1", call, outcome=None))  # type: ignore[arg-type]
    bus.emit(ev.SessionStarted("s2", "child", "s1", "m:1", 1))
    bus.emit(ev.SessionStarted("s3", "odd", "s3", "m:1", 1))  # its own parent: ignored
    bus.emit(ev.SubagentStarted("s1", "s2", "child", "loop", "m:1", False))  # a cycle
    bus.emit(ev.TextDelta("s1", "still alive"))

    assert bus.handler_errors == []
    assert len(tree.errors) == 2
    assert tree.errors[0].startswith("ToolCallFinished: AttributeError")
    assert tree.errors[1].startswith("SubagentStarted: ValueError")
    assert tree["s1"].streaming == "still alive"
    assert tree.roots == ["s1", "s3"] and tree["s1"].children == ["s2"]
    assert len(tree.ordered()) == len(tree) == 3


def test_a_long_stream_keeps_its_newest_text() -> None:
    tree = BlockTree()
    for index in range(1000):
        tree.handle(ev.TextDelta("s1", f"{index:04d} "))
    streamed = tree["s1"].streaming
    assert streamed.endswith("0998 0999 ") and len(streamed) == 4000
    assert tree["s1"].status == "active" and tree.roots == ["s1"]


def test_formatting_helpers() -> None:
    assert format_tokens(999) == "999 tok"
    assert format_tokens(12_345) == "12.3k tok"
    assert format_tokens(2_500_000) == "2.5M tok"
    assert format_duration(1234) == "1.2s"
    assert format_duration(125_000) == "2m05s"
    assert format_duration(-5) == "0.0s"
    assert [block_status(s) for s in ("completed", "failed", "max_turns", "cancelled")] == [
        "completed",
        "error",
        "error",
        "cancelled",
    ]
    assert block_status("awaiting_human") == "paused"


@pytest.mark.slow
async def test_any_subset_of_a_runs_events_in_any_order_keeps_the_tree_whole(
    tmp_path: Path,
) -> None:
    _, events, _ = await recorded_run(tmp_path)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.permutations(range(len(events))), st.integers(0, len(events)))
    def check(order: list[int], keep: int) -> None:
        tree = BlockTree()
        for index in order[:keep]:
            tree.handle(events[index])
        assert tree.errors == []
        ordered = tree.ordered()
        assert len(ordered) == len(tree)
        assert len({b.agent_id for b in ordered}) == len(tree)
        for block in ordered:
            assert len(block.window(expanded=True)) <= EXPANDED_MESSAGES
            if block.parent_id is not None:
                assert block.agent_id in tree[block.parent_id].children

    check()


async def test_a_child_named_in_claude_code_spelling_gets_its_prompt(tmp_path: Path) -> None:
    """`Explore` resolves to the built-in `explore`: the block is matched by the Task call id."""
    tree = BlockTree(prompt="map it")

    def main(request: ModelRequest) -> ModelResponse:
        if results(request):
            return text_response("mapped")
        return tool_call_response(
            "Task", {"description": "Map", "prompt": "list the files", "subagent_type": "Explore"}
        )

    runtime = Runtime(
        cwd=workspace(tmp_path),
        model=FunctionModel(main, name="scripted:main"),
        agent_models={"explore": FunctionModel(lambda r: text_response("3 files"))},
        events=EventBus([tree]),
    )
    await runtime.run("map it")
    (child,) = [b for b in tree.ordered() if b.agent_type == "explore"]
    assert [m.text for m in child.messages if m.kind == "user"] == ["list the files"]


async def test_blocks_show_paused_as_soon_as_a_session_waits(tmp_path: Path) -> None:
    from subagents.store.sqlite import open_store

    tree = BlockTree(prompt="write")

    def main(request: ModelRequest) -> ModelResponse:
        return tool_call_response("Write", {"file_path": "x.txt", "content": "x"})

    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=workspace(tmp_path),
            model=FunctionModel(main, name="scripted:main"),
            events=EventBus([tree]),
            store=store,
            headless="pause",
        )
        result = await runtime.run("write")
    assert result.status == "awaiting_human"
    assert tree.main is not None and tree.main.status == "paused"  # before finish_run


async def test_no_secret_reaches_a_block_even_split_across_stream_deltas(tmp_path: Path) -> None:
    from subagents.redaction import Redactor

    token = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
    secret_file = tmp_path / "notes.txt"
    secret_file.write_text(f"deploy key: {token}\n")

    def model(request: ModelRequest) -> ModelResponse:
        if not results(request):
            return tool_call_response("Read", {"file_path": "notes.txt"}, text=f"see {token}")
        return text_response(f"The key is {token}, keep it safe.")

    tree = BlockTree(prompt=f"find {token}", redactor=Redactor())
    streamed: list[str] = []  # what the block shows after each delta

    def watch(event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta) and tree.main is not None:
            streamed.append(tree.main.streaming)

    runtime = Runtime(
        cwd=tmp_path,
        model=FunctionModel(model),
        events=EventBus([tree, watch]),
        stream=True,  # text arrives in small deltas: the token is split across them
        permission_mode="bypassPermissions",
    )
    result = await runtime.run(f"find {token}")
    tree.finish_run(result)
    main = tree.main
    assert main is not None
    assert len(streamed) > 3
    assert all("Zz9Y" not in text for text in streamed)  # not even the start of it
    shown = [*streamed, main.streaming, main.description, *tree.errors]
    for message in main.messages:
        shown += [message.text, message.result]
    assert all(token not in text for text in shown)
    assert any("ghp_[REDACTED]" in text for text in shown)
    assert token in result.output  # the caller's own result is not touched


def test_a_retrying_model_call_shows_on_its_block_until_the_answer_comes() -> None:
    from subagents.cli.ui.live import render_block
    from subagents.messages import Usage

    tree = BlockTree()
    tree(ev.SessionStarted("a1", "main", None, "openai:gpt", 0))
    tree(ev.ModelRetrying("a1", 2, 6, 2.0, "HTTP 429"))
    shown = render_block(tree, tree["a1"], width=80).plain
    assert "↻ provider error (HTTP 429), retrying in 2.0 s (attempt 2 of 6)" in shown
    tree(ev.ModelResponded("a1", 1, ModelResponse(text="hi", usage=Usage()), 5.0))
    assert "retrying" not in render_block(tree, tree["a1"], width=80).plain


@settings(max_examples=60, deadline=None)
@example(width=80, description="line\u2028separator\x85next\xa0nbsp\r\n", model="m\x1b[31m")
@given(
    width=st.integers(min_value=1, max_value=220),
    description=st.text(max_size=120),
    model=st.text(min_size=1, max_size=40),
)
def test_a_blocks_header_is_one_line_that_fits_and_keeps_name_and_status(
    width: int, description: str, model: str
) -> None:
    from subagents.cli.ui.live import render_block

    tree = BlockTree()
    tree(ev.SessionStarted("a1", "main", None, "m", 0))
    tree(ev.SessionStarted("b2", "code-reviewer", "a1", model, 1))
    tree["b2"].description = description
    header = render_block(tree, tree["b2"], width=width).plain.split("\n")[0]
    assert cell_len(header) <= max(width, 30)
    # no line break nor control character from the model
    assert len(header.splitlines()) == 1
    assert not any(unicodedata.category(char)[0] == "C" for char in header)
    assert header.startswith("▶ code-reviewer  ") and "● active" in header


def test_a_finished_block_shows_its_cost_when_its_model_has_a_price() -> None:
    from subagents.cli.ui.live import render_block
    from subagents.messages import Usage
    from subagents.models.prices import ModelPrice
    from subagents.runtime.result import RunResult

    prices = {
        "scripted:priced": ModelPrice(input_per_mtok=Decimal(10), output_per_mtok=Decimal(30))
    }
    tree = BlockTree(prices=prices)
    tree(ev.SessionStarted("a1", "main", None, "scripted:main", 0))
    for agent_id, model in (("b2", "scripted:priced"), ("c3", "scripted:free")):
        tree(ev.SessionStarted(agent_id, "worker", "a1", model, 1))
        used = Usage(input_tokens=3000, output_tokens=1000)
        tree(ev.SessionFinished(agent_id, RunResult("done", "completed", agent_id, "worker",
                                                    model, [], usage=used)))  # fmt: skip
    assert tree["b2"].cost_usd == pytest.approx(0.06)  # 3,000 x $10 + 1,000 x $30, per M
    assert "4.0k tok  $0.0600" in render_block(tree, tree["b2"], width=120).plain
    assert tree["c3"].cost_usd is None  # no price: nothing shown, nothing invented
    assert "$" not in render_block(tree, tree["c3"], width=120).plain
    narrow = render_block(tree, tree["b2"], width=40).plain.split("\n")[0]
    assert "$" not in narrow and "worker" in narrow  # a narrow screen drops it early
