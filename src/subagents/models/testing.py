"""Test doubles that implement :class:`~subagents.models.base.Model` without a network.

``ScriptedModel`` answers from a queue; ``FunctionModel`` lets a function decide each turn.
Both record every request they saw, with the message history snapshotted as a tuple (the agent
loop keeps appending to the same list, so a reference would show the final history only).

Usage is deterministic and cheap: every response counts ``requests=1``, ``input_tokens=0`` and
``output_tokens`` estimated as one token per four characters of answer text (rounded up). A
scripted :class:`ModelResponse` that already carries a non-zero usage keeps it.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from subagents._preview import preview
from subagents.errors import ScriptExhaustedError, ScriptNotConsumedError
from subagents.messages import ToolCall, Usage
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
)

__all__ = [
    "FunctionModel",
    "ScriptItem",
    "ScriptedModel",
    "text_response",
    "tool_call_response",
    "tool_calls_response",
]

ScriptItem = ModelResponse | str | BaseException
"""One scripted turn: a response, a final text answer, or an exception to raise."""

_call_ids = itertools.count(1)
_EMPTY_USAGE = Usage()
_STREAM_PIECE = re.compile(r"\s*\S+|\s+")
_SHOWN = 3  # leftover responses an unconsumed-script error names
_PREVIEW = 60


def _next_call_id() -> str:
    return f"call_{next(_call_ids)}"


def text_response(text: str) -> ModelResponse:
    """A final answer: text and no tool calls."""
    return ModelResponse(text=text, stop_reason="end_turn")


def tool_call_response(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    id: str | None = None,
    text: str = "",
) -> ModelResponse:
    """A turn that calls one tool; ``id`` defaults to a fresh ``call_N``."""
    call = ToolCall(id=id or _next_call_id(), name=name, arguments=dict(arguments or {}))
    return ModelResponse(text=text, tool_calls=(call,), stop_reason="tool_use")


def tool_calls_response(
    calls: Sequence[tuple[str, dict[str, Any]]], *, text: str = ""
) -> ModelResponse:
    """A turn that calls several tools at once, each with a fresh ``call_N`` id."""
    tool_calls = tuple(
        ToolCall(id=_next_call_id(), name=name, arguments=dict(arguments))
        for name, arguments in calls
    )
    return ModelResponse(text=text, tool_calls=tool_calls, stop_reason="tool_use")


def _snapshot(request: ModelRequest) -> ModelRequest:
    return ModelRequest(
        system=request.system,
        messages=tuple(request.messages),
        tools=request.tools,
        settings=request.settings,
    )


def _finish(item: ModelResponse | str, model_name: str) -> ModelResponse:
    """A fresh response stamped with the model's name and a deterministic usage.

    Always a new object, so that the same scripted response can be reused without one turn's
    stamping leaking into another.
    """
    if isinstance(item, str):
        return ModelResponse(
            text=item,
            usage=Usage(output_tokens=(len(item) + 3) // 4, requests=1),
            stop_reason="end_turn",
            model_name=model_name,
        )
    usage = item.usage
    if usage == _EMPTY_USAGE:
        usage = Usage(output_tokens=(len(item.text) + 3) // 4, requests=1)
    else:
        usage = usage + _EMPTY_USAGE  # a copy: Usage is mutable
    return ModelResponse(
        text=item.text,
        tool_calls=item.tool_calls,
        usage=usage,
        stop_reason=item.stop_reason,
        model_name=model_name,
        reasoning=item.reasoning,
    )


def _describe(item: ScriptItem) -> str:
    """One scripted response in a few words: what the model would have said or called."""
    if isinstance(item, BaseException):
        return f"raise {type(item).__name__}({preview(str(item), _PREVIEW)})"
    if isinstance(item, str):
        return f"text {preview(item, _PREVIEW)}"
    calls = ", ".join(
        f"{call.name}({preview(call.arguments, _PREVIEW)})" for call in item.tool_calls
    )
    if calls:
        return f"call {calls}"
    return f"text {preview(item.text, _PREVIEW)}"


async def _stream_response(response: ModelResponse) -> AsyncIterator[StreamEvent]:
    for piece in _STREAM_PIECE.findall(response.text):
        yield TextDelta(piece)
    yield ResponseCompleted(response)


class ScriptedModel:
    """A model that plays back a script of responses, one per request.

    A ``str`` in the script is a final text answer; an exception instance is raised when its
    turn comes (to test how callers handle provider failures). When the script runs out,
    :class:`~subagents.errors.ScriptExhaustedError` is raised.

    A run that ends before the script does is just as wrong, and silent: call
    :meth:`assert_consumed` after the run (or use the model as a context manager, which does on
    a clean exit) to get :class:`~subagents.errors.ScriptNotConsumedError` naming the leftover
    responses. ``unconsumed`` lists them without raising.
    """

    def __init__(self, responses: Iterable[ScriptItem], *, name: str = "test:scripted") -> None:
        self.name = name
        self.requests: list[ModelRequest] = []
        self._script: deque[ScriptItem] = deque(responses)
        self._served = 0

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r}, remaining={self.remaining})"

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script)

    @property
    def unconsumed(self) -> tuple[ScriptItem, ...]:
        """The scripted responses no request has taken yet, in script order."""
        return tuple(self._script)

    def assert_consumed(self) -> None:
        """Raise :class:`~subagents.errors.ScriptNotConsumedError` if responses are left.

        Checked only when called (or on leaving a ``with`` block): never at garbage collection,
        where an error could not reach the test that caused it.
        """
        left = self.unconsumed
        if not left:
            return
        first = self._served + 1
        shown = "; ".join(
            f"#{first + index}: {_describe(item)}" for index, item in enumerate(left[:_SHOWN])
        )
        more = f"; and {len(left) - _SHOWN} more" if len(left) > _SHOWN else ""
        raise ScriptNotConsumedError(
            f"ScriptedModel {self.name!r} answered {self._served} requests and left "
            f"{len(left)} scripted responses unused: {shown}{more}",
            hint="the run ended before the script did: the last of .requests shows what the "
            "model was asked last; drop the extra responses if the early end is intended",
            unconsumed=left,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:  # a failing test already says what went wrong
            self.assert_consumed()

    def _next(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(_snapshot(request))
        if not self._script:
            raise ScriptExhaustedError(
                f"ScriptedModel {self.name!r} ran out after {self._served} responses; "
                f"request {len(self.requests)} had nothing left to answer",
                hint="add more responses to its script (the unanswered request is "
                "the last item of .requests)",
            )
        item = self._script.popleft()
        self._served += 1
        if isinstance(item, BaseException):
            raise item
        return _finish(item, self.name)

    async def request(self, request: ModelRequest) -> ModelResponse:
        return self._next(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        response = self._next(request)
        async for event in _stream_response(response):
            yield event

    async def aclose(self) -> None:
        """Nothing to release; the script stays where it was."""


FunctionResult = ModelResponse | str
ModelFunction = Callable[[ModelRequest], FunctionResult | Awaitable[FunctionResult]]


class FunctionModel:
    """A model whose every turn is decided by ``function(request)``.

    The function receives the snapshotted request (system prompt, messages, tools) and returns
    a :class:`ModelResponse`, a ``str`` (final answer), or an awaitable of either. Every request
    is kept in :attr:`requests`; ``keep_requests=False`` keeps none, for a model that serves
    many runs (a benchmark): each kept request holds its whole history alive.
    """

    def __init__(
        self, function: ModelFunction, *, name: str = "test:function", keep_requests: bool = True
    ) -> None:
        self.name = name
        self.requests: list[ModelRequest] = []
        self._function = function
        self._keep_requests = keep_requests

    def __repr__(self) -> str:
        return f"FunctionModel(name={self.name!r}, function={self._function!r})"

    async def request(self, request: ModelRequest) -> ModelResponse:
        snapshot = _snapshot(request)
        if self._keep_requests:
            self.requests.append(snapshot)
        result = self._function(snapshot)
        if inspect.isawaitable(result):
            result = await result
        return _finish(result, self.name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        response = await self.request(request)
        async for event in _stream_response(response):
            yield event

    async def aclose(self) -> None:
        """Nothing to release."""
