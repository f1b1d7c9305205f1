"""`subagents chat`: the Textual app headless (pilot) on scripted models with a real store,
its line mode, text snapshots of the screen, and the real command under tmux."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from fakes.openai_server import FakeOpenAIServer, chunk, usage
from paths import TESTS
from subagents.cli.chat import run_line_mode
from subagents.cli.chat_session import ChatSession, decision_of
from subagents.cli.ui.chat_app import ChatApp, TurnView, rich_color
from subagents.cli.ui.chat_view import MAX_DIFF_LINES, Transcript, diff_lines, render_transcript
from subagents.cli.ui.live import ApprovalScreen, BlockView
from subagents.definitions.model import AgentDefinition
from subagents.errors import SubagentsError
from subagents.messages import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response, tool_call_response, tool_calls_response
from subagents.tools.permissions import ApprovalDecision

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

SUBAGENTS = Path(sys.executable).with_name("subagents")
SNAPSHOTS = TESTS / "snapshots"
TASK_ID = "00000000-0000-4000-8000-00000000c4a7"
SIZE = (120, 60)


def agent(name: str, color: str | None = None) -> AgentDefinition:
    return AgentDefinition(
        name=name, description=f"The {name} agent.", system_prompt=f"I am {name}.", color=color
    )


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def prompts(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


def task(subagent_type: str, prompt: str) -> tuple[str, dict[str, Any]]:
    return (
        "Task",
        {"description": f"{subagent_type} job", "prompt": prompt, "subagent_type": subagent_type},
    )


def fixed_ids(response: ModelResponse) -> ModelResponse:
    """The calls with ids of their own (the scripted models number calls process-wide, and
    the subagents' ids derive from them): the screen snapshots must not depend on test order."""
    calls = tuple(replace(call, id=f"call_{i}") for i, call in enumerate(response.tool_calls))
    return replace(response, tool_calls=calls)


def team_main(request: ModelRequest) -> ModelResponse:
    """Two subagents in parallel for a prompt that asks for the team, else a plain answer."""
    last = prompts(request)[-1]
    if "team" in last and not results(request)[-2:]:
        return fixed_ids(
            tool_calls_response(
                [task("lister", "List the folders."), task("broken", "Try.")], text="Delegating."
            )
        )
    if "team" in last:
        return text_response("FINAL: the team is done.")
    if "Write" in last:
        done = results(request)
        if not done:
            return tool_call_response("Write", {"file_path": "a.txt", "content": "one\ntwo"})
        return text_response(f"wrote: {done[-1].content[:40]}")
    answers = [m.content for m in request.messages if isinstance(m, AssistantMessage)]
    return text_response(f"heard: {' | '.join(prompts(request))}; answers: {len(answers)}")


def lister_model(request: ModelRequest) -> ModelResponse:
    done = len(results(request))
    if done < 4:
        return fixed_ids(tool_call_response("LS", {"path": f"d{done:02d}"}))
    return text_response(f"Listed {done} folders.")


def broken_model(request: ModelRequest) -> ModelResponse:
    raise RuntimeError("provider exploded")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with open_store(tmp_path / "state.db") as opened:
        yield opened


def make_session(
    tmp_path: Path,
    store: SQLiteStore,
    main: Callable[[ModelRequest], ModelResponse] = team_main,
    more_agents: dict[str, FunctionModel] | None = None,
) -> tuple[ChatSession, FunctionModel]:
    for index in range(4):
        (tmp_path / f"d{index:02d}").mkdir(exist_ok=True)
    model = FunctionModel(main, name="scripted:main")

    def make_runtime(chosen: str | None) -> Runtime:
        chosen_models.append(chosen)
        return Runtime(
            cwd=tmp_path,
            agents=[
                agent("lister", color="orange"),
                agent("broken"),
                *(agent(name) for name in more_agents or {}),
            ],
            model=model,
            agent_models={
                "lister": FunctionModel(lister_model, name="scripted:lister"),
                "broken": FunctionModel(broken_model, name="scripted:broken"),
                **(more_agents or {}),
            },
            permission_mode="default",
            headless="pause",
            events=EventBus(),
            stream=True,
            store=store,
        )

    return ChatSession(make_runtime, new_task_id=lambda: TASK_ID), model


chosen_models: list[str | None] = []  # what make_session's runtimes were asked for


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def say(app: ChatApp, pilot: Pilot[None], text: str) -> TurnView:
    """Type ``text``, press enter, wait for the turn to end and be drawn."""
    turns = len(app.turns)
    app._input.value = text
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(app.turns) > turns, "the turn to start")
    turn = app.turns[-1]
    await wait_for(pilot, lambda: turn.done and not app.busy, "the turn to end")
    await pilot.pause()
    return turn


