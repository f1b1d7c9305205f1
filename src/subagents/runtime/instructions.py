"""Project instructions: the ``CLAUDE.md`` and ``AGENTS.md`` files an agent is told to follow.

Which files, in which order
---------------------------
In every project directory, nearest first (the working directory, then each parent up to and
including the repository root, as :func:`subagents.config.project_directories` walks them):
``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md`` (Claude Code reads it too: a
personal, git-ignored file) and ``AGENTS.md`` (the cross-tool convention), then the rule files
of that directory's ``.claude/rules`` folder (``*.md``, in path order). Then the user's own
``~/.claude/CLAUDE.md`` (``~`` is :func:`subagents.config.resolve_home`) and
``~/.claude/rules``. Nearest first means the most specific instructions come first; the prompt
says that a nearer file wins where two disagree.

A rule whose frontmatter scopes it to some paths (``paths:`` or ``globs:``) is meant to load
only while those files are worked on, which this harness does not do: such rules are left out,
with a warning. Other frontmatter is dropped from a rule's text.

Imports
-------
As in Claude Code, ``@path`` in a file's prose (not in code) imports another file, placed right
after the importing one; relative paths start at the importing file's folder, ``@~/`` at home;
imports nest up to :data:`MAX_IMPORT_DEPTH` deep. An ``@word`` naming no file is prose.

A project's files (and what they import, and where their symbolic links lead) must lie in the
project (up to the repository root) or in ``~/.claude``; anything else is refused with a
warning: a cloned repository must not be able to put ``@~/.ssh/id_rsa``, or a ``CLAUDE.md``
linking to it, into a prompt that goes to a provider. The user's own files may be anywhere.

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
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "MAX_FILE_CHARS",
    "MAX_IMPORT_DEPTH",
    "MAX_RULE_FILES",
    "MAX_TOTAL_CHARS",
    "PROJECT_FILE_NAMES",
    "RULES_FOLDER",
    "USER_FILE_NAME",
    "InstructionFile",
    "InstructionsPerRun",
    "ProjectInstructions",
    "imports_in",
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
MAX_IMPORT_DEPTH = 5
"""How deep ``@path`` imports may nest (as in Claude Code)."""
RULES_FOLDER = ".claude/rules"
MAX_RULE_FILES = 100
"""Rule files read from one ``.claude/rules`` folder."""
_MAX_RULE_FILES_LISTED = 10 * MAX_RULE_FILES  # a huge folder is not walked to its end

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
    imported_by: Path | None = None  # the file whose ``@path`` brought it in


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
            "The instructions below come from the project's instruction files (CLAUDE.md, "
            "AGENTS.md, .claude/rules) and the user's own, nearest first. Follow them; where two "
            "disagree, the one listed first (nearer to the working directory) wins."
        ]
        for file in self.files:
            what = "project instructions" if file.scope == "project" else "the user's instructions"
            if file.imported_by is not None:
                what += f", imported by {file.imported_by}"
            body = file.text.rstrip("\n")
            parts.append(f"\n\nContents of {file.path} ({what}):\n\n{body}")
            if file.cut:
                parts.append("\n\n" + _cut_note(file))
        parts.append("\n</project-instructions>")
        return "".join(parts)


def instruction_candidates(
    workspace: Path, *, home: Path | None = None, directories: list[Path] | None = None
) -> tuple[list[tuple[Path, InstructionScope]], list[str]]:
    """Every path that may hold instructions for ``workspace``, in prompt order (imports
    aside), and the warnings about rule folders too full to read whole. ``directories``:
    ``project_directories(workspace)`` when the caller has them already."""
    from subagents.config import resolve_home

    names = None if directories is None else [str(directory) for directory in directories]
    candidates, warnings = _candidates(workspace, resolve_home(home), names)
    return [(Path(path), scope) for path, scope in candidates], warnings


def _candidates(
    workspace: Path, home_dir: Path, directories: list[str] | None
) -> tuple[list[tuple[str, InstructionScope]], list[str]]:
    """:func:`instruction_candidates` as strings: every run looks for these files, and most
    do not exist (``Path`` objects for them cost more than the look)."""
    from subagents.config import project_directory_names

    if directories is None:
        directories = project_directory_names(workspace, home=home_dir)
    join = os.path.join
    candidates: list[tuple[str, InstructionScope]] = []
    warnings: list[str] = []
    for directory in directories:
        candidates += [(join(directory, name), "project") for name in PROJECT_FILE_NAMES]
        candidates += [(str(rule), "project") for rule in _rule_files(directory, warnings)]
    home = str(home_dir)
    candidates.append((join(home, USER_FILE_NAME), "user"))
    candidates += [(str(rule), "user") for rule in _rule_files(home, warnings)]
    return candidates, warnings


def load_project_instructions(
    workspace: Path,
    *,
    home: Path | None = None,
    max_file_chars: int = MAX_FILE_CHARS,
    max_total_chars: int = MAX_TOTAL_CHARS,
) -> ProjectInstructions:
    """The instruction files for ``workspace`` (see the module docstring). Never raises."""
    from subagents.config import project_directory_names, resolve_home

    home_dir = resolve_home(home)
    directories = project_directory_names(workspace, home=home_dir)
    # The user's own files may be anywhere (a dotfiles link into /nix/store, say); a
    # project's files stay inside the project, or point into ~/.claude.
    # (project_directory_names() resolved the project's own already)
    roots: dict[InstructionScope, tuple[Path, ...]] = {
        "project": (Path(directories[-1]), _resolved(home_dir / ".claude")) if directories else (),
    }
    collector = _Collector(max_file_chars, max_total_chars, roots, home_dir)
    candidates, warnings = _candidates(workspace, home_dir, directories)
    collector.warnings += warnings
    for path, scope in candidates:
        collector.add(path, scope)
    if collector.scoped_rules:
        shown = ", ".join(str(path) for path in collector.scoped_rules[:3])
        more = len(collector.scoped_rules) - 3
        collector.warnings.append(
            f"{len(collector.scoped_rules)} rule file(s) apply only to some paths ('paths' or "
            f"'globs' in their frontmatter) and are left out, as rules scoped to files are not "
            f"supported here: {shown}" + (f" and {more} more" if more > 0 else "")
        )
    return ProjectInstructions(tuple(collector.files), tuple(collector.warnings))


class InstructionsPerRun:
    """The instruction files of each workspace, read once per run, so that every session of a
    run starts from the same instructions; :meth:`clear` when the next run begins."""

    def __init__(self) -> None:
        self._read: dict[Path, ProjectInstructions] = {}

    def clear(self) -> None:
        self._read.clear()

    def of(self, workspace: Path) -> ProjectInstructions:
        found = self._read.get(workspace)
        if found is None:
            found = self._read[workspace] = load_project_instructions(workspace)
        return found


def _rule_files(directory: str, warnings: list[str]) -> list[Path]:
    """The Markdown files under ``directory/.claude/rules`` in path order (hidden ones
    skipped), at most :data:`MAX_RULE_FILES`; a fuller folder is cut with a warning."""
    # a str: most folders have no rules, and no Path is needed to find that out
    folder_name = os.path.join(directory, RULES_FOLDER)  # noqa: PTH118
    if not os.path.isdir(folder_name):  # noqa: PTH112
        return []
    folder = Path(folder_name)
    found: list[Path] = []
    for root, folders, names in os.walk(folder):  # symlinked folders are not followed
        folders[:] = [name for name in folders if not name.startswith(".")]
        found += [Path(root) / n for n in names if n.endswith(".md") and not n.startswith(".")]
        if len(found) > _MAX_RULE_FILES_LISTED:
            break
    if len(found) > MAX_RULE_FILES:
        warnings.append(
            f"{folder} holds more than {MAX_RULE_FILES} rule files; only the first "
            f"{MAX_RULE_FILES} (in path order) are read: merge some of them"
        )
    return sorted(found, key=lambda path: path.relative_to(folder).parts)[:MAX_RULE_FILES]


def _is_rule(path: Path) -> bool:
    parts = path.parts
    return any(parts[i : i + 2] == (".claude", "rules") for i in range(len(parts) - 1))


_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*(\n|\Z)", re.DOTALL | re.MULTILINE)
_SCOPED = re.compile(r"^(paths|globs)[ \t]*:", re.MULTILINE)


def _rule_text(text: str) -> tuple[str, bool]:
    """A rule's text without its frontmatter, and whether it applies only to some paths."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return text, False
    return text[match.end() :], _SCOPED.search(match.group(1)) is not None


