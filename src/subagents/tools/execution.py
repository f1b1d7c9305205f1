"""Running one tool call: lookup, validation, permission, timeout, fallbacks.

Nothing a model sends makes this raise: every failure becomes a :class:`ToolOutcome` whose
message tells the model what went wrong and what to do. Only ``asyncio.CancelledError`` (and
other ``BaseException``\\ s such as ``KeyboardInterrupt``) propagate.

The success path is on every model turn, so it stays lean: one registry lookup, one validation
with the prebuilt input model, one permission shortcut, two clock reads.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Collection, Coroutine, Generator, Sequence
from dataclasses import dataclass
from time import perf_counter
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from subagents._preview import preview
from subagents.errors import ToolError
from subagents.messages import ToolResultMessage
from subagents.status import OutcomeStatus

if TYPE_CHECKING:
    from subagents.messages import ToolCall
    from subagents.tools.base import Tool, ToolContext, ToolRegistry
    from subagents.tools.permissions import PermissionPolicy

__all__ = ["OutcomeStatus", "ToolOutcome", "execute_tool_call", "render_result"]


@dataclass(slots=True)
class ToolOutcome:
    """What came of one tool call."""

    message: ToolResultMessage
    tool_name: str
    duration_ms: float
    status: OutcomeStatus
    ran_with: dict[str, Any] | None = None
    """The arguments the tool ran with when a person or an approver changed the model's."""


@dataclass(slots=True)
class _Attempt:
    status: OutcomeStatus
    content: str
    ran_with: dict[str, Any] | None = None


async def execute_tool_call(
    call: ToolCall,
    registry: ToolRegistry,
    ctx: ToolContext,
    *,
    permissions: PermissionPolicy | None = None,
    offered: Sequence[str] | None = None,
    agent_types: Collection[str] = (),
) -> ToolOutcome:
    """Run ``call`` with the tool of that name in ``registry``; never raises for bad input.

    ``registry`` must be exactly the tools this agent may use: a call naming any other tool is
    refused, which is what keeps a subagent inside its allowed set. The refusal lists
    ``offered`` (this turn's menu; default: the whole registry) and, for a name in
    ``agent_types``, says to start that agent with Task instead.
    """
    started = perf_counter()
    tool = registry.get(call.name)
    if tool is None:
        available = offered if offered is not None else registry.names()
        unknown = _unknown_tool(call.name, available, call.arguments_error, agent_types)
        return _finish(call, call.name, started, unknown)
    if call.arguments_error is not None:
        return _finish(call, tool.name, started, _bad_json(tool, call.arguments_error))
    attempt = await _attempt(tool, call, call.arguments, ctx, permissions)
    if attempt.status in ("ok", "denied") or not tool.fallback_tools:
        return _finish(call, tool.name, started, attempt)
    name, attempt = await _fallback(tool, call, registry, ctx, permissions, attempt)
    return _finish(call, name, started, attempt)


def _finish(call: ToolCall, tool_name: str, started: float, attempt: _Attempt) -> ToolOutcome:
    content = attempt.content
    if call.repairs:  # tell the model, so that its next call is right the first time
        content = f"{content}\n\n({'; '.join(call.repairs)}: {_NEXT_TIME})"
    message = ToolResultMessage(call.id, call.name, content, attempt.status != "ok")
    duration_ms = (perf_counter() - started) * 1000.0
    return ToolOutcome(message, tool_name, duration_ms, attempt.status, attempt.ran_with)


async def _attempt(
    tool: Tool,
    call: ToolCall,
    arguments: Any,
    ctx: ToolContext,
    permissions: PermissionPolicy | None,
) -> _Attempt:
    kwargs = _validate(tool, arguments)
    if isinstance(kwargs, _Attempt):
        return kwargs
    if permissions is not None and permissions.needs_check(tool):
        decision = await permissions.check(tool, call, ctx)
        if not decision.approved:
            return _Attempt("denied", f"Permission denied: {decision.reason}")
        if decision.arguments is not None:
            kwargs = _validate(tool, decision.arguments, modified=True)
            if isinstance(kwargs, _Attempt):
                return kwargs
            attempt = await _run(tool, kwargs, ctx)
            attempt.ran_with = dict(decision.arguments)
            return attempt
    return await _run(tool, kwargs, ctx)


def _validate(tool: Tool, arguments: Any, *, modified: bool = False) -> dict[str, Any] | _Attempt:
    model = tool.input_model
    if model is None:
        if isinstance(arguments, dict):
            return arguments
        return _Attempt("error", _not_an_object(tool, arguments))
    try:
        validated = model.__pydantic_validator__.validate_python(arguments)
    except ValidationError as exc:
        return _Attempt("error", _invalid_arguments(tool, exc, modified=modified))
    kwargs: dict[str, Any] = validated.__dict__  # field name -> value, exactly the arguments
    return kwargs


