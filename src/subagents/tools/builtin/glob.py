"""Glob: files whose path matches a pattern, newest first."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import Field

from subagents.tools.base import Tool, ToolContext
from subagents.tools.builtin._files import (
    Deadline,
    glob_regex,
    plural,
    require_directory,
)
from subagents.tools.builtin._ignore import INCLUDE_IGNORED_DESCRIPTION, SearchFilter
from subagents.tools.decorator import tool
from subagents.tools.workspace import Workspace, workspace_of

__all__ = [
    "GLOB_TIME_BUDGET_SECONDS",
    "MAX_GLOB_RESULTS",
    "glob_tool",
    "make_glob_tool",
    "split_absolute_pattern",
]

MAX_GLOB_RESULTS = 100
GLOB_TIME_BUDGET_SECONDS = 20.0
"""How long one Glob call may spend matching paths before it stops with an error."""

_DESCRIPTION = """\
Find files by name pattern, e.g. `**/*.py`. `*` matches within one folder name, `**` across \
folders. Returns matching file paths relative to the workspace root, \
most recently modified first, at most 100. `path` is the folder to search (default: the \
workspace root). Like ripgrep, it skips files that .gitignore, .ignore or .git/info/exclude \
exclude and hidden files (names starting with '.'), unless `include_ignored` is true or the \
pattern or `path` names such a folder itself (e.g. `.github/**/*.yml`). Use Grep to search \
file contents."""

_GLOB_CHARS = frozenset("*?[{")


def make_glob_tool(*, time_budget_seconds: float = GLOB_TIME_BUDGET_SECONDS) -> Tool:
    """The Glob tool; each call stops after ``time_budget_seconds`` of matching."""

    def glob_files(
        pattern: Annotated[str, Field(description="Glob pattern to match file paths against.")],
        ctx: ToolContext,
        path: Annotated[
            str | None, Field(description="Folder to search in (default: the workspace root).")
        ] = None,
        include_ignored: Annotated[bool, Field(description=INCLUDE_IGNORED_DESCRIPTION)] = False,
    ) -> str:
        deadline = Deadline.after("Glob", time_budget_seconds)
        workspace = workspace_of(ctx)
        search = SearchFilter(workspace, include_ignored=include_ignored)
        return _glob(workspace, pattern, path, deadline, search)

    return tool(name="Glob", description=_DESCRIPTION, read_only=True, idempotent=True)(glob_files)


def _glob(
    workspace: Workspace, pattern: str, path: str | None, deadline: Deadline, search: SearchFilter
) -> str:
    if pattern.startswith("/"):
        path, pattern = split_absolute_pattern(pattern)
    base = require_directory(workspace, path)
    where = workspace.display(base)
    start, rest = _literal_start(base, pattern.removeprefix("./"))
    compiled = glob_regex(rest)
    deeper = _deeper(rest)
    below = None if deeper is None else glob_regex(deeper)
    matches: list[tuple[float, str]] = []
    in_subfolders: list[str] = []
    for file in search.files(start):
        relative = file.relative_to(start).as_posix()
        try:
            if compiled.match(relative, timeout=deadline.remaining()):
                matches.append((_mtime(file), workspace.display(file)))
            elif below is not None and below.match(relative, timeout=deadline.remaining()):
                in_subfolders.append(workspace.display(file))
        except TimeoutError:
            raise deadline.expired() from None
    notes = search.notes_text()
    subfolders = _subfolder_note(pattern, in_subfolders)
    if not matches:
        skipped = search.skipped_note()
        missed = f"No files match {pattern!r} in {where}."
        return "\n".join(filter(None, [missed, subfolders, skipped, notes]))
    matches.sort(key=lambda item: (-item[0], item[1]))
    lines = [shown for _, shown in matches[:MAX_GLOB_RESULTS]]
    if len(matches) > MAX_GLOB_RESULTS:
        lines.append(
            f"(showing the first {MAX_GLOB_RESULTS} of {len(matches)} matching files, newest "
            "first; narrow the pattern or path to see the rest)"
        )
    else:
        lines.append(f"({plural(len(matches), 'file')} in {where})")
    if subfolders:
        lines.append(subfolders)
    if notes:
        lines.append(notes)
    return "\n".join(lines)


_SUBFOLDER_FILES_SHOWN = 10


def _deeper(pattern: str) -> str | None:
    """``pattern`` reaching into subfolders too (``src/*.py`` -> ``src/**/*.py``), when its
    last part is a wildcard that ``*`` keeps in one folder; else ``None``."""
    head, _, last = pattern.rpartition("/")
    if not _GLOB_CHARS.intersection(last) or head.endswith("**") or last.startswith("**"):
        return None
    return f"{head}/**/{last}" if head else f"**/{last}"


def _subfolder_note(pattern: str, files: list[str]) -> str:
    """Files the pattern missed for being a folder deeper: a 1.5B finder globbed
    ``**/src/*.py`` for the file defining a function, saw ``src/app.py`` only (the function
    is in ``src/billing/``), and answered with it."""
    wider = _deeper(pattern)
    if not files or wider is None:
        return ""
    files.sort()
    shown = ", ".join(files[:_SUBFOLDER_FILES_SHOWN])
    more = len(files) - _SUBFOLDER_FILES_SHOWN
    rest = f" and {plural(more, 'more file')}" if more > 0 else ""
    return (
        f"(`*` stays within one folder: {plural(len(files), 'file')} in subfolders match "
        f"{wider!r}: {shown}{rest})"
    )


def _literal_start(base: Path, pattern: str) -> tuple[Path, str]:
    """The folder the pattern's leading literal names lead to, and the rest of the pattern:
    ``src/**/*.py`` -> (``base/src``, ``**/*.py``). The walk then starts there, and a hidden
    or ignored folder the pattern names (``.github/*.yml``) is searched as asked."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if not part or part in (".", "..") or _GLOB_CHARS.intersection(part) or "\\" in part:
            break
        literal.append(part)
    while literal:
        folder = base.joinpath(*literal)
        if folder.is_dir() and Path(os.path.realpath(folder)) == folder:  # no symlink on the way
            return folder, "/".join(parts[len(literal) :])
        literal.pop()
    return base, pattern


def split_absolute_pattern(pattern: str) -> tuple[str, str]:
    """``/abs/dir/**/*.py`` -> (``/abs/dir``, ``**/*.py``): the literal folder and the rest."""
    parts = PurePosixPath(pattern).parts
    literal: list[str] = []
    for part in parts:
        if _GLOB_CHARS.intersection(part):
            break
        literal.append(part)
    rest = list(parts[len(literal) :])
    if not rest:  # no wildcard at all: the pattern names one file
        literal, rest = literal[:-1], literal[-1:]
    return str(PurePosixPath(*literal)), "/".join(rest)


def _mtime(file: Path) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return 0.0


glob_tool = make_glob_tool()
