"""Project instructions: the ``CLAUDE.md`` and ``AGENTS.md`` files an agent is told to follow.

Which files, in which order
---------------------------
In every project directory, nearest first (the working directory, then each parent up to and
including the repository root, as :func:`subagents.config.project_directories` walks them):
``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md`` (Claude Code reads it too: a
personal, git-ignored file) and ``AGENTS.md`` (the cross-tool convention). Then the user's own
``~/.claude/CLAUDE.md`` (``~`` is :func:`subagents.config.resolve_home`). Nearest first means
the most specific instructions come first; the prompt says that a nearer file wins where two
disagree.

Bounds
------
Each file is cut at :data:`MAX_FILE_CHARS` and all of them together at
:data:`MAX_TOTAL_CHARS` (farther files are cut first, since nearer ones come first). Whatever
is cut is said twice: in the prompt, where the file was cut, and in :attr:`warnings`, which the
runtime emits as :class:`~subagents.runtime.events.InstructionsNotice` events (a progress line
in the terminal). A binary, non-UTF-8 or unreadable file is skipped with a warning; nothing here
raises.

Each file is read once per content: reads are cached by path, modification time and size, so
the sessions of one run (and every turn of each) share one read.
"""

from __future__ import annotations

import codecs
import functools
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "MAX_FILE_CHARS",
    "MAX_TOTAL_CHARS",
    "PROJECT_FILE_NAMES",
    "USER_FILE_NAME",
    "InstructionFile",
    "ProjectInstructions",
    "instruction_candidates",
    "load_project_instructions",
]

PROJECT_FILE_NAMES: tuple[str, ...] = (
    "CLAUDE.md",
    ".claude/CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
)
USER_FILE_NAME = ".claude/CLAUDE.md"
MAX_FILE_CHARS = 40_000
"""Characters of one file put into a prompt (Claude Code warns about larger CLAUDE.md files)."""
MAX_TOTAL_CHARS = 100_000
"""Characters of all instruction files together."""

