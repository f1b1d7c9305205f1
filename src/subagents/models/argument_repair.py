"""Repairing the malformed argument JSON that small models write, before it is refused.

Weak models send ``{'path': 'a.txt'}``, trailing commas, unquoted keys, Python ``True`` /
``None``, a missing closing brace, or the JSON inside a Markdown fence or after a sentence.
:func:`repair_arguments` hands such text to the maintained ``json-repair`` package and accepts
the result only when it is one non-empty JSON object.

The work stays bounded by the input's shape, never by a clock: text longer than
:data:`MAX_REPAIR_CHARS` is not repaired; only the first object is handed over (``json-repair``
does work proportional to the rest of the text for every top-level value it finds, which made
``'{]}' * 7000`` take a minute), and text holding a second object is not repaired (which one
was meant is a guess); brackets nested deeper than the arguments' depth limit are not handed
over either (the package recurses).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_REPAIR_CHARS", "repair_arguments"]

MAX_REPAIR_CHARS = 20_000
"""Longest argument text a repair is tried on; longer bad JSON is refused as it is."""

_CLOSER = {"{": "}", "[": "]"}
_MAX_STRAY_CLOSERS = 4
"""Closing brackets that close nothing open. A model's slip has one or two; many are noise
on which the package's work grows with the square of the length (``'{"k":' + '{]}' * 6000``
took half a minute)."""


def repair_arguments(text: str, *, max_depth: int) -> dict[str, Any] | None:
    """The JSON object ``text`` was meant to be, or ``None`` when no single object can be had.

    ``text`` is argument text that ``json.loads`` refused. Never raises.
    """
    if len(text) > MAX_REPAIR_CHARS:
        return None
    candidate = _first_object(text, max_depth)
    if candidate is None:
        return None
    try:
        from json_repair import loads  # imported on first repair: most runs never need it

        value = loads(candidate)
    except (RecursionError, ValueError, TypeError, IndexError, KeyError, AttributeError):
        return None
    if not isinstance(value, dict) or not value:
        return None  # nothing, or a guess of an empty object from text that held more
    return value


def _first_object(text: str, max_depth: int) -> str | None:
    """The text of the first ``{...}`` in ``text``: from its brace to the brace that closes it,
    or to the end when it is never closed. ``None`` when there is no ``{``, when another
    ``{`` follows the object, when brackets nest deeper than ``max_depth``, or when more than
    a few closing brackets close nothing.

    Quotes (double and single) hide brackets; a closer that does not match the innermost open
    bracket is skipped, as the repair does.
    """
    start = text.find("{")
    if start < 0:
        return None
    open_closers: list[str] = []
    stray_closers = 0
    quote = ""
    escaped = False
    end = len(text)
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in _CLOSER:
            open_closers.append(_CLOSER[char])
            if len(open_closers) > max_depth:
                return None
        elif open_closers and char == open_closers[-1]:
            open_closers.pop()
            if not open_closers:
                end = index + 1
                break
        elif char in "}]":
            stray_closers += 1
            if stray_closers > _MAX_STRAY_CLOSERS:
                return None
    if "{" in text[end:]:
        return None
    return text[start:end]