async def _run(tool: Tool, kwargs: dict[str, Any], ctx: ToolContext) -> _Attempt:
    timeout: asyncio.Timeout | None = None
    try:
        function = tool.function
        result = function(ctx=ctx, **kwargs) if tool.takes_context else function(**kwargs)
        if type(result) is CoroutineType:
            # Run the first step at once: a tool that finishes without waiting on anything
            # needs no timer, which saves most of the cost of a call. Only a tool that
            # suspends gets a timeout around the rest of its run.
            try:
                pending = result.send(None)
            except StopIteration as done:
                result = done.value
            else:
                timeout = asyncio.timeout(tool.timeout_seconds)
                async with timeout:
                    result = await _Resumed(result, pending)
        elif inspect.isawaitable(result):
            timeout = asyncio.timeout(tool.timeout_seconds)
            async with timeout:
                result = await result
    except ToolError as exc:
        return _Attempt("error", str(exc))
    except TimeoutError as exc:
        if timeout is not None and timeout.expired():
            return _Attempt(
                "timeout",
                f"Tool {tool.name} timed out after {tool.timeout_seconds:g} s and was stopped. "
                "Try a smaller or simpler request.",
            )
        return _Attempt("error", _failure(tool, exc))
    except Exception as exc:
        return _Attempt("error", _failure(tool, exc))
    if type(result) is str:
        return _Attempt("ok", result)
    try:
        return _Attempt("ok", render_result(result))
    except Exception as exc:
        return _Attempt(
            "error", f"Tool {tool.name} returned a value that cannot be shown as JSON: {exc}"
        )


class _Resumed:
    """Awaits the rest of a coroutine whose first step already ran, passing what the event
    loop sends or throws (cancellation included) through to it, as ``await`` itself would."""

    __slots__ = ("coro", "pending")

    def __init__(self, coro: Coroutine[Any, Any, Any], pending: Any) -> None:
        self.coro = coro
        self.pending = pending

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self.coro, self.pending
        self.pending = None
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    pending = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as done:
                    return done.value


def render_result(result: Any) -> str:
    """A tool's return value as the text the model reads: strings as they are, else JSON."""
    if isinstance(result, str):
        return result
    return json.dumps(to_jsonable_python(result), ensure_ascii=False)


async def _fallback(
    tool: Tool,
    call: ToolCall,
    registry: ToolRegistry,
    ctx: ToolContext,
    permissions: PermissionPolicy | None,
    failed: _Attempt,
) -> tuple[str, _Attempt]:
    """Try ``tool.fallback_tools`` in order with the same arguments; the first success wins."""
    what = "timed out" if failed.status == "timeout" else "failed"
    notes = [f"{tool.name} {what}: {failed.content}"]
    for name in tool.fallback_tools:
        fallback = registry.get(name)
        if fallback is None:
            notes.append(f"fallback {name} is not available to this agent")
            continue
        attempt = await _attempt(fallback, call, call.arguments, ctx, permissions)
        if attempt.status == "ok":
            return name, _Attempt(
                "ok", f"[{tool.name} {what}; answered by fallback tool {name}]\n{attempt.content}"
            )
        notes.append(f"fallback {name}: {attempt.content}")
    return tool.name, _Attempt(failed.status, "\n".join(notes))


_NEXT_TIME = "send exact tool names and arguments as one valid JSON object"


def _unknown_tool(
    name: str, names: Sequence[str], problem: str | None, agent_types: Collection[str]
) -> _Attempt:
    available = ", ".join(names) or "(none)"
    if not name.strip():  # servers send null or "" names; the model can still fix its call
        why = f" ({problem})" if problem else ""  # e.g. a schema-mode answer of no known form
        return _Attempt("error", f"tool call without a name{why}: call one of {available} by name.")
    agent = next((kind for kind in agent_types if kind.lower() == name.strip().lower()), None)
    if agent is not None:  # small models call the agent they were told to use as a tool
        return _Attempt(
            "error",
            f"{preview(name, 100)} is an agent, not a tool: to use it, call Task with "
            f'subagent_type="{agent}", a short description and the complete prompt.',
        )
    return _Attempt(
        "error",
        f"tool {preview(name, 100)} is not available to this agent; available: {available}. "
        "Call one of these instead.",
    )


def _bad_json(tool: Tool, error: str) -> _Attempt:
    return _Attempt(
        "error",
        f"The arguments for {tool.name} were not a valid JSON object ({error}). Call "
        f"{tool.name} again with its arguments as one JSON object matching its schema.",
    )


def _not_an_object(tool: Tool, arguments: Any) -> str:
    return (
        f"The arguments for {tool.name} must be a JSON object, got {_preview(arguments)}. Call "
        f"{tool.name} again with its arguments as one JSON object matching its schema."
    )


def _invalid_arguments(tool: Tool, error: ValidationError, *, modified: bool) -> str:
    accepted = ", ".join(tool.parameters.get("properties", {})) or "(none)"
    lines = [
        f"Invalid arguments for {tool.name}"
        + (" (as modified by the approver)" if modified else "")
        + ":"
    ]
    for item in error.errors(include_url=False, include_context=False):
        location = ".".join(str(part) for part in item["loc"])
        kind = item["type"]
        if not location:
            lines.append(f"- the arguments must be a JSON object, got {_preview(item['input'])}")
        elif kind == "missing":
            lines.append(f"- {location}: required, but missing")
        elif kind == "extra_forbidden":
            lines.append(f"- {location}: not an argument of {tool.name} (accepted: {accepted})")
        else:
            lines.append(f"- {location}: {item['msg']} (got {_preview(item['input'])})")
    lines.append(f"Call {tool.name} again with these arguments fixed.")
    return "\n".join(lines)


_MAX_FAILURE_CHARS = 2_000


def _failure(tool: Tool, exc: BaseException) -> str:
    text = str(exc)
    if len(text) > _MAX_FAILURE_CHARS:
        text = f"{text[:_MAX_FAILURE_CHARS]}... [{len(text):,} characters in all]"
    return f"Tool {tool.name} failed: {type(exc).__name__}: {text}"


def _preview(value: Any, limit: int = 80) -> str:
    return preview(value, limit, style="json")
