"""effort: an agent file's reasoning effort reaches the provider's reasoning control.

OpenAI-compatible servers get ``reasoning_effort``; Anthropic gets extended thinking with a
budget per level, and its signed thinking blocks go back unchanged through a tool-use loop.
Providers are driven through their real SDKs against local servers speaking their protocol.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.anthropic_server import FakeAnthropicServer, text_block, tool_use_block
from fakes.http_server import PlannedReply, sse_frame
from fakes.openai_server import FakeOpenAIServer, chunk, usage
from subagents.definitions import parse_agent_file
from subagents.definitions.model import AgentDefinition
from subagents.errors import ModelError
from subagents.messages import (
    AssistantMessage,
    Message,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from subagents.models.anthropic import THINKING_ANSWER_TOKENS, THINKING_BUDGETS, AnthropicModel
from subagents.models.base import ModelRequest, ModelSettings, ResponseCompleted
from subagents.models.openai import OpenAIChatModel
from subagents.runtime.runtime import Runtime
from subagents.testing import ScriptedModel, tool_call_response

SIGNATURE = "EqQBCkYIARgCKkD" + "x" * 40


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


async def _no_wait(seconds: float) -> None:
    return None


@pytest.fixture
async def openai_model(openai_server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    built = OpenAIChatModel(
        "gpt-test", base_url=openai_server.base_url, timeout_seconds=5, sleep=_no_wait
    )
    yield built
    await built.aclose()


@pytest.fixture
async def anthropic_model(anthropic_server: FakeAnthropicServer) -> AsyncIterator[AnthropicModel]:
    built = AnthropicModel(
        "claude-test",
        base_url=anthropic_server.base_url,
        api_key="sk-ant-test-key-0001",
        timeout_seconds=5,
        sleep=_no_wait,
    )
    yield built
    await built.aclose()


def request(**settings: Any) -> ModelRequest:
    return ModelRequest("Think.", [UserMessage("hello")], (), ModelSettings(**settings))


# -- from the agent file to the request -------------------------------------------------------


def test_the_effort_of_an_agent_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "thinker.md"
    path.write_text("---\nname: thinker\ndescription: Thinks.\neffort: High\n---\nThink hard.\n")
    definition = parse_agent_file(path)
    assert definition.effort == "high" and definition.status == "active"
    assert not [w for w in definition.warnings if "effort" in w]


async def test_a_subagent_asks_its_model_for_its_effort_and_others_do_not(tmp_path: Path) -> None:
    thinker = ScriptedModel(["thought"])
    plain = ScriptedModel(["plain"])
    main = ScriptedModel(
        [
            tool_call_response(
                "Task", {"description": "d", "prompt": "p", "subagent_type": "thinker"}
            ),
            tool_call_response(
                "Task", {"description": "d", "prompt": "p", "subagent_type": "plain"}
            ),
            "done",
        ]
    )
    agents = [
        AgentDefinition(name="thinker", description="t", system_prompt="t", effort="max"),
        AgentDefinition(name="plain", description="p", system_prompt="p"),
    ]
    rt = Runtime(
        cwd=tmp_path,
        agents=agents,
        model=main,
        agent_models={"thinker": thinker, "plain": plain},
        permission_mode="bypassPermissions",
    )
    await rt.run("go")
    assert thinker.requests[0].settings.effort == "max"
    assert plain.requests[0].settings.effort is None
    assert main.requests[0].settings.effort is None


async def test_the_main_agent_run_as_a_named_agent_uses_its_effort(tmp_path: Path) -> None:
    main = ScriptedModel(["ok"])
    agent = AgentDefinition(name="lead", description="l", system_prompt="l", effort="low")
    rt = Runtime(cwd=tmp_path, agents=[agent], model=main)
    await rt.run("go", agent="lead")
    assert main.requests[0].settings.effort == "low"


# -- OpenAI -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("effort", "sent"), [("low", "low"), ("high", "high"), ("max", "high")])
async def test_openai_gets_reasoning_effort(
    openai_server: FakeOpenAIServer, openai_model: OpenAIChatModel, effort: str, sent: str
) -> None:
    openai_server.reply_text("ok")
    await openai_model.request(request(effort=effort))
    assert openai_server.requests[0].json()["reasoning_effort"] == sent


async def test_openai_without_effort_sends_no_reasoning_effort(
    openai_server: FakeOpenAIServer, openai_model: OpenAIChatModel
) -> None:
    openai_server.reply_text("ok")
    await openai_model.request(request())
    assert "reasoning_effort" not in openai_server.requests[0].json()


async def test_a_streamed_openai_request_carries_reasoning_effort(
    openai_server: FakeOpenAIServer, openai_model: OpenAIChatModel
) -> None:
    openai_server.reply_stream(
        [
            chunk({"role": "assistant", "content": "hi"}),
            chunk(finish_reason="stop"),
            chunk(usage_body=usage()),
        ]
    )
    events = [event async for event in openai_model.stream(request(effort="medium"))]
    assert isinstance(events[-1], ResponseCompleted) and events[-1].response.text == "hi"
    body = openai_server.requests[0].json()
    assert body["reasoning_effort"] == "medium" and body["stream"] is True


async def test_a_model_that_refuses_reasoning_effort_is_asked_again_without_it(
    openai_server: FakeOpenAIServer, openai_model: OpenAIChatModel
) -> None:
    openai_server.reply_error(
        400, "Unsupported parameter: 'reasoning_effort' is not supported with this model."
    )
    openai_server.reply_text("answered")
    openai_server.reply_text("again")

    first = await openai_model.request(request(effort="high"))
    second = await openai_model.request(request(effort="high"))

    assert (first.text, second.text) == ("answered", "again")
    bodies = [r.json() for r in openai_server.requests]
    assert len(bodies) == 3
    assert bodies[0]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in bodies[1] and "reasoning_effort" not in bodies[2]


async def test_another_bad_request_is_not_hidden_by_the_effort_fallback(
    openai_server: FakeOpenAIServer, openai_model: OpenAIChatModel
) -> None:
    openai_server.reply_error(400, "messages: too long")
    with pytest.raises(ModelError, match="too long"):
        await openai_model.request(request(effort="high"))
    assert len(openai_server.requests) == 1


# -- Anthropic ------------------------------------------------------------------------------------


@pytest.mark.parametrize("effort", ["low", "medium", "high", "max"])
async def test_anthropic_gets_a_thinking_budget_with_room_for_the_answer(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel, effort: str
) -> None:
    anthropic_server.reply_message([text_block("ok")])
    await anthropic_model.request(request(effort=effort, temperature=0.2))
    body = anthropic_server.requests[0].json()
    budget = THINKING_BUDGETS[effort]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] >= budget + THINKING_ANSWER_TOKENS
    assert body["max_tokens"] <= 32_000  # within every thinking Claude model's output limit
    assert "temperature" not in body  # thinking takes no temperature


async def test_anthropic_without_effort_does_not_think(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.reply_message([text_block("ok")])
    await anthropic_model.request(request(temperature=0.2))
    body = anthropic_server.requests[0].json()
    assert "thinking" not in body and body["temperature"] == 0.2


async def test_thinking_blocks_go_back_unchanged_through_a_tool_loop(
    tmp_path: Path, anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    (tmp_path / "notes.txt").write_text("x\n")
    thinking = {"type": "thinking", "thinking": "List the files first.", "signature": SIGNATURE}
    redacted = {"type": "redacted_thinking", "data": "opaque-data"}
    anthropic_server.reply_message(
        [thinking, redacted, tool_use_block("toolu_1", "LS", {"path": "."})],
        stop_reason="tool_use",
    )
    anthropic_server.reply_message([text_block("There is notes.txt.")])
    agent = AgentDefinition(name="lister", description="l", system_prompt="l", effort="high")
    rt = Runtime(cwd=tmp_path, agents=[agent], model=anthropic_model)

    result = await rt.run("what is here?", agent="lister")

    assert result.output == "There is notes.txt."
    second = anthropic_server.requests[1].json()
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == [thinking, redacted]
    assert assistant["content"][2]["type"] == "tool_use"
    assert second["thinking"]["budget_tokens"] == THINKING_BUDGETS["high"]


async def test_streamed_thinking_is_assembled_with_its_signature(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Step one. "},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Step two."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": SIGNATURE},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": text_block("")},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Answer."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    anthropic_server.plan(PlannedReply(sse_frames=[sse_frame(d, event=n) for n, d in events]))
    streamed = [event async for event in anthropic_model.stream(request(effort="low"))]
    final = streamed[-1]
    assert isinstance(final, ResponseCompleted)
    assert final.response.text == "Answer."  # thinking is not shown as answer text
    assert final.response.reasoning == (
        {"type": "thinking", "thinking": "Step one. Step two.", "signature": SIGNATURE},
    )


def test_reasoning_blocks_survive_the_store_round_trip() -> None:
    message = AssistantMessage(
        "text", reasoning=({"type": "thinking", "thinking": "t", "signature": SIGNATURE},)
    )
    stored = json.loads(json.dumps(message_to_dict(message)))
    assert message_from_dict(stored) == message
    assert "reasoning" not in message_to_dict(AssistantMessage("plain"))


def _loop(reasoning: tuple[dict[str, Any], ...]) -> ModelRequest:
    from subagents.messages import ToolCall, ToolResultMessage

    call = ToolCall("toolu_1", "LS", {"path": "."})
    messages: list[Message] = [
        UserMessage("what is here?"),
        AssistantMessage("", (call,), reasoning=reasoning),
        ToolResultMessage("toolu_1", "LS", "notes.txt"),
    ]
    return ModelRequest("Think.", messages, (), ModelSettings(effort="high"))


@pytest.mark.parametrize(
    "reasoning",
    [
        (),  # the loop began without thinking (another model, or a model without effort)
        ({"type": "thinking", "thinking": "the password is [REDACTED]", "signature": SIGNATURE},),
    ],
    ids=["no-thinking", "redacted-thinking"],
)
async def test_a_loop_without_intact_thinking_finishes_without_thinking(
    anthropic_server: FakeAnthropicServer,
    anthropic_model: AnthropicModel,
    reasoning: tuple[dict[str, Any], ...],
) -> None:
    anthropic_server.reply_message([text_block("done")])
    await anthropic_model.request(_loop(reasoning))
    body = anthropic_server.requests[0].json()
    assert "thinking" not in body
    assert all(
        block["type"] not in ("thinking", "redacted_thinking")
        for message in body["messages"]
        for block in message["content"]
    )


async def test_a_new_turn_after_a_loop_without_thinking_thinks_again(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    from subagents.messages import ToolResultMessage

    request = _loop(())
    messages = [
        *request.messages,
        AssistantMessage("There is notes.txt."),
        UserMessage("and now?"),
    ]
    assert isinstance(messages[2], ToolResultMessage)
    anthropic_server.reply_message([text_block("ok")])
    await anthropic_model.request(ModelRequest("Think.", messages, (), request.settings))
    assert anthropic_server.requests[0].json()["thinking"]["type"] == "enabled"


async def test_a_subagents_effort_reaches_an_openai_compatible_server(
    tmp_path: Path, openai_server: FakeOpenAIServer, openai_model: OpenAIChatModel
) -> None:
    openai_server.reply_tool_calls(
        [
            (
                "call_1",
                "Task",
                json.dumps({"description": "d", "prompt": "p", "subagent_type": "deep"}),
            )
        ]
    )
    openai_server.reply_text("deep answer")
    openai_server.reply_text("main answer")
    deep = AgentDefinition(name="deep", description="d", system_prompt="d", effort="medium")
    rt = Runtime(cwd=tmp_path, agents=[deep], model=openai_model)

    result = await rt.run("go")

    assert result.output == "main answer"
    main_first, child, main_second = (r.json() for r in openai_server.requests)
    assert "reasoning_effort" not in main_first and "reasoning_effort" not in main_second
    assert child["reasoning_effort"] == "medium"