async def command(app: ChatApp, pilot: Pilot[None], text: str) -> str:
    """Run a slash command; the text of the notice it printed."""
    notices = app.notices
    app._input.value = text
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.notices > notices, f"the output of {text}")
    await pilot.pause()
    return notice_text(list(app.query(Static).filter(".notice"))[-1])


def notice_text(notice: Static) -> str:
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(notice.content)
    return console.export_text()


def expanded(view: BlockView) -> bool:
    return view.block.expanded  # a call: mypy would keep an asserted attribute narrowed


def shown(widget: Static) -> bool:
    return bool(widget.display)


def current_task(session: ChatSession) -> str | None:
    return session.task_id


def plain(view: BlockView) -> str:
    return view.text.plain


async def test_two_parallel_subagents_are_blocks_that_expand_and_collapse(
    tmp_path: Path, store: SQLiteStore
) -> None:
    session, _model = make_session(tmp_path, store)
    app = ChatApp(session, clock=lambda: 100.0)
    async with app.run_test(size=SIZE) as pilot:
        turn = await say(app, pilot, "Ask the team.")
        views = turn.subagents()
        assert [v.block.agent_type for v in views] == ["lister", "broken"]
        lister, broken = views
        assert "● completed" in plain(lister) and "4 tool calls" in plain(lister)
        assert "scripted:lister" in plain(lister)
        name_styles = {lister.text.plain[s.start : s.end]: str(s.style) for s in lister.text.spans}
        assert name_styles["lister"] == "bold dark_orange"  # the colour of its agent file
        assert not any("orange" in str(span.style) for span in broken.text.spans)
        assert "● error" in plain(broken) and "provider exploded" in plain(broken)
        transcript = str(turn.transcript_view.render())
        assert "› Ask the team." in transcript and "◆ Delegating." in transcript
        assert "⚙ Task lister job" in transcript and "↳ ok:" in transcript
        assert "FINAL: the team is done." in str(turn.answer.render())
        assert "FINAL" not in transcript  # the answer is shown once, below the blocks
        # collapsed: the latest two messages only
        assert '"d03"' in plain(lister) and '"d01"' not in plain(lister)

        await pilot.press("ctrl+n")
        assert app.selected_id == lister.block.agent_id
        await pilot.press("ctrl+o")
        assert expanded(lister) and "List the folders." in plain(lister)
        assert all(f'"d{i:02d}"' in plain(lister) for i in range(4))
        await pilot.press("ctrl+o")
        assert not expanded(lister) and '"d01"' not in plain(lister)
        await pilot.press("ctrl+t")
        assert expanded(lister) and expanded(broken)
        await pilot.press("ctrl+t")
        assert not expanded(lister)
        # a click selects a block and expands it; a second click collapses it
        await pilot.click(broken)
        assert app.selected_id == broken.block.agent_id and expanded(broken)
        assert not expanded(lister)
        await pilot.click(broken)
        assert not expanded(broken)

        status = str(app._status.render())
        assert status.startswith(f"scripted:main · task {TASK_ID[:8]} · ")
        assert status.endswith("ready · /help")
    assert store.get_task(TASK_ID).status == "completed"


async def test_the_second_turn_continues_the_task_with_the_first_in_its_request(
    tmp_path: Path, store: SQLiteStore
) -> None:
    session, model = make_session(tmp_path, store)
    app = ChatApp(session)
    async with app.run_test(size=SIZE) as pilot:
        first = await say(app, pilot, "the sky is blue")
        assert "heard: the sky is blue; answers: 0" in str(first.answer.render())
        second = await say(app, pilot, "what colour is it?")
        answer = str(second.answer.render())
        assert "heard: the sky is blue | what colour is it?; answers: 1" in answer
    last = model.requests[-1]
    assert prompts(last) == ["the sky is blue", "what colour is it?"]
    assert any(isinstance(m, AssistantMessage) and "answers: 0" in m.content for m in last.messages)
    assert [t.id for t in store.list_tasks()] == [TASK_ID]  # one task, two turns
    assert session.turns == 2