InstructionScope = Literal["project", "user"]
_BYTES_PER_CHAR = 4  # the most UTF-8 needs: reading 4 bytes per allowed character is enough


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One file as it goes into the prompt: ``text`` is already cut when ``cut`` is set."""

    path: Path
    scope: InstructionScope
    text: str
    cut: bool = False
    full_chars: int | None = None  # the file's length when known and ``cut``


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """The instruction files found for a workspace, and what went wrong reading them."""

    files: tuple[InstructionFile, ...] = ()
    warnings: tuple[str, ...] = ()

    def prompt_section(self) -> str:
        """The block appended to a system prompt; empty when there are no files."""
        if not self.files:
            return ""
        parts = [
            "\n\n<project-instructions>\n"
            "The instructions below come from the project's CLAUDE.md / AGENTS.md files and the "
            "user's own CLAUDE.md, nearest first. Follow them; where two disagree, the one listed "
            "first (nearer to the working directory) wins."
        ]
        for file in self.files:
            what = "project instructions" if file.scope == "project" else "the user's instructions"
            body = file.text.rstrip("\n")
            parts.append(f"\n\nContents of {file.path} ({what}):\n\n{body}")
            if file.cut:
                parts.append("\n\n" + _cut_note(file))
        parts.append("\n</project-instructions>")
        return "".join(parts)


def instruction_candidates(
    workspace: Path, *, home: Path | None = None
) -> list[tuple[Path, InstructionScope]]:
    """Every path that may hold instructions for ``workspace``, in prompt order."""
    from subagents.config import project_directories, resolve_home

    home_dir = resolve_home(home)
    candidates: list[tuple[Path, InstructionScope]] = [
        (directory / name, "project")
        for directory in project_directories(workspace, home=home_dir)
        for name in PROJECT_FILE_NAMES
    ]
    candidates.append((home_dir / USER_FILE_NAME, "user"))
    return candidates


def load_project_instructions(
    workspace: Path,
    *,
    home: Path | None = None,
    max_file_chars: int = MAX_FILE_CHARS,
    max_total_chars: int = MAX_TOTAL_CHARS,
) -> ProjectInstructions:
    """The instruction files for ``workspace`` (see the module docstring). Never raises."""
    files: list[InstructionFile] = []
    warnings: list[str] = []
    budget = max_total_chars
    for path, scope in _existing(instruction_candidates(workspace, home=home)):
        read = _read(path, max_file_chars)
        if isinstance(read, str):
            warnings.append(f"{path} is skipped: {read}")
            continue
        if not read.text.strip():
            continue
        if budget <= 0:
            warnings.append(
                f"{path} is left out: the instruction files before it already fill the "
                f"{max_total_chars:,} characters allowed for all of them; shorten them"
            )
            continue
        file = InstructionFile(path, scope, read.text, read.cut, read.full_chars)
        if read.cut:
            warnings.append(
                f"{path} is cut to its first {max_file_chars:,} characters; shorten it or "
                "move reference material into files the agent can read when needed"
            )
        if len(file.text) > budget:
            full = read.full_chars if read.cut else len(read.text)
            file = InstructionFile(path, scope, file.text[:budget], True, full)
            warnings.append(
                f"{path} is cut to {budget:,} characters: all instruction files together may "
                f"hold {max_total_chars:,}; shorten them"
            )
        budget -= len(file.text)
        files.append(file)
    return ProjectInstructions(tuple(files), tuple(warnings))


def _existing(
    candidates: list[tuple[Path, InstructionScope]],
) -> Iterator[tuple[Path, InstructionScope]]:
    """The candidates that exist, each real file once (a symlink to a file already listed is
    not listed again)."""
    seen: set[tuple[int, int]] = set()
    for path, scope in candidates:
        try:
            info = path.stat()
        except OSError:
            if path.is_symlink():
                yield path, scope  # a broken link: reading it reports the problem
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            continue
        seen.add(key)
        yield path, scope


@dataclass(frozen=True, slots=True)
class _Read:
    text: str
    cut: bool
    full_chars: int | None


def _read(path: Path, max_chars: int) -> _Read | str:
    """The file's text, cut at ``max_chars``; or why it cannot be used."""
    try:
        info = path.stat()
    except OSError as error:
        return f"it cannot be read ({error.strerror or error})"
    return _read_cached(path, info.st_mtime_ns, info.st_size, max_chars)


@functools.lru_cache(maxsize=256)
def _read_cached(path: Path, _mtime_ns: int, _size: int, max_chars: int) -> _Read | str:
    limit = max_chars * _BYTES_PER_CHAR
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not hang the run
    except OSError as error:
        return f"it cannot be read ({error.strerror or error})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "it is not a regular file"
        data = _read_up_to(fd, limit + 1)
    except OSError as error:
        return f"it cannot be read ({error.strerror or error})"
    finally:
        os.close(fd)
    if b"\x00" in data:
        return "it is a binary file, not text"
    more_bytes = len(data) > limit
    try:
        # Holding back a character cut in two at the limit, not failing on it.
        text = codecs.getincrementaldecoder("utf-8")().decode(data[:limit], final=not more_bytes)
    except UnicodeDecodeError as error:
        return f"it is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if len(text) > max_chars:
        return _Read(text[:max_chars], True, len(text) if not more_bytes else None)
    if more_bytes:
        return _Read(text, True, None)
    return _Read(text, False, None)


def _read_up_to(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < size:
        chunk = os.read(fd, min(1 << 16, size - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _cut_note(file: InstructionFile) -> str:
    shown = len(file.text)
    if file.full_chars is not None:
        return (
            f"[{file.path} was cut here: only its first {shown:,} of {file.full_chars:,} "
            "characters are shown]"
        )
    return f"[{file.path} was cut here: only its first {shown:,} characters are shown]"
