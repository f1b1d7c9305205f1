"""The SDK models send the body they build through the client's low-level ``post`` (issue 14):
what reaches the server is that body and the SDK's own headers, the SDK's errors still reach
the retry layer as the SDK's classes, and a history sent turn after turn (its conversion reused
from the turns before) is sent as it is now. Real openai / anthropic SDKs, real local HTTP
servers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from fakes.anthropic_server import (
    FakeAnthropicServer,
    cached,
    stream_events,
    text_block,
    tool_use_block,
)
from fakes.http_server import PlannedReply, sse_frame
from fakes.openai_server import FakeOpenAIServer, chunk, completion, usage
from fakes.sleep import RecordingSleep
from subagents.errors import ModelError, ModelRetriesExhaustedError
from subagents.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from subagents.models.anthropic import AnthropicModel
from subagents.models.base import (
    ModelRequest,
    ModelSettings,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from subagents.models.openai import OpenAIChatModel
from subagents.models.server import LOCAL_MAX_OUTPUT_TOKENS, LOCAL_TEMPERATURE
from subagents.runtime.session import Session
from subagents.tools.base import ToolRegistry
from subagents.tools.decorator import tool

SECRET = "sk-post-secret-0123456789"
ECHO = ToolSpec(
    "echo",
    "Echo the input.",
    {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def claude_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
async def gpt(server: FakeOpenAIServer, sleep: RecordingSleep) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        "gpt-test",
        base_url=server.base_url,
        api_key=SECRET,
        timeout_seconds=5,
        max_retries=1,
        sleep=sleep,
    )
    yield model
    await model.aclose()


@pytest.fixture
async def claude(
    claude_server: FakeAnthropicServer, sleep: RecordingSleep
) -> AsyncIterator[AnthropicModel]:
    model = AnthropicModel(
        "claude-test",
        base_url=claude_server.base_url,
        api_key=SECRET,
        timeout_seconds=5,
        max_retries=1,
        sleep=sleep,
    )
    yield model
    await model.aclose()


def _request(*messages: Message, **settings: Any) -> ModelRequest:
    return ModelRequest(
        system="Be brief.",
        messages=list(messages) or [UserMessage("hello")],
        tools=(ECHO,),
        settings=ModelSettings(**settings),
    )


def _call(index: int) -> AssistantMessage:
    return AssistantMessage("", tool_calls=(ToolCall(f"c{index}", "echo", {"x": str(index)}),))


def _result(index: int) -> ToolResultMessage:
    return ToolResultMessage(f"c{index}", "echo", f"ok:{index}")


def _openai_call(index: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",  # a local server: llama-cpp-python's refuses null
        "tool_calls": [
            {
                "id": f"c{index}",
                "type": "function",
                "function": {"name": "echo", "arguments": json.dumps({"x": str(index)})},
            }
        ],
    }


def _openai_result(index: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{index}", "content": f"ok:{index}"}


SYSTEM = {"role": "system", "content": "Be brief."}
HELLO = {"role": "user", "content": "hello"}
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": ECHO.description,
            "parameters": ECHO.parameters,
        },
    }
]


async def _collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


# -- what reaches the server --------------------------------------------------------------------


async def test_openai_sends_the_body_it_built_and_the_sdks_headers(
    server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    server.reply_text("hi")
    hello = UserMessage("hello")
    await gpt.request(_request(hello, temperature=0.5, max_tokens=99, effort="high"))
    sent = server.requests[0]
    assert sent.method == "POST"
    assert sent.path == "/v1/chat/completions"
    assert sent.json() == {
        "model": "gpt-test",
        "messages": [SYSTEM, HELLO],
        "tools": OPENAI_TOOLS,
        "temperature": 0.5,
        "max_tokens": 99,
        "reasoning_effort": "high",
    }
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert sent.headers["x-stainless-lang"] == "python"


async def test_an_openai_stream_asks_for_a_stream_with_usage(
    server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    server.reply_stream(
        [chunk({"content": "He"}), chunk({"content": "y"}), chunk(finish_reason="stop")]
    )
    events = await _collect(gpt.stream(_request()))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["He", "y"]
    assert server.requests[0].json() == {
        "model": "gpt-test",
        "messages": [SYSTEM, HELLO],
        "tools": OPENAI_TOOLS,
        "temperature": LOCAL_TEMPERATURE,  # a server on 127.0.0.1 is a local one
        "max_tokens": LOCAL_MAX_OUTPUT_TOKENS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_anthropic_sends_the_body_it_built_and_the_sdks_headers(
    claude_server: FakeAnthropicServer, claude: AnthropicModel
) -> None:
    claude_server.reply_message([text_block("hi")])
    await claude.request(_request(UserMessage("hello"), temperature=0.25, max_tokens=77))
    sent = claude_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.json() == {
        "model": "claude-test",
        "messages": [{"role": "user", "content": [cached({"type": "text", "text": "hello"})]}],
        "max_tokens": 77,
        "system": [cached({"type": "text", "text": "Be brief."})],
        "tools": [
            {"name": "echo", "description": ECHO.description, "input_schema": ECHO.parameters}
        ],
        "temperature": 0.25,
    }
    assert SECRET in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert sent.headers["anthropic-version"]
    assert float(sent.headers["x-stainless-timeout"]) == 5.0  # the timeout, as create() sent it
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["user-agent"].startswith("AsyncAnthropic/Python")


async def test_an_anthropic_stream_assembles_a_tool_call(
    claude_server: FakeAnthropicServer, claude: AnthropicModel
) -> None:
    events = stream_events(
        [
            {"type": "text", "pieces": ["Look", "ing."]},
            {"type": "tool_use", "id": "t1", "name": "echo", "json_pieces": ['{"x": ', '"a"}']},
        ],
        stop_reason="tool_use",
    )
    claude_server.reply_stream(events)
    seen = await _collect(claude.stream(_request()))
    assert [event.text for event in seen if isinstance(event, TextDelta)] == ["Look", "ing."]
    final = seen[-1]
    assert isinstance(final, ResponseCompleted)
    assert final.response.tool_calls == (ToolCall("t1", "echo", {"x": "a"}),)
    assert final.response.stop_reason == "tool_use"
    assert claude_server.requests[0].json()["stream"] is True


# -- a history sent turn after turn ---------------------------------------------------------------


async def test_a_session_sends_its_whole_history_every_turn(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, tmp_path: Path
) -> None:
    @tool(name="echo")
    def echo(x: str) -> str:
        """Echo the input."""
        return f"ok:{x}"

    for index in range(2):
        server.reply_tool_calls([(f"c{index}", "echo", json.dumps({"x": str(index)}))])
    server.reply_text("done")
    session = Session(
        model=gpt, system_prompt="Be brief.", tools=ToolRegistry([echo]), workspace=tmp_path
    )
    result = await session.run("hello")
    assert result.output == "done"
    sent = [request.json()["messages"] for request in server.requests]
    assert sent == [
        [SYSTEM, HELLO],
        [SYSTEM, HELLO, _openai_call(0), _openai_result(0)],
        [SYSTEM, HELLO, _openai_call(0), _openai_result(0), _openai_call(1), _openai_result(1)],
    ]


async def test_histories_of_several_sessions_and_rewritten_ones_are_sent_as_they_are(
    server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    first, second = UserMessage("hello"), UserMessage("other")
    histories: list[list[Message]] = [
        [first, _call(0), _result(0)],
        [second],
        [first, _call(0), _result(0), _call(1), _result(1)],
        [first, _call(2), _result(2)],  # the same start, a different middle (a compaction)
        [second, _call(3), _result(3)],
        [first, _call(2), _result(2)],
    ]
    for _ in histories:
        server.reply_text("ok")
    for history in histories:
        await gpt.request(_request(*history))
    other = {"role": "user", "content": "other"}
    assert [request.json()["messages"][1:] for request in server.requests] == [
        [HELLO, _openai_call(0), _openai_result(0)],
        [other],
        [HELLO, _openai_call(0), _openai_result(0), _openai_call(1), _openai_result(1)],
        [HELLO, _openai_call(2), _openai_result(2)],
        [other, _openai_call(3), _openai_result(3)],
        [HELLO, _openai_call(2), _openai_result(2)],
    ]


async def test_anthropic_merges_tool_results_afresh_each_turn(
    claude_server: FakeAnthropicServer, claude: AnthropicModel
) -> None:
    hello = UserMessage("hello")
    two_calls = AssistantMessage(
        "", tool_calls=(ToolCall("c0", "echo", {"x": "0"}), ToolCall("c1", "echo", {"x": "1"}))
    )
    histories: list[list[Message]] = [
        [hello, two_calls, _result(0)],
        [hello, two_calls, _result(0), _result(1)],
        [hello, two_calls, _result(0), _result(1)],
    ]
    for _ in histories:
        claude_server.reply_message([text_block("ok")])
    for history in histories:
        await claude.request(_request(*history))

    def result(index: int) -> dict[str, Any]:
        return {
            "type": "tool_result",
            "tool_use_id": f"c{index}",
            "content": f"ok:{index}",
            "is_error": False,
        }

    sent = [request.json()["messages"] for request in claude_server.requests]
    calls = [tool_use_block(f"c{index}", "echo", {"x": str(index)}) for index in range(2)]
    start = [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": calls},
    ]
    # the breakpoint moves to the newest block; the shared blocks before it are left as they were
    both = [*start, {"role": "user", "content": [result(0), cached(result(1))]}]
    assert sent == [[*start, {"role": "user", "content": [cached(result(0))]}], both, both]


# -- errors keep the SDK's classes ----------------------------------------------------------------


async def test_429_waits_as_told_and_ends_as_the_sdks_rate_limit_error(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(429, "slow down", headers={"Retry-After": "7"})
    server.reply_error(429, "slow down", headers={"Retry-After": "7"})
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await gpt.request(_request())
    assert sleep.waits == [7.0]
    assert caught.value.status_code == 429
    assert isinstance(caught.value.__cause__, openai.RateLimitError)
    assert len(server.requests) == 2


async def test_500_is_retried_as_the_sdks_server_error(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(500, "oops")
    server.reply_error(500, "oops again")
    with pytest.raises(ModelRetriesExhaustedError, match="oops again") as caught:
        await gpt.request(_request())
    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert len(sleep.waits) == 1


async def test_401_is_the_sdks_authentication_error_and_is_not_retried(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.reply_error(401, "bad key")
    with pytest.raises(ModelError) as caught:
        await gpt.request(_request())
    assert not isinstance(caught.value, ModelRetriesExhaustedError)
    assert isinstance(caught.value.__cause__, openai.AuthenticationError)
    assert caught.value.hint is not None and "OPENAI_API_KEY" in caught.value.hint
    assert sleep.waits == []


async def test_anthropics_429_is_the_sdks_rate_limit_error(
    claude_server: FakeAnthropicServer, claude: AnthropicModel, sleep: RecordingSleep
) -> None:
    claude_server.reply_error(
        429, "slow", error_type="rate_limit_error", headers={"retry-after": "3"}
    )
    claude_server.reply_message([text_block("fine")])
    assert (await claude.request(_request())).text == "fine"
    assert sleep.waits == [3.0]
    claude_server.reply_error(401, "who are you", error_type="authentication_error")
    with pytest.raises(ModelError) as caught:
        await claude.request(_request())
    assert isinstance(caught.value.__cause__, anthropic.AuthenticationError)


async def test_a_malformed_json_body_is_retried_as_malformed(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.plan(PlannedReply(raw_body=b'{"choices": [oops'))
    server.plan(PlannedReply(raw_body=b"[1, 2]"))
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await gpt.request(_request())
    assert "malformed answer" in caught.value.message
    assert "not a chat completion" in caught.value.message
    assert len(sleep.waits) == 1
    assert len(server.requests) == 2


async def test_json_labelled_as_text_is_read_as_json_and_html_is_malformed(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    body = json.dumps(completion("from a proxy")).encode()
    server.plan(PlannedReply(raw_body=body, content_type="text/plain"))
    assert (await gpt.request(_request())).text == "from a proxy"
    server.plan(PlannedReply(raw_body=b"<html>login</html>", content_type="text/html"))
    server.reply_text("after the proxy")
    assert (await gpt.request(_request())).text == "after the proxy"
    assert len(sleep.waits) == 1


async def test_a_refused_connection_is_the_sdks_connection_error_naming_the_url(
    sleep: RecordingSleep,
) -> None:
    with FakeOpenAIServer() as closed:
        url = closed.base_url
    model = OpenAIChatModel("gpt-test", base_url=url, api_key=SECRET, max_retries=1, sleep=sleep)
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert f"connection to {url} failed" in caught.value.message
    assert len(sleep.waits) == 1


async def test_an_error_event_in_an_openai_stream_is_the_providers_message(
    server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    frames = [sse_frame({"error": {"message": "the model crashed", "type": "server_error"}})]
    server.plan(PlannedReply(sse_frames=frames))
    with pytest.raises(ModelError, match="the model crashed") as caught:
        await _collect(gpt.stream(_request()))
    assert isinstance(caught.value.__cause__, openai.APIError)
    assert sleep.waits == []


async def test_a_requests_own_timeout_is_the_one_applied(
    server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    server.hang()
    with pytest.raises(ModelError, match=r"within 0\.2 s") as caught:
        await gpt.request(_request(timeout_seconds=0.2))
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)


async def test_streamed_usage_is_read_from_the_last_chunk(
    server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    server.reply_stream(
        [
            chunk({"content": "ok"}),
            chunk(finish_reason="stop"),
            chunk(usage_body=usage(prompt=40, completion_tokens=2, cached=30)),
        ]
    )
    final = (await _collect(gpt.stream(_request())))[-1]
    assert isinstance(final, ResponseCompleted)
    assert (final.response.usage.input_tokens, final.response.usage.cache_read_tokens) == (40, 30)
