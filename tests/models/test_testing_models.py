"""The test doubles in subagents.testing: scripted and function-driven models."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents import Runtime
from subagents.errors import ModelError, ScriptExhaustedError, ScriptNotConsumedError
from subagents.messages import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from subagents.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from subagents.testing import (
    FunctionModel,
    ScriptedModel,
    ScriptItem,
    text_response,
    tool_call_response,
    tool_calls_response,
)


def _request(messages: list[Message], system: str = "be brief") -> ModelRequest:
    return ModelRequest(system=system, messages=messages)


async def test_scripted_model_plays_script_in_order_and_stamps_name() -> None:
    model = ScriptedModel(
        [tool_call_response("Read", {"file_path": "a.txt"}), "done"], name="test:mine"
    )
    assert isinstance(model, Model)
    first = await model.request(_request([UserMessage("hi")]))
    assert first.tool_calls[0].name == "Read"
    assert first.tool_calls[0].arguments == {"file_path": "a.txt"}
    assert first.stop_reason == "tool_use"
    assert first.model_name == "test:mine"
    second = await model.request(_request([UserMessage("hi")]))
    assert second.text == "done"
    assert second.tool_calls == ()
    assert second.stop_reason == "end_turn"
    assert model.remaining == 0


async def test_scripted_model_snapshots_the_history_of_each_request() -> None:
    model = ScriptedModel([tool_call_response("LS", {}, id="c1"), "ok"])
    history: list[Message] = [UserMessage("list")]
    request = _request(history)
    response = await model.request(request)
    history.append(AssistantMessage(tool_calls=response.tool_calls))
    history.append(ToolResultMessage("c1", "LS", "a.txt"))
    await model.request(request)
    assert [len(seen.messages) for seen in model.requests] == [1, 3]
    assert isinstance(model.requests[0].messages, tuple)
    assert model.requests[1].messages[2] == ToolResultMessage("c1", "LS", "a.txt")


async def test_scripted_model_out_of_responses_says_what_to_do() -> None:
    model = ScriptedModel(["only"], name="test:short")
    await model.request(_request([UserMessage("1")]))
    with pytest.raises(ScriptExhaustedError) as caught:
        await model.request(_request([UserMessage("2")]))
    message = str(caught.value)
    assert "'test:short' ran out after 1 responses" in message
    assert "add more responses" in message
    assert len(model.requests) == 2


async def test_scripted_exception_is_raised_on_its_turn() -> None:
    model = ScriptedModel([ModelError("provider down", status_code=503), "recovered"])
    with pytest.raises(ModelError, match="provider down"):
        await model.request(_request([UserMessage("1")]))
    assert (await model.request(_request([UserMessage("2")]))).text == "recovered"


async def test_usage_is_deterministic_and_scripted_usage_is_kept() -> None:
    custom = ModelResponse(text="x", usage=Usage(input_tokens=10, output_tokens=3, requests=1))
    model = ScriptedModel(["abcdefghi", custom, text_response("")])
    first = await model.request(_request([]))
    assert first.usage == Usage(output_tokens=3, requests=1)
    second = await model.request(_request([]))
    assert second.usage == Usage(input_tokens=10, output_tokens=3, requests=1)
    assert second.usage is not custom.usage
    third = await model.request(_request([]))
    assert third.usage == Usage(output_tokens=0, requests=1)


async def test_same_response_object_reused_is_not_mutated() -> None:
    shared = text_response("again")
    model = ScriptedModel([shared, shared], name="test:reuse")
    one = await model.request(_request([]))
    two = await model.request(_request([]))
    assert one is not two
    assert shared.model_name == ""
    assert one.model_name == two.model_name == "test:reuse"


async def _collect(events: object) -> list[StreamEvent]:
    collected: list[StreamEvent] = []
    async for event in events:  # type: ignore[attr-defined]
        collected.append(event)
    return collected


async def test_stream_yields_text_pieces_then_one_completion() -> None:
    model = ScriptedModel(["the quick  brown fox", tool_call_response("Bash", {"command": "ls"})])
    events = await _collect(model.stream(_request([UserMessage("go")])))
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "the quick  brown fox"
    assert isinstance(events[-1], ResponseCompleted)
    assert events[-1].response.text == "the quick  brown fox"
    assert sum(isinstance(event, ResponseCompleted) for event in events) == 1
    tool_events = await _collect(model.stream(_request([UserMessage("go")])))
    assert len(tool_events) == 1
    assert isinstance(tool_events[0], ResponseCompleted)
    assert tool_events[0].response.tool_calls[0].arguments == {"command": "ls"}
    assert len(model.requests) == 2


def test_tool_call_helpers_make_unique_ids_unless_given() -> None:
    several = tool_calls_response([("Read", {"file_path": "a"}), ("Read", {"file_path": "b"})])
    ids = [call.id for call in several.tool_calls]
    assert len(set(ids)) == 2
    assert several.stop_reason == "tool_use"
    assert tool_call_response("Read", id="mine").tool_calls[0].id == "mine"
    assert tool_call_response("Read").tool_calls[0].arguments == {}
    assert tool_call_response("Read", text="reading").text == "reading"


async def test_function_model_sees_messages_and_tools_and_may_be_async() -> None:
    spec = ToolSpec("Echo", "echo text", {"type": "object", "properties": {}})

    def decide(request: ModelRequest) -> ModelResponse | str:
        if len(request.messages) == 1:
            return tool_call_response(request.tools[0].name, {"text": "hi"}, id="e1")
        return f"saw {len(request.messages)} messages"

    model = FunctionModel(decide)
    history: list[Message] = [UserMessage("start")]
    request = ModelRequest(system="s", messages=history, tools=(spec,))
    first = await model.request(request)
    assert first.tool_calls[0].name == "Echo"
    assert first.model_name == "test:function"
    history.append(AssistantMessage(tool_calls=first.tool_calls))
    history.append(ToolResultMessage("e1", "Echo", "hi"))
    assert (await model.request(request)).text == "saw 3 messages"
    assert [len(seen.messages) for seen in model.requests] == [1, 3]

    async def decide_async(request: ModelRequest) -> str:
        return request.system.upper()

    async_model = FunctionModel(decide_async, name="test:async")
    events = await _collect(async_model.stream(ModelRequest(system="loud", messages=[])))
    assert isinstance(events[-1], ResponseCompleted)
    assert events[-1].response.text == "LOUD"
    assert events[-1].response.model_name == "test:async"


async def test_a_function_model_told_not_to_keep_requests_holds_no_history() -> None:
    seen: list[int] = []

    def count(request: ModelRequest) -> str:
        seen.append(len(request.messages))
        return "ok"

    model = FunctionModel(count, keep_requests=False)
    for size in (1, 2):
        request = ModelRequest(system="s", messages=[UserMessage("m")] * size)
        assert (await model.request(request)).text == "ok"
    assert seen == [1, 2]
    assert model.requests == []


# -- a script the run did not finish ----------------------------------------------------------


async def test_a_fully_played_script_passes_assert_consumed() -> None:
    script: list[ScriptItem] = [tool_call_response("Read", {"file_path": "a.txt"}), "done"]
    model = ScriptedModel(script)
    assert model.unconsumed == tuple(script)
    await model.request(_request([UserMessage("hi")]))
    await model.request(_request([UserMessage("hi")]))
    assert model.unconsumed == ()
    model.assert_consumed()


async def test_leftover_responses_are_named_in_order_with_what_they_would_have_done() -> None:
    leftovers: list[ScriptItem] = [
        tool_call_response("Grep", {"pattern": "TODO"}),
        "the final answer",
        ModelError("provider down"),
        "four",
        "five",
    ]
    model = ScriptedModel(["first", *leftovers], name="test:long")
    await model.request(_request([UserMessage("hi")]))
    assert model.unconsumed == tuple(leftovers)
    with pytest.raises(ScriptNotConsumedError) as caught:
        model.assert_consumed()
    error = caught.value
    assert error.unconsumed == tuple(leftovers)
    assert error.message == (
        "ScriptedModel 'test:long' answered 1 requests and left 5 scripted responses unused: "
        "#2: call Grep({'pattern': 'TODO'}); #3: text 'the final answer'; "
        "#4: raise ModelError('provider down'); and 2 more"
    )
    assert error.hint is not None and ".requests" in error.hint


def test_a_long_leftover_is_previewed_not_printed_whole() -> None:
    model = ScriptedModel(["x" * 100_000])
    with pytest.raises(ScriptNotConsumedError) as caught:
        model.assert_consumed()
    assert len(caught.value.message) < 200


async def test_the_with_block_checks_the_script_on_a_clean_exit() -> None:
    with ScriptedModel(["one"]) as model:
        await model.request(_request([UserMessage("hi")]))
    unfinished = ScriptedModel(["one", "two"])
    with (
        pytest.raises(ScriptNotConsumedError, match="left 1 scripted responses unused"),
        unfinished,
    ):
        await unfinished.request(_request([UserMessage("hi")]))


def test_the_with_block_does_not_hide_the_failure_that_ended_it() -> None:
    with pytest.raises(KeyError), ScriptedModel(["never asked"]):
        raise KeyError("the test's own failure")


async def test_a_run_that_stops_early_is_reported_by_assert_consumed(tmp_path: Path) -> None:
    model = ScriptedModel(["done early", tool_call_response("Read", {"file_path": "a.txt"})])
    result = await Runtime(cwd=tmp_path, model=model).run("go")
    assert result.status == "completed" and result.output == "done early"
    with pytest.raises(ScriptNotConsumedError, match=r"#2: call Read\(\{'file_path': 'a.txt'\}\)"):
        model.assert_consumed()
