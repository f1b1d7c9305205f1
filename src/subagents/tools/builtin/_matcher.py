"""Finding the lines of a text that a regular expression matches, within a deadline.

Grep's pattern applies to one line at a time (unless ``multiline``). Calling the pattern on
every line with a timeout costs a clock read per call: fifteen times the cost of the search
itself on a large tree. So a pattern whose match cannot depend on anything outside its line
(no lookaround, no ``\\A``/``\\Z``, no atomic group or possessive quantifier: see
:data:`_NOT_LINE_LOCAL`) is searched over the whole text instead, compiled with ``MULTILINE``
so that ``^`` and ``$`` still mean the start and end of a line, and each match found says which
line matches. For such a pattern a line matches on its own exactly when the whole text has a
match starting in it; when that match runs over a line break (``\\s`` and ``[^x]`` can), the
line is asked on its own.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from subagents.tools.builtin._files import Deadline

if TYPE_CHECKING:
    import regex

__all__ = [
    "MAX_PATTERN_EXPANSION",
    "LineMatcher",
    "PatternTooLargeError",
    "line_starts",
    "split_lines",
]

MAX_PATTERN_EXPANSION = 100_000
"""How many items a pattern's counted repeats may stand for. ``regex`` compiles ``x{1000000}``
into a million items (270 MB, and ``(?:x{65535}){65535}`` exhausts memory), where ``re`` kept
one counted loop."""

# Constructs whose meaning inside one line can depend on the text around it (lookarounds,
# \A \Z \z \G \K, atomic groups and possessive quantifiers, and every (? group but plain
# groups, names, comments and the flags i m s x a u). Deliberately broad: a false alarm only
# costs the fast path.
_NOT_LINE_LOCAL = re.compile(r"\(\?(?!:|P[<=>]|<[A-Za-z_]|#|[imsxau-]+[:)])|\\[AZzGK]|[*+?}]\+")


def split_lines(text: str) -> list[str]:
    """Lines split on newlines only, so that offsets into ``text`` map onto them."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


class PatternTooLargeError(ValueError):
    """The pattern's counted repeats (``{m,n}``) would expand beyond the limit."""

    def __init__(self, size: int) -> None:
        super().__init__(
            f"its counted repeats stand for about {size:,} items (the limit is "
            f"{MAX_PATTERN_EXPANSION:,}): use smaller counts, or + and * instead"
        )
        self.size = size


