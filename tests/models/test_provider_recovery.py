"""Failures a person can recover from, at the provider edge: hung providers, malformed bodies
and streams, the endpoint named in errors, and tool calls of any shape. Every case goes through
the real openai / anthropic SDK against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.anthropic_server import FakeAnthropicServer, stream_events
from fakes.http_server import PlannedReply, sse_frame
from fakes.openai_server import FakeOpenAIServer, chunk, completion, usage
from fakes.sleep import RecordingSleep
from subagents.errors import ModelError, ModelRetriesExhaustedError
from subagents.messages import ToolCall, ToolResultMessage, UserMessage
from subagents.models.anthropic import AnthropicModel
from subagents.models.base import ModelRequest, ResponseCompleted, StreamEvent, TextDelta
from subagents.models.openai import OpenAIChatModel
from subagents.models.resolve import build_model
from subagents.models.settings import (
    DEFAULT_CONNECT_TIMEOUT_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    LOCAL_TIMEOUT_SECONDS,
    ProviderSettings,
)
from subagents.runtime.session import Session
from subagents.tools.base import ToolRegistry
from subagents.tools.decorator import tool

SECRET = "sk-recovery-secret-0123456789"


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
async def gpt(
    openai_server: FakeOpenAIServer, sleep: RecordingSleep
) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        "gpt-test", base_url=openai_server.base_url, api_key=SECRET, timeout_seconds=5, sleep=sleep
    )
    yield model
    await model.aclose()


@pytest.fixture
async def claude(
    anthropic_server: FakeAnthropicServer, sleep: RecordingSleep
) -> AsyncIterator[AnthropicModel]:
    model = AnthropicModel(
        "claude-test",
        base_url=anthropic_server.base_url,
        api_key=SECRET,
        timeout_seconds=5,
        sleep=sleep,
    )
    yield model
    await model.aclose()


def _request() -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=[UserMessage("hello")])


async def _final(events: AsyncIterator[StreamEvent]) -> ResponseCompleted:
    collected = [event async for event in events]
    last = collected[-1]
    assert isinstance(last, ResponseCompleted)
    return last


def _text_stream(*pieces: str) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": piece}) for piece in pieces),
        chunk(finish_reason="stop"),
        chunk(usage_body=usage()),
    ]


# -- 1. a hung provider -------------------------------------------------------------------------


def test_default_timeouts_give_up_on_a_silent_provider_in_about_two_minutes() -> None:
    defaults = ProviderSettings()
    assert defaults.timeout_seconds is None  # the server's kind decides
    assert defaults.connect_timeout_seconds == DEFAULT_CONNECT_TIMEOUT_SECONDS == 10.0
    remote = build_model(
        "vllm:llama3", providers={"vllm": ProviderSettings(base_url="https://llm.example.com/v1")}
    )
    assert isinstance(remote, OpenAIChatModel)
    timeout = remote._client().timeout
    assert timeout is not None and not isinstance(timeout, float)  # an httpx.Timeout
    assert (timeout.read, timeout.connect) == (DEFAULT_TIMEOUT_SECONDS, 10.0) == (120.0, 10.0)
    # a model on this machine reads a long prompt for minutes on a CPU before it writes
    model = build_model("ollama:llama3", env={})
    assert isinstance(model, OpenAIChatModel)
    timeout = model._client().timeout
    assert timeout is not None and not isinstance(timeout, float)
    assert (timeout.read, timeout.connect) == (LOCAL_TIMEOUT_SECONDS, 10.0) == (600.0, 10.0)
    configured = build_model(
        "ollama:llama3",
        providers={"ollama": ProviderSettings(timeout_seconds=900, connect_timeout_seconds=3)},
        env={},
    )
    assert isinstance(configured, OpenAIChatModel)
    timeout = configured._client().timeout
    assert timeout is not None and not isinstance(timeout, float)  # an httpx.Timeout
    assert (timeout.read, timeout.connect) == (900, 3)


async def test_a_hung_openai_provider_fails_after_one_timeout_naming_the_setting(
    openai_server: FakeOpenAIServer, sleep: RecordingSleep
) -> None:
    model = OpenAIChatModel(
        "llama3",
        provider="ollama",
        base_url=openai_server.base_url,
        timeout_seconds=0.3,
        sleep=sleep,
    )
    openai_server.hang()
    with pytest.raises(ModelError) as caught:
        await model.request(_request())
    await model.aclose()
    error = caught.value
    assert not isinstance(error, ModelRetriesExhaustedError)
    assert f"no answer from {openai_server.base_url} within 0.3 s" in error.message
    assert error.hint is not None and "[providers.ollama] timeout_seconds" in error.hint
    assert len(openai_server.requests) == 1
    assert sleep.waits == []


async def test_a_stream_silent_before_its_first_words_fails_naming_the_setting(
    anthropic_server: FakeAnthropicServer, sleep: RecordingSleep
) -> None:
    model = AnthropicModel(
        "claude-test",
        base_url=anthropic_server.base_url,
        api_key=SECRET,
        timeout_seconds=0.3,
        sleep=sleep,
    )
    events = stream_events([{"type": "text", "pieces": ["never", " sent"]}])
    frames = [sse_frame(data, event=name) for name, data in events]
    anthropic_server.plan(PlannedReply(sse_frames=frames, frame_gap_seconds=3600))
    with pytest.raises(ModelError) as caught:
        await _final(model.stream(_request()))
    await model.aclose()
    assert "[providers.anthropic] timeout_seconds" in str(caught.value)
    assert len(anthropic_server.requests) == 1


@pytest.mark.slow
async def test_a_slow_but_steady_stream_outlasts_the_timeout(
    openai_server: FakeOpenAIServer,
) -> None:
    # 12 chunks 0.1 s apart take over a second; the 0.5 s timeout is per silence, not per answer
    model = OpenAIChatModel("slow", base_url=openai_server.base_url, timeout_seconds=0.5)
    pieces = [f"w{index} " for index in range(10)]
    frames = [sse_frame(item) for item in _text_stream(*pieces)] + [sse_frame("[DONE]")]
    openai_server.plan(PlannedReply(sse_frames=frames, frame_gap_seconds=0.1))
    final = await _final(model.stream(_request()))
    await model.aclose()
    assert final.response.text == "".join(pieces)


async def test_a_refused_connection_is_retried_naming_the_configured_setting(
    sleep: RecordingSleep,
) -> None:
    with FakeOpenAIServer() as closed:
        url = closed.base_url
    model = build_model(
        "lmstudio:qwen",
        providers={"lmstudio": ProviderSettings(base_url=url, max_retries=2)},
        env={},
    )
    assert isinstance(model, OpenAIChatModel)
    model._policy = type(model._policy)(max_retries=2, sleep=sleep, settings="[providers.lmstudio]")
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    assert f"connection to {url} failed" in caught.value.message
    assert "gave up after 3 attempts" in caught.value.message
    assert caught.value.hint is not None and "[providers.lmstudio]" in caught.value.hint
    assert len(sleep.waits) == 2


# -- 2. malformed bodies and streams ------------------------------------------------------------


async def test_a_200_that_is_not_json_is_retried_then_succeeds(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    openai_server.plan(PlannedReply(raw_body=b"not json"))
    openai_server.plan(
        PlannedReply(raw_body=b"<html>Gateway login</html>", content_type="text/html")
    )
    openai_server.reply_text("recovered")
    response = await gpt.request(_request())
    assert response.text == "recovered"
    assert len(openai_server.requests) == 3
    assert len(sleep.waits) == 2


async def test_a_body_that_stays_malformed_ends_in_a_clear_model_error(
    anthropic_server: FakeAnthropicServer, sleep: RecordingSleep
) -> None:
    model = AnthropicModel(
        "claude-test", base_url=anthropic_server.base_url, api_key=SECRET, max_retries=2,
        sleep=sleep,
    )  # fmt: skip
    for _ in range(3):
        anthropic_server.plan(PlannedReply(raw_body=f"echo {SECRET} not json".encode()))
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    error = caught.value
    assert f"{anthropic_server.base_url} sent a malformed answer" in error.message
    assert "not JSON" in error.message
    assert "gave up after 3 attempts" in error.message
    assert error.hint is not None and "base_url" in error.hint
    assert SECRET not in str(error)


async def test_an_openai_stream_cut_inside_an_event_is_retried(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    # the body ends cleanly, but in the middle of a JSON event: the SDK's decoder chokes on it
    openai_server.plan(
        PlannedReply(sse_frames=[sse_frame(chunk({"role": "assistant"})), 'data: {"id": "x", "cho'])
    )
    openai_server.reply_stream(_text_stream("whole"))
    final = await _final(gpt.stream(_request()))
    assert final.response.text == "whole"
    assert len(openai_server.requests) == 2
    assert len(sleep.waits) == 1


@pytest.mark.parametrize(
    "frames",
    [
        pytest.param([sse_frame([1, 2])], id="event-not-an-object"),
        pytest.param([sse_frame(chunk({"role": "assistant"}))], id="ends-without-finishing"),
        pytest.param([sse_frame("{not json")], id="event-not-json"),
    ],
)
async def test_an_openai_stream_that_breaks_before_any_text_is_retried(
    openai_server: FakeOpenAIServer,
    gpt: OpenAIChatModel,
    sleep: RecordingSleep,
    frames: list[str],
) -> None:
    openai_server.plan(PlannedReply(sse_frames=frames))
    openai_server.reply_stream(_text_stream("fine"))
    final = await _final(gpt.stream(_request()))
    assert final.response.text == "fine"
    assert len(sleep.waits) == 1


async def test_an_anthropic_stream_that_ends_early_is_retried_then_reported(
    anthropic_server: FakeAnthropicServer, sleep: RecordingSleep
) -> None:
    model = AnthropicModel(
        "claude-test", base_url=anthropic_server.base_url, api_key=SECRET, max_retries=1,
        sleep=sleep,
    )  # fmt: skip
    events = stream_events(
        [{"type": "tool_use", "id": "t1", "name": "Read", "json_pieces": ["{}"]}]
    )
    frames = [sse_frame(data, event=name) for name, data in events]
    truncated = [frame for frame in frames if "message_delta" not in frame][:-1]  # no stop
    anthropic_server.plan(PlannedReply(sse_frames=truncated))
    anthropic_server.plan(PlannedReply(sse_frames=[sse_frame([1], event="content_block_delta")]))
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await _final(model.stream(_request()))
    await model.aclose()
    assert "malformed answer" in caught.value.message
    assert len(anthropic_server.requests) == 2
    assert len(sleep.waits) == 1


async def test_a_stream_that_breaks_after_text_is_reported_not_replayed(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    frames = [sse_frame(chunk({"content": "Half an answer"})), sse_frame("{not json")]
    openai_server.plan(PlannedReply(sse_frames=frames))
    seen: list[str] = []
    with pytest.raises(ModelError, match="interrupted after 1 streamed events") as caught:
        async for event in gpt.stream(_request()):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert not isinstance(caught.value, ModelRetriesExhaustedError)
    assert seen == ["Half an answer"]
    assert len(openai_server.requests) == 1


# -- 3. the endpoint named in errors ------------------------------------------------------------


async def test_openai_base_url_from_the_environment_is_the_one_named(
    monkeypatch: pytest.MonkeyPatch, sleep: RecordingSleep
) -> None:
    with FakeOpenAIServer() as closed:
        host = closed.url.removeprefix("http://")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://proxyuser:proxypass@{host}/v1?key=querysecret")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = OpenAIChatModel("gpt-4o", max_retries=0, sleep=sleep)
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    text = str(caught.value)
    assert f"connection to http://{host}/v1 failed" in text
    assert "api.openai.com" not in text
    for secret in (SECRET, "proxypass", "proxyuser", "querysecret"):
        assert secret not in text


async def test_anthropic_base_url_from_the_environment_is_the_one_named(
    monkeypatch: pytest.MonkeyPatch, anthropic_server: FakeAnthropicServer, sleep: RecordingSleep
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    model = AnthropicModel("claude-test", api_key=SECRET, max_retries=0, sleep=sleep)
    anthropic_server.reply_error(404, "model: claude-test not found", error_type="not_found_error")
    with pytest.raises(ModelError) as caught:
        await model.request(_request())
    await model.aclose()
    assert caught.value.hint is not None
    assert f"the server at {anthropic_server.url}" in caught.value.hint
    assert "api.anthropic.com" not in str(caught.value)


# -- 4. tool calls of any shape -----------------------------------------------------------------


def _completion_with_calls(*calls: dict[str, Any]) -> dict[str, Any]:
    body = completion(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = list(calls)
    return body


async def test_odd_openai_tool_calls_become_tool_calls(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    openai_server.plan(
        PlannedReply(
            json_body=_completion_with_calls(
                {"id": "a", "type": "function", "function": {"name": None, "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"arguments": "{}"}},
                {"id": "c", "type": "function", "function": {"name": 7, "arguments": "{}"}},
                {"type": "function", "function": {"name": "Read", "arguments": "{}"}},
                {"id": "e", "type": "tool", "function": {"name": "Read", "arguments": "{}"}},
                {"id": "f", "function": {"name": "Read", "arguments": {"file_path": "x"}}},
                {"id": "g", "type": "function", "function": {"name": "Read", "arguments": None}},
                {"id": "h", "type": "function"},
                {"id": "i", "type": "function", "function": {"name": "Read", "arguments": 12}},
            )
        )
    )
    response = await gpt.request(_request())
    calls = response.tool_calls
    assert [(call.id, call.name) for call in calls] == [
        ("a", ""),
        ("b", ""),
        ("c", "7"),
        ("", "Read"),
        ("e", "Read"),
        ("f", "Read"),
        ("g", "Read"),
        ("h", ""),
        ("i", "Read"),
    ]
    assert calls[5].arguments == {"file_path": "x"}
    assert calls[6].arguments == {} and calls[6].arguments_error is None
    assert calls[8].arguments_error == "arguments must be a JSON object, got int"
    assert response.stop_reason == "tool_use"


async def test_odd_streamed_openai_tool_calls(
    openai_server: FakeOpenAIServer, gpt: OpenAIChatModel
) -> None:
    def piece(**fields: Any) -> dict[str, Any]:
        return {"tool_calls": [fields]}

    openai_server.reply_stream(
        [
            # a server that repeats the whole name in every chunk (MiniMax via NIM, some vLLM)
            chunk(piece(index=0, id="r1", type="function", function={"name": "Read"})),
            chunk(piece(index=0, function={"name": "Read", "arguments": '{"file_path": '})),
            chunk(piece(index=0, function={"name": "Read", "arguments": '"a.txt"}'})),
            # a null name, then the arguments
            chunk(piece(index=1, id="n1", function={"name": None, "arguments": "{}"})),
            # whole calls without an index (older Ollama), arguments as an object
            chunk(piece(id="o1", function={"name": "Grep", "arguments": {"pattern": "x"}})),
            chunk(piece(id="o2", function={"name": "LS", "arguments": {}})),
            chunk(finish_reason="tool_calls"),
            chunk(usage_body=usage()),
        ]
    )
    final = await _final(gpt.stream(_request()))
    assert final.response.tool_calls == (
        ToolCall("r1", "Read", {"file_path": "a.txt"}),
        ToolCall("n1", "", {}),
        ToolCall("o1", "Grep", {"pattern": "x"}),
        ToolCall("o2", "LS", {}),
    )


async def test_odd_anthropic_tool_calls_become_tool_calls(
    anthropic_server: FakeAnthropicServer, claude: AnthropicModel
) -> None:
    anthropic_server.reply_message(
        [
            {"type": "tool_use", "id": None, "name": None, "input": None},
            {"type": "tool_use", "id": "t2", "input": {"pattern": "x"}},
            {"type": "tool_use", "id": "t3", "name": ["Grep"], "input": "pattern=x"},
            {"type": "text"},
            {"type": "server_side_thing", "id": "s"},
        ],
        stop_reason="tool_use",
    )
    response = await claude.request(_request())
    first, second, third = response.tool_calls
    assert (first.id, first.name, first.arguments, first.arguments_error) == ("", "", {}, None)
    assert (second.name, second.arguments) == ("", {"pattern": "x"})
    assert third.name == '["Grep"]'
    assert third.arguments_error == "arguments must be a JSON object, got str"
    assert response.text == ""


async def test_streamed_anthropic_tool_use_without_a_name(
    anthropic_server: FakeAnthropicServer, claude: AnthropicModel
) -> None:
    events = stream_events(
        [{"type": "tool_use", "id": "t1", "name": "Read", "json_pieces": ['{"a"', ": 1}"]}],
        stop_reason="tool_use",
    )
    for _, data in events:
        if data["type"] == "content_block_start":
            data["content_block"]["name"] = None
            data["content_block"]["id"] = None
    anthropic_server.reply_stream(events)
    final = await _final(claude.stream(_request()))
    assert final.response.tool_calls == (ToolCall("", "", {"a": 1}),)


@tool
async def Read(file_path: str) -> str:
    """Read a file."""
    return f"contents of {file_path}"


async def test_a_nameless_call_is_answered_by_the_session_and_the_run_goes_on(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    model = OpenAIChatModel("local", provider="llamacpp", base_url=openai_server.base_url)
    openai_server.plan(
        PlannedReply(
            json_body=_completion_with_calls(
                {"id": "x1", "type": "function", "function": {"name": None, "arguments": "{}"}}
            )
        )
    )
    openai_server.reply_tool_calls([("x2", "Read", '{"file_path": "a.txt"}')])
    openai_server.reply_text("done")
    session = Session(
        model=model, system_prompt="Read things.", tools=ToolRegistry([Read]), workspace=tmp_path
    )
    result = await session.run("read a.txt")
    await model.aclose()
    assert result.status == "completed", result.error
    assert result.output == "done"
    nameless, read = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert nameless.is_error
    assert nameless.content == "tool call without a name: call one of Read by name."
    assert read.content == "contents of a.txt"
    replayed = openai_server.requests[1].json()["messages"]
    assert replayed[-1]["role"] == "tool"
    assert replayed[-1]["content"].startswith("Error: tool call without a name")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_FUNCTION = st.dictionaries(
    st.sampled_from(["name", "arguments", "extra"]), _JSON | st.just("{}"), max_size=3
)
_CALL = st.dictionaries(
    st.sampled_from(["id", "type", "function", "index", "custom"]),
    _JSON | _FUNCTION,
    max_size=5,
)


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=st.lists(_CALL, max_size=3), streamed=st.booleans())
def test_any_tool_call_shape_gives_tool_calls_or_a_model_error(
    openai_server: FakeOpenAIServer, calls: list[dict[str, Any]], streamed: bool
) -> None:
    if streamed:
        frames = [chunk({"tool_calls": calls}), chunk(finish_reason="tool_calls")]
        openai_server.reply_stream(frames)
    else:
        openai_server.plan(PlannedReply(json_body=_completion_with_calls(*calls)))

    async def ask() -> tuple[ToolCall, ...] | ModelError:
        model = OpenAIChatModel(
            "fuzz", base_url=openai_server.base_url, max_retries=0, timeout_seconds=5
        )
        try:
            if streamed:
                return (await _final(model.stream(_request()))).response.tool_calls
            return (await model.request(_request())).tool_calls
        except ModelError as error:
            return error
        finally:
            await model.aclose()

    outcome = asyncio.run(ask())
    if isinstance(outcome, ModelError):
        assert "malformed answer" in outcome.message
        return
    for call in outcome:
        assert isinstance(call.id, str) and isinstance(call.name, str)
        assert isinstance(call.arguments, dict)
        json.dumps(call.arguments)
        assert (call.arguments_error is None) or call.arguments == {}
