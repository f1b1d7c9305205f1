"""Any OpenAI-compatible Chat Completions server, through the official ``openai`` SDK.

Covers OpenAI itself and the local servers that speak its protocol (Ollama, vLLM, LM Studio,
llama.cpp server) via ``base_url``. This module is the wire format; the client, the key, the
retries and the SDK's errors are :mod:`subagents.models.sdk`'s.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from subagents.errors import ModelError
from subagents.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from subagents.models import schema_turns, wire
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    ToolSpec,
)
from subagents.models.retry import Failure, MalformedResponseError, error_message_from_body
from subagents.models.sdk import HistoryCache, SDKModel, SDKOptions
from subagents.models.server import OLLAMA_DEFAULT_BASE_URL
from subagents.models.settings import ToolCallMode
from subagents.models.tool_arguments import arguments_text

if TYPE_CHECKING:
    from openai import AsyncOpenAI  # noqa: F401 - the client type in SDKModel[...]
    from typing_extensions import Unpack

__all__ = [
    "OLLAMA_DEFAULT_BASE_URL",
    "REASONING_EFFORTS",
    "OpenAIChatModel",
    "estimated_usage",
    "to_openai_messages",
    "to_openai_tools",
]

_PATH = "/chat/completions"
# ``effort`` -> ``reasoning_effort`` (the API has no level above ``high``)
REASONING_EFFORTS: dict[str, str] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "max": "high",
}

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


def to_openai_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our history in Chat Completions form: system first, tool results as ``role=tool``."""
    return _with_system(system, [_openai_message(message) for message in messages])


def _with_system(system: str, converted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system}, *converted] if system else converted


def _openai_message(message: Message, *, null_content: bool = True) -> dict[str, Any]:
    """``message`` as the API takes it. ``null_content``: an assistant turn with calls and no
    text has ``"content": null``, as OpenAI writes it; llama-cpp-python's server refuses
    that (HTTP 500, "Input should be a valid string"), so other servers get ``""``."""
    if isinstance(message, AssistantMessage):
        empty = None if null_content else ""
        entry: dict[str, Any] = {"role": "assistant", "content": message.content or empty}
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_text(call)},
                }
                for call in message.tool_calls
            ]
        elif entry["content"] is None:
            entry["content"] = ""
        return entry
    if isinstance(message, ToolResultMessage):
        content = message.content
        if message.is_error and not content.lower().startswith("error"):
            content = f"Error: {content}"
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    return {"role": "user", "content": message.content}


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def _usage(usage: Any) -> Usage:
    """Provider token counts as reported (OpenAI's prompt tokens include cached ones)."""
    if usage is None:
        return Usage(requests=1)
    details = wire.field(usage, "prompt_tokens_details")
    return Usage(
        input_tokens=wire.count(wire.field(usage, "prompt_tokens")),
        output_tokens=wire.count(wire.field(usage, "completion_tokens")),
        cache_read_tokens=wire.count(wire.field(details, "cached_tokens")),
        cache_write_tokens=wire.count(wire.field(details, "cache_write_tokens")),
        requests=1,
    )


def _stop_reason(finish_reason: Any, has_tool_calls: bool) -> StopReason:
    # Some compatible servers (older Ollama) say "stop" even when they called tools; but an
    # answer cut at the token limit stays cut, for its calls' arguments may be cut short.
    reason = _FINISH_REASONS.get(finish_reason if isinstance(finish_reason, str) else "", "other")
    if has_tool_calls and reason != "max_tokens":
        return "tool_use"
    return reason


