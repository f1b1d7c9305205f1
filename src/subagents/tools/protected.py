"""Protected paths: files that can make the harness run code or change what agents may do.

Writing one of these is never an ordinary edit. A model that may edit files could otherwise
put a hook into ``.subagents/config.toml``, a server into ``.mcp.json`` or a script into
``.git/hooks`` and have the next run execute it with no one asking, or overwrite the task
store itself. So a write to a protected path always asks a person, in every permission mode,
and is refused where nobody can answer, unless the project allows that path explicitly in
``[permissions] allow_protected`` of ``config.toml``.

Protected, wherever they sit inside the workspace (compared case-insensitively, since some
file systems are):

- ``.subagents/`` (our config, agents, MCP servers and the task store), ``.claude/`` (Claude
  Code's settings, agents, skills, commands and hooks), ``.git/`` (hooks and config run code);
- the agent folders of the other dialects: ``.wave/agents/``, ``.codex/agents/``,
  ``.gemini/agents/``;
- ``.mcp.json`` and ``.claude.json`` (MCP servers are programs we start);
- any extra file the runtime names, such as a task store kept outside ``.subagents/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = [
    "PROTECTED_DIRECTORIES",
    "PROTECTED_FILE_NAMES",
    "SQLITE_SIDECARS",
    "ProtectedPaths",
    "protected_names",
]

PROTECTED_DIRECTORIES: tuple[str, ...] = (".subagents", ".claude", ".git")
PROTECTED_FILE_NAMES: tuple[str, ...] = (".mcp.json", ".claude.json")
# The files SQLite keeps beside a database: protected with the task store itself.
SQLITE_SIDECARS: tuple[str, ...] = ("-wal", "-shm", "-journal")
# Folders whose ``agents/`` subfolder is protected (the rest of them belongs to other tools).
_AGENT_FOLDER_PARENTS: tuple[str, ...] = (".wave", ".codex", ".gemini")


def protected_names() -> tuple[str, ...]:
    """The protected paths as they appear at a project's root, relative to it."""
    agent_folders = tuple(f"{parent}/agents" for parent in _AGENT_FOLDER_PARENTS)
    return (*PROTECTED_DIRECTORIES, *PROTECTED_FILE_NAMES, *agent_folders)


_WHY_DIRECTORY = {
    ".subagents": "it holds subagents' own config, agents, MCP servers and task store",
    ".claude": "it holds Claude Code settings, agents, skills and hooks",
    ".git": "git runs its hooks and config from there",
}


@dataclass(frozen=True, slots=True)
class ProtectedPaths:
    """Which paths of one workspace are protected, and which of those the project allows.

    ``allowed`` are glob patterns relative to the workspace root (``**`` spans folders), from
    ``[permissions] allow_protected``; ``extra`` are further absolute paths to protect.
    """

    root: Path
    allowed: tuple[str, ...] = ()
    extra: frozenset[Path] = field(default_factory=frozenset)

    @classmethod
    def for_workspace(
        cls, root: Path, *, allowed: Sequence[str] = (), extra: Iterable[Path] = ()
    ) -> ProtectedPaths:
        real_root = Path(os.path.realpath(root))
        extras = frozenset(Path(os.path.realpath(path)) for path in extra)
        return cls(real_root, tuple(allowed), extras)

    def reason(self, path: Path, *, within: Path | None = None) -> str | None:
        """Why writing ``path`` (a real path inside the root) needs a person; ``None`` if it
        does not, because it is not protected or the project allows it.

        ``within`` is a folder granted to the session as a whole (its memory folder): only the
        part of ``path`` below it is judged, so the ``.claude/`` above it does not count.
        """
        why = self._why_protected(path, within or self.root)
        if why is None or self._allowed(path):
            return None
        return why

    def _why_protected(self, path: Path, base: Path) -> str | None:
        if path in self.extra or _sidecar_of(path) in self.extra:
            return "it is the task store of this run"
        try:
            parts = path.relative_to(base).parts
        except ValueError:
            return None
        folded = [part.casefold() for part in parts]
        for index, part in enumerate(folded):
            if part in _WHY_DIRECTORY:  # a .git *file* (worktrees, submodules) counts too
                return f"{part} is protected: {_WHY_DIRECTORY[part]}"
            if part in _AGENT_FOLDER_PARENTS and folded[index + 1 : index + 2] == ["agents"]:
                return f"{part}/agents/ is protected: agent files decide what agents may do"
        if folded and folded[-1] in PROTECTED_FILE_NAMES:
            return f"{parts[-1]} is protected: it names MCP servers, programs subagents starts"
        return None

    def _allowed(self, path: Path) -> bool:
        if not self.allowed:
            return False
        try:
            relative = PurePosixPath(path.relative_to(self.root).as_posix())
        except ValueError:
            return False
        return any(_glob_match(relative, pattern) for pattern in self.allowed)


def _sidecar_of(path: Path) -> Path:
    """``state.db`` for ``state.db-wal`` and ``state.db-shm`` (SQLite's companions)."""
    name = path.name
    for suffix in SQLITE_SIDECARS:
        if name.endswith(suffix):
            return path.with_name(name.removesuffix(suffix))
    return path


def _glob_match(relative: PurePosixPath, pattern: str) -> bool:
    from subagents.tools.globs import glob_regex

    return glob_regex(pattern.strip("/")).match(relative.as_posix()) is not None
