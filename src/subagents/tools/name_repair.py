"""Reading a tool name a model spelled differently (``read``, ``web_fetch``) as the offered one.

Small models lowercase names or write them in snake_case or kebab-case. A name that matches
no tool of the session but matches exactly one of them once case, ``_``, ``-`` and spaces are
ignored is read as that tool, and the call records the repair. Only the session's own tools
are candidates, so a repair never reaches a tool outside the agent's allowed set; a name two
tools would match is left as it is (the call then fails as unknown, naming the tools).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from subagents._preview import preview
from subagents.messages import ToolCall

if TYPE_CHECKING:
    from subagents.tools.base import ToolRegistry

__all__ = ["repair_tool_names", "repaired_tool_name"]

_IGNORED = re.compile(r"[\s_\-]+")
_LONGEST_REPAIRED_NAME = 200
"""Longer names are not looked at: no tool name is that long."""


def repaired_tool_name(name: str, offered: Iterable[str]) -> str | None:
    """The one offered tool ``name`` means, when it differs from it only in case, ``_``,
    ``-`` or spaces; ``None`` when ``name`` is offered as it is, or matches none or several."""
    names = list(offered)
    if name in names or not name.strip() or len(name) > _LONGEST_REPAIRED_NAME:
        return None
    wanted = _key(name)
    matches = [candidate for candidate in names if _key(candidate) == wanted]
    return matches[0] if len(matches) == 1 else None


def repair_tool_names(calls: tuple[ToolCall, ...], tools: ToolRegistry) -> tuple[ToolCall, ...]:
    """``calls`` with each misspelled name read as the tool of ``tools`` it means (see
    :func:`repaired_tool_name`); ``calls`` itself when nothing needed repair."""
    if all(call.name in tools for call in calls):
        return calls
    names = tools.names()
    repaired: list[ToolCall] | None = None
    for index, call in enumerate(calls):
        meant = repaired_tool_name(call.name, names)
        if meant is None:
            continue
        if repaired is None:
            repaired = list(calls)
        note = f"tool name {preview(call.name, 100)} was read as {meant}"
        repaired[index] = replace(call, name=meant, repairs=(*call.repairs, note))
    return calls if repaired is None else tuple(repaired)


def _key(name: str) -> str:
    return _IGNORED.sub("", name).casefold()
