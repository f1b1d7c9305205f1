"""Anthropic's Messages API through the official ``anthropic`` SDK.

The system prompt is a top-level parameter; tool calls are ``tool_use`` blocks and their
results ``tool_result`` blocks inside a user message (consecutive results share one message).
The SDK is imported on first use and built with ``max_retries=0``: :mod:`.retry` retries.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from subagents.errors import ModelConfigurationError, ModelError
from subagents.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from subagents.models.retry import (
    Failure,
    Sleep,
    call_with_retries,
    error_message_from_body,
    network_error_types,
    status_failure,
    stream_with_retries,
)
from subagents.models.sdk import SDKModel
from subagents.models.tool_arguments import parse_tool_arguments, tool_call_from_object

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage
    from anthropic.types import RawMessageStreamEvent

__all__ = ["AnthropicModel", "to_anthropic_messages", "to_anthropic_tools"]

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}

_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def _blocks(message: Message) -> list[dict[str, Any]]:
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
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
    system: str, messages: Sequence[Message]
) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the message list in Messages API form.

    System messages inside the history join the top-level system prompt; consecutive entries
    of one role are merged, so tool results of one turn travel in a single user message.
    Assistant turns with neither text nor tool calls are left out (the API refuses them).
    """
    system_parts = [system] if system else []
    converted: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            system_parts.append(message.content)
            continue
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"].extend(blocks)
        else:
            converted.append({"role": role, "content": blocks})
    return "\n\n".join(system_parts), converted


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in tools
    ]


def _stop_reason(stop_reason: str | None, has_tool_calls: bool) -> StopReason:
    if has_tool_calls:
        return "tool_use"
    return _STOP_REASONS.get(stop_reason or "", "other")