async def test_an_approval_is_answered_in_the_chat_and_the_turn_goes_on(
    tmp_path: Path, store: SQLiteStore
) -> None:
    session, _model = make_session(tmp_path, store)
    app = ChatApp(session)
    async with app.run_test(size=SIZE) as pilot:
        app._input.value = "Write a.txt"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval")
        await pilot.pause()
        assert "waiting for you" in str(app._status.render())
        transcript = str(app.turns[-1].transcript_view.render())
        assert "⚙ Write a.txt" in transcript and "↳ running…" in transcript
        assert "  + one" in transcript and "  + two" in transcript  # the diff of the Write
        assert not (tmp_path / "a.txt").exists()
        await pilot.press("y")
        turn = app.turns[-1]
        await wait_for(pilot, lambda: turn.done and not app.busy, "the turn to end")
        await pilot.pause()
        assert "wrote:" in str(turn.answer.render())
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "one\ntwo"


async def test_a_paused_task_is_resumed_from_the_chat(tmp_path: Path, store: SQLiteStore) -> None:
    session, _model = make_session(tmp_path, store)
    paused = await session.runtime.run("Write a.txt", task_id=TASK_ID)  # nobody to ask: pauses
    assert paused.status == "awaiting_human"
    session.task_id = TASK_ID
    app = ChatApp(session)
    async with app.run_test(size=SIZE) as pilot:
        notices = [str(n.render()) for n in app.query(".notice")]
        assert any("waits for you: /resume answers it" in n for n in notices)
        app._input.value = "/resume"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the question")
        await pilot.press("n", *"not now", "enter")
        turn = app.turns[-1]
        await wait_for(pilot, lambda: turn.done and not app.busy, "the resumed turn")
        await pilot.pause()
        assert "wrote: A person rejected this call: not now" in str(turn.answer.render())
    assert not (tmp_path / "a.txt").exists()
    assert store.get_task(TASK_ID).status == "completed"


async def test_slash_commands_and_agent_mentions(tmp_path: Path, store: SQLiteStore) -> None:
    session, model = make_session(tmp_path, store)
    app = ChatApp(session)
    async with app.run_test(size=SIZE) as pilot:
        help_text = await command(app, pilot, "/help")
        for name in ("/agents", "/tasks", "/trace", "/model", "/clear", "/resume", "ctrl+o"):
            assert name in help_text
        agents = await command(app, pilot, "/agents")
        assert "lister" in agents and "broken" in agents and "general-purpose" in agents
        assert "No tasks" in await command(app, pilot, "/tasks")
        assert "No task yet" in await command(app, pilot, "/trace")
        assert "Unknown command /nope" in await command(app, pilot, "/nope")
        unknown = await command(app, pilot, "@nobody do it")
        assert "no agent named 'nobody'" in unknown and "lister" in unknown
        requests_before = len(model.requests)

        await say(app, pilot, "@lister count the folders")
        last = model.requests[-1]
        assert prompts(last) == ["count the folders"]
        # the harness made the Task call; the model only saw its result
        (handoff,) = [m for m in last.messages if isinstance(m, AssistantMessage)]
        assert [(c.name, c.arguments["subagent_type"]) for c in handoff.tool_calls] == [
            ("Task", "lister")
        ]
        assert len(model.requests) == requests_before + 1
        assert f"▶ {TASK_ID[:8]}  completed" in await command(app, pilot, "/tasks")
        trace = await command(app, pilot, "/trace")
        assert f"Task {TASK_ID[:8]}" in trace and "main" in trace

        assert "Model: scripted:main" in await command(app, pilot, "/model")
        before = session.runtime
        assert "Model: other:model from the next prompt on" in await command(
            app, pilot, "/model other:model"
        )
        assert session.runtime is not before and session.model == "other:model"
        assert chosen_models[-1] == "other:model"  # the runtime was built again for it
        assert "New conversation" in await command(app, pilot, "/clear")
        assert app.turns == [] and session.task_id is None
        assert "new task" in str(app._status.render())
        history = await command(app, pilot, "/resume")
        assert current_task(session) == TASK_ID
        notices = [notice_text(n) for n in app.query(Static).filter(".notice")]
        assert f"Task {TASK_ID[:8]} (completed): the next prompt goes on with it." in notices[0]
        assert history.startswith("› @lister count the folders\n◆ heard:")


