"""The Textual app, headless: a real scripted multi-subagent run inside it, driven by keys."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static, TextArea

from fakes.openai_server import FakeOpenAIServer, chunk, usage
from subagents.cli.ui.blocks import AgentBlock
from subagents.cli.ui.live import ApprovalScreen, BlockView, RunApp
from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.testing import FunctionModel, text_response, tool_call_response, tool_calls_response
from subagents.tools.permissions import ApprovalDecision, ApprovalRequest

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

LS_CALLS = 12
SUBAGENTS = Path(sys.executable).with_name("subagents")
SIZE = (140, 100)


def agent(name: str) -> AgentDefinition:
    return AgentDefinition(
        name=name, description=f"The {name} agent.", system_prompt=f"I am {name}."
    )


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def task(subagent_type: str, prompt: str) -> tuple[str, dict[str, Any]]:
    return (
        "Task",
        {"description": f"{subagent_type} job", "prompt": prompt, "subagent_type": subagent_type},
    )


def main_model(request: ModelRequest) -> ModelResponse:
    if not results(request):
        return tool_calls_response(
            [task("lister", "List the folders."), task("broken", "Try.")], text="Delegating."
        )
    return text_response("FINAL: the team is done.")


def lister_model(request: ModelRequest) -> ModelResponse:
    done = len(results(request))
    if done < LS_CALLS:
        return tool_call_response("LS", {"path": f"d{done:02d}"})
    return text_response(f"Listed {done} folders.")


def broken_model(request: ModelRequest) -> ModelResponse:
    raise RuntimeError("provider exploded")


def scripted_runtime(tmp_path: Path) -> Runtime:
    for index in range(LS_CALLS):
        (tmp_path / f"d{index:02d}").mkdir()
    return Runtime(
        cwd=tmp_path,
        agents=[agent("lister"), agent("broken")],
        model=FunctionModel(main_model, name="scripted:main"),
        agent_models={
            "lister": FunctionModel(lister_model, name="scripted:lister"),
            "broken": FunctionModel(broken_model, name="scripted:broken"),
        },
        permission_mode="bypassPermissions",
        events=EventBus(),
        stream=True,
    )


async def wait_until_done(app: RunApp, pilot: Pilot[None]) -> None:
    for _ in range(400):
        if app.done:
            break
        await pilot.pause(0.02)
    assert app.done, "the run did not end"
    await pilot.pause(0.1)  # let the refresh timer draw the last state


def view_of(app: RunApp, agent_type: str) -> BlockView:
    (view,) = [v for v in app.query(BlockView) if v.block.agent_type == agent_type]
    return view


async def select(app: RunApp, pilot: Pilot[None], agent_type: str) -> AgentBlock:
    for _ in range(len(app.blocks)):
        selected = app.selected_block()
        if selected is not None and selected.agent_type == agent_type:
            return selected
        await pilot.press("down")
    raise AssertionError(f"could not select {agent_type}")


def ls_paths_shown(view: BlockView) -> list[str]:
    return [f"d{i:02d}" for i in range(LS_CALLS) if f'"d{i:02d}"' in view.text.plain]


def is_expanded(view: BlockView) -> bool:
    return view.block.expanded


async def test_blocks_expand_collapse_and_the_final_answer_waits_for_q(tmp_path: Path) -> None:
    app = RunApp(scripted_runtime(tmp_path), "Survey the folders.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_done(app, pilot)
        assert app.result is not None and app.result.status == "completed"
        views = list(app.query(BlockView))
        assert [v.block for v in views] == app.blocks.ordered()  # widgets in tree order
        assert views[0].block.agent_type == "main" and len(views) == 3
        main, lister, broken = (view_of(app, name) for name in ("main", "lister", "broken"))
        assert "● completed" in main.text.plain and "● completed" in lister.text.plain
        assert "● error" in broken.text.plain and "provider exploded" in broken.text.plain
        assert f"{LS_CALLS} tool calls" in lister.text.plain
        assert "scripted:lister" in lister.text.plain
        assert lister.styles.margin.left > main.styles.margin.left  # nested under main

        # collapsed: the last two messages only
        assert ls_paths_shown(lister) == ["d11"]
        assert "Listed 12 folders." in lister.text.plain
        assert "d10" not in lister.text.plain

        # the final answer is on screen and the app waits
        final = app.query_one("#final")
        assert "FINAL: the team is done." in str(final.render())
        running = app.is_running  # a local: mypy would keep app.is_running narrowed to True
        assert running
        status = str(app.query_one("#status").render())
        assert "Run completed - press q to quit · 3 agents (2 completed, 1 error)" in status

        block = await select(app, pilot, "lister")
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert block.expanded
        assert ls_paths_shown(lister) == [f"d{i:02d}" for i in range(3, LS_CALLS)]  # 9 + answer
        assert "List the folders." not in lister.text.plain  # the prompt scrolled out
        await pilot.press("space")
        await pilot.pause(0.1)
        assert ls_paths_shown(lister) == ["d11"]

        await pilot.press("a")
        await pilot.pause(0.1)
        assert all(v.block.expanded for v in app.query(BlockView))
        assert "List the folders." in view_of(app, "main").text.plain
        assert len(ls_paths_shown(lister)) == 9
        await pilot.press("a")
        await pilot.pause(0.1)
        assert not any(v.block.expanded for v in app.query(BlockView))

        await pilot.click(lister)  # a click selects and expands the block
        await pilot.pause()
        assert app.selected_block() is lister.block and is_expanded(lister)
        await pilot.click(lister)
        await pilot.pause()
        assert not is_expanded(lister)

        await pilot.press("k", "k", "k")
        assert app.selected_block() is app.blocks.main
        assert "selected" in main.classes and "selected" not in lister.classes

        shot = app.save_screenshot(path=str(tmp_path))
        svg = await asyncio.to_thread(Path(shot).read_text, encoding="utf-8")
        assert Path(shot).suffix == ".svg"
        for name in ("main", "lister", "broken"):
            assert name in svg

        await pilot.press("q")
        await pilot.pause(0.1)
        assert not app.is_running
    assert app.cancelled is False and app.run_error is None


async def test_quitting_while_the_run_goes_on_cancels_it_cleanly(tmp_path: Path) -> None:
    never = asyncio.Event()

    async def stuck(request: ModelRequest) -> ModelResponse:
        await never.wait()
        return text_response("unreachable")

    def main(request: ModelRequest) -> ModelResponse:
        return tool_calls_response([task("stuck", "wait"), task("stuck", "wait more")])

    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("stuck")],
        model=FunctionModel(main, name="scripted:main"),
        agent_models={"stuck": FunctionModel(stuck, name="scripted:stuck")},
        permission_mode="bypassPermissions",
    )
    app = RunApp(runtime, "go")
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(400):
            if sum(b.status == "active" for b in app.blocks.ordered()) == 3:
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)
        assert len(app.query(BlockView)) == 3
        assert all("● active" in v.text.plain for v in app.query(BlockView))
        await pilot.press("q")
        status = str(app.query_one("#status").render())
        assert status.startswith(("Cancelling the run", "Run cancelled · 3 agents (3 cancelled)"))
        for _ in range(200):
            if not app.is_running:
                break
            await pilot.pause(0.02)
        assert not app.is_running
    assert app.cancelled and app.result is None
    assert [b.status for b in app.blocks.ordered()] == ["cancelled"] * 3
    assert not runtime.events.active  # the app let go of the run's events


async def test_exit_when_done_closes_the_app_when_the_run_ends(tmp_path: Path) -> None:
    app = RunApp(scripted_runtime(tmp_path), "Survey the folders.", exit_when_done=True)
    await asyncio.wait_for(app.run_async(headless=True, size=SIZE), timeout=60)
    assert app.result is not None and app.result.output == "FINAL: the team is done."
    assert {b.agent_type: b.status for b in app.blocks.ordered()} == {
        "main": "completed",
        "lister": "completed",
        "broken": "error",
    }


async def test_a_run_that_cannot_start_reports_its_error(tmp_path: Path) -> None:
    runtime = Runtime(cwd=tmp_path, permission_mode="bypassPermissions")  # no model anywhere
    app = RunApp(runtime, "hello", exit_when_done=True)
    await asyncio.wait_for(app.run_async(headless=True, size=SIZE), timeout=60)
    assert app.result is None and not app.cancelled
    assert app.run_error is not None and "--model" in str(app.run_error)


def _streamed(delta: dict[str, Any], finish: str) -> list[dict[str, Any]]:
    return [chunk(delta), chunk(finish_reason=finish), chunk(usage_body=usage())]


def _read_all(fd: int, into: bytearray) -> None:
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # the terminal's other end closed
            return
        if not data:
            return
        into += data


def test_cli_run_ui_exit_when_done_shows_blocks_then_prints_the_answer(
    tmp_path: Path, isolated_home: Path
) -> None:
    """`subagents run --ui --exit-when-done` in a real terminal (a pty), on a real provider
    protocol (a local OpenAI-compatible server), with a real agent file."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps out.\n---\nYou help.\n", encoding="utf-8"
    )
    task_call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "Task",
            "arguments": json.dumps(
                {"description": "help out", "prompt": "Find it.", "subagent_type": "helper"}
            ),
        },
    }
    with FakeOpenAIServer() as server:
        (root / ".subagents").mkdir()
        (root / ".subagents" / "config.toml").write_text(
            f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
            'tool_calls = "auto"\n',
            encoding="utf-8",
        )
        server.reply_stream(
            _streamed({"role": "assistant", "tool_calls": [task_call]}, "tool_calls")
        )
        server.reply_stream(_streamed({"role": "assistant", "content": "It is 42."}, "stop"))
        server.reply_stream(
            _streamed({"role": "assistant", "content": "The answer is 42."}, "stop")
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SUBAGENTS_"))}
        env.update(OPENAI_API_KEY="test-key", SUBAGENTS_HOME=str(isolated_home), TERM="xterm")
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        command = [str(SUBAGENTS), "run", "What is it?", "--model", "openai:fake-model"]
        process = subprocess.Popen(
            [*command, "--ui", "--exit-when-done"],
            cwd=root,
            env=env,
            stdin=follower,
            stderr=follower,  # Textual draws on stderr
            stdout=subprocess.PIPE,
        )
        os.close(follower)
        screen = bytearray()
        reader = threading.Thread(target=_read_all, args=(leader, screen), daemon=True)
        reader.start()
        try:
            out, _ = process.communicate(timeout=120)  # a guard against a hang, not a pace
        finally:
            process.kill()
            # everything the process drew is read once the terminal reports its other end
            # closed (the process is gone): wait for that, not for a time after which the
            # screen's tail (the blocks printed after the UI) may still be unread
            reader.join(timeout=120)  # a guard against a hang, checked below
            os.close(leader)
    assert not reader.is_alive(), "the terminal stayed open after the process ended"
    drawn = screen.decode(errors="replace")
    assert process.returncode == 0, drawn[-2000:]
    assert out.decode().strip() == "The answer is 42."
    assert "Traceback" not in drawn
    on_screen, _, closed = drawn.rpartition("\x1b[?1049l")  # the UI leaves the alternate screen
    # the screen shows the blocks (how many frames it draws depends on the machine's speed,
    # but the app leaves only once its final state is painted, so that one is certain) ...
    for shown in ("main", "helper", "● completed", "help out"):
        assert shown in on_screen, shown
    # ... and once it closes, every block's final state stays on the terminal
    after_ui = re.sub(r"\x1b\[[0-9;?<>]*[A-Za-z]", "", closed)
    for shown in ("▶ main", "  ▶ helper", "● completed", "› Find it.", "◆ It is 42.", "help out"):
        assert shown in after_ui, shown
    assert re.search(r"task [0-9a-f]{8}-", after_ui)  # the usual closing lines, on stderr


# -- approvals in the UI -------------------------------------------------------------------


def writer_model(request: ModelRequest) -> ModelResponse:
    """Writes the file its prompt names, then reports the tool result it got."""
    done = results(request)
    if not done:
        (target,) = [m.content for m in request.messages if isinstance(m, UserMessage)]
        return tool_call_response("Write", {"file_path": target, "content": f"hello {target}"})
    return text_response(f"result: {done[-1].content}")


def writer_runtime(tmp_path: Path, *files: str) -> tuple[Runtime, FunctionModel]:
    """main delegates one `writer` per file, in parallel; Write needs approval (default mode)."""

    def main(request: ModelRequest) -> ModelResponse:
        if not results(request):
            return tool_calls_response([task("writer", name) for name in files])
        return text_response("FINAL: written.")

    writer = FunctionModel(writer_model, name="scripted:writer")
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("writer")],
        model=FunctionModel(main, name="scripted:main"),
        agent_models={"writer": writer},
        permission_mode="default",
    )
    return runtime, writer


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], what: str) -> None:
    for _ in range(400):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def approval_screen(app: RunApp, pilot: Pilot[None]) -> ApprovalScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "an approval screen")
    await pilot.pause(0.1)  # the refresh timer draws the waiting block
    assert isinstance(app.screen, ApprovalScreen)
    return app.screen


