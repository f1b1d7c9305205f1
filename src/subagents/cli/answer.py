"""An agent's answer as the commands print it (the text exactly as the model wrote it), and
what else a model wrote, made safe for a terminal.

The answer is data: scripts pipe it into files and other programs. So it never goes through
Rich, which would turn ``:smile:`` into an emoji, expand tabs, drop carriage returns and break
long lines at the console's width (80 columns in a pipe without ``COLUMNS``). It is written as
it is (already redacted by the caller), then one newline, so a reader that drops the last
newline has the answer byte for byte.

At a terminal the text is shown rather than handed on, and a model must not drive the
terminal: the control characters it wrote (an escape sequence that moves the cursor, recolours
or clears the screen; a carriage return that writes over a line) are shown escaped as
``\\x1b``, except the line feeds, tabs and CRLF line ends that lay text out. Long lines stay
whole: the terminal wraps them itself. The progress and status lines around the answer quote
a model's (or a tool's) text too, inside Rich markup: :func:`markup_safe` makes it safe there.
The views of stored runs and of project files (``trace``, ``tasks show``, ``skills list``,
``agents show``) quote such text on one line cut to a width: :func:`markup_line`.
"""

from __future__ import annotations

import re
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "markup_line",
    "markup_safe",
    "markup_text",
    "quote_markup",
    "shown_text",
    "terminal_safe",
    "write_answer",
    "writes_to_terminal",
]

# C0 controls but tab and line feed, a carriage return not ending a line, DEL, and C1 controls
# (U+009B is a CSI on the terminals that read C1 codes)
_CONTROL = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


# a '[' with the backslashes before it; what Rich reads as a tag when it follows the '['
_BRACKET = re.compile(r"(\\*)\[")
_TAG_AFTER_BRACKET = re.compile(r"[a-z#/@][^\[]*?\]")
_TRAILING_BACKSLASHES = re.compile(r"\\+\Z")


def quote_markup(text: str) -> str:
    """``text`` to put in Rich markup so that it shows as written, before a tag or inside
    one. Rich's own ``escape`` leaves a ``[`` that does not open a tag as it is, and Rich then
    reads ``\\[`` as an escaped bracket: a regular expression such as ``\\[0-9]`` lost its
    backslash. Here every ``[`` keeps its backslashes: before a tag each one is doubled and
    one more escapes the tag; before a ``[`` that opens none, one more stands for the one Rich
    removes; trailing ones are doubled (they would escape the closing tag that follows)."""

    def bracket(found: re.Match[str]) -> str:
        backslashes = found.group(1)
        if _TAG_AFTER_BRACKET.match(text, found.end()):
            return backslashes * 2 + "\\["
        return backslashes + "\\[" if backslashes else "["

    quoted = _BRACKET.sub(bracket, text)
    return _TRAILING_BACKSLASHES.sub(lambda found: found.group() * 2, quoted)


def terminal_safe(text: str) -> str:
    """``text`` with the control characters a terminal would act on shown as ``\\xNN``."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def shown_text(text: str, *, terminal: bool) -> str:
    """``text`` as it is shown: at a ``terminal`` with its control characters escaped (see
    :func:`terminal_safe`), else exactly as it is."""
    return terminal_safe(text) if terminal else text


def markup_text(text: str, *, terminal: bool) -> str:
    """``text`` (a name, a path, a message) to quote whole in Rich markup: :func:`shown_text`
    with its markup escaped (see :func:`quote_markup`)."""
    return quote_markup(shown_text(text, terminal=terminal))


def writes_to_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (a closed or odd stream counts as not one)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def write_answer(text: str, stream: IO[str] | None = None) -> None:
    """Write ``text`` and a newline to ``stream`` (default: stdout): exact in a pipe or file,
    with control characters escaped at a terminal (see :func:`terminal_safe`)."""
    stream = stream or sys.stdout
    stream.write(shown_text(text, terminal=writes_to_terminal(stream)) + "\n")
    stream.flush()


def markup_safe(text: str, console: Console) -> str:
    """``text`` a model or a tool wrote, to quote in a Rich markup string printed on
    ``console``: its markup escaped and, at a terminal, its control characters too."""
    return markup_text(text, terminal=console.is_terminal)


def markup_line(text: str, width: int, *, terminal: bool) -> str:
    """``text`` a model, a tool or a file wrote, to quote in Rich markup as one line of at most
    ``width`` characters: each run of whitespace one space, cut with ``…``, its markup escaped
    and, at a ``terminal``, its control characters shown as ``\\xNN`` (before it is cut, so
    that the line keeps to ``width``)."""
    line = " ".join(shown_text(text, terminal=terminal).split())
    return quote_markup(line if len(line) <= width else line[: width - 1] + "…")
