"""Bounded previews of large values, for the records that only describe a tool call.

A tool call's arguments are stored whole once, in the session's messages (the assistant message
that made the call, found by its tool call id); its result once, in the tool result message.
The other records of the call (the tool ledger's entries, the trace record, the question of a
run paused for approval) only describe it, so they keep a value as it is while it is small
(:data:`SMALL_CHARS` characters or so) and a preview of it otherwise:

- a string longer than :data:`STRING_CHARS` keeps its first :data:`STRING_CHARS` characters,
  followed by a note saying how many were cut and where the full value is;
- a list or an object keeps its first :data:`ITEMS` entries, then a note (for an object, under
  the key ``"…"``); nesting deeper than :data:`DEPTH` levels becomes a note;
- once :data:`BUDGET` characters are kept, whatever is left becomes a note.

Numbers, booleans and null are kept. A preview of an object is an object with the same first
keys, so ``subagents trace`` shows the small arguments (a path, a command) as they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUDGET",
    "DEPTH",
    "FULL_VALUE_NOTE",
    "ITEMS",
    "SMALL_CHARS",
    "STRING_CHARS",
    "preview_arguments",
    "preview_text",
]

SMALL_CHARS = 4_000
"""A value this small (its strings, keys and scalars counted roughly as JSON) is kept whole."""
STRING_CHARS = 500
ITEMS = 20
DEPTH = 6
BUDGET = 8_000
FULL_VALUE_NOTE = "the full value is in the session's messages"


def preview_arguments(arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``arguments`` whole when small, else a preview object; True when it is a preview."""
    if _fits(arguments, SMALL_CHARS):
        return arguments, False
    shrunk = _Shrinker().object(arguments, 0)
    return shrunk, True


def preview_text(text: str) -> tuple[str, bool]:
    """``text`` whole when small, else its first characters and a note; True when cut."""
    if len(text) <= SMALL_CHARS:
        return text, False
    return _Shrinker().string(text), True


def _fits(value: Any, room: int) -> bool:
    """Whether ``value`` is at most ``room`` characters, stopping as soon as it is not."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            room -= len(item) + 2
        elif isinstance(item, dict):
            room -= 2
            for key, inner in item.items():
                room -= len(str(key)) + 4
                stack.append(inner)
        elif isinstance(item, list | tuple):
            room -= 2 + len(item)
            stack.extend(item)
        else:
            room -= 8
        if room < 0:
            return False
    return True


def _note(cut: str) -> str:
    return f"[{cut} cut; {FULL_VALUE_NOTE}]"


@dataclass(slots=True)
class _Shrinker:
    """Walks a value keeping what fits in ``budget`` characters; everything kept is charged,
    notes included, so a preview stays near :data:`BUDGET` whatever the shape of the value."""

    budget: int = BUDGET

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, dict):
            return self.object(value, depth)
        if isinstance(value, list | tuple):
            return self.array(list(value), depth)
        self.budget -= 8
        return value

    def string(self, text: str) -> str:
        keep = max(min(STRING_CHARS, self.budget), 0)
        if len(text) <= keep:
            self.budget -= len(text) + 2
            return text
        cut = f"{text[:keep]}… {_note(f'{len(text) - keep:,} more characters')}"
        self.budget -= len(cut) + 2
        return cut

    def object(self, value: dict[str, Any], depth: int) -> dict[str, Any]:
        self.budget -= 2
        kept: dict[str, Any] = {}
        for index, (key, inner) in enumerate(value.items()):
            if index >= ITEMS or self.budget <= 0 or depth >= DEPTH:
                kept["…"] = self.note(f"{len(value) - index:,} more keys")
                break
            self.budget -= len(str(key)) + 4
            kept[key] = self.value(inner, depth + 1)
        return kept

    def array(self, value: list[Any], depth: int) -> list[Any]:
        self.budget -= 2
        kept: list[Any] = []
        for index, inner in enumerate(value):
            if index >= ITEMS or self.budget <= 0 or depth >= DEPTH:
                kept.append(self.note(f"{len(value) - index:,} more items"))
                break
            kept.append(self.value(inner, depth + 1))
        return kept

    def note(self, cut: str) -> str:
        text = _note(cut)
        self.budget -= len(text) + 2
        return text
