"""The Task tool: isolated subagent sessions, restrictions, models, parallel, background, resume."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from subagents.config import Config, load_config
from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.hooks import HookPayload, HookResult, Hooks
from subagents.runtime.runtime import Runtime
from subagents.testing import (
    FunctionModel,
    ScriptedModel,
    text_response,
    tool_call_response,
    tool_calls_response,
)

AGENT_ID = re.compile(r"agent_id: ([0-9a-f-]{36})")


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def task(subagent_type: str, prompt: str = "do it", **extra: Any) -> ModelResponse:
    arguments = {
        "description": f"run {subagent_type}",
        "prompt": prompt,
        "subagent_type": subagent_type,
    }
    arguments.update(extra)
    return tool_call_response("Task", arguments)


def config(tmp_path: Path, text: str = "") -> Config:
    (tmp_path / ".subagents").mkdir(exist_ok=True)
    (tmp_path / ".subagents" / "config.toml").write_text(text)
    return load_config(tmp_path)


def runtime(tmp_path: Path, main: Any, *agents: AgentDefinition, **kwargs: Any) -> Runtime:
    kwargs.setdefault("permission_mode", "bypassPermissions")
    return Runtime(cwd=tmp_path, agents=agents, model=main, **kwargs)


def results_of(requests: list[ModelRequest]) -> list[ToolResultMessage]:
    return [m for m in requests[-1].messages if isinstance(m, ToolResultMessage)]


async def test_child_sees_only_its_prompt_never_the_parent_history(tmp_path: Path) -> None:
    child = ScriptedModel(["child answer"])
    main = ScriptedModel([task("helper", "summarise the repo"), "main done"])
    rt = runtime(tmp_path, main, agent("helper"), agent_models={"helper": child})
    result = await rt.run("SECRET parent instructions")

    (child_request,) = child.requests
    assert [type(m) for m in child_request.messages] == [UserMessage]
    assert child_request.messages[0].content == "summarise the repo"
    assert "SECRET" not in child_request.system and "You are helper." in child_request.system
    assert "Working directory:" in child_request.system
    (returned,) = results_of(main.requests)
    assert returned.content.startswith("child answer\n\nagent_id: ")
    assert result.output == "main done"
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.success and spawn.subagent_type == "helper" and spawn.summary == "child answer"
    assert spawn.resolved_model == child.name and spawn.background is False
    child.assert_consumed()
    main.assert_consumed()


async def test_forbidden_tool_is_refused_however_often_the_model_insists(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("intact")
    insistent = ScriptedModel(
        # each time a little different: the same refused call three times would be stopped
        # as a loop (see test_loop_guard.py) before it insists with Bash
        [
            tool_call_response("Write", {"file_path": "victim.txt", "content": f"pwned {n}"})
            for n in range(3)
        ]
        + [tool_call_response("Bash", {"command": "echo pwned > victim.txt"})]
        + ["I could not write."]
    )
    reader = agent("reader", tools=["Read", "Grep"])
    main = ScriptedModel([task("reader"), "ok"])
    rt = runtime(tmp_path, main, reader, agent_models={"reader": insistent})
    await rt.run("go")

    assert target.read_text() == "intact"
    refusals = [m for m in insistent.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert len(refusals) == 4 and all(r.is_error for r in refusals)
    assert all("not available" in r.content for r in refusals)
    insistent.assert_consumed()  # it insisted all five turns: no loop stop cut it short
    main.assert_consumed()
    assert sorted(spec.name for spec in insistent.requests[0].tools) == ["Grep", "Read"]


async def test_disallowed_tools_are_removed_before_the_allowlist(tmp_path: Path) -> None:
    child = ScriptedModel(["done"])
    definition = agent("careful", disallowed_tools=["Bash", "Write"])
    rt = runtime(
        tmp_path,
        ScriptedModel([task("careful"), "ok"]),
        definition,
        agent_models={"careful": child},
    )
    await rt.run("go")
    names = {spec.name for spec in child.requests[0].tools}
    assert "Bash" not in names and "Write" not in names
    assert {"Read", "Edit", "Glob", "Grep", "LS", "Task"} <= names


@pytest.mark.parametrize(
    ("task_model", "definition_model", "default_model", "expected"),
    [
        ("openai:task-choice", "openai:def-choice", "openai:default", "openai:task-choice"),
        (None, "openai:def-choice", "openai:default", "openai:def-choice"),
        (None, "inherit", "openai:default", "test:main"),
        (None, None, "openai:default", "openai:default"),
        (None, None, None, "test:main"),
        (None, "sonnet", None, "openai:aliased"),
    ],
)
async def test_model_resolution_follows_the_documented_order(
    tmp_path: Path,
    task_model: str | None,
    definition_model: str | None,
    default_model: str | None,
    expected: str,
) -> None:
    lines = ["[models]", 'sonnet = "openai:aliased"', "[subagents]"]
    if default_model:
        lines.append(f'default_model = "{default_model}"')
    cfg = config(tmp_path, "\n".join(lines) + "\n")
    names = ["openai:task-choice", "openai:def-choice", "openai:default", "openai:aliased"]
    models = {name: ScriptedModel(["from " + name], name=name) for name in names}
    main = ScriptedModel(
        [task("picky", model=task_model) if task_model else task("picky"), "from test:main", "end"],
        name="test:main",
    )
    rt = runtime(tmp_path, main, agent("picky", model=definition_model), config=cfg, models=models)
    await rt.run("go")
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert spawn.resolved_model == expected
    assert spawn.summary == f"from {expected}"


async def test_unknown_agent_is_a_tool_error_naming_the_closest(tmp_path: Path) -> None:
    main = ScriptedModel([task("reviewr"), "sorry"])
    rt = runtime(tmp_path, main, agent("reviewer"))
    result = await rt.run("go")
    (error,) = results_of(main.requests)
    assert error.is_error
    assert "reviewer" in error.content and "Did you mean" in error.content
    assert result.output == "sorry"


async def test_task_tool_description_lists_active_agents(tmp_path: Path) -> None:
    main = ScriptedModel(["hi"])
    rt = runtime(tmp_path, main, agent("reviewer", description="Reviews code for bugs."))
    await rt.run("go")
    (task_spec,) = [s for s in main.requests[0].tools if s.name == "Task"]
    assert "- reviewer: Reviews code for bugs." in task_spec.description
    assert "- explore:" in task_spec.description
    assert set(task_spec.parameters["properties"]) == {
        "description",
        "prompt",
        "subagent_type",
        "model",
        "run_in_background",
        "resume",
        "fork",
        "output_schema",
    }


async def test_task_is_withheld_at_the_depth_limit(tmp_path: Path) -> None:
    cfg = config(tmp_path, "[subagents]\nmax_depth = 2\n")
    seen_tools: dict[int, set[str]] = {}

    def nesting(request: ModelRequest) -> ModelResponse:
        depth = (
            int(request.messages[0].content.split()[-1])
            if request.messages[0].content.startswith("level")
            else 0
        )
        seen_tools[depth] = {s.name for s in request.tools}
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return text_response(f"done at {depth}")
        if "Task" in seen_tools[depth]:
            return task("nester", f"level {depth + 1}")
        return text_response(f"leaf at {depth}")

    model = FunctionModel(nesting, name="test:nest")
    rt = runtime(tmp_path, model, agent("nester"), config=cfg)
    result = await rt.run("start")
    assert "Task" in seen_tools[0] and "Task" in seen_tools[1]
    assert "Task" not in seen_tools[2] and "TaskOutput" not in seen_tools[2]
    assert result.output == "done at 0"


async def test_fifty_subagents_in_one_turn_all_finish(tmp_path: Path) -> None:
    def child_turn(request: ModelRequest) -> ModelResponse:
        return text_response("result " + request.messages[0].content)

    calls = [
        ("Task", {"description": f"job {i}", "prompt": f"job {i}", "subagent_type": "worker"})
        for i in range(50)
    ]
    main = ScriptedModel([tool_calls_response(calls), "all done"])
    rt = runtime(
        tmp_path, main, agent("worker"), agent_models={"worker": FunctionModel(child_turn)}
    )
    result = await rt.run("fan out")
    results = results_of(main.requests)
    assert len(results) == 50 and not any(r.is_error for r in results)
    assert [r.content.split("\n")[0] for r in results] == [f"result job {i}" for i in range(50)]
    assert len({AGENT_ID.search(r.content).group(1) for r in results}) == 50  # type: ignore[union-attr]
    assert result.output == "all done"


async def test_max_concurrent_queues_instead_of_failing(tmp_path: Path) -> None:
    cfg = config(tmp_path, "[subagents]\nmax_concurrent = 3\n")
    running = 0
    peak = 0

    async def slow_child(request: ModelRequest) -> ModelResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return text_response("ok")

    calls = [("Task", {"description": "d", "prompt": "p", "subagent_type": "worker"})] * 10
    main = ScriptedModel([tool_calls_response(calls), "done"])
    rt = runtime(
        tmp_path,
        main,
        agent("worker"),
        config=cfg,
        agent_models={"worker": FunctionModel(slow_child)},
    )
    await rt.run("go")
    assert peak == 3
    assert not any(r.is_error for r in results_of(main.requests))


async def test_failing_subagent_returns_partial_output_and_parent_continues(tmp_path: Path) -> None:
    from subagents.errors import ModelError

    child = ScriptedModel(
        [
            tool_call_response("Read", {"file_path": "missing.txt"}, text="partial finding"),
            ModelError("overloaded", status_code=529),
        ]
    )
    main = ScriptedModel([task("flaky"), "recovered"])
    rt = runtime(tmp_path, main, agent("flaky"), agent_models={"flaky": child})
    result = await rt.run("go")
    (error,) = results_of(main.requests)
    assert error.is_error and "partial finding" in error.content and "overloaded" in error.content
    assert result.output == "recovered"
    (spawn,) = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert not spawn.success and spawn.status == "failed" and spawn.tool_use_count == 1


async def test_max_turns_of_a_subagent_is_reported(tmp_path: Path) -> None:
    child = ScriptedModel([tool_call_response("LS", {}, text=f"look {i}") for i in range(5)])
    main = ScriptedModel([task("looper"), "fine"])
    rt = runtime(tmp_path, main, agent("looper", max_turns=2), agent_models={"looper": child})
    await rt.run("go")
    (error,) = results_of(main.requests)
    assert error.is_error and "max_turns" in error.content and "look 0" in error.content


async def test_background_agent_notifies_the_parent_at_its_next_turn(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def background_child(request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text_response("background report")

    def main_turn(request: ModelRequest) -> ModelResponse:
        n = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        last = request.messages[-1]
        if n == 0:
            return task("bg", run_in_background=True)
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("saw: " + last.content)
        release.set()  # the parent finishes its foreground answer while the child still runs
        return text_response("started it")

    rt = runtime(
        tmp_path,
        FunctionModel(main_turn),
        agent("bg"),
        agent_models={"bg": FunctionModel(background_child)},
    )
    result = await rt.run("go")
    assert result.status == "completed" and result.turns == 3
    assert result.output.startswith("saw: <task-notification>")
    assert "background report" in result.output and "completed" in result.output
    handles = rt.last_delegation.background_handles()  # type: ignore[union-attr]
    assert len(handles) == 1 and handles[0].result is not None and handles[0].result.background


async def test_task_output_waits_and_task_cancel_stops(tmp_path: Path) -> None:
    go_quick = asyncio.Event()

    async def child_turn(request: ModelRequest) -> ModelResponse:
        if "forever" in request.messages[0].content:
            await asyncio.sleep(3600)
        await go_quick.wait()  # finish only once the parent is waiting in TaskOutput
        return text_response("quick result")

    ids: list[str] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        ids.extend(AGENT_ID.findall(results[-1].content) if results else [])
        step = len(results)
        if step == 0:
            return tool_calls_response(
                [
                    (
                        "Task",
                        {
                            "description": "q",
                            "prompt": "quick",
                            "subagent_type": "bg",
                            "run_in_background": True,
                        },
                    ),
                    (
                        "Task",
                        {
                            "description": "f",
                            "prompt": "forever",
                            "subagent_type": "bg",
                            "run_in_background": True,
                        },
                    ),
                ]
            )
        started = re.findall(r"agent_id ([0-9a-f-]{36})", results[0].content + results[1].content)
        if step == 2:
            go_quick.set()
            return tool_call_response("TaskOutput", {"agent_id": started[0]})
        if step == 3:
            return tool_call_response("TaskCancel", {"agent_id": started[1]})
        return text_response("finished")

    main = FunctionModel(main_turn)
    rt = runtime(tmp_path, main, agent("bg"), agent_models={"bg": FunctionModel(child_turn)})
    result = await rt.run("go")
    final_results = results_of(main.requests)
    assert final_results[2].content.startswith("quick result")
    assert final_results[3].content.endswith("cancelled.")
    assert result.output == "finished"
    statuses = sorted(s.status for s in rt.last_delegation.spawn_results)  # type: ignore[union-attr]
    assert statuses == ["cancelled", "completed"]
    # nothing was notified twice: the parent read both results through the tools
    assert not any(
        isinstance(m, UserMessage) and "task-notification" in m.content
        for m in main.requests[-1].messages
    )


async def test_resume_continues_a_subagent_with_its_history(tmp_path: Path) -> None:
    child = ScriptedModel(["first answer", "second answer"])
    first_id: list[str] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return task("memo", "remember 42")
        if len(results) == 1:
            first_id.extend(AGENT_ID.findall(results[0].content))
            return task("memo", "what did I say?", resume=first_id[0])
        return text_response("done")

    rt = runtime(tmp_path, FunctionModel(main_turn), agent("memo"), agent_models={"memo": child})
    await rt.run("go")
    second_request = child.requests[1]
    contents = [getattr(m, "content", "") for m in second_request.messages]
    assert contents == ["remember 42", "first answer", "what did I say?"]
    assert len(rt.last_delegation.handles) == 1  # type: ignore[union-attr]


async def test_resume_of_an_unknown_id_is_a_tool_error(tmp_path: Path) -> None:
    main = ScriptedModel([task("memo", resume="no-such-id"), "ok"])
    rt = runtime(tmp_path, main, agent("memo"))
    await rt.run("go")
    (error,) = results_of(main.requests)
    assert error.is_error and "no-such-id" in error.content


async def test_hooks_see_every_start_and_stop_and_can_steer(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    stops = 0

    def on_start(payload: HookPayload) -> HookResult:
        seen.append(("start", payload.agent_type))
        return HookResult(additional_context="Use British spelling.")

    def on_stop(payload: HookPayload) -> HookResult | None:
        nonlocal stops
        stops += 1
        seen.append(("stop", payload.agent_type))
        if payload.agent_type == "writer" and not payload.stop_hook_active:
            return HookResult(block=True, reason="Add a title.")
        return None

    def deny_bash(payload: HookPayload) -> HookResult:
        return HookResult(block=True, reason="no shell today")

    hooks = Hooks()
    hooks.add("SubagentStart", on_start)
    hooks.add("SubagentStop", on_stop)
    hooks.add("PreToolUse", deny_bash, matcher="Bash")
    writer = ScriptedModel([tool_call_response("Bash", {"command": "ls"}), "draft", "Title\ndraft"])
    broken = ScriptedModel([RuntimeError("model crashed")])
    main = ScriptedModel(
        [
            tool_calls_response(
                [
                    ("Task", {"description": "w", "prompt": "write", "subagent_type": "writer"}),
                    ("Task", {"description": "b", "prompt": "break", "subagent_type": "broken"}),
                ]
            ),
            "done",
        ]
    )
    rt = runtime(
        tmp_path,
        main,
        agent("writer"),
        agent("broken"),
        hooks=hooks,
        agent_models={"writer": writer, "broken": broken},
    )
    await rt.run("go")
    assert (
        writer.requests[0].messages[0].content
        == "write\n\nAdditional context:\nUse British spelling."
    )
    denied = [m for m in writer.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert denied[0].is_error and "no shell today" in denied[0].content
    assert writer.requests[2].messages[-1].content == "Add a title."
    starts = [who for kind, who in seen if kind == "start"]
    assert sorted(starts) == ["broken", "writer"]
    assert sorted(who for kind, who in seen if kind == "stop") == ["broken", "writer", "writer"]
    ok, failed = results_of(main.requests)
    assert ok.content.startswith("Title\ndraft") and failed.is_error


async def test_subagent_events_carry_ids_and_parent(tmp_path: Path) -> None:
    seen: list[ev.Event] = []
    child = ScriptedModel([tool_call_response("LS", {}), "listed"])
    main = ScriptedModel([task("lister"), "ok"])
    rt = runtime(
        tmp_path,
        main,
        agent("lister"),
        agent_models={"lister": child},
        events=EventBus([seen.append]),
    )
    await rt.run("go")
    started = [e for e in seen if isinstance(e, ev.SubagentStarted)]
    finished = [e for e in seen if isinstance(e, ev.SubagentFinished)]
    sessions = [e for e in seen if isinstance(e, ev.SessionStarted)]
    assert len(started) == len(finished) == 1
    main_id = sessions[0].agent_id
    assert started[0].parent_id == main_id and finished[0].result.success
    child_session = [s for s in sessions if s.agent_id == started[0].agent_id]
    assert child_session and child_session[0].parent_id == main_id and child_session[0].depth == 1
    child_tools = [
        e for e in seen if isinstance(e, ev.ToolCallFinished) and e.agent_id == started[0].agent_id
    ]
    assert len(child_tools) == 1


async def test_agent_files_may_name_the_runtimes_own_tools(tmp_path: Path) -> None:
    from subagents.tools.decorator import tool

    @tool(read_only=True)
    async def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "finder.md").write_text(
        "---\nname: finder\ndescription: Finds values.\ntools: lookup, Read\n---\nFind things.\n"
    )
    child = ScriptedModel([tool_call_response("lookup", {"key": "k"}), "found it"])
    main = ScriptedModel([task("finder"), "ok"])
    rt = runtime(tmp_path, main, tools=[lookup], agent_models={"finder": child})
    await rt.run("go")
    assert sorted(spec.name for spec in child.requests[0].tools) == ["Read", "lookup"]
    result = next(m for m in child.requests[1].messages if isinstance(m, ToolResultMessage))
    assert result.content == "value of k" and not result.is_error
    assert not rt.inventory.get("finder").definition.warnings


async def test_config_declared_command_hooks_run_and_can_deny(tmp_path: Path) -> None:
    log = tmp_path / "hook.log"
    script = tmp_path / "deny_rm.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"cat >> {log}\n"
        "echo >> " + str(log) + "\n"
        "echo 'rm is not allowed here' >&2\n"
        "exit 2\n"
    )
    script.chmod(0o755)
    cfg = config(
        tmp_path,
        f'[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "{script}"\n'
        f'[[hooks.SubagentStart]]\ncommand = "cat >> {log}; echo >> {log}"\n',
    )
    child = ScriptedModel([tool_call_response("Bash", {"command": "rm -rf data"}), "gave up"])
    main = ScriptedModel([task("cleaner"), "ok"])
    rt = runtime(tmp_path, main, agent("cleaner"), config=cfg, agent_models={"cleaner": child})
    await rt.run("go")
    denied = next(m for m in child.requests[1].messages if isinstance(m, ToolResultMessage))
    assert denied.is_error and "rm is not allowed here" in denied.content
    payloads = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    events = [p["hook_event_name"] for p in payloads]
    assert sorted(events) == ["PreToolUse", "SubagentStart"]
    pre = next(p for p in payloads if p["hook_event_name"] == "PreToolUse")
    assert pre["agent_type"] == "cleaner" and pre["tool_input"] == {"command": "rm -rf data"}
    assert pre["agent_id"] == rt.last_delegation.spawn_results[0].agent_id  # type: ignore[union-attr]


async def test_reused_tool_call_ids_still_start_distinct_subagents(tmp_path: Path) -> None:
    """Some servers send `call_0` every turn: each Task call must still get its own child."""

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if len(done) < 2:
            return tool_call_response(
                "Task",
                {"description": "d", "prompt": f"job {len(done)}", "subagent_type": "worker"},
                id="call_0",
            )
        return text_response(" / ".join(m.content.split("\n")[0] for m in done))

    def child_turn(request: ModelRequest) -> ModelResponse:
        return text_response("did " + request.messages[0].content)

    rt = runtime(
        tmp_path,
        FunctionModel(main_turn),
        agent("worker"),
        agent_models={"worker": FunctionModel(child_turn)},
    )
    result = await rt.run("go")
    assert result.output == "did job 0 / did job 1"
    spawns = rt.last_delegation.spawn_results  # type: ignore[union-attr]
    assert len({s.agent_id for s in spawns}) == 2
    ids = [m.tool_call_id for m in result.messages if isinstance(m, ToolResultMessage)]
    assert len(set(ids)) == 2


async def test_a_session_is_stored_with_its_first_checkpoint_unless_a_restart_would_lose_it(
    tmp_path: Path,
) -> None:
    """The main session and a foreground child reach the store with their first checkpoint
    (a restart would start them again on the same prompt); a background child's opening is
    stored before its model is asked, since its parent's call already has its result."""
    from subagents.store.sqlite import open_store

    store = open_store(tmp_path / "state.db")
    seen: dict[str, set[str]] = {}

    def stored_sessions() -> dict[str, int]:
        (task_record,) = store.list_tasks(limit=None)
        return {
            record.agent_name: len(store.messages(record.session_id))
            for record in store.sessions(task_record.id)
        }

    def child(name: str) -> Any:
        async def turn(request: ModelRequest) -> ModelResponse:
            if len(request.messages) == 1:
                seen[name] = set(stored_sessions())
            return text_response(f"{name} done")

        return FunctionModel(turn)

    def main_turn(request: ModelRequest) -> ModelResponse:
        n = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        last = request.messages[-1]
        if n == 0:
            seen["main"] = set(stored_sessions())
            return task("fg")
        if n == 1:
            return task("bg", run_in_background=True)
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("all done")
        return text_response("waiting")

    rt = runtime(
        tmp_path,
        FunctionModel(main_turn),
        agent("fg"),
        agent("bg"),
        agent_models={"fg": child("fg"), "bg": child("bg")},
        store=store,
    )
    result = await rt.run("go")
    assert result.status == "completed", result.error
    assert seen["main"] == set()  # not even the main session before its first answer
    assert seen["fg"] == {"main"}  # its parent's Task call is stored, the child is not
    assert seen["bg"] == {"main", "fg", "bg"}  # stored with its opening prompt
    # every session holds its prompt once, and the whole history
    assert stored_sessions() == {"main": 8, "fg": 2, "bg": 2}
    store.close()


