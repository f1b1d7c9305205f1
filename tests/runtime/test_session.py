"""The agent loop: turns, tool calls, errors the model can correct, limits, cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from subagents.errors import ModelError
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.session import Session
from subagents.testing import (
    FunctionModel,
    ScriptedModel,
    tool_call_response,
    tool_calls_response,
)
from subagents.tools.base import ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.decorator import tool
from subagents.tools.permissions import PermissionPolicy


@tool
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@tool
async def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


def make_session(model: ScriptedModel | FunctionModel, tmp_path: Path, **kwargs: object) -> Session:
    tools = kwargs.pop("tools", ToolRegistry([add, explode]))
    assert isinstance(tools, ToolRegistry)
    return Session(model=model, system_prompt="You add.", tools=tools, workspace=tmp_path, **kwargs)  # type: ignore[arg-type]


def tool_results(session: Session) -> list[ToolResultMessage]:
    return [m for m in session.messages if isinstance(m, ToolResultMessage)]


async def test_multi_turn_run_reads_greps_and_edits_real_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def greet():\n    return 'helo'\n")
    (tmp_path / "src" / "util.py").write_text("X = 1\n")
    model = ScriptedModel(
        [
            tool_call_response("Grep", {"pattern": "helo", "path": "src"}),
            tool_call_response("Read", {"file_path": "src/app.py"}),
            tool_call_response(
                "Edit",
                {"file_path": "src/app.py", "old_string": "'helo'", "new_string": "'hello'"},
            ),
            "Fixed the typo in src/app.py.",
        ]
    )
    session = make_session(
        model,
        tmp_path,
        tools=ToolRegistry(builtin_tools()),
        permissions=PermissionPolicy("acceptEdits"),
    )
    result = await session.run("Fix the greeting typo.")

    assert result.status == "completed"
    assert result.output == "Fixed the typo in src/app.py."
    model.assert_consumed()
    assert (tmp_path / "src" / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    grep_result, read_result, edit_result = tool_results(session)
    assert "app.py" in grep_result.content and "util.py" not in grep_result.content
    assert "return 'helo'" in read_result.content
    assert not edit_result.is_error
    # the model saw the tool results of earlier turns
    last_request = model.requests[-1]
    assert [type(m).__name__ for m in last_request.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]
    assert result.turns == 4 and result.tool_calls == 3
    assert {spec.name for spec in last_request.tools} >= {"Read", "Grep", "Edit", "Bash"}


async def test_bad_arguments_become_an_error_the_model_corrects(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_response("add", {"a": "not a number", "b": 2}),
            tool_call_response("add", {"a": 1, "b": 2}),
            "3",
        ]
    )
    session = make_session(model, tmp_path)
    result = await session.run("1+2?")
    first, second = tool_results(session)
    assert first.is_error and "a" in first.content
    assert not second.is_error and second.content == "3"
    assert result.status == "completed" and result.output == "3"


async def test_unknown_tool_and_raising_tool_become_errors(tmp_path: Path) -> None:
    model = ScriptedModel([tool_calls_response([("nope", {}), ("explode", {})]), "gave up"])
    session = make_session(model, tmp_path)
    result = await session.run("go")
    unknown, exploded = tool_results(session)
    assert unknown.is_error and "nope" in unknown.content and "add" in unknown.content
    assert exploded.is_error and "kaboom" in exploded.content
    assert result.status == "completed"
    model.assert_consumed()


async def test_malformed_json_arguments_reach_the_model_as_an_error(tmp_path: Path) -> None:
    from subagents.messages import ToolCall

    bad = ToolCall("c1", "add", {}, raw_arguments="{a: 1", arguments_error="Expecting property")
    model = ScriptedModel([ModelResponse(tool_calls=(bad,)), "ok"])
    session = make_session(model, tmp_path)
    await session.run("go")
    (result,) = tool_results(session)
    assert result.is_error and "JSON" in result.content
    model.assert_consumed()


async def test_turn_limit_returns_partial_output_marked_as_such(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call_response("add", {"a": 1, "b": 1}, text=f"step {i}") for i in range(5)]
    )
    session = make_session(model, tmp_path, max_turns=3)
    result = await session.run("loop")
    assert result.status == "max_turns"
    assert not result.success
    assert result.output == "step 0\n\nstep 1\n\nstep 2"
    assert "max_turns" in (result.error or "")
    assert model.remaining == 2


async def test_model_error_fails_the_run_without_losing_output(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_response("add", {"a": 1, "b": 1}, text="working on it"),
            ModelError("provider is down", status_code=503),
        ]
    )
    session = make_session(model, tmp_path)
    result = await session.run("go")
    assert result.status == "failed"
    assert result.output == "working on it"
    assert "provider is down" in (result.error or "")
    assert session.status == "error"


async def test_tool_calls_of_one_turn_run_concurrently(tmp_path: Path) -> None:
    # each call waits for the other one to have started: a sequential loop would deadlock
    started: dict[str, asyncio.Event] = {"x": asyncio.Event(), "y": asyncio.Event()}

    @tool
    async def rendezvous(me: str, other: str) -> str:
        """Wait for the other call."""
        started[me].set()
        await asyncio.wait_for(started[other].wait(), timeout=5)
        return me

    model = ScriptedModel(
        [
            tool_calls_response(
                [
                    ("rendezvous", {"me": "x", "other": "y"}),
                    ("rendezvous", {"me": "y", "other": "x"}),
                ]
            ),
            "both met",
        ]
    )
    session = make_session(model, tmp_path, tools=ToolRegistry([rendezvous]))
    result = await session.run("meet")
    assert [m.content for m in tool_results(session)] == ["x", "y"]
    assert result.output == "both met"


async def test_usage_accumulates_across_turns(tmp_path: Path) -> None:
    from subagents.messages import Usage

    def turn(request: ModelRequest) -> ModelResponse:
        done = any(isinstance(m, ToolResultMessage) for m in request.messages)
        usage = Usage(input_tokens=10, output_tokens=5, requests=1)
        if done:
            return ModelResponse(text="done", usage=usage)
        return ModelResponse(
            tool_calls=tool_call_response("add", {"a": 1, "b": 2}).tool_calls, usage=usage
        )

    session = make_session(FunctionModel(turn), tmp_path)
    result = await session.run("go")
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (
        20,
        10,
        2,
    )


async def test_events_describe_the_run_in_order(tmp_path: Path) -> None:
    seen: list[ev.Event] = []
    bus = EventBus([seen.append])
    model = ScriptedModel([tool_call_response("add", {"a": 2, "b": 2}), "4"])
    session = make_session(model, tmp_path, events=bus)
    await session.run("2+2")
    kinds = [e.kind for e in seen]
    assert kinds == [
        "session_started",
        "turn_started",
        "model_responded",
        "tool_call_started",
        "tool_call_finished",
        "turn_started",
        "model_responded",
        "session_finished",
    ]
    finished = seen[-1]
    assert isinstance(finished, ev.SessionFinished) and finished.result.output == "4"
    tool_done = seen[4]
    assert isinstance(tool_done, ev.ToolCallFinished) and tool_done.outcome.status == "ok"


async def test_a_broken_event_handler_does_not_break_the_run(tmp_path: Path) -> None:
    def broken(event: ev.Event) -> None:
        raise ValueError("ui crashed")

    bus = EventBus([broken])
    session = make_session(ScriptedModel(["fine"]), tmp_path, events=bus)
    result = await session.run("hi")
    assert result.output == "fine"
    assert bus.handler_errors and isinstance(bus.handler_errors[0], ValueError)


async def test_streaming_emits_text_deltas_that_add_up(tmp_path: Path) -> None:
    deltas: list[str] = []

    def collect(event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):
            deltas.append(event.text)

    session = make_session(
        ScriptedModel(["streamed answer in pieces"]),
        tmp_path,
        events=EventBus([collect]),
        stream=True,
    )
    result = await session.run("hi")
    assert "".join(deltas) == "streamed answer in pieces" == result.output
    assert len(deltas) > 1


async def test_cancellation_stops_the_loop_and_reports_it(tmp_path: Path) -> None:
    gate = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Blocks."""
        gate.set()
        await asyncio.sleep(3600)
        return "never"

    seen: list[ev.Event] = []
    session = make_session(
        ScriptedModel([tool_call_response("wait_forever", {})]),
        tmp_path,
        tools=ToolRegistry([wait_forever]),
        events=EventBus([seen.append]),
    )
    task = asyncio.create_task(session.run("go"))
    await asyncio.wait_for(gate.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.status == "cancelled"
    finished = [e for e in seen if isinstance(e, ev.SessionFinished)]
    assert len(finished) == 1 and finished[0].result.status == "cancelled"


async def test_history_is_kept_between_runs_of_one_session(tmp_path: Path) -> None:
    model = ScriptedModel(["first", "second"])
    session = make_session(model, tmp_path)
    await session.run("one")
    result = await session.run("two")
    assert result.output == "second"
    assert [type(m) for m in model.requests[1].messages] == [
        UserMessage,
        AssistantMessage,
        UserMessage,
    ]


async def test_notifications_reach_the_model_on_its_next_turn(tmp_path: Path) -> None:
    session = make_session(ScriptedModel(["ack"]), tmp_path)
    session.notify("background job finished")
    model = session.model
    assert isinstance(model, ScriptedModel)
    await session.run("hello")
    sent = model.requests[0].messages
    assert isinstance(sent[-1], UserMessage) and sent[-1].content == "background job finished"


async def test_ids_given_to_calls_without_one_are_derived_and_a_replay_gets_them_again(
    tmp_path: Path,
) -> None:
    """Servers that send no ids (or `call_0` every turn) get ids derived from the session, the
    turn and the call's place in it: a session replayed from the same point finds the same ids
    (a subagent's id derives from its Task call's, so a random id would start another)."""

    def script() -> ScriptedModel:
        idless = (ToolCall("", "add", {"a": 1, "b": 2}), ToolCall("", "add", {"a": 3, "b": 4}))
        return ScriptedModel(
            [
                ModelResponse(tool_calls=idless, stop_reason="tool_use"),
                tool_call_response("add", {"a": 5, "b": 6}, id="call_0"),
                tool_call_response("add", {"a": 7, "b": 8}, id="call_0"),
                "done",
            ]
        )

    def ids(session: Session) -> list[str]:
        return [m.tool_call_id for m in tool_results(session)]

    first = make_session(script(), tmp_path, agent_id="agent-1")
    replay = make_session(script(), tmp_path, agent_id="agent-1")
    other = make_session(script(), tmp_path, agent_id="agent-2")
    for session in (first, replay, other):
        await session.run("go")

    assert ids(first) == ids(replay)
    assert len(set(ids(first))) == 4
    assert ids(first)[2] == "call_0"  # the model's own id, the first time it is used
    assert set(ids(first)[:2] + ids(first)[3:]).isdisjoint(ids(other))  # derived: per session