def shown(screen: ApprovalScreen, widget_id: str) -> str:
    return str(screen.query_one(widget_id, Static).render())


def tool_results_of(model: FunctionModel) -> list[str]:
    return [m.content for request in model.requests for m in results(request)]


async def test_y_approves_the_subagents_write_from_the_ui(tmp_path: Path) -> None:
    runtime, writer = writer_runtime(tmp_path, "a.txt")
    app = RunApp(runtime, "Write a.txt.")
    async with app.run_test(size=SIZE) as pilot:
        screen = await approval_screen(app, pilot)
        block = view_of(app, "writer").block
        assert screen.request.agent_id == block.agent_id
        title = shown(screen, "#approval-title")
        assert f"writer {block.short_id} wants to run Write" in title
        arguments = str(screen.query_one("#approval-arguments Static", Static).render())
        assert json.loads(arguments) == {"file_path": "a.txt", "content": "hello a.txt"}
        assert "● waiting for you" in view_of(app, "writer").text.plain
        assert "Waiting for you (1 approval request)" in str(app._status.render())
        assert not (tmp_path / "a.txt").exists()

        await pilot.press("y")
        await wait_until_done(app, pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert "● completed" in view_of(app, "writer").text.plain
        await pilot.press("q")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "hello a.txt"
    assert app.result is not None and app.result.output == "FINAL: written."
    assert "a.txt" in tool_results_of(writer)[0]
    assert runtime.permissions.approver is None  # the runtime's own approver is back


async def test_the_pop_up_says_why_a_protected_write_asks(tmp_path: Path) -> None:
    runtime, _writer = writer_runtime(tmp_path, ".mcp.json")
    runtime.permissions.mode = "acceptEdits"  # would approve an ordinary Write unasked
    app = RunApp(runtime, "Write .mcp.json.")
    async with app.run_test(size=SIZE) as pilot:
        screen = await approval_screen(app, pilot)
        title = shown(screen, "#approval-title")
        assert "wants to run Write" in title
        assert ".mcp.json" in title and "protected" in title
        await pilot.press("n", "enter")
        await wait_until_done(app, pilot)
        await pilot.press("q")
    assert not (tmp_path / ".mcp.json").exists()


async def test_n_rejects_with_the_reason_typed_which_the_model_reads(tmp_path: Path) -> None:
    runtime, writer = writer_runtime(tmp_path, "a.txt")
    app = RunApp(runtime, "Write a.txt.")
    async with app.run_test(size=SIZE) as pilot:
        await approval_screen(app, pilot)
        await pilot.press("n")
        assert app.screen.query_one("#approval-reason", Input).has_focus
        # letters the main screen binds (q quit, a all, j/k move) are typed, not run
        await pilot.press(*"quit asking jk", "enter")
        await wait_until_done(app, pilot)
        assert not any(v.block.expanded for v in app.query(BlockView))
        await pilot.press("q")
    assert not (tmp_path / "a.txt").exists()
    (denied,) = tool_results_of(writer)
    assert "Permission denied: quit asking jk" in denied
    assert app.result is not None and app.result.status == "completed"


async def test_e_modifies_the_arguments_and_invalid_json_keeps_the_screen_open(
    tmp_path: Path,
) -> None:
    runtime, _writer = writer_runtime(tmp_path, "a.txt")
    app = RunApp(runtime, "Write a.txt.")
    async with app.run_test(size=SIZE) as pilot:
        screen = await approval_screen(app, pilot)
        await pilot.press("e")
        editor = screen.query_one("#approval-edit", TextArea)
        assert editor.has_focus
        assert json.loads(editor.text) == {"file_path": "a.txt", "content": "hello a.txt"}

        editor.text = '{"file_path": "a.txt", "content": '
        await pilot.press("ctrl+s")
        assert "Not valid JSON" in shown(screen, "#approval-error")
        assert app.screen is screen
        editor.text = '["a.txt"]'
        await pilot.press("ctrl+s")
        assert "must be a JSON object" in shown(screen, "#approval-error")
        assert app.screen is screen and not (tmp_path / "a.txt").exists()

        await pilot.press("escape")  # back to the choice, then edit again
        assert screen.mode == "choose" and not editor.display
        await pilot.press("e")
        editor.text = '{"file_path": "b.txt", "content": "edited by a person"}'
        await pilot.press("ctrl+s")
        await wait_until_done(app, pilot)
        await pilot.press("q")
    assert not (tmp_path / "a.txt").exists()
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "edited by a person"


async def test_the_pop_up_never_shows_a_secret_and_editing_keeps_it_intact(
    tmp_path: Path,
) -> None:
    token = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
    content = f"SLACK_BOT_TOKEN={token}\n"

    def main(request: ModelRequest) -> ModelResponse:
        if not results(request):
            return tool_call_response("Write", {"file_path": "a.env", "content": content})
        return text_response("FINAL: saved.")

    runtime = Runtime(cwd=tmp_path, model=FunctionModel(main), permission_mode="default")
    app = RunApp(runtime, "Save the token.")
    async with app.run_test(size=SIZE) as pilot:
        screen = await approval_screen(app, pilot)
        arguments = str(screen.query_one("#approval-arguments Static", Static).render())
        assert token not in arguments and "[REDACTED]" in arguments
        await pilot.press("e")
        editor = screen.query_one("#approval-edit", TextArea)
        assert token not in editor.text
        edited = json.loads(editor.text)
        edited["file_path"] = "b.env"  # the person changes the path, not the content
        editor.text = json.dumps(edited)
        await pilot.press("ctrl+s")
        await wait_until_done(app, pilot)
        await pilot.press("q")
    assert (tmp_path / "b.env").read_text(encoding="utf-8") == content
    assert not (tmp_path / "a.env").exists()


async def test_requests_of_parallel_subagents_are_answered_one_after_another(
    tmp_path: Path,
) -> None:
    runtime, writer = writer_runtime(tmp_path, "a.txt", "b.txt")
    app = RunApp(runtime, "Write both.")
    async with app.run_test(size=SIZE) as pilot:
        first = await approval_screen(app, pilot)
        await wait_for(pilot, lambda: len(app._approvals) == 2, "the second request")
        await pilot.pause(0.1)
        assert "(1 more request waiting)" in shown(first, "#approval-title")
        writers = [v for v in app.query(BlockView) if v.block.agent_type == "writer"]
        assert len(writers) == 2
        assert all("● waiting for you" in v.text.plain for v in writers)
        assert "Waiting for you (2 approval requests)" in str(app._status.render())

        await pilot.press("y")
        second = await approval_screen(app, pilot)
        assert second is not first and second.request.agent_id != first.request.agent_id
        assert "more request" not in shown(second, "#approval-title")
        await pilot.press("n", "enter")  # an empty reason
        await wait_until_done(app, pilot)
        await pilot.press("q")
    approved = first.request.arguments["file_path"]
    rejected = second.request.arguments["file_path"]
    assert {approved, rejected} == {"a.txt", "b.txt"}
    assert (tmp_path / approved).read_text(encoding="utf-8") == f"hello {approved}"
    assert not (tmp_path / rejected).exists()
    assert any("Permission denied: the user declined" in r for r in tool_results_of(writer))


async def test_q_with_a_request_open_rejects_it_and_cancels_the_run(tmp_path: Path) -> None:
    runtime, _writer = writer_runtime(tmp_path, "a.txt")
    app = RunApp(runtime, "Write a.txt.")
    async with app.run_test(size=SIZE) as pilot:
        await approval_screen(app, pilot)
        queued = asyncio.create_task(
            app.approve(ApprovalRequest("Bash", {"command": "ls"}, "someone", "other", "call_x"))
        )
        await wait_for(pilot, lambda: len(app._approvals) == 2, "the queued request")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to close")
    assert await queued == ApprovalDecision(approved=False, reason="the user quit")
    assert app.cancelled and app.result is None
    assert not (tmp_path / "a.txt").exists()
    assert all(b.status == "cancelled" for b in app.blocks.ordered())  # writer included


async def test_without_ask_approval_the_runtime_decides_as_before(tmp_path: Path) -> None:
    runtime, writer = writer_runtime(tmp_path, "a.txt")
    app = RunApp(runtime, "Write a.txt.", ask_approval=False, exit_when_done=True)
    await asyncio.wait_for(app.run_async(headless=True, size=SIZE), timeout=60)
    assert not (tmp_path / "a.txt").exists()
    (denied,) = tool_results_of(writer)
    assert "nobody is there to give it" in denied


async def test_l_answers_the_next_request_first_in_any_order(tmp_path: Path) -> None:
    runtime, _writer = writer_runtime(tmp_path, "a.txt", "b.txt")
    app = RunApp(runtime, "Write both.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(app._approvals) == 2, "two approval requests")
        first = await approval_screen(app, pilot)
        later = first.request.arguments["file_path"]
        await pilot.press("l")  # this one later: the other is shown
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen is not first,
            "the next request",
        )
        second = await approval_screen(app, pilot)
        assert second.request.arguments["file_path"] != later
        await pilot.press("y")  # approved first, though asked second
        await wait_for(pilot, lambda: len(app._approvals) == 1, "one request left")
        last = await approval_screen(app, pilot)
        assert last.request.arguments["file_path"] == later
        await pilot.press("n", "enter")
        await wait_until_done(app, pilot)
        await pilot.press("q")
    written = {name for name in ("a.txt", "b.txt") if (tmp_path / name).exists()}
    assert written == {"a.txt", "b.txt"} - {later}


async def test_the_status_line_counts_a_maps_items(tmp_path: Path) -> None:
    from subagents.tools.decorator import tool
    from subagents.workflows.graph import Workflow

    @tool(read_only=True, run_in_thread=False)
    def listing() -> str:
        """The files to look at, as a JSON list."""
        return json.dumps(["a.py", "b.py", "c.py"])

    @tool(read_only=True, run_in_thread=False)
    def size(name: str) -> str:
        """The size of a file."""
        return str(len(name))

    workflow = Workflow.model_validate(
        {
            "name": "sizes",
            "entry_point": "list",
            "nodes": {
                "list": {"type": "tool", "tool": "listing", "output": "files"},
                "each": {"type": "map", "over": "files", "tool": "size",
                         "arguments": {"name": "{{ item }}"}, "output": "sizes"},
            },
            "edges": [{"from": "list", "to": "each"}],
        }
    )  # fmt: skip
    runtime = Runtime(
        cwd=tmp_path,
        tools=[listing, size],
        model=FunctionModel(lambda request: text_response("unused")),
        permission_mode="bypassPermissions",
        events=EventBus(),
    )
    app = RunApp(runtime, "go", workflow=workflow)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_done(app, pilot)
        line = str(app._status.render())
        await pilot.press("q")
    assert "path: list → each" in line
    assert "each: 3/3 done, 0 running, 0 queued, 0 failed" in line
    assert app.result is not None and app.result.workflow is not None
    assert app.result.workflow.state.extra["sizes"] == ["4", "4", "4"]