async def test_escape_stops_a_running_turn_and_the_chat_goes_on(
    tmp_path: Path, store: SQLiteStore
) -> None:
    import asyncio

    release = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        if prompts(request)[-1] == "hang":
            await release.wait()
        return text_response(f"ok: {prompts(request)[-1]}")

    session, _model = make_session(tmp_path, store, main=slow)  # type: ignore[arg-type]
    app = ChatApp(session)
    async with app.run_test(size=SIZE) as pilot:
        app._input.value = "hang"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.busy, "the turn to run")
        app._input.value = "more"
        await pilot.press("enter")
        assert "A turn is running" in str(list(app.query(".notice"))[-1].render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy and app.turns[-1].done, "the stop")
        assert "Turn stopped" in str(app.turns[-1].answer.render())
        turn = await say(app, pilot, "again")
        assert "ok: again" in str(turn.answer.render())


async def test_line_mode_reads_runs_and_prints(tmp_path: Path, store: SQLiteStore) -> None:
    session, _model = make_session(tmp_path, store)
    lines = iter(["the sky is blue", "/tasks", "", "what colour?", "Write a.txt", "/quit"])
    answers = iter(["y"])

    def read(prompt: str) -> str | None:
        return next(answers) if prompt.startswith("Allow?") else next(lines, None)

    out = io.StringIO()
    console = Console(file=out, width=100)
    await run_line_mode(session, input_line=read, console=console, ask=True)
    printed = out.getvalue()
    assert "heard: the sky is blue; answers: 0" in printed
    assert f"▶ {TASK_ID[:8]}  completed" in printed
    assert "heard: the sky is blue | what colour?; answers: 1" in printed
    assert "main wants to run Write" in printed and "wrote:" in printed
    assert (tmp_path / "a.txt").exists()


async def test_a_turn_stops_at_the_chats_budget_and_goes_on_once_it_is_raised(
    tmp_path: Path, store: SQLiteStore
) -> None:
    def costly(request: ModelRequest) -> ModelResponse:
        response = team_main(request)
        response.usage = Usage(input_tokens=300, output_tokens=100)
        return response

    (tmp_path / ".subagents").mkdir()
    (tmp_path / ".subagents" / "config.toml").write_text(
        '[prices."scripted:main"]\ninput_per_mtok = 10\noutput_per_mtok = 30\n'
    )
    session, _model = make_session(tmp_path, store, costly)
    turns = ["/budget 1", "the sky is blue", "what colour?", "/resume", "/budget 5,000", "/resume"]
    lines = iter([*turns, "/budget"])
    out = io.StringIO()
    await run_line_mode(
        session, input_line=lambda _prompt: next(lines, None), console=Console(file=out), ask=False
    )
    printed = out.getvalue()
    assert "Budget: 1 tokens" in printed
    assert "400 of 1 tokens" in printed and "/budget N or /budget $X raises" in printed
    assert "leaves no room" in printed  # /resume before the budget was raised
    assert "heard: the sky is blue | what colour?; answers: 1" in printed
    # 2 calls: 800 tokens, 2 x (300 x $10 + 100 x $30) / 1M = $0.0120
    assert "Budget: 5,000 tokens; this chat spent 800 tokens, $0.0120" in printed
    assert session.cost == "$0.0120"


