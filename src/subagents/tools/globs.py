"""Glob patterns as the shells and ripgrep read them, for Glob, Grep's ``glob`` and the
protected paths: ``*`` and ``?`` within one path segment, ``**`` across segments, ``[abc]``
classes and ``{a,b}`` alternations."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from subagents.errors import ToolError

if TYPE_CHECKING:
    import regex

__all__ = ["glob_regex"]


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> regex.Pattern[str]:
    """A regex matching ``/``-separated relative paths against a glob ``pattern``.

    ``*`` and ``?`` stay within one path segment, ``**`` spans segments (``**/`` also matches
    no folder at all), ``[abc]`` is a class and ``{a,b}`` an alternation, as in the shells and
    ripgrep globs models are used to.
    """
    import regex  # when a tool first searches: it costs ~10 ms at every start otherwise

    try:
        return regex.compile(_translate(pattern) + r"\Z", regex.DOTALL | regex.V0)
    except regex.error as exc:
        raise ToolError(f"Invalid glob pattern {pattern!r}: {exc}.") from exc


def _translate(pattern: str) -> str:
    out: list[str] = []
    index, length = 0, len(pattern)
    depth = 0  # open braces
    while index < length:
        char = pattern[index]
        if char == "*":
            if pattern.startswith("**", index):
                at_segment_start = index == 0 or pattern[index - 1] == "/"
                index += 2
                if at_segment_start and pattern.startswith("/", index):
                    out.append("(?:.*/)?")
                    index += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 2 if pattern.startswith("[!", index) else index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                index = end
        elif char == "{":
            depth += 1
            out.append("(?:")
        elif char == "," and depth:
            out.append("|")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "\\" and index + 1 < length:
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    out.extend(")" * depth)
    return "".join(out)
