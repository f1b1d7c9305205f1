"""The loop guard: a session repeating the same failing tool call is told after the second
time and stopped at ``[subagents] max_repeated_failures`` (resumable); identical successful
calls are noted; both show in the trace and the progress output.

The main scenario replays issue 10's transcript: a 1.5B instruct model behind llama.cpp's
OpenAI-compatible server first called ``Task`` without ``subagent_type``, then
``TaskCancel {"agent_id": "notes-reader"}`` 48 times, getting the same error each time.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from subagents.cli.trace import trace_command
from subagents.cli.ui.blocks import BlockTree
from subagents.cli.ui.progress import progress_printer
from subagents.config import Config, SubagentsSettings, load_config
from subagents.definitions.model import AgentDefinition
from subagents.errors import ConfigError, LoopDetectedError, ToolError
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.tool_arguments import parse_tool_arguments
from subagents.runtime import events as ev
from subagents.runtime.loop_guard import (
    LOOP_STOPPED_STEP,
    LOOP_WARNING_STEP,
    WINDOW,
    LoopGuard,
)
from subagents.runtime.runtime import Runtime
from subagents.runtime.session import Session
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.base import ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.decorator import tool
from subagents.tools.execution import ToolOutcome

PROMPT = (
    "Use the notes-reader subagent to find the secret word in notes.txt, then tell me the word."
)
NOTES_READER = AgentDefinition(
    name="notes-reader",
    description="Reads notes files and reports what they say.",
    system_prompt="You read notes files and report exactly what they say.",
    tools=["Read"],
)
CANCEL_ARGUMENTS = '{"agent_id": "notes-reader"}'


def small_model_turn(name: str, raw_arguments: str, text: str = "") -> ModelResponse:
    """One turn as a 1.5B model sends it through llama.cpp: the arguments as JSON text, the
    same ``call_0`` id every turn, a sentence of text before the call."""
    call = parse_tool_arguments("call_0", name, raw_arguments)
    return ModelResponse(text=text, tool_calls=(call,), stop_reason="tool_use")


def issue_transcript(request: ModelRequest) -> ModelResponse:
    """The main agent of the issue: Task without subagent_type, then TaskCancel forever."""
    turns = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
    if turns == 0:
        task = {"description": "find secret word", "prompt": "Find the secret word in notes.txt"}
        return small_model_turn("Task", json.dumps(task), "I will use the notes-reader agent.")
    return small_model_turn("TaskCancel", CANCEL_ARGUMENTS, "Let me cancel the agent first.")


def recovered_main(request: ModelRequest) -> ModelResponse:
    """The same model once told what happened: it delegates properly, then answers."""
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        assert "Do not make that call again" in last.content, last.content
        task = {
            "description": "find secret word",
            "prompt": "Read notes.txt and report the secret word.",
            "subagent_type": "notes-reader",
        }
        return small_model_turn("Task", json.dumps(task))
    assert isinstance(last, ToolResultMessage) and last.tool_name == "Task", last
    found = re.search(r"secret word is (\w+)", last.content)
    assert found is not None, last.content
    return text_response(f"The secret word is {found.group(1)}.")


def notes_reader_model(request: ModelRequest) -> ModelResponse:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        return small_model_turn("Read", '{"file_path": "notes.txt"}')
    found = re.search(r"secret word is (\w+)", results[-1].content)
    return text_response(f"The secret word is {found.group(1) if found else 'unknown'}.")


def notes_runtime(
    workspace: Path, main: FunctionModel, store: SQLiteStore, **kwargs: Any
) -> Runtime:
    (workspace / "notes.txt").write_text("Shopping: eggs.\nThe secret word is plum.\n")
    return Runtime(
        cwd=workspace,
        agents=[NOTES_READER],
        model=main,
        agent_models={"notes-reader": FunctionModel(notes_reader_model, name="test:reader")},
        store=store,
        **kwargs,
    )


def calls_named(messages: list[Any], name: str) -> list[ToolCall]:
    return [
        call
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
        if call.name == name
    ]


def results_named(messages: list[Any], name: str) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage) and m.tool_name == name]


# --- the issue's loop ---------------------------------------------------------------------------


async def test_the_issue_loop_ends_after_three_failing_calls_with_an_error_naming_it(
    tmp_path: Path,
) -> None:
    model = FunctionModel(issue_transcript, name="llamacpp:qwen2.5-1.5b-instruct")
    with open_store(tmp_path / "state.db") as store:
        result = await notes_runtime(tmp_path, model, store).run(PROMPT)
        assert result.task_id is not None
        task = store.get_task(result.task_id)

    assert result.status == "failed"
    cancels = results_named(result.messages, "TaskCancel")
    assert len(cancels) == 3 and all(r.is_error for r in cancels)
    assert len(model.requests) == 4  # Task, then three TaskCancel; not 50 turns
    error = result.error or ""
    tool_error = cancels[0].content.splitlines()[0]
    assert error.startswith('Loop detected: TaskCancel {"agent_id": "notes-reader"} failed 3 times')
    assert tool_error[:60] in error  # the loop error quotes the start of the tool error
    assert f"subagents resume {result.task_id[:8]}" in error
    assert "[subagents] max_repeated_failures" in error
    assert (task.status, task.error) == ("failed", error)


async def test_the_model_reads_a_corrective_note_after_the_second_identical_failure(
    tmp_path: Path,
) -> None:
    model = FunctionModel(issue_transcript)
    with open_store(tmp_path / "state.db") as store:
        result = await notes_runtime(tmp_path, model, store).run(PROMPT)

    def last_result(request: ModelRequest) -> ToolResultMessage:
        message = request.messages[-1]
        assert isinstance(message, ToolResultMessage)
        return message

    after_first, after_second = last_result(model.requests[2]), last_result(model.requests[3])
    assert "[loop guard]" not in after_first.content
    error_line = after_first.content.splitlines()[0]
    assert after_second.content.startswith(after_first.content)
    note = after_second.content[len(after_first.content) :]
    assert (
        note.lstrip()
        .removeprefix("[loop guard] ")
        .startswith(
            "You have made this exact call 2 times and it failed the same way each time: "
            + error_line[:60]
        )
    )
    assert "\nDo something different:" in note
    assert "The run stops if it fails this way 3 times." in after_second.content
    third = results_named(result.messages, "TaskCancel")[2]
    assert "has now failed 3 times the same way, so the run stops here" in third.content


async def test_a_stopped_loop_resumes_from_the_store_and_completes(tmp_path: Path) -> None:
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        stopped = await notes_runtime(tmp_path, FunctionModel(issue_transcript), store).run(PROMPT)
    assert stopped.status == "failed" and stopped.task_id is not None

    recovered = FunctionModel(recovered_main)
    with open_store(store_path) as store:  # a new process: a new store handle and runtime
        result = await notes_runtime(tmp_path, recovered, store).resume(stopped.task_id)
        task = store.get_task(stopped.task_id)
        sessions = store.sessions(stopped.task_id)

    assert result.status == "completed", result.error
    assert result.output == "The secret word is plum."
    told = recovered.requests[0].messages[-1]
    assert isinstance(told, UserMessage)
    assert told.content.startswith("The run was stopped because you repeated a failing tool call")
    assert "TaskCancel" in told.content
    assert len(results_named(result.messages, "TaskCancel")) == 3  # the history is kept
    assert task.status == "completed" and task.error is None
    assert [(s.agent_name, s.status) for s in sessions] == [
        ("main", "completed"),
        ("notes-reader", "completed"),
    ]


async def test_the_trace_and_the_progress_output_show_the_warning_and_the_stop(
    tmp_path: Path,
) -> None:
    seen: list[ev.Event] = []
    console = Console(file=io.StringIO(), width=300, color_system=None)
    blocks = BlockTree(prompt=PROMPT)
    bus = ev.EventBus([seen.append, progress_printer(console), blocks])
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        runtime = notes_runtime(tmp_path, FunctionModel(issue_transcript), store, events=bus)
        result = await runtime.run(PROMPT)
        assert result.task_id is not None
        traces = [t for t in store.traces(result.task_id) if t.step_name.startswith("loop_")]

    assert [(t.step_name, t.status, t.data["count"]) for t in traces] == [
        (LOOP_WARNING_STEP, "warning", 2),
        (LOOP_STOPPED_STEP, "warning", 3),
    ]
    assert traces[1].data["tool"] == "TaskCancel"
    assert traces[1].data["arguments_preview"] == CANCEL_ARGUMENTS

    noticed = [e for e in seen if isinstance(e, ev.LoopNoticed)]
    assert [e.stopped for e in noticed] == [False, True]
    (main_block,) = blocks.ordered()  # the live UI marks the repeated calls
    cancel_lines = [m.result for m in main_block.messages if m.tool_name == "TaskCancel"]
    assert cancel_lines[-1].startswith(f"⟳ TaskCancel {CANCEL_ARGUMENTS} failed 3 times")
    assert cancel_lines[-2].startswith(f"⟳ TaskCancel {CANCEL_ARGUMENTS} failed 2 times")
    assert not cancel_lines[-3].startswith("⟳")
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"main repeats itself: TaskCancel {CANCEL_ARGUMENTS} failed 2 times" in printed
    assert f"main stopped, it loops: TaskCancel {CANCEL_ARGUMENTS} failed 3 times" in printed

    app = typer.Typer()
    app.command("trace")(trace_command)
    app.command("unused")(lambda: None)
    shown = CliRunner().invoke(app, ["trace", result.task_id[:8], "--store", str(store_path)])
    assert shown.exit_code == 0, shown.stderr
    assert f"{LOOP_WARNING_STEP}: TaskCancel {CANCEL_ARGUMENTS} failed 2 times" in shown.stdout
    assert f"{LOOP_STOPPED_STEP}: TaskCancel {CANCEL_ARGUMENTS} failed 3 times" in shown.stdout
    traced = CliRunner().invoke(
        app, ["trace", result.task_id[:8], "--store", str(store_path), "--json"]
    )
    assert "run stopped" in traced.stdout


async def test_a_looping_subagent_stops_and_its_parent_hears_why(tmp_path: Path) -> None:
    def looping_reader(request: ModelRequest) -> ModelResponse:
        return small_model_turn("Read", '{"file_path": "secret-notes.txt"}')

    def main(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if isinstance(last, ToolResultMessage):
            return text_response(f"The notes-reader failed: {last.content}")
        task = {"description": "read", "prompt": "read", "subagent_type": "notes-reader"}
        return small_model_turn("Task", json.dumps(task))

    runtime = Runtime(
        cwd=tmp_path,
        agents=[NOTES_READER],
        model=FunctionModel(main),
        agent_models={"notes-reader": FunctionModel(looping_reader)},
    )
    result = await runtime.run("go")
    assert result.status == "completed"
    task_result = results_named(result.messages, "Task")[0]
    assert task_result.is_error
    assert 'Loop detected: Read {"file_path": "secret-notes.txt"} failed 3 times' in (
        task_result.content
    )
    assert "subagents resume" not in task_result.content  # only a task is resumed, not a child


# --- what is and is not a loop ------------------------------------------------------------------


def scripted(*turns: tuple[str, dict[str, Any]]) -> FunctionModel:
    """Makes ``turns`` in order, one call per turn, then answers 'done'."""

    def turn(request: ModelRequest) -> ModelResponse:
        made = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        if made < len(turns):
            name, arguments = turns[made]
            return small_model_turn(name, json.dumps(arguments))
        return text_response("done")

    return FunctionModel(turn)


async def test_identical_successful_calls_get_a_note_from_the_third_but_never_stop(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("plum\n")
    read = ("Read", {"file_path": "notes.txt"})
    runtime = Runtime(cwd=tmp_path, model=scripted(*[read] * 5))
    result = await runtime.run("read it")
    assert result.status == "completed" and result.output == "done"
    reads = results_named(result.messages, "Read")
    assert len(reads) == 5 and not any(r.is_error for r in reads)
    noted = ["got the same result each time" in r.content for r in reads]
    assert noted == [False, False, True, True, True]
    assert "You have made this exact call 4 times" in reads[3].content


async def run_with_store(tmp_path: Path, main: FunctionModel) -> Any:
    """The notes-reader project run on ``PROMPT`` with a store (Task results name agents)."""
    runtime = notes_runtime(tmp_path, main, open_store(tmp_path / "s.db"))
    try:
        return await runtime.run(PROMPT)
    finally:
        assert runtime.store is not None
        runtime.store.close()


async def test_the_same_task_answered_the_same_way_is_a_repeat_whatever_its_agent_id(
    tmp_path: Path,
) -> None:
    """Each Task starts a new subagent, whose agent_id ends its result: a 1.5B model on
    llama.cpp started the same delegation again and again, and the guard never saw a repeat."""
    (tmp_path / "notes.txt").write_text("The secret word is plum.\n")
    task = {"description": "find it", "prompt": "Read notes.txt.", "subagent_type": "notes-reader"}
    result = await run_with_store(tmp_path, scripted(*[("Task", task)] * 4))
    tasks = results_named(result.messages, "Task")
    assert len(tasks) == 4
    # made again right after it answered: its answer again, no new subagent run
    again = [t.content.startswith("Not started again") for t in tasks]
    assert again == [False, True, True, True]
    assert all("The secret word is plum" in t.content for t in tasks)
    assert len(result.subagents) == 1
    noted = ["got the same result each time" in t.content for t in tasks]
    assert noted == [False, False, True, True]


async def test_the_same_task_after_other_work_runs_anew(tmp_path: Path) -> None:
    """The tests run again after a fix, the notes read again after an edit: a Task made
    again once something else was done starts its subagent again."""
    task = {"description": "find it", "prompt": "Read notes.txt.", "subagent_type": "notes-reader"}
    edit = ("Write", {"file_path": "other.txt", "content": "x"})
    result = await run_with_store(tmp_path, scripted(("Task", task), edit, ("Task", task)))
    tasks = results_named(result.messages, "Task")
    assert [t.content.startswith("Not started again") for t in tasks] == [False, False]
    assert len(result.subagents) == 2


async def test_a_call_whose_result_changed_is_not_a_repeat(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\n")
    counter = {"n": 0}

    @tool(read_only=True, run_in_thread=False)
    def read_counter() -> str:
        """Read a counter that moves on each call."""
        counter["n"] += 1
        return f"counter at {counter['n']}"

    session = Session(
        model=scripted(*[("read_counter", {})] * 4),
        system_prompt="agent",
        tools=ToolRegistry([read_counter]),
        workspace=tmp_path,
    )
    result = await session.run("go")
    assert result.status == "completed"
    assert not any(
        "[loop guard]" in r.content for r in results_named(result.messages, "read_counter")
    )


async def test_failing_calls_with_different_arguments_are_not_a_loop(tmp_path: Path) -> None:
    reads = [("Read", {"file_path": f"missing-{i}.txt"}) for i in range(6)]
    result = await Runtime(cwd=tmp_path, model=scripted(*reads)).run("read them")
    assert result.status == "completed" and result.output == "done"
    failures = results_named(result.messages, "Read")
    assert len(failures) == 6 and all(r.is_error for r in failures)
    assert not any("[loop guard]" in r.content for r in failures)


@tool(read_only=True, run_in_thread=False)
def run_tests() -> str:
    """Run the test suite."""
    raise ToolError("1 test failed: test_parse (expected 3, got 2)")


@tool(run_in_thread=False, needs_approval=False)
def edit_code(change: str) -> str:
    """Change the code."""
    return f"applied: {change}"


async def test_a_side_effecting_success_between_failures_is_work_not_a_loop(
    tmp_path: Path,
) -> None:
    turns = [("run_tests", {}), ("edit_code", {"change": "try again"})] * 4
    session = Session(
        model=scripted(*turns, ("run_tests", {})),
        system_prompt="agent",
        tools=ToolRegistry([run_tests, edit_code]),
        workspace=tmp_path,
    )
    result = await session.run("fix the test")
    assert result.status == "completed", result.error
    assert len(results_named(result.messages, "run_tests")) == 5
    # an identical edit repeated is still noticed, as a repeated success
    edits = results_named(result.messages, "edit_code")
    assert ["[loop guard]" in r.content for r in edits] == [False, False, True, True]

    plain = Session(
        model=scripted(*[("run_tests", {})] * 5),
        system_prompt="agent",
        tools=ToolRegistry([run_tests, edit_code]),
        workspace=tmp_path,
    )
    stopped = await plain.run("fix the test")
    assert stopped.status == "failed"
    assert len(results_named(stopped.messages, "run_tests")) == 3


async def test_the_same_malformed_arguments_sent_again_are_the_same_call(tmp_path: Path) -> None:
    def broken(request: ModelRequest) -> ModelResponse:
        return small_model_turn("Read", 'file_path "notes.txt"')  # beyond repair

    session = Session(
        model=FunctionModel(broken),
        system_prompt="agent",
        tools=ToolRegistry(builtin_tools()),
        workspace=tmp_path,
    )
    result = await session.run("read")
    assert result.status == "failed"
    assert (result.error or "").startswith('Loop detected: Read file_path "notes.txt" failed 3')


async def test_three_identical_failing_calls_in_one_turn_stop_after_that_turn(
    tmp_path: Path,
) -> None:
    def parallel(request: ModelRequest) -> ModelResponse:
        calls = tuple(
            parse_tool_arguments(f"call_{i}", "Read", '{"file_path": "gone.txt"}') for i in range(3)
        )
        return ModelResponse(tool_calls=calls, stop_reason="tool_use")

    model = FunctionModel(parallel)
    result = await Runtime(cwd=tmp_path, model=model).run("read")
    assert result.status == "failed" and len(model.requests) == 1
    assert "failed 3 times" in (result.error or "")


# --- the setting --------------------------------------------------------------------------------


def write_config(project: Path, text: str) -> None:
    (project / ".git").mkdir(parents=True, exist_ok=True)
    config = project / ".subagents" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


@pytest.mark.parametrize("value", ["1", "-1", "1001", '"three"', "2.5"])
def test_a_bad_limit_is_a_config_error_naming_the_key(tmp_path: Path, value: str) -> None:
    project = tmp_path / "project"
    write_config(project, f"[subagents]\nmax_repeated_failures = {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(project, home=tmp_path / "home")
    assert "'subagents.max_repeated_failures'" in str(caught.value)
    assert "correct or remove" in (caught.value.hint or "")


def test_the_limit_is_read_from_the_project_config(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write_config(project, "[subagents]\nmax_repeated_failures = 5\n")
    assert load_config(project, home=tmp_path / "home").subagents.max_repeated_failures == 5
    assert SubagentsSettings().max_repeated_failures == 3


async def test_a_higher_limit_allows_more_failures_and_zero_never_stops(tmp_path: Path) -> None:
    missing = [("Read", {"file_path": "gone.txt"})] * 6
    five = Config(subagents=SubagentsSettings(max_repeated_failures=5))
    result = await Runtime(cwd=tmp_path, config=five, model=scripted(*missing)).run("read")
    assert result.status == "failed"
    assert len(results_named(result.messages, "Read")) == 5
    assert "failed 5 times" in (result.error or "")

    never = Config(subagents=SubagentsSettings(max_repeated_failures=0))
    result = await Runtime(cwd=tmp_path, config=never, model=scripted(*missing)).run("read")
    assert result.status == "completed"
    failures = results_named(result.messages, "Read")
    assert len(failures) == 6
    assert all("it failed the same way" in r.content for r in failures[1:])
    assert not any("The run stops" in r.content for r in failures)


# --- the guard on its own -----------------------------------------------------------------------


def failure(call: ToolCall, text: str = "no such file") -> ToolOutcome:
    return ToolOutcome(
        ToolResultMessage(call.id, call.name, text, is_error=True), call.name, 0, "error"
    )


def test_the_window_is_bounded_and_forgets_old_calls() -> None:
    guard = LoopGuard(limit=3)
    repeated = ToolCall("a", "Read", {"file_path": "gone.txt"})
    assert guard.observe(repeated, failure(repeated)) is None
    for index in range(WINDOW):
        other = ToolCall(f"o{index}", "Read", {"file_path": f"other-{index}.txt"})
        guard.observe(other, failure(other))
    assert len(guard._keys) == WINDOW
    assert guard.observe(repeated, failure(repeated)) is None  # the first one was forgotten
    finding = guard.observe(repeated, failure(repeated))
    assert finding is not None and finding.kind == "repeated_failure" and finding.count == 2


def test_the_same_call_failing_differently_is_not_the_same_failure() -> None:
    guard = LoopGuard(limit=3)
    call = ToolCall("a", "Bash", {"command": "make"})
    assert guard.observe(call, failure(call, "error: missing x")) is None
    assert guard.observe(call, failure(call, "error: missing y")) is None
    assert guard.observe(call, failure(call, "error: missing z")) is None


def test_argument_order_does_not_matter() -> None:
    guard = LoopGuard(limit=2)
    first = ToolCall("a", "Grep", {"pattern": "x", "path": "src"})
    second = ToolCall("b", "Grep", {"path": "src", "pattern": "x"})
    assert guard.observe(first, failure(first)) is None
    finding = guard.observe(second, failure(second))
    assert finding is not None and finding.stops
    error = finding.error_for("0123456789abcdef")
    assert isinstance(error, LoopDetectedError) and error.tool == "Grep"
    assert "subagents resume 01234567" in str(error)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["Read", "Grep"]), st.integers(0, 3), st.booleans()),
        max_size=60,
    )
)
def test_it_stops_exactly_when_a_failure_repeats_limit_times_within_the_window(
    steps: list[tuple[str, int, bool]],
) -> None:
    guard = LoopGuard(limit=3)
    history: list[tuple[str, int, bool]] = []
    for name, argument, failed in steps:
        call = ToolCall("c", name, {"x": argument})
        outcome = (
            failure(call)
            if failed
            else ToolOutcome(ToolResultMessage("c", name, "fine"), name, 0, "ok")
        )
        finding = guard.observe(call, outcome)
        history.append((name, argument, failed))
        recent = history[-WINDOW:]
        count = recent.count((name, argument, failed))
        if failed:
            expected = "loop_stopped" if count >= 3 else "repeated_failure" if count == 2 else None
        else:
            expected = "repeated_result" if count >= 3 else None
        assert (finding.kind if finding else None) == expected
        assert len(guard._keys) <= WINDOW


async def test_a_secret_in_a_looping_call_never_reaches_the_store_or_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hunter2-very-secret-value"
    monkeypatch.setenv("DEPLOY_API_KEY", secret)
    console = Console(file=io.StringIO(), width=300, color_system=None)
    bus = ev.EventBus([progress_printer(console)])
    missing = [("Read", {"file_path": f"{secret}.txt"})] * 3
    with open_store(tmp_path / "state.db") as store:
        result = await Runtime(cwd=tmp_path, model=scripted(*missing), store=store, events=bus).run(
            "read"
        )
        assert result.status == "failed" and result.task_id is not None
        task = store.get_task(result.task_id)
        traces = [t.model_dump(mode="json") for t in store.traces(result.task_id)]
    assert any(t["step_name"] == LOOP_STOPPED_STEP for t in traces)
    stored = json.dumps([task.model_dump(mode="json"), traces])
    assert secret not in stored and "[REDACTED]" in stored
    assert secret not in console.file.getvalue()  # type: ignore[attr-defined]
    assert "stopped, it loops" in console.file.getvalue()  # type: ignore[attr-defined]


# --- the command line ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_console_script_stops_the_loop_says_so_and_resumes(
    tmp_path: Path, isolated_home: Path
) -> None:
    from cli_project import Project, ScriptedServer

    with ScriptedServer() as server:
        project = Project(tmp_path / "project", server, isolated_home)
        for _ in range(5):  # more than it will be asked for
            server.call("TaskCancel", {"agent_id": "notes-reader"}, call_id="call_0")
        done = project.run(PROMPT)
        assert done.code != 0
        assert len(server.requests) == 3
        assert "main repeats itself: TaskCancel" in done.said
        assert 'Loop detected: TaskCancel {"agent_id": "notes-reader"} failed 3 times' in done.said
        task = project.only_task()
        assert task["status"] == "failed"
        assert f"subagents resume {task['id'][:8]}" in done.said

        server.turns.clear()
        server.say("I will stop cancelling. The secret word is in notes.txt.")
        resumed = project.cli("resume", task["id"][:8])
        assert resumed.code == 0, resumed.err
        assert "The secret word is in notes.txt." in resumed.out
        last_request = server.bodies()[-1]["messages"]
        assert last_request[-1]["role"] == "user"
        assert "stopped because you repeated a failing tool call" in last_request[-1]["content"]
        assert project.only_task()["status"] == "completed"


# --- the turn that must answer ------------------------------------------------------------------


def reads_until_told(file_path: str) -> FunctionModel:
    """A 1.5B model on llama.cpp read one file fifteen times, each time told it had the result:
    it reads until a turn offers no call, then answers from what it read."""

    def turn(request: ModelRequest) -> ModelResponse:
        if request.settings.tool_choice == "none":
            results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
            return text_response(f"It says: {results[-1].content.splitlines()[0]}")
        return small_model_turn("Read", json.dumps({"file_path": file_path}))

    return FunctionModel(turn)


async def test_a_call_repeated_after_the_note_makes_the_next_turn_answer(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    model = reads_until_told("calc.py")
    events = ev.EventBus()
    noticed: list[ev.LoopNoticed] = []
    events.subscribe(lambda e: noticed.append(e) if isinstance(e, ev.LoopNoticed) else None)
    result = await Runtime(cwd=tmp_path, model=model, events=events).run("review calc.py")

    assert result.status == "completed"
    assert result.output == "It says:      1\tdef add(a, b):"
    reads = results_named(result.messages, "Read")
    assert len(reads) == 4  # the note came with the third and was not heeded
    assert "Your next answer must be your reply" in reads[3].content
    assert "Your next answer must be" not in reads[2].content
    assert [r.settings.tool_choice for r in model.requests] == [None] * 4 + ["none"]
    assert model.requests[4].tools == model.requests[3].tools  # still described
    assert noticed[-1].message.endswith("its next turn must answer without a tool")


async def test_the_answer_turn_is_one_turn_and_the_session_may_call_tools_after_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    calls: list[str | None] = []

    def turn(request: ModelRequest) -> ModelResponse:
        calls.append(request.settings.tool_choice)
        if len(calls) <= 4:
            return small_model_turn("Read", '{"file_path": "a.txt"}')
        if len(calls) == 5:  # the answer turn: the model still calls, a runtime runs it
            return small_model_turn("Glob", '{"pattern": "*.txt"}')
        return text_response("done")

    result = await Runtime(cwd=tmp_path, model=FunctionModel(turn)).run("go")
    assert result.output == "done" and calls == [None, None, None, None, "none", None]