async def test_a_message_that_arrives_before_any_checkpoint_is_stored_before_the_model_sees_it(
    tmp_path: Path,
) -> None:
    """Only the opening rides with the first checkpoint: a message queued for the main
    session (Session.notify) while its first model call runs is stored, with the answer
    before it, before the model is asked again."""
    from subagents.store.sqlite import open_store

    store = open_store(tmp_path / "state.db")
    stored_then: list[list[str]] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        main = rt.last_delegation.main  # type: ignore[union-attr]
        assert main is not None
        if len(request.messages) == 1:
            main.notify("a note that came in meanwhile")
            return text_response("first answer")
        (task_record,) = store.list_tasks(limit=None)
        (session,) = store.sessions(task_record.id)
        stored_then.append([m["role"] for m in store.messages(session.session_id)])
        return text_response("saw the note")

    rt = runtime(tmp_path, FunctionModel(main_turn), store=store)
    result = await rt.run("go")
    assert result.status == "completed" and result.output == "saw the note"
    assert stored_then == [["user", "assistant", "user"]]
    store.close()


async def test_a_fork_begins_with_its_parents_conversation(tmp_path: Path) -> None:
    child = ScriptedModel(["forked answer"])
    main = ScriptedModel(
        [
            tool_call_response("LS", {}),
            task("helper", "now check only the tests", fork=True),
            "main done",
        ]
    )
    rt = runtime(tmp_path, main, agent("helper"), agent_models={"helper": child})
    result = await rt.run("look at the repo")

    assert result.status == "completed"
    (forked,) = child.requests
    parent_before_call = main.requests[1]
    # byte for byte what the parent sent when it made the call, then the fork's task
    assert forked.system == parent_before_call.system
    prefix = forked.messages[: len(parent_before_call.messages)]
    assert prefix == parent_before_call.messages
    (opening,) = forked.messages[len(parent_before_call.messages) :]
    assert isinstance(opening, UserMessage) and "fork" in opening.content
    assert "now check only the tests" in opening.content and "You are helper." in opening.content
