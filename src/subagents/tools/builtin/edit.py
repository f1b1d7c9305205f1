"""Edit: exact string replacement in a file."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from subagents.errors import ToolError
from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import plural, require_text_file
from subagents.tools.decorator import tool
from subagents.tools.workspace import workspace_of

__all__ = ["edit_tool"]

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
    workspace = workspace_of(ctx)
    path = require_text_file(workspace, file_path)
    shown = workspace.display(path)
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start}); Edit only changes "
            "UTF-8 files."
        ) from exc
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
    updated = text.replace(old_string, new_string)
    try:
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(updated)
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {exc.strerror or exc}.") from exc
    return f"Edited {shown}: replaced {plural(found, 'occurrence')}."


edit_tool = tool(name="Edit", description=_DESCRIPTION, writes_paths=("file_path",))(edit_file)
