"""OpenAIChatModel through the real openai SDK against a real local Chat Completions server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fakes.http_server import PlannedReply
from fakes.openai_server import FakeOpenAIServer, chunk, completion, usage
from fakes.sleep import RecordingSleep
from subagents.errors import ModelError, ModelRetriesExhaustedError
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from subagents.models.base import (
    ModelRequest,
    ModelSettings,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from subagents.models.openai import OpenAIChatModel

SECRET = "sk-test-secret-value-123"
READ_TOOL = ToolSpec(
    "Read",
    "Read a file",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def model(server: FakeOpenAIServer, sleep: RecordingSleep) -> AsyncIterator[OpenAIChatModel]:
    built = OpenAIChatModel(
        "gpt-test", base_url=server.base_url, api_key=SECRET, timeout_seconds=5, sleep=sleep
    )
    yield built
    await built.aclose()


def _request(*messages: Any, tools: tuple[ToolSpec, ...] = (), **settings: Any) -> ModelRequest:
    return ModelRequest(
        system="You are terse.",
        messages=list(messages) or [UserMessage("hello")],
        tools=tools,
        settings=ModelSettings(**settings),
    )


async def _collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


async def test_plain_reply_maps_text_usage_and_request(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_text("Hi there.", usage_body=usage(prompt=12, completion_tokens=3, cached=4))
    response = await model.request(_request(UserMessage("hello"), temperature=0.2, max_tokens=64))
    assert response.text == "Hi there."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    assert response.model_name == "openai:gpt-test"
    assert response.usage == Usage(
        input_tokens=12, output_tokens=3, cache_read_tokens=4, requests=1
    )
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    body = sent.json()
    assert body["model"] == "gpt-test"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello"},
    ]
    assert "tools" not in body
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 64  # a custom base_url: the widely supported name


async def test_history_and_tools_are_mapped_to_chat_format(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_text("done")
    calls = (
        ToolCall("c1", "Read", {"file_path": "a.txt"}),
        ToolCall("c2", "Read", raw_arguments="{oops", arguments_error="bad json"),
    )
    await model.request(
        _request(
            UserMessage("read a and b"),
            AssistantMessage("Reading.", tool_calls=calls),
            ToolResultMessage("c1", "Read", "alpha"),
            ToolResultMessage("c2", "Read", "arguments were not JSON", is_error=True),
            AssistantMessage("Both read."),
            UserMessage("thanks"),
            tools=(READ_TOOL,),
        )
    )
    body = server.requests[0].json()
    assert body["messages"][1:] == [
        {"role": "user", "content": "read a and b"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"file_path": "a.txt"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "Read", "arguments": "{oops"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: arguments were not JSON"},
        {"role": "assistant", "content": "Both read."},
        {"role": "user", "content": "thanks"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "Read",
                "description": "Read a file",
                "parameters": READ_TOOL.parameters,
            },
        }
    ]


async def test_several_tool_calls_in_one_turn(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_tool_calls(
        [
            ("call_a", "Read", '{"file_path": "a.txt"}'),
            ("call_b", "Grep", '{"pattern": "TODO", "path": "src"}'),
            ("call_c", "LS", ""),
        ]
    )
    response = await model.request(_request(tools=(READ_TOOL,)))
    assert response.stop_reason == "tool_use"
    assert response.tool_calls == (
        ToolCall("call_a", "Read", {"file_path": "a.txt"}),
        ToolCall("call_b", "Grep", {"pattern": "TODO", "path": "src"}),
        ToolCall("call_c", "LS", {}),
    )


async def test_malformed_tool_arguments_become_arguments_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_tool_calls([("bad", "Read", 'file_path "a.txt"'), ("list", "Read", '["a.txt"]')])
    response = await model.request(_request())
    broken, listed = response.tool_calls
    assert broken.arguments == {}
    assert broken.raw_arguments == 'file_path "a.txt"'
    assert broken.arguments_error is not None
    assert "not valid JSON" in broken.arguments_error
    assert listed.arguments == {}
    assert listed.arguments_error == "arguments must be a JSON object, got list"


async def test_streamed_text_yields_deltas_then_the_whole_response(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_stream(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo!"}),
            chunk(finish_reason="stop"),
            chunk(usage_body=usage(prompt=9, completion_tokens=2)),
        ]
    )
    events = await _collect(model.stream(_request()))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["Hel", "lo!"]
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert final.response.text == "Hello!"
    assert final.response.stop_reason == "end_turn"
    assert final.response.usage == Usage(input_tokens=9, output_tokens=2, requests=1)
    body = server.requests[0].json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_a_stream_without_usage_is_counted_by_an_estimate_said_as_one(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    # llama-cpp-python's server streams no usage, whatever stream_options asks
    answer = "word " * 40
    server.reply_stream(
        [chunk({"role": "assistant", "content": answer}), chunk(finish_reason="stop")]
    )
    events = await _collect(model.stream(_request()))
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    response = final.response
    assert response.usage_estimated and response.usage.requests == 1
    assert response.usage.output_tokens == len(answer) // 4  # four characters a token
    assert response.usage.input_tokens > 0  # never counted as free: a budget sees it
    server.reply_stream(
        [chunk({"content": "hi"}), chunk(finish_reason="stop"), chunk(usage_body=usage())]
    )
    reported = (await _collect(model.stream(_request())))[-1]
    assert isinstance(reported, ResponseCompleted) and not reported.response.usage_estimated


async def test_a_traced_run_says_its_token_counts_are_estimates(
    server: FakeOpenAIServer, model: OpenAIChatModel, tmp_path: Path
) -> None:
    from subagents.cli.trace import render_tree
    from subagents.runtime.runtime import Runtime
    from subagents.store.sqlite import open_store
    from subagents.tracing.view import build_trace

    answer = "The files are a.py, b.py and c.py; each holds one class."
    body = completion(answer)
    del body["usage"]  # a server that reports no counts at all
    server.plan(PlannedReply(json_body=body))
    with open_store(tmp_path / "state.db") as store:
        result = await Runtime(cwd=tmp_path, model=model, store=store).run("hi")
        assert result.task_id is not None
        trace = build_trace(store, result.task_id)
    assert trace.usage_estimated and trace.output_tokens == -(-len(answer) // 4)
    console = Console(width=200, record=True)
    console.print(render_tree(trace))
    assert "out tokens (estimated)" in console.export_text()


async def test_streamed_tool_calls_are_assembled_by_index(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    def piece(index: int, name: str | None = None, arguments: str = "") -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
        if name is not None:
            call.update(id=f"t{index}", type="function")
            call["function"]["name"] = name
        return {"tool_calls": [call]}

    server.reply_stream(
        [
            chunk(piece(0, "Read")),
            chunk(piece(1, "Grep", '{"pa')),
            chunk(piece(0, arguments='{"file_path": ')),
            chunk(piece(1, arguments='ttern": "x"}')),
            chunk(piece(0, arguments='"a.txt"}')),
            chunk(piece(2, "LS", "{]")),
            chunk(finish_reason="tool_calls"),
            chunk(usage_body=usage()),
        ]
    )
    events = await _collect(model.stream(_request()))
    assert len(events) == 1
    final = events[0]
    assert isinstance(final, ResponseCompleted)
    first, second, third = final.response.tool_calls
    assert first == ToolCall("t0", "Read", {"file_path": "a.txt"})
    assert second == ToolCall("t1", "Grep", {"pattern": "x"})
    assert third.id == "t2"
    assert third.arguments_error is not None
    assert third.raw_arguments == "{]"
    assert final.response.stop_reason == "tool_use"


async def test_429_waits_as_retry_after_says_then_succeeds(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(429, "Rate limit reached", headers={"Retry-After": "7"})
    server.reply_error(429, "Rate limit reached", headers={"retry-after-ms": "250"})
    server.reply_text("finally")
    response = await model.request(_request())
    assert response.text == "finally"
    assert sleep.waits == [7.0, 0.25]
    assert len(server.requests) == 3


async def test_500_then_success_backs_off_with_jitter(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(500, "internal")
    server.reply_error(503, "unavailable")
    server.reply_text("ok")
    assert (await model.request(_request())).text == "ok"
    assert len(sleep.waits) == 2
    assert 0.0 <= sleep.waits[0] <= 0.5
    assert 0.0 <= sleep.waits[1] <= 1.0


async def test_500_until_retries_run_out(server: FakeOpenAIServer, sleep: RecordingSleep) -> None:
    model = OpenAIChatModel(
        "gpt-test", base_url=server.base_url, api_key=SECRET, max_retries=2, sleep=sleep
    )
    for _ in range(3):
        server.reply_error(500, "the server had an error")
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    message = str(caught.value)
    assert "gave up after 3 attempts" in message
    assert "the server had an error" in message
    assert "max_retries" in message
    assert caught.value.status_code == 500
    assert len(server.requests) == 3
    assert len(sleep.waits) == 2


async def test_401_is_not_retried_and_says_which_key_to_check(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(401, f"Incorrect API key provided: {SECRET}.")
    with pytest.raises(ModelError) as caught:
        await model.request(_request())
    error = caught.value
    assert not isinstance(error, ModelRetriesExhaustedError)
    assert error.status_code == 401
    assert "Incorrect API key provided" in str(error)
    assert "OPENAI_API_KEY" in str(error)
    assert SECRET not in str(error)
    assert SECRET not in repr(model)
    assert len(server.requests) == 1
    assert sleep.waits == []


async def test_400_surfaces_the_provider_message(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_error(400, "Invalid value for 'temperature'")
    with pytest.raises(ModelError, match="Invalid value for 'temperature'") as caught:
        await model.request(_request())
    assert caught.value.status_code == 400
    assert caught.value.hint is not None
    assert len(server.requests) == 1


async def test_connection_drop_mid_stream_raises_model_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.reply_stream(
        [chunk({"content": "Partial "}), chunk({"content": "answer"}), chunk(finish_reason="stop")],
        drop_after=2,
    )
    seen: list[StreamEvent] = []
    with pytest.raises(ModelError, match="interrupted after 2 streamed events"):
        async for event in model.stream(_request()):
            seen.append(event)
    assert [event.text for event in seen if isinstance(event, TextDelta)] == [
        "Partial ",
        "answer",
    ]
    assert len(server.requests) == 1


async def test_drop_before_anything_was_yielded_is_retried(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_stream([chunk({"role": "assistant"}), chunk({"content": "x"})], drop_after=1)
    server.reply_stream([chunk({"content": "whole"}), chunk(finish_reason="stop")])
    events = await _collect(model.stream(_request()))
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert final.response.text == "whole"
    assert len(sleep.waits) == 1
    assert len(server.requests) == 2


async def test_streamed_error_status_before_first_chunk_is_retried(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(429, "slow down", headers={"retry-after": "1"})
    server.reply_stream([chunk({"content": "fine"}), chunk(finish_reason="stop")])
    events = await _collect(model.stream(_request()))
    assert isinstance(events[-1], ResponseCompleted)
    assert events[-1].response.text == "fine"
    assert sleep.waits == [1.0]


async def test_a_timed_out_answer_is_not_retried(
    server: FakeOpenAIServer, sleep: RecordingSleep
) -> None:
    model = OpenAIChatModel(
        "gpt-test", base_url=server.base_url, api_key=SECRET, timeout_seconds=0.3, sleep=sleep
    )
    server.hang()
    server.reply_text("never asked for")
    with pytest.raises(ModelError) as caught:
        await model.request(_request())
    await model.aclose()
    assert not isinstance(caught.value, ModelRetriesExhaustedError)
    assert "[providers.openai] timeout_seconds" in str(caught.value)
    assert len(server.requests) == 1
    assert sleep.waits == []


async def test_unreachable_server_exhausts_retries_naming_the_url(sleep: RecordingSleep) -> None:
    with FakeOpenAIServer() as closed:
        url = closed.base_url
    model = OpenAIChatModel("llama3", provider="ollama", base_url=url, max_retries=1, sleep=sleep)
    assert model.name == "ollama:llama3"
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    assert url in str(caught.value)
    assert "gave up after 2 attempts" in str(caught.value)


async def test_ollama_needs_no_key(server: FakeOpenAIServer, monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAIChatModel("llama3", provider="ollama", base_url=server.base_url)
    server.reply_text("local answer")
    assert (await model.request(_request())).text == "local answer"
    await model.aclose()
    assert server.requests[0].json()["model"] == "llama3"


def test_official_openai_without_key_names_the_variable(monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    from subagents.errors import ModelConfigurationError

    with pytest.raises(ModelConfigurationError) as caught:
        OpenAIChatModel("gpt-4o")
    assert "OPENAI_API_KEY" in str(caught.value)
    assert "api_key_env" in str(caught.value)


def test_a_native_model_does_not_load_the_text_tool_call_reader() -> None:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from subagents.models.base import ModelRequest, ModelResponse\n"
        "from subagents.messages import UserMessage\n"
        "from subagents.models.openai import OpenAIChatModel\n"
        "model = OpenAIChatModel('m', base_url='http://127.0.0.1:9/v1', api_key='k')\n"
        "request = ModelRequest(system='s', messages=[UserMessage('hi')])\n"
        "model._params(request)\n"
        "response = ModelResponse(text='hello')\n"
        "assert model._read_text_calls(response, request) is response\n"
        "print(json.dumps([model.tool_calls, 'subagents.models.text_tools' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["native", False]