class _Collector:
    """Adds files (and what they import) within the caps, each real file once; ``roots``:
    the folders (resolved) that a scope's files must lie in, where the scope has any."""

    def __init__(
        self,
        max_file_chars: int,
        max_total_chars: int,
        roots: dict[InstructionScope, tuple[Path, ...]],
        home: Path,
    ) -> None:
        self.home = home
        self.files: list[InstructionFile] = []
        self.warnings: list[str] = []
        self.max_file_chars = max_file_chars
        self.max_total_chars = max_total_chars
        self.budget = max_total_chars
        self.roots = roots
        self.seen: set[tuple[int, int]] = set()
        self.scoped_rules: list[Path] = []

    def add(
        self,
        candidate: str | Path,
        scope: InstructionScope,
        importer: Path | None = None,
        depth: int = 0,
    ) -> None:
        try:
            info = os.lstat(candidate)  # most candidates do not exist: one call finds that out
        except OSError:
            return
        path = Path(candidate)
        if stat.S_ISLNK(info.st_mode):
            try:
                info = path.stat()
            except OSError:
                self.warnings.append(f"{path} is skipped: it is a broken symbolic link")
                return
        if not self._inside_roots(path, scope, importer):  # only files that exist get here
            return
        key = (info.st_dev, info.st_ino)
        if key in self.seen:
            return
        self.seen.add(key)
        read = _read(path, self.max_file_chars)
        if isinstance(read, str):
            self.warnings.append(f"{path} is skipped: {read}")
            return
        if importer is None and _is_rule(path):
            text, scoped = _rule_text(read.text)
            if scoped:
                self.scoped_rules.append(path)
                return
            read = _Read(text, read.cut, read.full_chars)
        if read.text.strip():
            self._keep(path, scope, importer, read)
        targets = [
            t
            for t in imports_in(read.text, path.parent, home=self.home)
            if t.exists() or t.is_symlink()
        ]
        if depth >= MAX_IMPORT_DEPTH and targets:
            self.warnings.append(
                f"the imports of {path} are not followed: imports may nest {MAX_IMPORT_DEPTH} deep"
            )
            return
        for target in targets:
            self.add(target, scope, path, depth + 1)

    def _inside_roots(self, path: Path, scope: InstructionScope, importer: Path | None) -> bool:
        """Whether ``path`` (its target, for a link) may be read for ``scope``; says why not."""
        roots = self.roots.get(scope)
        if roots is None:
            return True
        resolved = _resolved(path)
        if any(resolved.is_relative_to(root) for root in roots):
            return True
        what = f"{importer} imports {path}" if importer is not None else f"{path} links to"
        self.warnings.append(
            f"{what} {resolved}, outside the project and ~/.claude; it is not read (a cloned "
            "repository must not pull other files into prompts)"
        )
        return False

    def _keep(
        self, path: Path, scope: InstructionScope, importer: Path | None, read: _Read
    ) -> None:
        if self.budget <= 0:
            self.warnings.append(
                f"{path} is left out: the instruction files before it already fill the "
                f"{self.max_total_chars:,} characters allowed for all of them; shorten them"
            )
            return
        file = InstructionFile(path, scope, read.text, read.cut, read.full_chars, importer)
        if read.cut:
            self.warnings.append(
                f"{path} is cut to its first {self.max_file_chars:,} characters; shorten it "
                "or move reference material into files the agent can read when needed"
            )
        if len(file.text) > self.budget:
            full = read.full_chars if read.cut else len(read.text)
            file = InstructionFile(path, scope, file.text[: self.budget], True, full, importer)
            self.warnings.append(
                f"{path} is cut to {self.budget:,} characters: all instruction files together "
                f"may hold {self.max_total_chars:,}; shorten them"
            )
        self.budget -= len(file.text)
        self.files.append(file)


_FENCE = re.compile(r"^ {0,3}(```|~~~).*?(^ {0,3}\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:~/|/|\./|\.\./)?[\w.~/-]*[\w~-][\w.~/-]*)")


def imports_in(text: str, base: Path, *, home: Path | None = None) -> list[Path]:
    """The files ``text`` imports with ``@path`` (not inside code), relative to ``base``;
    ``@~/x`` is in the home directory (:func:`subagents.config.resolve_home`)."""
    from subagents.config import resolve_home

    prose = _CODE_SPAN.sub(" ", _FENCE.sub(" ", text))
    targets: list[Path] = []
    for match in _IMPORT.finditer(prose):
        raw = match.group(1).rstrip(".")
        target = resolve_home(home) / raw[2:] if raw.startswith("~/") else base / raw
        if target not in targets:
            targets.append(target)
    return targets


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return path.absolute()


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