def _response_from_message(message: AnthropicMessage, model_name: str) -> ModelResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(tool_call_from_object(block.id, block.name, block.input))
    usage = message.usage
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            requests=1,
        ),
        stop_reason=_stop_reason(message.stop_reason, bool(calls)),
        model_name=model_name,
    )


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    initial_input: Any = None
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _EventAssembler:
    """Builds one response from raw stream events (blocks are keyed by their index)."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: Usage = field(default_factory=lambda: Usage(requests=1))
    stop_reason: str | None = None
    stopped: bool = False

    def add(self, event: RawMessageStreamEvent) -> str:
        """Take one event in; return its new text (may be empty)."""
        if event.type == "content_block_delta":
            block = self.blocks.get(event.index)
            delta = event.delta
            if block is None:
                return ""
            if delta.type == "text_delta":
                block.parts.append(delta.text)
                return delta.text
            if delta.type == "input_json_delta":
                block.parts.append(delta.partial_json)
        elif event.type == "content_block_start":
            content = event.content_block
            if content.type == "text":
                self.blocks[event.index] = _Block("text", parts=[content.text])
                return content.text
            if content.type == "tool_use":
                self.blocks[event.index] = _Block(
                    "tool_use", id=content.id, name=content.name, initial_input=content.input
                )
        elif event.type == "message_start":
            usage = event.message.usage
            self.usage.input_tokens = usage.input_tokens or 0
            self.usage.output_tokens = usage.output_tokens or 0
            self.usage.cache_read_tokens = usage.cache_read_input_tokens or 0
            self.usage.cache_write_tokens = usage.cache_creation_input_tokens or 0
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._add_final_usage(event)
        elif event.type == "message_stop":
            self.stopped = True
        return ""

    def _add_final_usage(self, event: Any) -> None:
        # message_delta carries cumulative counts; newer servers may restate input tokens.
        usage = event.usage
        self.usage.output_tokens = usage.output_tokens or self.usage.output_tokens
        if usage.input_tokens is not None:
            self.usage.input_tokens = usage.input_tokens
        if usage.cache_read_input_tokens is not None:
            self.usage.cache_read_tokens = usage.cache_read_input_tokens
        if usage.cache_creation_input_tokens is not None:
            self.usage.cache_write_tokens = usage.cache_creation_input_tokens

    def finish(self, model_name: str) -> ModelResponse:
        if not self.stopped and self.stop_reason is None:
            raise ModelError(
                f"{model_name} stream ended before the model finished its answer",
                hint="the server closed the stream early; run the prompt again",
            )
        texts: list[str] = []
        calls: list[ToolCall] = []
        for _, block in sorted(self.blocks.items()):
            if block.kind == "text":
                texts.append("".join(block.parts))
            elif block.parts:
                calls.append(parse_tool_arguments(block.id, block.name, "".join(block.parts)))
            else:
                calls.append(tool_call_from_object(block.id, block.name, block.initial_input or {}))
        return ModelResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            usage=self.usage,
            stop_reason=_stop_reason(self.stop_reason, bool(calls)),
            model_name=model_name,
        )


class AnthropicModel(SDKModel["AsyncAnthropic"]):
    """A Claude model; ``name`` is ``"anthropic:{model_name}"``.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``. ``max_tokens`` is the answer budget sent
    with every request unless the request's settings give one (the API requires it).
    ``sleep`` replaces ``asyncio.sleep`` in the retry backoff (tests use it to observe waits).
    """

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 600.0,
        max_retries: int = 4,
        max_tokens: int = 8192,
        api_key_source: str | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        if importlib.util.find_spec("anthropic") is None:
            raise ModelConfigurationError(
                f"The model 'anthropic:{model_name}' needs the 'anthropic' package, "
                "which is not installed.",
                hint="run: pip install 'subagents[anthropic]'",
            )
        self.model_name = model_name
        self.base_url = base_url
        self.timeout_seconds = timeout_seconds
        self.max_tokens = max_tokens
        self._key_source = api_key_source or (
            "ANTHROPIC_API_KEY (or the variable named by [providers.anthropic] api_key_env)"
        )
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ModelConfigurationError(
                f"No API key for '{self.name}'.",
                hint=f"set {self._key_source} in the environment",
            )
        self._api_key = key
        self._policy = self._retry_policy(max_retries, sleep)

    @property
    def name(self) -> str:
        return f"anthropic:{self.model_name}"

    def _new_client(self) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(**self._client_options(self._api_key, self.timeout_seconds))

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = to_anthropic_messages(request.system, request.messages)
        settings = request.settings
        params: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "max_tokens": settings.max_tokens or self.max_tokens,
            "timeout": settings.timeout_seconds or self.timeout_seconds,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = to_anthropic_tools(request.tools)
        if settings.temperature is not None:
            # Newer SDKs dropped the sampling arguments from create(); the field still goes
            # in the body for the models and servers that accept it.
            params["extra_body"] = {"temperature": settings.temperature}
        return params

    async def request(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)

        async def attempt() -> ModelResponse:
            message: AnthropicMessage = await self._client().messages.create(**params)
            return _response_from_message(message, self.name)

        return await call_with_retries(
            attempt, classify=self._classify, policy=self._policy, what=f"{self.name} request"
        )

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        params = self._params(request)

        async def attempt() -> AsyncGenerator[StreamEvent, None]:
            stream = await self._client().messages.create(**params, stream=True)
            assembler = _EventAssembler()
            async with stream:
                async for event in stream:
                    text = assembler.add(event)
                    if text:
                        yield TextDelta(text)
            yield ResponseCompleted(assembler.finish(self.name))

        return stream_with_retries(
            attempt, classify=self._classify, policy=self._policy, what=f"{self.name} stream"
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***")

    def _classify(self, exc: BaseException) -> Failure | None:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            message = error_message_from_body(exc.body, exc.message)
            if exc.status_code < 400:
                # An ``error`` event inside a stream that began with HTTP 200.
                return Failure(
                    f"{exc.type or 'error'}: {self._redact(message)}",
                    retryable=exc.type in _RETRYABLE_STREAM_ERRORS,
                    hint="the provider reported an error mid-stream; check its status",
                )
            return status_failure(
                exc.status_code,
                self._redact(message),
                exc.response.headers,
                auth_hint=f"check the API key in {self._key_source}",
                model_hint=f"check the model name {self.model_name!r}"
                + (f" and the server at {self.base_url}" if self.base_url else ""),
            )
        if isinstance(exc, anthropic.APITimeoutError):
            return Failure(f"no answer within {self.timeout_seconds:g}s", retryable=True)
        if isinstance(exc, (anthropic.APIConnectionError, *network_error_types())):
            cause = exc.__cause__ or exc
            where = self.base_url or "https://api.anthropic.com"
            return Failure(f"connection to {where} failed ({cause})", retryable=True)
        if isinstance(exc, anthropic.APIError):
            return Failure(
                self._redact(error_message_from_body(exc.body, exc.message)),
                retryable=False,
                hint="the provider reported an error; check its status and the request",
            )
        return None
