"""``.worktreeinclude``: ignored files a new worktree should have too (``.env``, local config).

A worktree is a checkout of the last commit, so what git ignores (``.env``, secrets files,
local settings) is not in it. As in Claude Code, a ``.worktreeinclude`` file at the root of
the repository lists, in ``.gitignore`` syntax, which of those to copy into each new worktree:
a file is copied when it matches ``.worktreeinclude`` and git ignores it. Tracked files are
already there, and untracked files that are not ignored are uncommitted work, which stays out.

Bounded: at most :data:`MAX_INCLUDED_FILES` files and :data:`MAX_INCLUDED_BYTES` bytes are
copied; what is left out beyond that is counted, and the subagent is told. Symbolic links are
not followed (a link is copied as a link), so nothing outside the repository is read.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "INCLUDE_FILE_NAME",
    "MAX_INCLUDED_BYTES",
    "MAX_INCLUDED_FILES",
    "Included",
    "copy_included",
]

INCLUDE_FILE_NAME = ".worktreeinclude"
MAX_INCLUDED_FILES = 1_000
MAX_INCLUDED_BYTES = 100 * 1024 * 1024

GitRunner = Callable[..., Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Included:
    """What ``.worktreeinclude`` brought into a worktree."""

    copied: int = 0
    left_out: int = 0  # beyond the caps, or unreadable

    def note(self) -> str:
        if not self.copied and not self.left_out:
            return ""
        text = f"{self.copied} ignored file(s) listed in {INCLUDE_FILE_NAME} were copied in"
        if self.left_out:
            text += (
                f"; {self.left_out} more were left out (over the limit of "
                f"{MAX_INCLUDED_FILES:,} files / {MAX_INCLUDED_BYTES // (1024 * 1024)} MB, or "
                "unreadable)"
            )
        return text + "."


async def copy_included(run_git: GitRunner, source: Path, target: Path) -> Included:
    """Copy into ``target`` the files of ``source`` that ``.worktreeinclude`` names and git
    ignores. ``run_git(*args, cwd=...)`` runs one git command and returns its output."""
    include = source / INCLUDE_FILE_NAME
    if not include.is_file():
        return Included()
    listed = await run_git(
        "ls-files", "-z", "--others", "--ignored", f"--exclude-from={include}", cwd=source
    )
    candidates = [name for name in listed.split("\0") if name]
    if not candidates:
        return Included()
    ignored = await run_git(
        "check-ignore",
        "-z",
        "--stdin",
        "--no-index",
        cwd=source,
        allow_exit=1,
        stdin="\0".join(_bounded(candidates)) + "\0",
    )
    wanted = [name for name in ignored.split("\0") if name]
    return await asyncio.to_thread(_copy, source, target, wanted, len(candidates))


def _bounded(names: list[str]) -> list[str]:
    """Enough names to fill the caps; the others are counted as left out."""
    return names[: MAX_INCLUDED_FILES * 2]


def _copy(source: Path, target: Path, names: list[str], listed: int) -> Included:
    copied = 0
    total = 0
    left_out = max(0, listed - MAX_INCLUDED_FILES * 2)
    for name in names:
        origin = source / name
        try:
            size = origin.lstat().st_size
        except OSError:
            left_out += 1
            continue
        if copied >= MAX_INCLUDED_FILES or total + size > MAX_INCLUDED_BYTES:
            left_out += 1
            continue
        destination = target / name
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, destination, follow_symlinks=False)  # a link stays a link
        except OSError:
            left_out += 1
            continue
        copied += 1
        total += size
    return Included(copied, left_out)
