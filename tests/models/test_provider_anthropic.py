"""AnthropicModel through the real anthropic SDK against a real local Messages API server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from fakes.anthropic_server import (
    CACHED,
    FakeAnthropicServer,
    cached,
    stream_events,
    text_block,
    tool_use_block,
)
from fakes.sleep import RecordingSleep
from subagents.errors import ModelConfigurationError, ModelError, ModelRetriesExhaustedError
from subagents.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from subagents.models.anthropic import AnthropicModel
from subagents.models.base import (
    ModelRequest,
    ModelSettings,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
    ToolSpec,
)

SECRET = "sk-ant-test-secret-456"
GREP_TOOL = ToolSpec(
    "Grep", "Search files", {"type": "object", "properties": {"pattern": {"type": "string"}}}
)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
async def model(
    server: FakeAnthropicServer, sleep: RecordingSleep
) -> AsyncIterator[AnthropicModel]:
    built = AnthropicModel(
        "claude-test", base_url=server.base_url, api_key=SECRET, timeout_seconds=5, sleep=sleep
    )
    yield built
    await built.aclose()


def _request(*messages: Any, tools: tuple[ToolSpec, ...] = (), **settings: Any) -> ModelRequest:
    return ModelRequest(
        system="You are careful.",
        messages=list(messages) or [UserMessage("hello")],
        tools=tools,
        settings=ModelSettings(**settings),
    )


async def _collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


async def test_plain_reply_with_usage_and_top_level_system(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    server.reply_message(
        [text_block("Hello "), text_block("world.")],
        input_tokens=30,
        output_tokens=4,
        cache_read=100,
        cache_write=8,
    )
    response = await model.request(_request())
    assert response.text == "Hello world."
    assert response.stop_reason == "end_turn"
    assert response.model_name == "anthropic:claude-test"
    assert response.usage == Usage(
        input_tokens=30, output_tokens=4, cache_read_tokens=100, cache_write_tokens=8, requests=1
    )
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    body = sent.json()
    assert body["system"] == [cached({"type": "text", "text": "You are careful."})]
    assert body["max_tokens"] == 8192
    assert body["model"] == "claude-test"
    assert body["messages"] == [
        {"role": "user", "content": [cached({"type": "text", "text": "hello"})]}
    ]
    assert "tools" not in body
    assert SECRET in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")


async def test_history_tool_results_are_merged_into_one_user_message(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    server.reply_message([text_block("ok")])
    await model.request(
        _request(
            UserMessage("find TODOs"),
            SystemMessage("Extra rule."),
            AssistantMessage(
                "Searching.",
                tool_calls=(
                    ToolCall("toolu_1", "Grep", {"pattern": "TODO"}),
                    ToolCall("toolu_2", "Grep", {"pattern": "FIXME"}),
                ),
            ),
            ToolResultMessage("toolu_1", "Grep", "a.py:3"),
            ToolResultMessage("toolu_2", "Grep", "bad regex", is_error=True),
            UserMessage("and summarise"),
            AssistantMessage(),
            tools=(GREP_TOOL,),
            max_tokens=100,
            temperature=0.0,
        )
    )
    body = server.requests[0].json()
    assert body["system"] == [cached({"type": "text", "text": "You are careful.\n\nExtra rule."})]
    assert body["max_tokens"] == 100
    assert body["temperature"] == 0.0
    assert body["tools"] == [
        {"name": "Grep", "description": "Search files", "input_schema": GREP_TOOL.parameters}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "find TODOs"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "toolu_1", "name": "Grep", "input": {"pattern": "TODO"}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "Grep",
                    "input": {"pattern": "FIXME"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "a.py:3",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "bad regex",
                    "is_error": True,
                },
                cached({"type": "text", "text": "and summarise"}),
            ],
        },
    ]


async def test_several_tool_calls_and_a_non_object_input(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    server.reply_message(
        [
            text_block("Let me look."),
            tool_use_block("toolu_a", "Read", {"file_path": "a.txt"}),
            tool_use_block("toolu_b", "Grep", {"pattern": "x"}),
            tool_use_block("toolu_c", "LS", "not an object"),
        ],
        stop_reason="tool_use",
    )
    response = await model.request(_request(tools=(GREP_TOOL,)))
    assert response.text == "Let me look."
    assert response.stop_reason == "tool_use"
    first, second, third = response.tool_calls
    assert first == ToolCall("toolu_a", "Read", {"file_path": "a.txt"})
    assert second == ToolCall("toolu_b", "Grep", {"pattern": "x"})
    assert third.arguments == {}
    assert third.arguments_error == "arguments must be a JSON object, got str"
    assert third.raw_arguments == '"not an object"'


async def test_streamed_text_and_tool_calls_are_assembled(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    server.reply_stream(
        stream_events(
            [
                {"type": "text", "pieces": ["Chec", "king."]},
                {
                    "type": "tool_use",
                    "id": "toolu_s",
                    "name": "Grep",
                    "json_pieces": ['{"pat', 'tern": "y"}'],
                },
                {"type": "tool_use", "id": "toolu_t", "name": "LS", "json_pieces": []},
                {
                    "type": "tool_use",
                    "id": "toolu_u",
                    "name": "Read",
                    "json_pieces": ['{"file', "_pa"],
                },
            ],
            stop_reason="tool_use",
            input_tokens=50,
            output_tokens=17,
            cache_read=40,
        )
    )
    events = await _collect(model.stream(_request()))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["Chec", "king."]
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    response = final.response
    assert response.text == "Checking."
    assert response.stop_reason == "tool_use"
    streamed, empty, broken = response.tool_calls
    assert streamed == ToolCall("toolu_s", "Grep", {"pattern": "y"})
    assert empty == ToolCall("toolu_t", "LS", {})
    assert broken.arguments == {}
    assert broken.raw_arguments == '{"file_pa'
    assert broken.arguments_error is not None
    assert "not valid JSON" in broken.arguments_error
    assert response.usage == Usage(
        input_tokens=50, output_tokens=17, cache_read_tokens=40, requests=1
    )
    assert server.requests[0].json()["stream"] is True


async def test_429_honours_retry_after_and_529_is_retried(
    server: FakeAnthropicServer, model: AnthropicModel, sleep: RecordingSleep
) -> None:
    server.reply_error(
        429, "Rate limited", error_type="rate_limit_error", headers={"retry-after": "3"}
    )
    server.reply_error(529, "Overloaded", error_type="overloaded_error")
    server.reply_message([text_block("through")])
    response = await model.request(_request())
    assert response.text == "through"
    assert sleep.waits[0] == 3.0
    assert 0.0 <= sleep.waits[1] <= 1.0
    assert len(server.requests) == 3


async def test_500_then_success(
    server: FakeAnthropicServer, model: AnthropicModel, sleep: RecordingSleep
) -> None:
    server.reply_error(500, "Internal server error")
    server.reply_message([text_block("fine")])
    assert (await model.request(_request())).text == "fine"
    assert len(sleep.waits) == 1


async def test_500_until_retries_run_out(
    server: FakeAnthropicServer, sleep: RecordingSleep
) -> None:
    model = AnthropicModel(
        "claude-test", base_url=server.base_url, api_key=SECRET, max_retries=3, sleep=sleep
    )
    for _ in range(4):
        server.reply_error(500, "Internal server error")
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        await model.request(_request())
    await model.aclose()
    assert "gave up after 4 attempts" in str(caught.value)
    assert "Internal server error" in str(caught.value)
    assert len(server.requests) == 4
    assert len(sleep.waits) == 3


async def test_401_names_the_key_variable_without_leaking_the_key(
    server: FakeAnthropicServer, model: AnthropicModel, sleep: RecordingSleep
) -> None:
    server.reply_error(401, f"invalid x-api-key {SECRET}", error_type="authentication_error")
    with pytest.raises(ModelError) as caught:
        await model.request(_request())
    error = caught.value
    assert error.status_code == 401
    assert "invalid x-api-key" in str(error)
    assert "ANTHROPIC_API_KEY" in str(error)
    assert SECRET not in str(error)
    assert SECRET not in repr(model)
    assert sleep.waits == []
    assert len(server.requests) == 1


async def test_404_points_at_the_model_name(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    server.reply_error(404, "model: claude-test", error_type="not_found_error")
    with pytest.raises(ModelError, match="check the model name 'claude-test'") as caught:
        await model.request(_request())
    assert caught.value.status_code == 404


async def test_connection_drop_mid_stream_raises_model_error(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    events = stream_events([{"type": "text", "pieces": ["one ", "two ", "three"]}])
    # message_start, ping, block start, "one ", "two " and then the connection is cut
    server.reply_stream(events, drop_after=5)
    seen: list[StreamEvent] = []
    with pytest.raises(ModelError, match="interrupted after 2 streamed events"):
        async for event in model.stream(_request()):
            seen.append(event)
    assert [event.text for event in seen if isinstance(event, TextDelta)] == ["one ", "two "]
    assert len(server.requests) == 1


async def test_stream_error_event_before_output_is_retried(
    server: FakeAnthropicServer, model: AnthropicModel, sleep: RecordingSleep
) -> None:
    server.reply_stream(
        [
            ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
        ]
    )
    server.reply_stream(stream_events([{"type": "text", "pieces": ["recovered"]}]))
    events = await _collect(model.stream(_request()))
    assert isinstance(events[-1], ResponseCompleted)
    assert events[-1].response.text == "recovered"
    assert len(sleep.waits) == 1


async def test_a_timed_out_answer_is_not_retried(
    server: FakeAnthropicServer, sleep: RecordingSleep
) -> None:
    model = AnthropicModel(
        "claude-test", base_url=server.base_url, api_key=SECRET, timeout_seconds=0.3, sleep=sleep
    )
    server.hang()
    server.reply_message([text_block("never asked for")])
    with pytest.raises(ModelError) as caught:
        await model.request(_request())
    await model.aclose()
    assert not isinstance(caught.value, ModelRetriesExhaustedError)
    assert "[providers.anthropic] timeout_seconds" in str(caught.value)
    assert len(server.requests) == 1
    assert sleep.waits == []


def test_missing_key_names_the_variable(monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigurationError) as caught:
        AnthropicModel("claude-sonnet-4-5")
    assert "ANTHROPIC_API_KEY" in str(caught.value)


async def test_cache_breakpoints_end_the_system_prompt_and_the_newest_message(
    server: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """Two breakpoints: after the system prompt (tools and prompt, the same for every session of
    an agent type), and on the newest block (the whole history, for the next turn)."""
    first = [UserMessage("find TODOs")]
    second = [
        *first,
        AssistantMessage("", tool_calls=(ToolCall("toolu_1", "Grep", {"pattern": "TODO"}),)),
        ToolResultMessage("toolu_1", "Grep", "a.py:3"),
    ]
    for _ in range(2):
        server.reply_message([text_block("ok")])
    await model.request(_request(*first, tools=(GREP_TOOL,)))
    await model.request(_request(*second, tools=(GREP_TOOL,)))
    bodies = [request.json() for request in server.requests]
    marks = [json.dumps(body).count('"cache_control"') for body in bodies]
    assert marks == [2, 2]  # never more than the API's 4
    assert all(body["system"][-1]["cache_control"] == CACHED for body in bodies)
    assert bodies[0]["messages"][-1]["content"][-1]["cache_control"] == CACHED
    # the next turn: the old breakpoint gone, the new one on the tool result
    assert "cache_control" not in bodies[1]["messages"][0]["content"][-1]
    assert bodies[1]["messages"][-1]["content"][-1]["cache_control"] == CACHED
    # the prefix up to the first breakpoint is the same bytes in both turns
    assert bodies[0]["tools"] == bodies[1]["tools"] and bodies[0]["system"] == bodies[1]["system"]
