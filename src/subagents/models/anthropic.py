"""Anthropic's Messages API through the official ``anthropic`` SDK.

The system prompt is a top-level parameter; tool calls are ``tool_use`` blocks and their
results ``tool_result`` blocks inside a user message (consecutive results share one message).
This module is the wire format; the client, the key, the retries and the SDK's errors are
:mod:`subagents.models.sdk`'s.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from subagents.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from subagents.models import wire
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    StopReason,
    StreamEvent,
    ToolSpec,
)
from subagents.models.retry import Failure, MalformedResponseError
from subagents.models.sdk import HistoryCache, SDKModel, SDKOptions

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic  # noqa: F401 - the client type in SDKModel[...]
    from typing_extensions import Unpack

__all__ = [
    "THINKING_ANSWER_TOKENS",
    "THINKING_BUDGETS",
    "AnthropicModel",
    "to_anthropic_messages",
    "to_anthropic_tools",
]

# ``effort`` -> extended thinking's ``budget_tokens``. With the answer room below, even ``max``
# stays within 32,000 output tokens, the smallest output limit of the Claude models that think
# (Opus 4 / 4.1), so no level makes a request that a thinking model refuses.
THINKING_BUDGETS: dict[str, int] = {"low": 2_048, "medium": 6_144, "high": 12_288, "max": 23_808}
THINKING_ANSWER_TOKENS = 8_192
"""What ``max_tokens`` leaves for the answer beyond the thinking budget, at least."""
_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}

_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
_PATH = "/v1/messages"


def _blocks(message: Message, reasoning: bool = True) -> list[dict[str, Any]]:
    if isinstance(message, AssistantMessage):
        # signed thinking blocks go back first and unchanged, as the API requires
        blocks: list[dict[str, Any]] = [
            dict(block)
            for block in (message.reasoning if reasoning else ())
            if block.get("type") in _THINKING_BLOCKS
        ]
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        blocks.extend(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            for call in message.tool_calls
        )
        return blocks
    if isinstance(message, ToolResultMessage):
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
                "is_error": message.is_error,
            }
        ]
    return [{"type": "text", "text": message.content}]


def to_anthropic_messages(
    system: str, messages: Sequence[Message], *, reasoning: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the message list in Messages API form.

    System messages inside the history join the top-level system prompt; consecutive entries
    of one role are merged, so tool results of one turn travel in a single user message.
    Assistant turns with neither text nor tool calls are left out (the API refuses them).
    ``reasoning=False`` leaves out the thinking blocks (for a request without thinking).
    """
    return _merged(system, messages, [_blocks(message, reasoning) for message in messages])


def _merged(
    system: str, messages: Sequence[Message], blocks_of: Sequence[list[dict[str, Any]]]
) -> tuple[str, list[dict[str, Any]]]:
    """:func:`to_anthropic_messages` of ``messages``, whose blocks are ``blocks_of`` (shared
    with other requests: they are copied, never changed)."""
    system_parts = [system] if system else []
    converted: list[dict[str, Any]] = []
    for message, blocks in zip(messages, blocks_of, strict=True):
        if isinstance(message, SystemMessage):
            system_parts.append(message.content)
            continue
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        if not blocks:
            continue
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"].extend(blocks)
        else:
            converted.append({"role": role, "content": list(blocks)})
    return "\n\n".join(system_parts), converted


_EPHEMERAL = {"type": "ephemeral"}


