"""LS: the entries of one folder."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import Field

from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import glob_regex, require_directory
from subagents.tools.builtin._ignore import INCLUDE_IGNORED_DESCRIPTION, SearchFilter
from subagents.tools.decorator import tool
from subagents.tools.workspace import workspace_of

__all__ = ["MAX_LS_ENTRIES", "ls_tool"]

MAX_LS_ENTRIES = 1000

_DESCRIPTION = """\
List the files and folders in a folder of the workspace (folders end with `/`). `path` \
defaults to the workspace root; `ignore` takes glob patterns of names to leave out, e.g. \
["*.pyc", "node_modules"]. Like ripgrep, it leaves out what .gitignore, .ignore or \
.git/info/exclude exclude and hidden entries (names starting with '.'), and says how many it \
left out; `include_ignored` lists them too. Use Glob to find files by pattern across folders."""


def list_directory(
    ctx: ToolContext,
    path: Annotated[str, Field(description="Folder to list (default: the workspace root).")] = ".",
    ignore: Annotated[
        list[str] | None, Field(description="Glob patterns of names to leave out.")
    ] = None,
    include_ignored: Annotated[bool, Field(description=INCLUDE_IGNORED_DESCRIPTION)] = False,
) -> str:
    workspace = workspace_of(ctx)
    folder = require_directory(workspace, path)
    ignored = [glob_regex(pattern) for pattern in ignore or ()]
    found: list[tuple[str, bool]] = []
    with os.scandir(folder) as scan:
        for entry in scan:
            if any(regex.match(entry.name) for regex in ignored):
                continue
            found.append((entry.name, _is_dir(entry)))
    search = SearchFilter(workspace, include_ignored=include_ignored)
    entries = [
        name + "/" if is_dir else name for name, is_dir in search.kept_entries(folder, found)
    ]
    entries.sort(key=lambda name: (not name.endswith("/"), name.lower(), name))
    shown = workspace.display(folder)
    label = f"{workspace.root}/ (the workspace root)" if shown == "." else f"{shown}/"
    left_out = search.skipped_note(how="pass include_ignored: true to list them")
    left_out += f"\n{search.notes_text()}" if search.notes else ""
    if not entries:
        return f"{label} is empty." + (f"\n{left_out}" if left_out else "")
    count = len(entries)
    header = f"{label} - {count} {'entry' if count == 1 else 'entries'}:"
    lines = [header, *(f"  {name}" for name in entries[:MAX_LS_ENTRIES])]
    if len(entries) > MAX_LS_ENTRIES:
        lines.append(
            f"(showing the first {MAX_LS_ENTRIES} of {len(entries)} entries; use Glob or "
            "ignore to narrow the listing)"
        )
    if left_out:
        lines.append(left_out)
    return "\n".join(lines)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


ls_tool = tool(name="LS", description=_DESCRIPTION, read_only=True, idempotent=True)(list_directory)