async def test_background_agents_and_todos_are_in_view_and_a_background_agent_cancels(
    tmp_path: Path, store: SQLiteStore
) -> None:
    import asyncio

    todos = [
        {"content": "Start the watcher", "status": "completed", "activeForm": "Starting"},
        {"content": "Report", "status": "in_progress", "activeForm": "Reporting"},
    ]

    def main(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if not results(request):
            watcher = task("sleeper", "Watch forever.")
            watcher[1]["run_in_background"] = True
            return fixed_ids(tool_calls_response([("TodoWrite", {"todos": todos}), watcher]))
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("the watcher stopped")
        return text_response("watching")

    async def sleeper(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(3600)
        return text_response("unreachable")

    sleeper_model = FunctionModel(sleeper, name="scripted:sleeper")
    session, _model = make_session(
        tmp_path, store, main=main, more_agents={"sleeper": sleeper_model}
    )
    app = ChatApp(session, clock=lambda: 100.0)
    async with app.run_test(size=(160, 45)) as pilot:
        app._input.value = "watch"
        await pilot.press("enter")
        side = app._side
        await wait_for(pilot, lambda: "Background agents" in str(side.render()), "the panel")
        await wait_for(pilot, lambda: "Todos 1/2" in str(side.render()), "the todos")
        assert shown(side) and not shown(app._strip)
        assert "sleeper" in str(side.render()) and "Report" in str(side.render())

        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: shown(app._strip), "the strip at 80 columns")
        strip = str(app._strip.render())
        assert "⧗ background: sleeper" in strip and "☰ todos 1/2 · ▶ Report" in strip
        assert not shown(side)

        await pilot.press("ctrl+n")
        assert "⧗ background: ▶sleeper" in str(app._strip.render())
        await pilot.press("ctrl+b")
        turn = app.turns[-1]
        await wait_for(pilot, lambda: turn.done and not app.busy, "the turn to end")
        await pilot.pause()
        notices = [notice_text(n) for n in app.query(Static).filter(".notice")]
        assert any("Cancelled background agent sleeper" in n for n in notices)
        (watcher,) = turn.subagents()
        assert "● cancelled" in plain(watcher) and "[background]" in plain(watcher)
        assert "the watcher stopped" in str(turn.answer.render())
        assert store.get_task(TASK_ID).status == "completed"


# -- snapshots ---------------------------------------------------------------------------------


def screen_text(app: ChatApp) -> str:
    """The screen as plain text, as the terminal shows it (the run's durations masked: they
    are real wall-clock times)."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True))
    text = console.export_text()
    return re.sub(r"\b\d+\.\ds\b", "0.0s", text)


def check_snapshot(name: str, text: str) -> None:
    """Compare with tests/snapshots/NAME; ``UPDATE_SNAPSHOTS=1`` writes it (read the diff)."""
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}: run with UPDATE_SNAPSHOTS=1 and read it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} changed (UPDATE_SNAPSHOTS=1 to accept):\n{text}"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_snapshot_of_a_turn_with_two_subagents(
    tmp_path: Path, store: SQLiteStore, size: tuple[int, int]
) -> None:
    session, _model = make_session(tmp_path, store)
    app = ChatApp(session, clock=lambda: 100.0)
    async with app.run_test(size=size) as pilot:
        await say(app, pilot, "Ask the team.")
        await pilot.press("ctrl+n")
        await pilot.pause()
        check_snapshot(f"chat_{size[0]}x{size[1]}.txt", screen_text(app))


# -- a real terminal ---------------------------------------------------------------------------


TMUX_SOCKET = f"subagents-chat-test-{os.getpid()}"  # a server of our own, never the user's


def tmux(*args: str) -> str:
    command = ["tmux", "-L", TMUX_SOCKET, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    return done.stdout


def start_in_tmux(name: str, root: Path, home: Path, **extra_env: str) -> None:
    """Bare `subagents` in ``root``, in a detached 80×24 tmux session ``name``, with a clean
    environment (plus ``extra_env``)."""
    env = {
        "OPENAI_API_KEY": "test-key",
        "SUBAGENTS_HOME": str(home),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        **extra_env,
    }
    exports = " ".join(f"{k}='{v}'" for k, v in env.items())
    command = f"cd '{root}' && env -i {exports} '{SUBAGENTS}'"
    size = ["-x", "80", "-y", "24"]
    subprocess.run(
        ["tmux", "-L", TMUX_SOCKET, "new-session", "-d", "-s", name, *size, command],
        check=True,
        timeout=10,
    )


def wait_screen(session: str, wanted: str, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if wanted in screen:
            return screen
        time.sleep(0.05)
    raise AssertionError(f"{wanted!r} never showed; the screen:\n{screen}")


@pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (make system-packages)"
)
def test_subagents_chat_in_tmux(tmp_path: Path, isolated_home: Path) -> None:
    """Bare `subagents` in a real terminal of 80×24 opens the chat: type, see the answer, a
    command, another turn, quit."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    with FakeOpenAIServer() as server:
        (root / ".subagents").mkdir()
        (root / ".subagents" / "config.toml").write_text(
            f'[subagents]\ndefault_model = "openai:fake-model"\n\n'
            f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
            'tool_calls = "auto"\n',
            encoding="utf-8",
        )
        for answer in ("Hello from the fake model.", "Still here."):
            server.reply_stream(
                [
                    chunk({"role": "assistant", "content": answer}),
                    chunk(finish_reason="stop"),
                    chunk(usage_body=usage()),
                ]
            )
        name = f"chat-{os.getpid()}"
        start_in_tmux(name, root, isolated_home)
        try:
            wait_screen(name, "openai:fake-model · new task · 0 tok · ready · /help")
            tmux("send-keys", "-t", name, "say hello", "Enter")
            screen = wait_screen(name, "Hello from the fake model.")
            assert "› say hello" in screen and "task " in screen
            tmux("send-keys", "-t", name, "/tasks", "Enter")
            wait_screen(name, "completed")
            tmux("send-keys", "-t", name, "and again", "Enter")
            wait_screen(name, "Still here.")
            tmux("send-keys", "-t", name, "C-q")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and name in tmux("list-sessions"):
                time.sleep(0.05)
            assert name not in tmux("list-sessions")
        finally:
            tmux("kill-server")
    assert len(server.requests) == 2


def streamed(answer: str) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": answer}),
        chunk(finish_reason="stop"),
        chunk(usage_body=usage()),
    ]