def _tool_call(call: Any) -> ToolCall:
    """One tool call of a whole answer, whatever its shape: ``type`` is not checked (servers
    send ``null`` or other values), a ``custom`` call's input is read as its arguments."""
    function = wire.field(call, "function")
    if function is None:
        function = wire.field(call, "custom")
        arguments = wire.field(function, "input")
    else:
        arguments = wire.field(function, "arguments")
    return wire.wire_tool_call(wire.field(call, "id"), wire.field(function, "name"), arguments)


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)
    decoded_arguments: Any = None
    """Arguments some servers send whole, as an object instead of JSON text."""

    def add_name(self, piece: str) -> None:
        # OpenAI sends the name once, in pieces; some servers resend it whole in every chunk.
        if piece != self.name:
            self.name += piece

    def tool_call(self, index: int) -> ToolCall:
        arguments: Any = "".join(self.argument_parts)
        if self.decoded_arguments is not None and not arguments:
            arguments = self.decoded_arguments
        return wire.wire_tool_call(self.id or f"call_{index}", self.name, arguments)


@dataclass(slots=True)
class _ChunkAssembler:
    """Builds one response from streamed chunks; tool calls arrive in pieces keyed by index
    (or, from servers that send no index, by id)."""

    text_parts: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Any = None
    response_id: str = ""
    response_model: str = ""

    def add(self, chunk: Any) -> str:
        """Take one chunk in; return its new text (may be empty)."""
        if not isinstance(chunk, Mapping):
            raise MalformedResponseError(f"a stream event that is not a chunk: {chunk!r:.200}")
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        if not self.response_id:
            self.response_id = wire.label(chunk.get("id"))
            self.response_model = wire.label(chunk.get("model"))
        text = ""
        for choice in wire.items(chunk.get("choices")):
            finish_reason = wire.field(choice, "finish_reason")
            if isinstance(finish_reason, str) and finish_reason:
                self.finish_reason = finish_reason
            delta = wire.field(choice, "delta")
            text += wire.text(wire.field(delta, "content"))
            for piece in wire.items(wire.field(delta, "tool_calls")):
                self._add_call_piece(piece)
        if text:
            self.text_parts.append(text)
        return text

    def _add_call_piece(self, piece: Any) -> None:
        partial = self.calls.setdefault(self._index(piece), _PartialCall())
        call_id = wire.tool_call_id(wire.field(piece, "id"))
        if call_id:
            partial.id = call_id
        function = wire.field(piece, "function")
        name = wire.field(function, "name")
        if name is not None:
            partial.add_name(wire.tool_name(name))
        arguments = wire.field(function, "arguments")
        if isinstance(arguments, str):
            if arguments:
                partial.argument_parts.append(arguments)
        elif arguments is not None:
            partial.decoded_arguments = arguments

    def _index(self, piece: Any) -> int:
        index = wire.field(piece, "index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        # No index (older Ollama sends each call whole, one per chunk): a new id is a new
        # call, a piece without an id continues the last one.
        call_id = wire.tool_call_id(wire.field(piece, "id"))
        for known, partial in self.calls.items():
            if call_id and partial.id == call_id:
                return known
        if call_id or not self.calls:
            return max(self.calls, default=-1) + 1
        return max(self.calls)

    def cut_short(self) -> None:
        self.finish_reason = "length"

    def finish(self, model_name: str) -> ModelResponse:
        if self.finish_reason is None:
            raise MalformedResponseError("the stream ended before the model finished its answer")
        tool_calls = tuple(
            partial.tool_call(index) for index, partial in sorted(self.calls.items())
        )
        return ModelResponse(
            text="".join(self.text_parts),
            tool_calls=tool_calls,
            usage=_usage(self.usage),
            stop_reason=_stop_reason(self.finish_reason, bool(tool_calls)),
            model_name=model_name,
            response_id=self.response_id,
            response_model=self.response_model,
            finish_reason=self.finish_reason[:200],
        )


def _response_from_completion(completion: Any, model_name: str) -> ModelResponse:
    """The response of a whole answer: ``completion`` is its decoded JSON (or its text)."""
    if not isinstance(completion, Mapping):
        raise MalformedResponseError(f"a body that is not a chat completion: {completion!r:.200}")
    choices = wire.items(completion.get("choices"))
    if not choices:
        raise ModelError(
            f"{model_name} returned no choices",
            hint="check that the server really speaks the Chat Completions API at its base_url",
        )
    choice = choices[0]
    message = wire.field(choice, "message")
    if message is None:
        raise MalformedResponseError("a choice without a message")
    tool_calls = tuple(_tool_call(call) for call in wire.items(wire.field(message, "tool_calls")))
    return ModelResponse(
        text=wire.text(wire.field(message, "content")) or wire.text(wire.field(message, "refusal")),
        tool_calls=tool_calls,
        usage=_usage(wire.field(completion, "usage")),
        stop_reason=_stop_reason(wire.field(choice, "finish_reason"), bool(tool_calls)),
        model_name=model_name,
        response_id=wire.label(completion.get("id")),
        response_model=wire.label(completion.get("model")),
        finish_reason=wire.label(wire.field(choice, "finish_reason")),
    )


class OpenAIChatModel(SDKModel["AsyncOpenAI"]):
    """A Chat Completions model; ``name`` is ``"{provider}:{model_name}"``.

    ``api_key`` defaults to ``$OPENAI_API_KEY``, needed by OpenAI's own API only: a server at
    another ``base_url`` (or ``OPENAI_BASE_URL``) and ``ollama`` work without a key, and are
    sent ``max_tokens`` where OpenAI's API takes ``max_completion_tokens`` (the server's
    kind: :attr:`server`). The other options are :class:`~subagents.models.sdk.SDKModel`'s.

    A request whose settings carry an ``effort`` sends ``reasoning_effort``
    (:data:`REASONING_EFFORTS`), whatever the model: which models reason is not knowable from
    their names on compatible servers (gpt-oss, DeepSeek, Qwen reason too); a
    ``frequency_penalty`` is sent as it is. A model or server that refuses either (HTTP 400/422
    naming it) gets the request again at once without it, and this model object stops sending
    it. A request to a local server that sets no ``max_tokens`` or ``temperature`` asks for
    :attr:`~subagents.models.server.Server.default_max_tokens` and
    :attr:`~subagents.models.server.Server.default_temperature`.

    ``tool_calls="schema"`` (``[providers.NAME] tool_calls``) sends no ``tools``: every answer
    is constrained by ``response_format`` to a call of one offered tool or a reply, as
    :mod:`subagents.models.schema_turns` describes. Such a turn is streamed from the server,
    so that a runaway answer is stopped early, but its text is JSON until read: :meth:`stream`
    yields the reply once, read, with the response.
    ``tool_calls`` (``[providers.NAME] tool_calls``): ``"auto"`` also reads tool calls written
    in an answer's text when it has no native one, ``"text"`` sends no ``tools`` and reads
    calls from the text only (:mod:`subagents.models.text_tools`).
    """

    _sdk_module = "openai"
    _client_class = "AsyncOpenAI"

    def __init__(
        self,
        model_name: str,
        *,
        provider: str = "openai",
        base_url: str | None = None,
        tool_calls: ToolCallMode = "native",
        **options: Unpack[SDKOptions],
    ) -> None:
        if provider == "ollama" and base_url is None:
            base_url = OLLAMA_DEFAULT_BASE_URL
        super().__init__(model_name, provider=provider, base_url=base_url, **options)
        self._refused: set[str] = set()  # optional parameters the server said it refuses
        self._schema_as_json_object = False  # the server takes a schema as json_object only
        self.tool_calls = tool_calls
        self._history = HistoryCache(
            functools.partial(_openai_message, null_content=self.server.kind == "hosted")
        )

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        """The request body, JSON-ready (see :meth:`_options` for its timeout)."""
        if self.tool_calls == "text":
            from subagents.models.text_tools import text_mode_request

            request = text_mode_request(request)
        params: dict[str, Any] = {"model": self.model_name, "messages": self._messages(request)}
        if self.tool_calls == "schema":
            response_format = schema_turns.response_format(
                request.callable_tools, request.settings.reply_schema
            )
            if self._schema_as_json_object:
                response_format = _as_json_object(response_format)
            params["response_format"] = response_format
        elif request.tools:
            params["tools"] = to_openai_tools(request.tools)
            if request.settings.tool_choice is not None:
                params["tool_choice"] = request.settings.tool_choice
        settings = request.settings
        temperature = settings.temperature
        if temperature is None:
            temperature = self.server.default_temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = settings.max_tokens or self.server.default_max_tokens
        if max_tokens is not None:
            # OpenAI's newer models only accept max_completion_tokens; compatible servers
            # mostly only know max_tokens.
            key = "max_completion_tokens" if self.server.kind == "hosted" else "max_tokens"
            params[key] = max_tokens
        if settings.effort in REASONING_EFFORTS:
            params["reasoning_effort"] = REASONING_EFFORTS[settings.effort]
        if settings.frequency_penalty is not None:
            params["frequency_penalty"] = settings.frequency_penalty
        for refused in self._refused:
            params.pop(refused, None)
        return params

    def _messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        if self.tool_calls == "schema":
            instructions = schema_turns.turn_instructions(request.callable_tools)
            system = "\n\n".join(part for part in (request.system, instructions) if part)
            return schema_turns.history_messages(system, request.messages)
        if self.tool_calls == "text":  # a text-mode history is made anew for each request
            return to_openai_messages(request.system, request.messages)
        return _with_system(request.system, self._history(request.messages))

    async def _create(
        self, params: dict[str, Any], options: dict[str, Any], *, stream: bool = False
    ) -> Any:
        """``params`` sent to ``/chat/completions`` (see :meth:`SDKModel._post`), once more
        without ``reasoning_effort`` if the model refuses that parameter."""
        try:
            return await self._post(_PATH, params, options, stream=stream)
        except Exception as exc:
            if _refused_json_schema(exc, params):
                # llama-cpp-python's server takes a schema only in its own form
                self._schema_as_json_object = True
                params["response_format"] = _as_json_object(params["response_format"])
                return await self._post(_PATH, params, options, stream=stream)
            refused = _refused_parameter(exc, params)
            if refused is None:
                raise
        self._refused.add(refused)
        del params[refused]
        return await self._post(_PATH, params, options, stream=stream)

    async def request(self, request: ModelRequest) -> ModelResponse:
        if self.tool_calls == "schema":
            return await _last_response(self.stream(request))
        params, options = self._params(request), self._options(request)

        async def attempt() -> ModelResponse:
            completion = await self._create(params, options)
            response = estimated_usage(_response_from_completion(completion, self.name), params)
            return self._read_text_calls(response, request)

        return await self._request(attempt)

    async def request_json(
        self, request: ModelRequest, schema: dict[str, Any], *, name: str = "answer"
    ) -> ModelResponse:
        """One answer the server is asked to constrain to ``schema`` (``response_format`` of
        type ``json_schema``), returned as the server wrote it (``models check`` uses it)."""
        params, options = self._params(request), self._options(request)
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }

        async def attempt() -> ModelResponse:
            return _response_from_completion(await self._create(params, options), self.name)

        return await self._request(attempt)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        params, options = self._params(request), self._options(request)
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
        if self.tool_calls == "schema":
            # streamed though its JSON is shown only once read: a small model that runs away
            # inside the constrained reply (whitespace, one value over and over) is stopped at
            # once, and a server that writes one answer at a time is free again
            return self._stream(
                lambda: self._create(params, options, stream=True),
                _ChunkAssembler,
                lambda response: _read_schema_turn(estimated_usage(response, params), request),
                raw_text=False,
            )
        return self._stream(
            lambda: self._create(params, options, stream=True),
            _ChunkAssembler,
            lambda response: self._read_text_calls(estimated_usage(response, params), request),
        )

    def _read_text_calls(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        if self.tool_calls in ("auto", "text"):
            # the reader of tool calls written as text loads only for a model that may write
            # them (~4 ms of every other run)
            from subagents.models.text_tools import read_text_tool_calls

            return read_text_tool_calls(response, request.tools)
        return response

    def _status_failure(self, exc: Any, message: str) -> Failure:
        failure = super()._status_failure(exc, message)
        if self.tool_calls == "schema" and exc.status_code in (400, 422):
            hint = (
                f'[providers.{self.provider}] tool_calls = "schema" needs a server that takes '
                "response_format with a JSON schema; run: subagents models check "
                f"{self.name}, and set tool_calls to what it recommends"
            )
            failure = replace(failure, hint=hint)
        return failure


_CHARS_PER_TOKEN = 4  # a common rule of thumb for English text and code


def estimated_usage(response: ModelResponse, params: Mapping[str, Any]) -> ModelResponse:
    """``response``, with token counts estimated from lengths when the server reported none
    (marked ``usage_estimated``): a stream from llama-cpp-python's server carries no usage
    (nor do some servers' answers at all), and a call counted as free would never reach a
    token budget."""
    usage = response.usage
    if usage.input_tokens or usage.output_tokens:
        return response
    asked = json.dumps([params.get("messages"), params.get("tools")], default=str)
    answered = len(response.text) + sum(
        len(call.name) + len(json.dumps(call.arguments, default=str))
        for call in response.tool_calls
    )
    estimate = Usage(
        input_tokens=-(-len(asked) // _CHARS_PER_TOKEN),
        output_tokens=-(-answered // _CHARS_PER_TOKEN),
        requests=usage.requests or 1,
    )
    return replace(response, usage=estimate, usage_estimated=True)


def _read_schema_turn(response: ModelResponse, request: ModelRequest) -> ModelResponse:
    """A schema-constrained answer read as the reply or tool call(s) it stands for."""
    if response.tool_calls:  # a server that called tools natively after all
        return response
    schema_turns.read_response(response, [tool.name for tool in request.callable_tools])
    return response


async def _last_response(events: AsyncIterator[StreamEvent]) -> ModelResponse:
    """The response a stream ends with (read to its end, so that it lets go of what it
    holds: a server's turn, its connection)."""
    response = None
    async for event in events:
        if isinstance(event, ResponseCompleted):
            response = event.response
    if response is None:
        raise MalformedResponseError("the stream ended without a response")
    return response


def _refused_json_schema(exc: BaseException, params: Mapping[str, Any]) -> bool:
    """Whether ``exc`` is the server refusing a ``json_schema`` response format (as
    llama-cpp-python's does, with HTTP 500: "Input should be 'text' or 'json_object'")."""
    response_format = params.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return False
    message = _refusal_message(exc, (400, 422, 500))
    return message is not None and "response_format" in message and "json_object" in message


def _as_json_object(response_format: dict[str, Any]) -> dict[str, Any]:
    """A ``json_schema`` response format in the form llama.cpp's servers also take."""
    schema = response_format.get("json_schema", {}).get("schema", {})
    return {"type": "json_object", "schema": schema}


_OPTIONAL_PARAMETERS = ("reasoning_effort", "frequency_penalty")
"""What a request may go without when a model or server refuses it."""


def _refused_parameter(exc: BaseException, params: Mapping[str, Any]) -> str | None:
    """The optional parameter of ``params`` that ``exc`` (HTTP 400/422) says the model or
    server does not take, if it names one."""
    message = _refusal_message(exc, (400, 422))
    if message is None:
        return None
    return next((p for p in _OPTIONAL_PARAMETERS if p in params and p in message), None)


def _refusal_message(exc: BaseException, statuses: tuple[int, ...]) -> str | None:
    """The error message of ``exc`` when it is the server's answer with one of ``statuses``."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in statuses:
        return None
    return error_message_from_body(exc.body, exc.message)
