"""Runaway repetition: an answer, or one argument of a tool call, that repeats one passage over
and over.

Small models fall into loops: a 1.5B model asked to delegate wrote a Task call whose prompt
was one sentence (copied from another tool's description) repeated until the token limit cut
it off. Nothing useful comes after the loop starts, so the loop is worth noticing early:

- :func:`find_repetition` judges a whole text: it ends in a loop (a passage of up to
  :data:`MAX_PERIOD` characters repeated back to back), or one line or sentence of at least
  :data:`MIN_UNIT_CHARS` fills most of it;
- :class:`RunawayWatch` judges a text as it is written, so that a stream can be stopped once
  a loop at its end is certain.

Both need a passage repeated :data:`MIN_REPEATS` times covering :data:`MIN_LOOP_CHARS`
characters: a separator line, a short list of similar items or a few identical lines of code
are not loops. The work is linear in the text and bounded: only the last
:data:`MAX_CHECKED_CHARS` characters are looked at.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from subagents._preview import shorten

__all__ = [
    "MAX_CHECKED_CHARS",
    "MAX_PERIOD",
    "MIN_LOOP_CHARS",
    "MIN_REPEATS",
    "MIN_UNIT_CHARS",
    "Repetition",
    "RunawayWatch",
    "find_repetition",
    "find_repetition_in_arguments",
]

MIN_REPEATS = 6
"""Times a passage must follow itself (or occur) to be a loop."""
MIN_LOOP_CHARS = 300
"""Characters the repeats must cover together."""
MAX_PERIOD = 512
"""The longest passage looked for at the end of a text."""
MIN_UNIT_CHARS = 20
"""The shortest line or sentence counted when looking for one that fills the text."""
MAX_CHECKED_CHARS = 65_536
"""Only the end of a longer text is looked at."""
_UNIT_SHARE = 0.5  # of the text a repeated line or sentence must fill
_CHECK_EVERY = 256  # new characters between two looks of a RunawayWatch
_MAX_ARGUMENT_STRINGS = 256  # string values of one call's arguments looked at
_UNIT_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SENTENCE_START = re.compile(r"[.!?]\s+|\n+")
_WORD_START = re.compile(r"\s+")
_SHOWN_CHARS = 80


@dataclass(frozen=True, slots=True)
class Repetition:
    """A passage repeated ``repeats`` times over ``chars`` characters of a text; ``where``
    names the argument it was found in (``None``: the answer's text; ``""``: a call's
    arguments as the model wrote them, unreadable as JSON)."""

    passage: str
    repeats: int
    chars: int
    where: str | None = None

    def describe(self) -> str:
        """One line for the trace and the progress output."""
        passage = shorten(self.passage.strip() or repr(self.passage), _SHOWN_CHARS)
        if self.where is None:
            place = "the answer repeats"
        elif self.where:
            place = f"argument {self.where!r} repeats"
        else:
            place = "the call's arguments repeat"
        return f"{place} {passage!r} {self.repeats} times"


def find_repetition(text: str) -> Repetition | None:
    """The loop ``text`` ends in, else a line or sentence filling most of it, else ``None``."""
    if len(text) < MIN_LOOP_CHARS:
        return None
    window = text[-MAX_CHECKED_CHARS:]
    return _tail_loop(window) or _repeated_unit(window)


def find_repetition_in_arguments(arguments: Any) -> Repetition | None:
    """The first string value of a call's ``arguments`` (at any depth) that repeats itself."""
    for where, value in _strings(arguments, ""):
        found = find_repetition(value)
        if found is not None:
            return Repetition(found.passage, found.repeats, found.chars, where)
    return None


class RunawayWatch:
    """Watches a text being written for a loop at its end (:func:`find_repetition`'s first
    test), looking again after every :data:`_CHECK_EVERY` new characters."""

    __slots__ = ("_checked", "_pieces", "_size")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._size = 0
        self._checked = 0

    def feed(self, piece: str) -> Repetition | None:
        """Take the next piece of text; the loop the text now ends in, if any."""
        self._pieces.append(piece)
        self._size += len(piece)
        if self._size - self._checked < _CHECK_EVERY or self._size < MIN_LOOP_CHARS:
            return None
        self._checked = self._size
        text = "".join(self._pieces)[-MAX_CHECKED_CHARS:]
        self._pieces = [text]  # what is kept stays bounded
        return _tail_loop(text)


def _tail_loop(text: str) -> Repetition | None:
    """The shortest passage whose repeats fill the end of ``text`` (a cut last repeat
    included), when they are enough to be a loop."""
    length = len(text)
    for period in range(1, min(MAX_PERIOD, length // MIN_REPEATS) + 1):
        needed = max(MIN_REPEATS * period, MIN_LOOP_CHARS)
        if needed > length:
            break
        if text[-1] != text[-1 - period] or text[-2] != text[-2 - period]:
            continue  # the cheap test first: most periods fail it
        tail = text[-needed:]
        if tail[period:] != tail[:-period]:
            continue
        start = length - needed
        while start >= period and text[start - period : start] == text[start : start + period]:
            start -= period  # whole repeats first, then what is left of one
        while start > 0 and text[start - 1] == text[start - 1 + period]:
            start -= 1
        covered = length - start
        return Repetition(_readable(text[start : start + period]), covered // period, covered)
    return None


def _readable(passage: str) -> str:
    """The turn of a repeating ``passage`` that starts a sentence, a line or a word, as a
    person would quote it (any turn of it repeats the same)."""
    boundary = _SENTENCE_START.search(passage) or _WORD_START.search(passage)
    if boundary is None or boundary.end() in (0, len(passage)):
        return passage
    return passage[boundary.end() :] + passage[: boundary.end()]


def _repeated_unit(text: str) -> Repetition | None:
    counts = Counter(
        unit for unit in (part.strip() for part in _UNIT_END.split(text))
        if len(unit) >= MIN_UNIT_CHARS
    )  # fmt: skip
    if not counts:
        return None
    unit, repeats = counts.most_common(1)[0]
    covered = repeats * len(unit)
    if repeats < MIN_REPEATS or covered < MIN_LOOP_CHARS or covered < _UNIT_SHARE * len(text):
        return None
    return Repetition(unit, repeats, covered)


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """The string values of ``value`` with where they are (``prompt``, ``edits[0].new``),
    at most :data:`_MAX_ARGUMENT_STRINGS` of them."""
    stack: list[tuple[Any, str]] = [(value, where)]
    seen = 0
    while stack and seen < _MAX_ARGUMENT_STRINGS:
        item, place = stack.pop()
        if isinstance(item, str):
            seen += 1
            yield place, item
        elif isinstance(item, dict):
            stack.extend((v, f"{place}.{k}" if place else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{place}[{i}]") for i, v in enumerate(item))
