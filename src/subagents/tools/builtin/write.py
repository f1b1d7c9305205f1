"""Write: create or overwrite a file."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from subagents.errors import ToolError
from subagents.tools.base import ToolContext
from subagents.tools.builtin._files import plural
from subagents.tools.decorator import tool
from subagents.tools.workspace import workspace_of

__all__ = ["write_tool"]

_DESCRIPTION = """\
Write a file in the workspace, replacing it if it exists; missing parent folders are created. \
Give the complete new content. Prefer Edit for changing part of an existing file."""


def write_file(
    file_path: Annotated[str, Field(description="Path of the file to write.")],
    content: Annotated[str, Field(description="The complete content of the file.")],
    ctx: ToolContext,
) -> str:
    workspace = workspace_of(ctx)
    path = workspace.resolve(file_path)
    shown = workspace.display(path)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give the path of a file inside it.")
    existed = path.exists()
    data = content.encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {exc.strerror or exc}.") from exc
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown}: wrote {plural(len(data), 'byte')} ({plural(lines, 'line')})."


write_tool = tool(name="Write", description=_DESCRIPTION, writes_paths=("file_path",))(write_file)