def _with_breakpoint(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with a cache breakpoint on its last block: the prompt up to there (tools,
    system, history) is cached, and the next turn, which starts with the same prefix, reads it
    at the cache price. With the one on the system prompt, subagents of one type share their
    tools and prompt. The blocks are shared with other requests: copied, not changed."""
    blocks = list(message["content"])
    blocks[-1] = {**blocks[-1], "cache_control": _EPHEMERAL}
    return {**message, "content": blocks}


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in tools
    ]


def _stop_reason(stop_reason: Any, has_tool_calls: bool) -> StopReason:
    # an answer cut at the token limit stays cut, for its calls' input may be cut short
    reason = _STOP_REASONS.get(stop_reason if isinstance(stop_reason, str) else "", "other")
    if has_tool_calls and reason != "max_tokens":
        return "tool_use"
    return reason


def _usage(usage: Any) -> Usage:
    return Usage(
        input_tokens=wire.count(wire.field(usage, "input_tokens")),
        output_tokens=wire.count(wire.field(usage, "output_tokens")),
        cache_read_tokens=wire.count(wire.field(usage, "cache_read_input_tokens")),
        cache_write_tokens=wire.count(wire.field(usage, "cache_creation_input_tokens")),
        requests=1,
    )


def _response_from_message(message: Any, model_name: str) -> ModelResponse:
    """The response of a whole answer: ``message`` is its decoded JSON (or its text)."""
    if not isinstance(message, Mapping):
        raise MalformedResponseError(f"a body that is not a message: {message!r:.200}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for block in wire.items(message.get("content")):
        kind = wire.field(block, "type")
        if kind == "text":
            texts.append(wire.text(wire.field(block, "text")))
        elif kind == "thinking":
            reasoning.append(
                _thinking_block(wire.field(block, "thinking"), wire.field(block, "signature"))
            )
        elif kind == "redacted_thinking":
            reasoning.append({"type": "redacted_thinking", "data": wire.field(block, "data")})
        elif kind == "tool_use":
            calls.append(
                wire.decoded_tool_call(
                    wire.field(block, "id"), wire.field(block, "name"), wire.field(block, "input")
                )
            )
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=_usage(wire.field(message, "usage")),
        stop_reason=_stop_reason(wire.field(message, "stop_reason"), bool(calls)),
        model_name=model_name,
        reasoning=tuple(reasoning),
        response_id=wire.label(wire.field(message, "id")),
        response_model=wire.label(wire.field(message, "model")),
        finish_reason=wire.label(wire.field(message, "stop_reason")),
    )


def _loop_without_thinking(messages: Sequence[Message]) -> bool:
    """Whether the request continues a tool-use loop whose last turn has no intact thinking
    block: it began without thinking (another model, or no effort), or its thinking was
    changed since (a secret in it redacted in the store), which its signature no longer
    matches. Such a loop must finish without thinking."""
    from subagents.redaction import REDACTED, TRUNCATED

    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None or not last.tool_calls:
        return False  # a new turn: thinking may start
    thinking = [b for b in last.reasoning if b.get("type") in _THINKING_BLOCKS]
    if not thinking:
        return True
    text = json.dumps(thinking)
    return REDACTED in text or TRUNCATED in text


def _thinking_block(thinking: Any, signature: Any) -> dict[str, Any]:
    return {
        "type": "thinking",
        "thinking": thinking if isinstance(thinking, str) else "",
        "signature": signature if isinstance(signature, str) else "",
    }


@dataclass(slots=True)
class _Block:
    kind: str
    id: Any = None
    name: Any = None
    initial_input: Any = None
    parts: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)

    def tool_call(self) -> ToolCall:
        if self.parts:
            return wire.wire_tool_call(self.id, self.name, "".join(self.parts))
        return wire.decoded_tool_call(self.id, self.name, self.initial_input)


@dataclass(slots=True)
class _EventAssembler:
    """Builds one response from raw stream events (blocks are keyed by their index)."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: Usage = field(default_factory=lambda: Usage(requests=1))
    stop_reason: str | None = None
    stopped: bool = False
    response_id: str = ""
    response_model: str = ""

    def add(self, event: Any) -> str:
        """Take one event in; return its new text (may be empty)."""
        kind = wire.field(event, "type")
        if not isinstance(kind, str):
            raise MalformedResponseError(f"a stream event without a type: {event!r:.200}")
        if kind == "content_block_delta":
            return self._add_delta(event)
        if kind == "content_block_start":
            return self._start_block(event)
        if kind == "message_start":
            message = wire.field(event, "message")
            self.response_id = wire.label(wire.field(message, "id"))
            self.response_model = wire.label(wire.field(message, "model"))
            usage = _usage(wire.field(message, "usage"))
            self.usage.input_tokens = usage.input_tokens
            self.usage.output_tokens = usage.output_tokens
            self.usage.cache_read_tokens = usage.cache_read_tokens
            self.usage.cache_write_tokens = usage.cache_write_tokens
        elif kind == "message_delta":
            stop_reason = wire.field(wire.field(event, "delta"), "stop_reason")
            if isinstance(stop_reason, str) and stop_reason:
                self.stop_reason = stop_reason
            self._add_final_usage(wire.field(event, "usage"))
        elif kind == "message_stop":
            self.stopped = True
        return ""

    def _start_block(self, event: Any) -> str:
        content = wire.field(event, "content_block")
        index = wire.field(event, "index")
        if not isinstance(index, int):
            return ""
        kind = wire.field(content, "type")
        if kind == "text":
            text = wire.text(wire.field(content, "text"))
            self.blocks[index] = _Block("text", parts=[text])
            return text
        if kind == "tool_use":
            self.blocks[index] = _Block(
                "tool_use",
                id=wire.field(content, "id"),
                name=wire.field(content, "name"),
                initial_input=wire.field(content, "input"),
            )
        elif kind == "thinking":
            block = _Block("thinking", parts=[wire.text(wire.field(content, "thinking"))])
            block.signature.append(wire.text(wire.field(content, "signature")))
            self.blocks[index] = block
        elif kind == "redacted_thinking":
            self.blocks[index] = _Block("redacted_thinking", initial_input=content)
        return ""

    def _add_delta(self, event: Any) -> str:
        index = wire.field(event, "index")
        block = self.blocks.get(index) if isinstance(index, int) else None
        if block is None:
            return ""
        delta = wire.field(event, "delta")
        kind = wire.field(delta, "type")
        if kind == "text_delta":
            text = wire.text(wire.field(delta, "text"))
            block.parts.append(text)
            return text
        if kind == "input_json_delta":
            piece = wire.field(delta, "partial_json")
            if isinstance(piece, str):
                block.parts.append(piece)
        elif kind == "thinking_delta":
            block.parts.append(wire.text(wire.field(delta, "thinking")))
        elif kind == "signature_delta":
            block.signature.append(wire.text(wire.field(delta, "signature")))
        return ""

    def _add_final_usage(self, usage: Any) -> None:
        # message_delta carries cumulative counts; newer servers may restate input tokens.
        output = wire.count(wire.field(usage, "output_tokens"))
        self.usage.output_tokens = output or self.usage.output_tokens
        for name, attribute in (
            ("input_tokens", "input_tokens"),
            ("cache_read_input_tokens", "cache_read_tokens"),
            ("cache_creation_input_tokens", "cache_write_tokens"),
        ):
            value = wire.field(usage, name)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self.usage, attribute, max(value, 0))

    def cut_short(self) -> None:
        self.stop_reason = "max_tokens"

    def finish(self, model_name: str) -> ModelResponse:
        if not self.stopped and self.stop_reason is None:
            raise MalformedResponseError("the stream ended before the model finished its answer")
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[dict[str, Any]] = []
        for _, block in sorted(self.blocks.items()):
            if block.kind == "text":
                texts.append("".join(block.parts))
            elif block.kind == "thinking":
                reasoning.append(_thinking_block("".join(block.parts), "".join(block.signature)))
            elif block.kind == "redacted_thinking":
                data = wire.field(block.initial_input, "data")
                reasoning.append({"type": "redacted_thinking", "data": data})
            else:
                calls.append(block.tool_call())
        return ModelResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            usage=self.usage,
            stop_reason=_stop_reason(self.stop_reason, bool(calls)),
            model_name=model_name,
            reasoning=tuple(reasoning),
            response_id=self.response_id,
            response_model=self.response_model,
            finish_reason=(self.stop_reason or "")[:200],
        )