def test_chat_no_tui_then_continue_in_a_second_process(tmp_path: Path, isolated_home: Path) -> None:
    """`subagents chat --no-tui` reads lines from a pipe; `--continue` goes on with the same
    task in another process, its history shown and sent to the model."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    with FakeOpenAIServer() as server:
        (root / ".subagents").mkdir()
        (root / ".subagents" / "config.toml").write_text(
            f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
            'tool_calls = "auto"\n',
            encoding="utf-8",
        )
        server.reply_stream(streamed("The sky is blue."))
        server.reply_stream(streamed("Blue, as I said."))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SUBAGENTS_"))}
        env.update(OPENAI_API_KEY="test-key", SUBAGENTS_HOME=str(isolated_home))
        command = [str(SUBAGENTS), "chat", "--no-tui", "-m", "openai:fake-model"]
        first = subprocess.run(
            command,
            input="what colour is the sky?\n/tasks\n",
            capture_output=True,
            text=True,
            cwd=root,
            env=env,
            timeout=60,
        )
        assert first.returncode == 0, first.stderr
        assert "The sky is blue." in first.stdout and "completed" in first.stdout
        again = subprocess.run(
            [*command, "--continue"],
            input="and again?\n",
            capture_output=True,
            text=True,
            cwd=root,
            env=env,
            timeout=60,
        )
        assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("› what colour is the sky?\n◆ The sky is blue.\n")
    assert "Blue, as I said." in again.stdout
    sent = [m.get("content") for m in server.requests[-1].json()["messages"]]
    assert "what colour is the sky?" in str(sent) and "The sky is blue." in str(sent)


def test_approval_answers_become_the_stored_tasks_decisions() -> None:
    assert decision_of(ApprovalDecision(approved=True)) == HumanDecision("approve")
    rejected = decision_of(ApprovalDecision(approved=False, reason="no"))
    assert rejected == HumanDecision("reject", reason="no")
    modified = decision_of(ApprovalDecision(approved=True, arguments={"a": 1}))
    assert modified == HumanDecision("modify", arguments={"a": 1})


def test_agent_colours_map_to_rich_and_unknown_ones_are_dropped() -> None:
    assert rich_color("orange") == "dark_orange" and rich_color("Blue") == "blue"
    assert rich_color("no-such-colour") is None and rich_color(None) is None


def test_a_writes_diff_is_coloured() -> None:
    transcript = Transcript()
    call = ToolCall(
        id="c1",
        name="Edit",
        arguments={"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2\ny = 3"},
    )
    transcript(ev.SessionStarted("main-id", "main", None, "m", 0))
    transcript(ev.ToolCallStarted("main-id", call))
    text = render_transcript("fix it", transcript, width=60)
    lines = text.plain.splitlines()
    assert lines == [
        "› fix it",
        "⚙ Edit a.py",
        "  - x = 1",
        "  + x = 2",
        "  + y = 3",
        "  ↳ running…",
    ]
    styles = {text.plain[span.start : span.end]: str(span.style) for span in text.spans}
    assert styles["  - x = 1"] == "red" and styles["  + y = 3"] == "green"
    many = diff_lines("MultiEdit", {"edits": [{"old_string": "a\n" * 20, "new_string": "b"}]})
    assert len(many) == MAX_DIFF_LINES and many[-1] == ("…", "… 10 more lines")


def test_bare_subagents_without_a_terminal_prints_the_help(isolated_home: Path) -> None:
    done = subprocess.run(
        [str(SUBAGENTS)], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert "Usage" in done.stdout + done.stderr and "chat" in done.stdout + done.stderr


async def test_the_view_follows_new_output_unless_the_person_scrolled_up(
    tmp_path: Path, store: SQLiteStore
) -> None:
    import asyncio

    release = asyncio.Event()

    async def talkative(request: ModelRequest) -> ModelResponse:
        if prompts(request)[-1] == "wait":
            await release.wait()
        return text_response("\n".join(f"line {n} of {prompts(request)[-1]}" for n in range(40)))

    session, _model = make_session(tmp_path, store, main=talkative)  # type: ignore[arg-type]
    app = ChatApp(session)
    conversation = app._conversation
    async with app.run_test(size=(80, 24)) as pilot:
        await say(app, pilot, "first")
        await wait_for(pilot, lambda: conversation.max_scroll_y > 0, "a scrollable view")
        await wait_for(
            pilot, lambda: conversation.scroll_y >= conversation.max_scroll_y - 1, "the end"
        )
        app._input.value = "wait"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.busy, "the turn to run")
        conversation.scroll_home(animate=False)
        await pilot.pause()
        release.set()
        await wait_for(pilot, lambda: not app.busy and app.turns[-1].done, "the answer")
        await pilot.pause()
        assert conversation.scroll_y == 0  # still where the person was reading
        await say(app, pilot, "again")  # their own prompt brings them back down
        await wait_for(
            pilot, lambda: conversation.scroll_y >= conversation.max_scroll_y - 1, "the end"
        )


GREYS = {0, 7, 8, 15, 16, 231, *range(232, 256)}
"""xterm-256 colour numbers with no hue: what a screen without colour may still use."""


@pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (make system-packages)"
)
def test_with_no_color_the_chat_in_a_real_terminal_uses_no_hue(
    tmp_path: Path, isolated_home: Path
) -> None:
    """NO_COLOR (no-color.org): the chat still draws its layout, in shades of grey only."""
    import re

    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".subagents").mkdir()
    (root / ".subagents" / "config.toml").write_text(
        '[subagents]\ndefault_model = "openai:fake-model"\n', encoding="utf-8"
    )
    name = f"nocolor-{os.getpid()}"
    start_in_tmux(name, root, isolated_home, NO_COLOR="1")
    try:
        wait_screen(name, "ready · /help")
        painted = tmux("capture-pane", "-e", "-p", "-t", name)
        colours = [int(n) for n in re.findall(r"\x1b\[(?:[0-9;]*;)?[34]8;5;(\d+)", painted)]
        assert colours, "the capture holds no colour codes at all: nothing to check"
        assert {n for n in colours if n not in GREYS} == set()
        assert not re.search(r"\x1b\[(?:[0-9;]*;)?[34]8;2;", painted)  # no true colour either
        tmux("send-keys", "-t", name, "C-q")
    finally:
        tmux("kill-server")


async def test_a_message_to_an_agent_of_the_conversation_continues_it(
    tmp_path: Path, store: SQLiteStore
) -> None:
    session, model = make_session(tmp_path, store)
    first = await session.send("the team, please")
    assert first.status == "completed"
    lister_id = next(s.session_id for s in store.sessions(TASK_ID) if s.agent_name == "lister")

    checked = session.prompt_for(f"@{lister_id[:8]} also count the files")
    result = await session.send(checked)

    assert result.status == "completed"
    (asked,) = [s for s in store.sessions(TASK_ID) if s.agent_name == "lister"]
    stored = [m["content"] for m in store.messages(asked.session_id) if m["role"] == "user"]
    assert any("also count the files" in text and 'from="a person"' in text for text in stored)
    assert "task-notification" in " ".join(prompts(model.requests[-1]))  # its parent heard
    with pytest.raises(SubagentsError, match="Say what to tell agent"):
        session.prompt_for(f"@{lister_id[:8]}")