@dataclass(slots=True)
class LineMatcher:
    """One Grep call's pattern, compiled per line and (when equivalent) for whole texts."""

    per_line: regex.Pattern[str]
    whole_text: regex.Pattern[str] | None
    deadline: Deadline

    @classmethod
    def compile(cls, pattern: str, flags: int, deadline: Deadline) -> LineMatcher:
        """Raises ``regex.error`` (and ``OverflowError``...) for a bad pattern, and
        :class:`PatternTooLargeError` for one whose repeats would take too much memory."""
        import regex  # at the first search, not at every start

        size = expansion(pattern)
        if size > MAX_PATTERN_EXPANSION:
            raise PatternTooLargeError(size)
        per_line = regex.compile(pattern, flags | regex.V0)
        whole_text = None
        if not _NOT_LINE_LOCAL.search(pattern):
            whole_text = regex.compile(pattern, flags | regex.V0 | regex.MULTILINE)
        return cls(per_line, whole_text, deadline)

    def matching_lines(self, text: str, lines: list[str], *, first_only: bool = False) -> list[int]:
        """0-based indices of the lines of ``text`` that the pattern matches on their own."""
        if self.whole_text is not None:
            return self._by_whole_text(text, lines, first_only)
        matched: list[int] = []
        for index, line in enumerate(lines):
            if self._search(self.per_line, line, 0):
                matched.append(index)
                if first_only:
                    break
        return matched

    def matches_text(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (``multiline`` searches)."""
        return self._search(self.per_line, text, 0) is not None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Every match of the pattern over the whole ``text`` (``multiline`` searches)."""
        try:
            found = self.per_line.finditer(text, timeout=self.deadline.remaining(), concurrent=True)
            return [match.span() for match in found]
        except TimeoutError:
            raise self.deadline.expired() from None

    def _by_whole_text(self, text: str, lines: list[str], first_only: bool) -> list[int]:
        """Matching lines found with one search per line that has a match."""
        assert self.whole_text is not None
        starts = line_starts(text)
        matched: list[int] = []
        position = 0
        while position <= len(text):
            match = self._search(self.whole_text, text, position)
            if match is None:
                break
            line = bisect.bisect_right(starts, match.start()) - 1
            if line >= len(lines):  # an empty match after the final newline: no line there
                break
            # No match starts in the lines skipped, so none of them matches on its own. This
            # one does, unless its match needed the line break: then ask the line itself.
            spans_lines = text.find("\n", match.start(), match.end()) != -1
            if not spans_lines or self._search(self.per_line, lines[line], 0):
                matched.append(line)
                if first_only:
                    break
            position = starts[line + 1]
        return matched

    def _search(
        self, pattern: regex.Pattern[str], text: str, position: int
    ) -> regex.Match[str] | None:
        try:
            return pattern.search(
                text, position, timeout=self.deadline.remaining(), concurrent=True
            )
        except TimeoutError:
            raise self.deadline.expired() from None


def line_starts(text: str) -> list[int]:
    """The offset of each line's first character, plus one past the end."""
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    if starts[-1] != len(text) + 1:
        starts.append(len(text) + 1)
    return starts


_COUNT = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


def expansion(pattern: str) -> int:
    """An upper bound on the items a pattern's counted repeats expand to, without compiling it.

    Every atom counts one; ``{m,n}`` multiplies the atom or group before it by its largest
    count; alternatives add up. Text that is not a valid pattern gets some number; compiling it
    reports the real error.
    """
    frames: list[list[int]] = [[0, 0]]  # per open group: [total so far, size of last atom]
    index, length = 0, len(pattern)
    while index < length:
        char = pattern[index]
        frame = frames[-1]
        if char == "\\":
            index = _after_escape(pattern, index)
            frame[0] += 1
            frame[1] = 1
            continue
        if char == "[":
            index = _after_class(pattern, index)
            frame[0] += 1
            frame[1] = 1
            continue
        if char == "(":
            frames.append([0, 0])
        elif char == ")" and len(frames) > 1:
            size = frames.pop()[0]
            frames[-1][0] += size
            frames[-1][1] = size
        elif char == "{" and (count := _COUNT.match(pattern, index)) is not None:
            low, comma, high = count.groups("")
            times = max(_number(low), _number(high)) if comma else _number(low)
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
            index = count.end()
            continue
        elif char not in "*+?|":
            frame[0] += 1
            frame[1] = 1
        index += 1
    while len(frames) > 1:
        size = frames.pop()[0]
        frames[-1][0] += size
    return frames[0][0]


def _number(digits: str) -> int:
    # int() refuses more than 4,300 digits; anything past twelve is over the limit anyway.
    return int(digits) if digits.isdigit() and len(digits) <= 12 else 10**12 if digits else 0


def _after_escape(pattern: str, index: int) -> int:
    """The index after the escape starting at ``index`` (``\\p{...}`` and the like whole)."""
    named = pattern[index + 1 : index + 2] in ("p", "P", "N", "x")
    if named and pattern.startswith("{", index + 2):
        end = pattern.find("}", index + 2)
        return end + 1 if end != -1 else len(pattern)
    return index + 2


def _after_class(pattern: str, index: int) -> int:
    """The index after the character class starting at ``index``."""
    position = index + 1
    if pattern.startswith("^", position):
        position += 1
    if pattern.startswith("]", position):
        position += 1  # a leading ] is a literal
    while position < len(pattern):
        char = pattern[position]
        if char == "\\":
            position += 2
            continue
        if char == "[" and pattern.startswith(":", position + 1):
            end = pattern.find(":]", position + 2)
            position = end + 2 if end != -1 else position + 1
            continue
        if char == "]":
            return position + 1
        position += 1
    return len(pattern)
