"""File helpers shared by the built-in tools: text detection, glob patterns, tree walks, and
the time budget of a search.

Patterns (Grep's regular expressions, the regexes Glob builds from globs) run on the ``regex``
package, whose matching can be given a timeout: Python's ``re`` cannot be stopped, so a
catastrophically backtracking pattern kept its worker thread busy long after the tool had
timed out. ``regex`` measures that timeout in CPU time of the process (C ``clock()``), which on
a busy machine makes it trip earlier, never later, than the wall-clock budget.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.errors import ToolError
from subagents.tools.globs import glob_regex
from subagents.tools.workspace import Workspace

if TYPE_CHECKING:
    pass

__all__ = [
    "MAX_LINE_CHARS",
    "VCS_DIRS",
    "Deadline",
    "cut_line",
    "glob_regex",
    "is_binary",
    "iter_files",
    "plural",
    "require_directory",
    "require_text_file",
]

VCS_DIRS: frozenset[str] = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", "CVS"})
MAX_LINE_CHARS = 2000
_SNIFF_BYTES = 8192


def plural(count: int, word: str) -> str:
    """``1 file``, ``2 files``, ``3 matches``."""
    if count == 1:
        return f"{count} {word}"
    suffix = "es" if word.endswith(("s", "x", "ch", "sh")) else "s"
    return f"{count} {word}{suffix}"


def is_binary(path: Path) -> bool:
    """True when the file's first bytes hold a NUL, the way git and grep decide."""
    with path.open("rb") as handle:
        return b"\0" in handle.read(_SNIFF_BYTES)


def cut_line(line: str) -> str:
    """``line``, cut at :data:`MAX_LINE_CHARS` with a note saying so."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [line cut: {len(line)} chars, first {MAX_LINE_CHARS} shown]"


def require_text_file(workspace: Workspace, file_path: str) -> Path:
    """The resolved path of an existing, non-binary regular file, else a ToolError."""
    path = workspace.resolve(file_path, must_exist=True)
    shown = workspace.display(path)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file; use LS to list it or Glob to search.")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file; only regular text files can be read.")
    if is_binary(path):
        size = path.stat().st_size
        raise ToolError(
            f"{shown} is a binary file ({plural(size, 'byte')}); only text files can be read or "
            "edited. Use Bash with a suitable command (e.g. 'file' or 'xxd | head') to inspect it."
        )
    return path


def require_directory(workspace: Workspace, path: str | None) -> Path:
    """The resolved path of an existing directory (the root when ``path`` is empty)."""
    resolved = workspace.resolve(path or ".", must_exist=True)
    if not resolved.is_dir():
        raise ToolError(
            f"{workspace.display(resolved)} is a file, not a directory; use Read to read it."
        )
    return resolved


def iter_files(workspace: Workspace, base: Path) -> Iterator[Path]:
    """Every file under ``base`` (or ``base`` itself when it is a file), skipping VCS folders.

    Symlinked folders are not followed and symlinked files pointing outside the workspace are
    left out, so a walk never reads anything beyond the root.
    """
    if base.is_file():
        yield base
        return
    for folder, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(name for name in dirnames if name not in VCS_DIRS)
        parent = Path(folder)
        for name in sorted(filenames):
            path = parent / name
            if path.is_symlink() and not _inside(workspace, path):
                continue
            yield path


def _inside(workspace: Workspace, path: Path) -> bool:
    try:
        workspace.resolve(path)
    except ToolError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Deadline:
    """When a search must stop: one per tool call, shared by every file it looks at."""

    tool: str
    budget_seconds: float
    at: float

    @classmethod
    def after(cls, tool: str, seconds: float) -> Deadline:
        return cls(tool, seconds, time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left (the ``timeout=`` of the next match), or the ToolError of a search that
        ran out of time."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> ToolError:
        return ToolError(
            f"{self.tool} stopped after {self.budget_seconds:g} s: the pattern took too long "
            "(catastrophic backtracking?): simplify it, e.g. avoid nested quantifiers like "
            "(a+)+, or narrow the search with a smaller path."
        )
