"""MultiEdit: several exact replacements in one file, applied all together or not at all."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from subagents.errors import ToolError
from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import plural, require_text_file
from subagents.tools.builtin.edit import (
    apply_replacement,
    check_replacement,
    read_for_edit,
    write_edited,
)
from subagents.tools.decorator import tool
from subagents.tools.workspace import workspace_of

__all__ = ["MAX_EDITS", "EditOperation", "multi_edit_tool"]

MAX_EDITS = 500
"""How many edits one call may carry; more is a tool error, not a silent cut."""

_DESCRIPTION = f"""\
Make several exact replacements in one file of the workspace in a single call. `edits` are \
applied in order, each to the text the previous ones produced, with Edit's rules: \
`old_string` must match exactly (whitespace and indentation included) and occur exactly once \
unless `replace_all` is true. All edits succeed or none is written: if any edit fails, the \
file is left unchanged and the error names the edit. To create a new file, give a path that \
does not exist and make the first edit's `old_string` empty with the whole content as its \
`new_string`. At most {MAX_EDITS} edits per call."""


class EditOperation(BaseModel):
    """One replacement of a MultiEdit call."""

    model_config = ConfigDict(extra="forbid")

    old_string: Annotated[str, Field(description="The exact text to replace.")]
    new_string: Annotated[str, Field(description="The text to put in its place.")]
    replace_all: Annotated[
        bool, Field(description="Replace every occurrence instead of exactly one.")
    ] = False


def multi_edit_file(
    file_path: Annotated[str, Field(description="Path of the file to change.")],
    edits: Annotated[
        list[EditOperation],
        Field(min_length=1, description="The replacements, applied in order."),
    ],
    ctx: ToolContext,
) -> str:
    if len(edits) > MAX_EDITS:
        raise ToolError(
            f"{len(edits)} edits in one call is more than the limit of {MAX_EDITS}; split them "
            "over several MultiEdit calls."
        )
    workspace = workspace_of(ctx)
    path = workspace.resolve(file_path)
    shown = workspace.display(path)
    creating = not path.exists() and edits[0].old_string == ""
    if creating:
        text, rest, first = edits[0].new_string, edits[1:], 2
    else:
        path = require_text_file(workspace, file_path)
        text, rest, first = read_for_edit(path, shown, "MultiEdit"), edits, 1
    replaced = 0
    for number, edit in enumerate(rest, start=first):
        try:
            check_replacement(edit.old_string, edit.new_string)
            text, found = apply_replacement(
                text, edit.old_string, edit.new_string, edit.replace_all, shown
            )
        except ToolError as error:
            raise _failed(number, len(edits), shown, error, creating) from None
        replaced += found
    if creating:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"Could not create the folder of {shown}: {exc.strerror}.") from exc
    write_edited(path, text, shown)
    if creating:
        return f"Created {shown} and applied {plural(len(edits), 'edit')}."
    return (
        f"Edited {shown}: applied {plural(len(edits), 'edit')}, "
        f"replaced {plural(replaced, 'occurrence')}."
    )


def _failed(number: int, total: int, shown: str, error: ToolError, creating: bool) -> ToolError:
    state = "was not created" if creating else "is unchanged"
    return ToolError(
        f"Edit {number} of {total} failed: {error} No edit was applied; {shown} {state}. Fix "
        "that edit (earlier edits in the same call have already changed the text it must match) "
        "and send all the edits again."
    )


multi_edit_tool = tool(name="MultiEdit", description=_DESCRIPTION, writes_paths=("file_path",))(
    multi_edit_file
)