class AnthropicModel(SDKModel["AsyncAnthropic"]):
    """A Claude model; ``name`` is ``"anthropic:{model_name}"``.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``, needed by Anthropic's own API only (a
    server at another ``base_url`` or ``ANTHROPIC_BASE_URL`` works without one; see
    :mod:`subagents.models.server`). ``max_tokens`` is the answer budget sent
    with every request unless the request's settings give one (the API requires it). The
    other options are :class:`~subagents.models.sdk.SDKModel`'s.

    A request whose settings carry an ``effort`` turns on extended thinking with the budget of
    :data:`THINKING_BUDGETS` for that level; ``max_tokens`` is raised to hold the budget plus
    :data:`THINKING_ANSWER_TOKENS`, and ``temperature`` is not sent (thinking does not accept
    one). The signed thinking blocks of each answer are kept with the message and sent back
    unchanged, as a tool-use loop with thinking requires.
    """

    _sdk_module = "anthropic"
    _client_class = "AsyncAnthropic"

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        max_tokens: int = 8192,
        **options: Unpack[SDKOptions],
    ) -> None:
        super().__init__(model_name, provider="anthropic", base_url=base_url, **options)
        self.max_tokens = max_tokens
        self._history = {
            reasoning: HistoryCache(functools.partial(_blocks, reasoning=reasoning))
            for reasoning in (True, False)
        }

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        settings = request.settings
        budget = THINKING_BUDGETS.get(settings.effort or "")
        if budget is not None and _loop_without_thinking(request.messages):
            budget = None  # one thinking setting per tool-use loop, as the API requires
        history = request.messages
        system, messages = _merged(
            request.system, history, self._history[budget is not None](history)
        )
        params: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "max_tokens": settings.max_tokens or self.max_tokens,
        }
        if system:
            params["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
        if messages and messages[-1]["role"] == "user":  # (never on an assistant's thinking)
            messages[-1] = _with_breakpoint(messages[-1])
        if request.tools:
            params["tools"] = to_anthropic_tools(request.tools)
            if settings.tool_choice is not None:
                params["tool_choice"] = {"type": settings.tool_choice}
        if budget is not None:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
            params["max_tokens"] = max(params["max_tokens"], budget + THINKING_ANSWER_TOKENS)
        else:
            # Newer SDKs dropped the sampling arguments from create(); the field still goes
            # in the body for the models and servers that accept it.
            temperature = settings.temperature
            if temperature is None:
                temperature = self.server.default_temperature
            if temperature is not None:
                params["temperature"] = temperature
        return params

    def _options(self, request: ModelRequest) -> dict[str, Any]:
        # always a timeout, as create() was given: the SDK reports it to the API in a header
        return {"timeout": self._timeout(request.settings.timeout_seconds)}

    async def request(self, request: ModelRequest) -> ModelResponse:
        params, options = self._params(request), self._options(request)

        async def attempt() -> ModelResponse:
            message = await self._post(_PATH, params, options)
            return _response_from_message(message, self.name)

        return await self._request(attempt)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        params, options = self._params(request), self._options(request)
        params["stream"] = True
        return self._stream(
            lambda: self._post(_PATH, params, options, stream=True), _EventAssembler
        )

    def _status_failure(self, exc: Any, message: str) -> Failure:
        if exc.status_code < 400:
            # An ``error`` event inside a stream that began with HTTP 200.
            return Failure(
                f"{exc.type or 'error'}: {message}",
                retryable=exc.type in _RETRYABLE_STREAM_ERRORS,
                hint="the provider reported an error mid-stream; check its status",
            )
        return super()._status_failure(exc, message)
