"""The workspace root every file tool is confined to."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from subagents.errors import ToolError

__all__ = ["Workspace", "workspace_of"]


class Workspace:
    """A directory that file tools may not leave.

    ``resolve`` turns whatever path a model sends into a real path inside ``root``: relative
    paths are taken from the root, and every symlink is followed before the check, so neither
    ``..`` nor a link pointing elsewhere can reach a file outside.
    """

    __slots__ = ("root",)

    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str | Path, *, must_exist: bool = False) -> Path:
        """The real path of ``path``, refused with :class:`ToolError` when it is outside.

        Works for files that do not exist yet: ``realpath`` follows the links of the deepest
        existing parent and keeps the rest as written.
        """
        text = os.fspath(path)
        if "\0" in text:
            raise ToolError(
                f"The path {text!r} contains a NUL character; send the path as plain text."
            )
        try:
            real = Path(os.path.realpath(self.root / text))
        except (OSError, ValueError) as exc:
            raise ToolError(f"The path {text!r} cannot be used: {exc}.") from exc
        if real != self.root and not real.is_relative_to(self.root):
            raise ToolError(
                f"The path {text!r} is outside the workspace {self.root}; use a path inside it "
                "(relative paths are taken from the workspace root)."
            )
        if must_exist and not real.exists():
            raise ToolError(
                f"{self.display(real)} does not exist in the workspace {self.root}; check the "
                "path (LS or Glob list what is there)."
            )
        return real

    def display(self, path: Path) -> str:
        """``path`` relative to the root, for messages; ``.`` for the root itself."""
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return relative.as_posix() or "."


@lru_cache(maxsize=64)
def _workspace_for(root: Path) -> Workspace:
    return Workspace(root)


def workspace_of(ctx: Any) -> Workspace:
    """The :class:`Workspace` of a tool context, whose ``workspace`` may be a path or one."""
    workspace = ctx.workspace
    if isinstance(workspace, Workspace):
        return workspace
    return _workspace_for(Path(workspace))
