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

import regex

from subagents.tools.builtin._files import Deadline

__all__ = ["LineMatcher", "line_starts", "split_lines"]

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


@dataclass(slots=True)
class LineMatcher:
    """One Grep call's pattern, compiled per line and (when equivalent) for whole texts."""

    per_line: regex.Pattern[str]
    whole_text: regex.Pattern[str] | None
    deadline: Deadline

    @classmethod
    def compile(cls, pattern: str, flags: int, deadline: Deadline) -> LineMatcher:
        """Raises ``regex.error`` (and ``OverflowError``...) for a bad pattern."""
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
