"""Read: a text file as numbered lines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from subagents.errors import ToolError
from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import cut_line, plural, require_text_file
from subagents.tools.decorator import tool
from subagents.tools.workspace import Workspace, workspace_of

__all__ = ["DEFAULT_READ_LIMIT", "MAX_READ_OUTPUT_CHARS", "read_tool"]

DEFAULT_READ_LIMIT = 2000
MAX_READ_OUTPUT_CHARS = 200_000

_DESCRIPTION = """\
Read a text file from the workspace. Returns the lines numbered like `cat -n` (line number, a \
tab, then the line). By default reads up to 2000 lines from the start; for longer files pass \
`offset` (the 1-based line to start at) and `limit` (how many lines). Lines longer than 2000 \
characters are cut, with a note. Paths may be relative to the workspace root or absolute \
inside it. Directories and binary files are refused: use LS to list a directory."""


def read_file(
    file_path: Annotated[str, Field(description="Path of the file to read.")],
    ctx: ToolContext,
    offset: Annotated[
        int | None, Field(description="1-based line number to start reading at.", ge=0)
    ] = None,
    limit: Annotated[
        int | None, Field(description="Number of lines to read (default 2000).", ge=1)
    ] = None,
) -> str:
    workspace = workspace_of(ctx)
    path, note = _readable(workspace, file_path)
    shown = workspace.display(path)
    first = max(offset or 1, 1)
    count = limit or DEFAULT_READ_LIMIT
    numbered: list[str] = []
    size = 0
    total = 0
    char_capped_at: int | None = None
    with path.open(encoding="utf-8", errors="replace", newline=None) as handle:
        for total, line in enumerate(handle, start=1):
            if total < first or len(numbered) >= count or char_capped_at is not None:
                continue
            entry = f"{total:>6}\t{cut_line(line.rstrip(chr(10)))}"
            if size + len(entry) > MAX_READ_OUTPUT_CHARS and numbered:
                char_capped_at = total
                continue
            numbered.append(entry)
            size += len(entry) + 1
    if total == 0:
        return f"{note}(the file {shown} exists but is empty)"
    if first > total:
        raise ToolError(
            f"{shown} has only {plural(total, 'line')}, so offset {first} is past its end; use "
            f"an offset between 1 and {total}."
        )
    last = first + len(numbered) - 1
    body = note + "\n".join(numbered)
    if last < total:
        reason = (
            f"the output reached {MAX_READ_OUTPUT_CHARS} characters"
            if char_capped_at is not None
            else f"the limit is {count}"
        )
        body += (
            f"\n\n(showing lines {first}-{last} of {total} because {reason}; to read more, "
            f"call Read with offset={last + 1})"
        )
    return body


def _readable(workspace: Workspace, file_path: str) -> tuple[Path, str]:
    """The file to read, and a note when it is not the path as written: an absolute path
    outside the workspace whose tail names a file inside it, or a missing path whose name
    only one file of the workspace has, is read there. Told the right path, a 1.5B subagent
    (the workspace's path with its last folder dropped; ``pointer.txt`` for
    ``docs/pointer.txt``) answered with the error instead of reading again (make eval)."""
    try:
        return require_text_file(workspace, file_path), ""
    except ToolError:
        meant = workspace.meant_inside(file_path)
        if meant is None:
            raise
    missing = Path(os.path.realpath(workspace.root / file_path)).is_relative_to(workspace.root)
    where = "does not exist" if missing else "is outside the workspace"
    note = f"({file_path} {where}; this is {meant}, the file of that name there)\n"
    return require_text_file(workspace, meant), note


read_tool = tool(name="Read", description=_DESCRIPTION, read_only=True, idempotent=True)(read_file)
