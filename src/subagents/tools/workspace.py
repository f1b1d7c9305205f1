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
                f"The path {_short(text)} contains a NUL character; send the path as plain text."
            )
        too_long = _length_problem(text)
        if too_long is not None:
            raise ToolError(f"The path {_short(text)} is too long: {too_long}; use a shorter one.")
        try:
            real = Path(os.path.realpath(self.root / text))
        except (OSError, ValueError) as exc:
            raise ToolError(f"The path {_short(text)} cannot be used: {exc}.") from exc
        if real != self.root and not real.is_relative_to(self.root):
            raise ToolError(
                f"The path {_short(text)} is outside the workspace {self.root}; use a path "
                "inside it "
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


# What Linux allows (NAME_MAX, PATH_MAX); a longer path fails in every file call anyway.
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4096


def _length_problem(text: str) -> str | None:
    encoded = text.encode("utf-8", "surrogateescape")
    if len(encoded) > _MAX_PATH_BYTES:
        return f"{len(encoded):,} bytes, and a path may have {_MAX_PATH_BYTES:,}"
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > _MAX_NAME_BYTES:
        return f"one of its names has {longest:,} bytes, and a name may have {_MAX_NAME_BYTES}"
    return None


def _short(text: str, limit: int = 120) -> str:
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


@lru_cache(maxsize=64)
def _workspace_for(root: Path) -> Workspace:
    return Workspace(root)


def workspace_of(ctx: Any) -> Workspace:
    """The :class:`Workspace` of a tool context, whose ``workspace`` may be a path or one."""
    workspace = ctx.workspace
    if isinstance(workspace, Workspace):
        return workspace
    return _workspace_for(Path(workspace))
