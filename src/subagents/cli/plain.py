"""Plain-text listings (`agents list`, `tasks list`): one line per row, cut to the output width.

Rich lays a table out cell by cell; for a listing of a hundred rows that costs more than
finding what to list, and folding long cells makes one row several lines. Here each column
is as wide as its longest value, and when the row does not fit, the columns that may give way
are cut first (with ``…``), the others only after. The width follows the same rule as
:func:`subagents.cli.common.make_console`: ``COLUMNS`` when set, else the terminal's, else a
wide page (:data:`WIDE_OUTPUT`) for output that is not a terminal. Colour is used at a
terminal only, and never with ``NO_COLOR`` (``FORCE_COLOR`` asks for it anywhere).
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TextIO

__all__ = [
    "WIDE_OUTPUT",
    "Column",
    "clean",
    "cut",
    "output_width",
    "paint",
    "table_lines",
    "text_width",
    "use_colour",
    "wrap",
]

WIDE_OUTPUT = 160
GAP = "  "
MIN_WIDTH = 6  # a cut column keeps this many cells (a row of many columns may then not fit)
ELLIPSIS = "…"
_SGR = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "magenta": "35",
    "cyan": "36",
    "white": "37",
}
_FIRST_NOT_SIMPLY_NARROW = "\u0300"  # the first combining mark: every character before is narrow
_NOT_SIMPLY_NARROW = re.compile("[^\x00-\u02ff]")
# control characters (a name or path may hold an escape sequence): shown as spaces
_CONTROL = dict.fromkeys([*range(32), *range(127, 160)], " ")


@dataclass(frozen=True, slots=True)
class Column:
    """A column: ``flexible`` ones give way first when a row is too wide; ``keep`` says which
    end of a cut value stays (``start``: the beginning, ``end``: the end, as for paths);
    ``colours`` maps a value to its style (see :func:`paint`); an ``optional`` column is left
    out when no row has a value in it."""

    header: str
    flexible: bool = True
    keep: Literal["start", "end"] = "start"
    colours: Mapping[str, str] = field(default_factory=dict)
    optional: bool = False


def output_width(stream: TextIO | None = None) -> int:
    """The width to fit: ``COLUMNS``, else the terminal's, else :data:`WIDE_OUTPUT`."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return WIDE_OUTPUT


def use_colour(stream: TextIO | None = None) -> bool:
    """Whether to colour: at a terminal (not ``TERM=dumb``), or with ``FORCE_COLOR``; never
    with ``NO_COLOR``."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = stream or sys.stdout
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def paint(text: str, style: str | None, colour: bool = True) -> str:
    """``text`` in ``style`` (space-separated names of :data:`_SGR`), when ``colour``."""
    codes = [_SGR[name] for name in (style or "").split() if name in _SGR]
    if not colour or not codes or not text:
        return text
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def clean(text: str) -> str:
    """``text`` on one line: control characters (line breaks, escapes) become spaces."""
    return text if text.isprintable() else text.translate(_CONTROL)


def text_width(text: str) -> int:
    """Terminal cells ``text`` takes (East Asian wide characters take two, combining marks
    none)."""
    if text.isascii():
        return len(text)
    # one cell a character, but for the few that are not simply narrow (found in C, not in a
    # loop over every character: a listing measures each of its cells a few times)
    return len(text) + sum(_char_width(char) - 1 for char in _NOT_SIMPLY_NARROW.findall(text))


def _char_width(char: str) -> int:
    if char < _FIRST_NOT_SIMPLY_NARROW:
        return 1
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cut(text: str, width: int, keep: Literal["start", "end"] = "start") -> str:
    """``text`` in at most ``width`` cells; a cut one shows ``…`` where it was cut."""
    if text_width(text) <= width:
        return text
    if width <= 0:
        return ""
    room = width - 1
    if text.isascii():  # a cell a character
        return text[:room] + ELLIPSIS if keep == "start" else ELLIPSIS + text[len(text) - room :]
    chars = text if keep == "start" else reversed(text)
    kept: list[str] = []
    for char in chars:
        room -= _char_width(char)
        if room < 0:
            break
        kept.append(char)
    if keep == "start":
        return "".join(kept) + ELLIPSIS
    return ELLIPSIS + "".join(reversed(kept))


def _fit(natural: list[int], columns: Sequence[Column], width: int) -> list[int]:
    """Column widths whose row fits ``width``: the widest flexible column gives way one cell
    at a time down to its minimum, then the others do."""
    widths = list(natural)
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
    for flexible_only in (True, False):
        while excess > 0:
            candidates = [
                index
                for index, column in enumerate(columns)
                if (column.flexible or not flexible_only)
                and widths[index] > min(natural[index], MIN_WIDTH)
            ]
            if not candidates:
                break
            widest = max(candidates, key=lambda index: widths[index])
            widths[widest] -= 1
            excess -= 1
    return widths


def table_lines(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, colour: bool
) -> list[str]:
    """The header, a rule under it and one line per row, each at most ``width`` cells."""
    shown = [
        index
        for index, column in enumerate(columns)
        if not column.optional or any(row[index] for row in rows)
    ]
    columns = [columns[index] for index in shown]
    cells = [[clean(row[index]) for index in shown] for row in rows]
    natural = [
        max([text_width(column.header), *(text_width(row[index]) for row in cells)])
        for index, column in enumerate(columns)
    ]
    widths = _fit(natural, columns, width)
    lines = [_line([(c.header, "bold") for c in columns], columns, widths, colour)]
    lines.append("─" * min(width, sum(widths) + len(GAP) * (len(widths) - 1)))
    for row in cells:
        styled = [
            (value, column.colours.get(value)) for value, column in zip(row, columns, strict=True)
        ]
        lines.append(_line(styled, columns, widths, colour))
    return lines


def _line(
    cells: Sequence[tuple[str, str | None]],
    columns: Sequence[Column],
    widths: Sequence[int],
    colour: bool,
) -> str:
    parts: list[str] = []
    for (value, style), column, column_width in zip(cells, columns, widths, strict=True):
        shown = cut(value, column_width, column.keep)
        padding = " " * (column_width - text_width(shown))
        parts.append(paint(shown, style, colour) + padding)
    return GAP.join(parts).rstrip()


def wrap(text: str, width: int) -> list[str]:
    """``text`` broken into lines of at most ``width`` characters (long words too)."""
    import textwrap

    return textwrap.wrap(clean(text), width=max(width, 1), break_on_hyphens=False) or [""]
