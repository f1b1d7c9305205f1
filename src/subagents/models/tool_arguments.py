"""Decoding a model's tool-call arguments without ever raising on bad JSON, at any depth.

Malformed JSON is first repaired (:mod:`subagents.models.argument_repair`); a repaired call
keeps the raw text and says so in ``ToolCall.repairs``. Arguments become a tool error the
model can act on (``ToolCall.arguments_error``, with the raw text kept in ``raw_arguments``)
when they are not JSON (even repaired), not an object, or nested deeper than
:data:`MAX_ARGUMENT_DEPTH`: no tool takes arguments that deep, and everything downstream
(validation, redaction, the store's JSON encoding) would walk them recursively. The raw text
kept is cut at :data:`MAX_RAW_ARGUMENTS_CHARS`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from subagents._preview import preview
from subagents.messages import ToolCall
from subagents.models.argument_repair import repair_arguments

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_RAW_ARGUMENTS_CHARS",
    "arguments_text",
    "bound_tool_call",
    "bound_tool_calls",
    "parse_tool_arguments",
    "refuse_repairs_of_cut_calls",
    "tool_call_from_object",
]

MAX_ARGUMENT_DEPTH = 64
"""Containers (objects, arrays) nested in one another; the arguments object is level 1."""
MAX_RAW_ARGUMENTS_CHARS = 20_000
"""Of raw argument text kept on a call whose arguments were refused."""

_REPAIRED_ARGUMENTS = "arguments were repaired from invalid JSON"
_SCALARS = frozenset({str, int, float, bool, type(None)})  # JSON values that hold nothing
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def parse_tool_arguments(call_id: str, name: str, raw: str | None) -> ToolCall:
    """A ToolCall from the provider's JSON text; bad JSON is kept and reported, never raised.

    Empty text means "no arguments" (some servers send ``""`` for a call without parameters).
    """
    text = raw or ""
    if not text.strip():
        return ToolCall(id=call_id, name=name)
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at position {exc.pos}"
        error = f"arguments are not valid JSON ({problem})"
        return _repaired(call_id, name, text, problem) or _refused(call_id, name, text, error)
    except RecursionError:
        return _refused(call_id, name, text, _too_deep(_text_depth(text)))
    return tool_call_from_object(call_id, name, decoded, raw=text)


def tool_call_from_object(
    call_id: str, name: str, decoded: Any, *, raw: str | None = None
) -> ToolCall:
    """A ToolCall from already-decoded arguments, which must be a JSON object."""
    if isinstance(decoded, dict):
        return bound_tool_call(ToolCall(id=call_id, name=name, arguments=decoded), raw=raw)
    error = f"arguments must be a JSON object, got {type(decoded).__name__}"
    if raw is None:
        raw = preview(decoded, MAX_RAW_ARGUMENTS_CHARS, style="json")
    return _refused(call_id, name, raw, error)


def bound_tool_call(call: ToolCall, *, raw: str | None = None) -> ToolCall:
    """``call`` itself when its arguments are within bounds, else a copy the loop answers with
    a tool error: arguments ``{}``, ``arguments_error`` saying why, a bounded ``raw_arguments``.

    ``raw`` is the text the arguments were decoded from, when there was one. A call built in
    code with a name or id that is not text (a ``FunctionModel`` may do that) gets an empty
    one, which the loop answers like any nameless call or gives a fresh id.
    """
    # typed as object: the annotations say str and dict, code that builds calls may not
    name: object = call.name
    call_id: object = call.id
    arguments: object = call.arguments
    if not isinstance(name, str) or not isinstance(call_id, str):
        call = replace(
            call,
            name=name if isinstance(name, str) else "",
            id=call_id if isinstance(call_id, str) else "",
        )
    if not isinstance(arguments, dict) and call.arguments_error is None:
        shown = preview(arguments, 200, style="json")
        return replace(
            call,
            arguments={},
            raw_arguments=shown,
            arguments_error=f"arguments must be a JSON object, got {shown}",
        )
    if call.arguments_error is not None:
        kept = call.raw_arguments
        if kept is not None and len(kept) > MAX_RAW_ARGUMENTS_CHARS:
            return replace(call, raw_arguments=_cut(kept))
        return call
    problem = _depth_problem(call.arguments)
    if problem is None:
        return call
    text = raw or call.raw_arguments
    if text is None:
        text = preview(call.arguments, MAX_RAW_ARGUMENTS_CHARS, style="json")
    return replace(call, arguments={}, raw_arguments=_cut(text), arguments_error=problem)


def bound_tool_calls(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """:func:`bound_tool_call` on each call; ``calls`` itself when all are within bounds."""
    bounded = tuple(bound_tool_call(call) for call in calls)
    if all(new is old for new, old in zip(bounded, calls, strict=True)):
        return calls
    return bounded


def refuse_repairs_of_cut_calls(
    calls: tuple[ToolCall, ...],
    stop_reason: str | None,
    may_run: Callable[[str], bool] = lambda name: False,
) -> tuple[ToolCall, ...]:
    """``calls`` with each repaired-argument call refused when the response was cut off at
    the output token limit: its JSON was then most likely cut short, and a repair would run
    the tool with a cut-off argument (a Write of half a file). A call to a tool ``may_run``
    (by its name) keeps its repaired arguments: one that does no harm when they are cut
    short. ``calls`` itself otherwise."""
    if stop_reason != "max_tokens" or not any(_arguments_repaired(c) for c in calls):
        return calls
    return tuple(
        _cut_off(call) if _arguments_repaired(call) and not may_run(call.name) else call
        for call in calls
    )


def _arguments_repaired(call: ToolCall) -> bool:
    return any(note.startswith(_REPAIRED_ARGUMENTS) for note in call.repairs)


def _cut_off(call: ToolCall) -> ToolCall:
    error = (
        "arguments were cut off at the output token limit (the response ended mid-call): "
        "nothing was run. Make the call again with shorter arguments, or split the work "
        "into several calls"
    )
    others = tuple(note for note in call.repairs if not note.startswith(_REPAIRED_ARGUMENTS))
    return replace(call, arguments={}, arguments_error=error, repairs=others)


def arguments_text(call: ToolCall) -> str:
    """The JSON text to send back to a provider for ``call``: the raw text if it was bad."""
    if call.arguments_error is not None and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def _repaired(call_id: str, name: str, text: str, problem: str) -> ToolCall | None:
    """The call with the arguments ``text`` was meant to hold, or ``None`` when the repair
    yields no usable object."""
    repaired = repair_arguments(text, max_depth=MAX_ARGUMENT_DEPTH)
    if repaired is None:
        return None
    call = tool_call_from_object(call_id, name, repaired)
    if call.arguments_error is not None:
        return None
    note = f"{_REPAIRED_ARGUMENTS} ({problem})"
    return replace(call, raw_arguments=_cut(text), repairs=(note,))


def _refused(call_id: str, name: str, text: str, error: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, raw_arguments=_cut(text), arguments_error=error)


def _cut(text: str) -> str:
    if len(text) <= MAX_RAW_ARGUMENTS_CHARS:
        return text
    return f"{text[:MAX_RAW_ARGUMENTS_CHARS]}... [cut: {len(text):,} characters in all]"


def _too_deep(depth: int) -> str:
    return (
        f"arguments are nested {depth:,} levels deep; the limit is {MAX_ARGUMENT_DEPTH}: "
        "flatten them"
    )


def _depth_problem(arguments: object) -> str | None:
    """Why ``arguments`` cannot be used (too deep, or containing itself), or ``None``.

    Iterative, and each container is measured once (a shared one is remembered), so the cost
    is proportional to the number of distinct containers however they are nested. Most calls
    hold only text and numbers: one level, seen without the walk.
    """
    if type(arguments) is dict and all(type(v) in _SCALARS for v in arguments.values()):
        return None
    height: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[object, bool]] = [(arguments, False)]
    while stack:
        value, children_done = stack.pop()
        key = id(value)
        children = _containers_in(value)
        if children_done:
            on_path.discard(key)
            height[key] = 1 + max((height[id(child)] for child in children), default=0)
            continue
        if key in height:
            continue
        on_path.add(key)
        stack.append((value, True))
        for child in children:
            if id(child) in on_path:
                return "arguments contain themselves (a cycle): send plain JSON"
            if id(child) not in height:
                stack.append((child, False))
    depth = height[id(arguments)]
    return _too_deep(depth) if depth > MAX_ARGUMENT_DEPTH else None


def _containers_in(value: object) -> list[object]:
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return []
    return [item for item in items if isinstance(item, Mapping | list | tuple)]


def _text_depth(text: str) -> int:
    """How deeply the brackets of JSON ``text`` nest (strings skipped); cheap, never recursive."""
    depth = deepest = 0
    for token in _JSON_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in ("]", "}"):
            depth -= 1
    return deepest
