"""The workspace root every file tool is confined to, and the few folders granted beyond it."""

from __future__ import annotations

import os
from collections.abc import Iterable
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

    ``grants`` are further folders the tools may use, each as a whole (an agent's memory
    folder, see :mod:`subagents.runtime.memory`); the same checks hold inside them.
    """

    __slots__ = ("grants", "root")

    def __init__(self, root: Path | str, grants: Iterable[Path | str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.grants = tuple(Path(os.path.realpath(folder)) for folder in grants)

    def __repr__(self) -> str:
        if self.grants:
            return f"Workspace({str(self.root)!r}, grants={[str(g) for g in self.grants]!r})"
        return f"Workspace({str(self.root)!r})"

    def grant_of(self, path: Path) -> Path | None:
        """The granted folder holding the real path ``path``, if any."""
        for folder in self.grants:
            if path == folder or path.is_relative_to(folder):
                return folder
        return None

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
        base = self.root if real.is_relative_to(self.root) else self.grant_of(real)
        if base is None:
            also = "".join(f" or inside {folder}" for folder in self.grants)
            near = self._inside_match(real)
            hint = f" The workspace has {near}: use that path." if near is not None else ""
            raise ToolError(
                f"The path {_short(text)} is outside the workspace {self.root}; use a path "
                f"inside it{also} "
                f"(relative paths are taken from the workspace root).{hint}"
            )
        if _unresolved_link(real, base):
            raise ToolError(
                f"The path {_short(text)} goes through a symbolic link that loops or cannot "
                "be followed, so where it leads is unknown; use a path without it."
            )
        if must_exist and not real.exists():
            raise ToolError(
                f"{self.display(real)} does not exist in the workspace {self.root}; "
                + self._where_else(real)
            )
        return real

    def meant_inside(self, path: str) -> str | None:
        """The workspace path ``path`` stands for when it names nothing there: outside the
        workspace with a tail that names something inside (see :meth:`_inside_match`), or
        missing with the one file of its name elsewhere in the workspace; ``None``
        otherwise."""
        try:
            real = Path(os.path.realpath(self.root / path))
            if self.grant_of(real) is not None:
                return None
            if not real.is_relative_to(self.root):
                return self._inside_match(real)
            if real.exists():
                return None
        except (OSError, ValueError):  # a name too long for the system names nothing
            return None
        found = _files_named(self.root, real.name)
        return found[0] if len(found) == 1 else None

    def _where_else(self, missing: Path) -> str:
        """What to do about a missing path: the files of the same name elsewhere in the
        workspace, when there are any (a 1.5B model passed ``pointer.txt`` on for
        ``docs/pointer.txt``, three times), else where to look."""
        found = _files_named(self.root, missing.name)
        if not found:
            return "check the path (LS or Glob list what is there)."
        if len(found) == 1:
            return f"the workspace has {found[0]}: use that path."
        listed = ", ".join(found[:_MAX_SAME_NAMES])
        more = ", ..." if len(found) > _MAX_SAME_NAMES else ""
        return f"files of that name are at {listed}{more}: use one of these paths."

    def _inside_match(self, outside: Path) -> str | None:
        """The longest tail of ``outside`` that names something in the workspace, relative.

        A small model given the workspace's absolute path often writes one with a part
        dropped or changed (``/tmp/work/docs/a.md`` for ``/tmp/work/project/docs/a.md``).
        """
        parts = outside.parts[1:]
        for start in range(min(len(parts), _MAX_TAIL_TRIES)):
            candidate = self.root.joinpath(*parts[start:])
            if not os.path.lexists(candidate):
                continue
            real = Path(os.path.realpath(candidate))
            if real.is_relative_to(self.root) and real != self.root:
                return self.display(real)
        return None

    def display(self, path: Path) -> str:
        """``path`` relative to the root, for messages; ``.`` for the root itself."""
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return relative.as_posix() or "."


def _unresolved_link(real: Path, base: Path) -> bool:
    """Whether ``real`` (a ``realpath`` result under ``base``) still holds a symlink.

    ``realpath`` gives up at a link that loops (or that it cannot read) and keeps the rest
    of the path as written; a link after that point (``loop/../link_out``) was never
    followed, and opening the path would follow it wherever it points.
    """
    current = base
    for part in real.relative_to(base).parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


_MAX_TAIL_TRIES = 32  # tails of an outside path looked for in the workspace
_MAX_SAME_NAMES = 3  # files of a missing file's name that its error names
_MAX_ENTRIES_SEEN = 20_000  # entries a search for them looks at, at most


def _files_named(root: Path, name: str) -> list[str]:
    """Files called ``name`` under ``root`` (relative, sorted; hidden folders and links not
    entered), looking at no more than ``_MAX_ENTRIES_SEEN`` entries."""
    if not name or name in (".", ".."):
        return []
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        seen += len(dirs) + len(files)
        if seen > _MAX_ENTRIES_SEEN:
            break
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if name in files:
            found.append(Path(folder, name).relative_to(root).as_posix())
            if len(found) > _MAX_SAME_NAMES:
                break
    return sorted(found)


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
def _workspace_for(root: Path, grants: tuple[Path, ...] = ()) -> Workspace:
    return Workspace(root, grants)


def workspace_of(ctx: Any) -> Workspace:
    """The :class:`Workspace` of a tool context, whose ``workspace`` may be a path or one,
    with the context's ``grants`` (folders granted beyond it), if any."""
    workspace = ctx.workspace
    grants = tuple(getattr(ctx, "grants", ()) or ())
    if isinstance(workspace, Workspace):
        if not grants or set(grants) <= set(workspace.grants):
            return workspace
        return _workspace_for(workspace.root, (*workspace.grants, *grants))
    return _workspace_for(Path(workspace), grants)
