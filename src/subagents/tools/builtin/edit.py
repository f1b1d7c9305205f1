"""Edit: exact string replacement in a file.

The steps (read the text, apply one replacement, write it back) are functions of their own so
that MultiEdit applies several replacements with the same rules and the same messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from subagents.errors import ToolError
from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import plural, require_text_file
from subagents.tools.decorator import tool
from subagents.tools.workspace import workspace_of

__all__ = [
    "MAX_EDITED_CHARS",
    "apply_replacement",
    "check_replacement",
    "edit_tool",
    "read_for_edit",
    "write_edited",
]

MAX_EDITED_CHARS = 64 * 1024 * 1024
"""The longest text an edit may produce: ``replace_all`` of a short string by a long one (or
MultiEdit doubling a text again and again) could otherwise fill the memory."""

_DESCRIPTION = """\
Replace exact text in a file of the workspace. `old_string` must match the file exactly, \
whitespace and indentation included (copy it from Read's output without the line-number \
prefix), and must occur exactly once unless `replace_all` is true; include enough surrounding \
lines to make it unique. Use Write to create a new file."""


def edit_file(
    file_path: Annotated[str, Field(description="Path of the file to change.")],
    old_string: Annotated[str, Field(description="The exact text to replace.")],
    new_string: Annotated[str, Field(description="The text to put in its place.")],
    ctx: ToolContext,
    replace_all: Annotated[
        bool, Field(description="Replace every occurrence instead of exactly one.")
    ] = False,
) -> str:
    check_replacement(old_string, new_string)
    workspace = workspace_of(ctx)
    path = require_text_file(workspace, file_path)
    shown = workspace.display(path)
    text = read_for_edit(path, shown, "Edit")
    updated, found = apply_replacement(text, old_string, new_string, replace_all, shown)
    write_edited(path, updated, shown)
    return f"Edited {shown}: replaced {plural(found, 'occurrence')}."


def check_replacement(old_string: str, new_string: str) -> None:
    """Refuse a replacement that cannot change anything, before any file is touched."""
    if old_string == new_string:
        raise ToolError(
            "old_string and new_string are the same, so nothing would change; give the new text "
            "in new_string."
        )
    if not old_string:
        raise ToolError(
            "old_string is empty; give the exact text to replace (use Write to "
            "create or overwrite a whole file)."
        )


def read_for_edit(path: Path, shown: str, tool_name: str) -> str:
    """The file's text exactly as stored (line endings kept), or a ToolError if not UTF-8."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start}); {tool_name} only "
            "changes UTF-8 files."
        ) from exc


def apply_replacement(
    text: str, old_string: str, new_string: str, replace_all: bool, shown: str
) -> tuple[str, int]:
    """``text`` with ``old_string`` replaced, and how many times; a ToolError when it is
    missing, or ambiguous without ``replace_all`` (:func:`check_replacement` comes first)."""
    found = text.count(old_string)
    if found == 0:
        raise ToolError(
            f"old_string was not found in {shown}. It must match exactly, including whitespace "
            "and indentation; Read the file and copy the text from it."
        )
    if found > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {found} times in {shown}. Add surrounding lines to old_string so "
            "that it matches exactly one place, or set replace_all to true to change all of them."
        )
    size = len(text) + found * (len(new_string) - len(old_string))
    if size > MAX_EDITED_CHARS:
        raise ToolError(
            f"this replacement would make {shown} {size:,} characters long, more than the limit "
            f"of {MAX_EDITED_CHARS:,}; nothing was written. Replace fewer occurrences, or use "
            "Bash for changes of that size."
        )
    return text.replace(old_string, new_string), found


def write_edited(path: Path, text: str, shown: str) -> None:
    try:
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {exc.strerror or exc}.") from exc


edit_tool = tool(name="Edit", description=_DESCRIPTION, writes_paths=("file_path",))(edit_file)
