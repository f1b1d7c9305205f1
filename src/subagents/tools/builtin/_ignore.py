"""What Glob, Grep and LS leave out, the way ripgrep does: ignored and hidden files.

A walk skips:

- version-control folders (``.git/`` and its kin), always;
- hidden files and folders (names starting with ``.``);
- whatever ``.gitignore`` files (nested ones too), ``.ignore`` and ``.rgignore`` files and the
  repository's ``.git/info/exclude`` exclude, with git's rules (``!`` negation, ``/``
  anchoring, ``dir/``, ``**``), read by ``pathspec``. A deeper file overrides a shallower one;
  in one folder ``.rgignore`` overrides ``.ignore``, which overrides ``.gitignore``; the
  exclude file comes last. Git's global excludes file (``core.excludesFile``) is not read:
  it is one person's taste, not the project's.

``.gitignore`` applies outside a git repository too (ripgrep needs ``--no-require-git`` for
that): a workspace copied without its ``.git`` still has a ``.venv`` nobody wants searched.
Inside a repository, the ignore files of the folders between the repository's root and the
workspace root apply as well; only their patterns are read, never anything else up there.

An ignored folder is never entered (skipping ``.venv`` or ``node_modules`` is the point), so
nothing below it can be brought back by a negation, as in git. A path the model names itself
(the folder to search, or the literal folders at the start of a Glob pattern) is searched even
if it is hidden or ignored; only the ignore files at or below it apply there, as ripgrep does
for an explicit path. ``include_ignored`` turns all of this off but the VCS folders (which LS
then lists, since a listing does not go into them).

Untrusted repositories are bounded: an ignore file is read up to :data:`MAX_IGNORE_FILE_BYTES`
and :data:`MAX_IGNORE_PATTERNS` patterns, and a pattern git would reject is skipped; each cut
is reported in :attr:`SearchFilter.notes`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from subagents.tools.builtin._files import VCS_DIRS
from subagents.tools.workspace import Workspace

__all__ = [
    "IGNORE_FILE_NAMES",
    "INCLUDE_IGNORED_DESCRIPTION",
    "MAX_IGNORE_FILE_BYTES",
    "MAX_IGNORE_PATTERNS",
    "SearchFilter",
]

# Highest priority first, within one folder.
IGNORE_FILE_NAMES: tuple[str, ...] = (".rgignore", ".ignore", ".gitignore")
MAX_IGNORE_FILE_BYTES = 1024 * 1024
MAX_IGNORE_PATTERNS = 10_000
_MAX_EXAMPLES = 5
_MAX_NOTES = 20

INCLUDE_IGNORED_DESCRIPTION = (
    "Also search what is normally skipped: files and folders excluded by .gitignore, .ignore "
    "or .git/info/exclude, and hidden ones (names starting with '.'). .git/ is always skipped."
)


_Pattern = tuple[bool, "re.Pattern[str]"]  # (ignores, regex), in the file's order


@dataclass(frozen=True, slots=True)
class _Rules:
    """The patterns of one ignore file; they apply to paths under ``prefix`` (relative to the
    walk's top, ``""`` or ending in ``/``)."""

    prefix: str
    patterns: tuple[_Pattern, ...]


_Chain = tuple[_Rules, ...]  # highest priority first


def _decide(chain: _Chain, relative: str, is_dir: bool) -> bool:
    """Whether ``relative`` (to the walk's top) is ignored: the last pattern of the first
    file that has a matching one decides, as in git."""
    for rules in chain:
        if not relative.startswith(rules.prefix):
            continue
        subject = relative[len(rules.prefix) :]
        if is_dir:
            subject += "/"
        for ignores, regex in reversed(rules.patterns):
            if _matches_itself(regex, subject):
                return ignores
    return False


def _matches_itself(regex: re.Pattern[str], subject: str) -> bool:
    """Whether the pattern matches ``subject`` itself, not one of its parent folders.

    pathspec's patterns also match whatever lies inside a folder they match (it checks flat
    lists of files); git does not apply them that way, which matters for negations: after
    ``**/r`` and ``!z/q/``, ``z/q/r`` stays ignored. The walk never enters an ignored
    folder, so a match that ends at a parent (its ``ps_d`` group closes early) is discarded.
    """
    match = regex.match(subject)
    if match is None:
        return False
    if "ps_d" in regex.groupindex and match.group("ps_d") is not None:
        return match.end("ps_d") == len(subject)
    return True


@dataclass(slots=True)
class SearchFilter:
    """One search's view of the workspace: which files it walks and what it skipped."""

    workspace: Workspace
    include_ignored: bool = False
    skipped: int = 0
    examples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _top: Path | None = None
    _top_prefix: str | None = None
    _exclude: _Chain | None = None

    # -- walking -------------------------------------------------------------------------------

    def files(self, base: Path) -> Iterator[Path]:
        """Every file under ``base`` (or ``base`` itself when it is a file) that the rules keep.

        Symlinked folders are not followed and symlinked files pointing outside the workspace
        are left out, so a walk never reads anything beyond the root.
        """
        if base.is_file():
            yield base
            return
        self._start_in(base)
        chains: dict[Path, _Chain] = {base: self._chain_above(base)}
        for folder, dirnames, filenames in os.walk(base, followlinks=False):
            parent = Path(folder)
            chain = self._with_own_rules(parent, filenames, chains.pop(parent, ()))
            kept: list[str] = []
            for name in sorted(dirnames):
                if name in VCS_DIRS or self._skips(chain, parent / name, is_dir=True):
                    continue
                kept.append(name)
                chains[parent / name] = chain
            dirnames[:] = kept
            for name in sorted(filenames):
                path = parent / name
                if self._skips(chain, path, is_dir=False):
                    continue
                if path.is_symlink() and not self._inside(path):
                    continue
                yield path

    def kept_entries(self, folder: Path, entries: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """The ``(name, is_dir)`` entries of ``folder`` that LS shows (the rest are counted);
        with ``include_ignored``, all of them, VCS folders too: a listing does not descend."""
        if self.include_ignored:
            return entries
        self._start_in(folder)
        names = [name for name, is_dir in entries if not is_dir]
        chain = self._with_own_rules(folder, names, self._chain_above(folder))
        return [
            (name, is_dir)
            for name, is_dir in entries
            if not self._skips(chain, folder / name, is_dir=is_dir)
        ]

    def _start_in(self, base: Path) -> None:
        """A search inside a folder granted beyond the workspace (an agent's memory) takes
        that folder as its top: the workspace's ignore files do not reach it."""
        grant = self.workspace.grant_of(base)
        if grant is not None:
            self._top, self._top_prefix, self._exclude = grant, None, None

    # -- what was skipped ----------------------------------------------------------------------

    def skipped_note(self, *, how: str = "pass include_ignored: true to search them") -> str:
        """``(3 ignored or hidden entries skipped, e.g. .venv/, .env; ...)``, or ``""``."""
        if not self.skipped:
            return ""
        shown = ", ".join(self.examples)
        more = ", ..." if self.skipped > len(self.examples) else ""
        count = (
            "1 ignored or hidden entry"
            if self.skipped == 1
            else f"{self.skipped} ignored or hidden entries"
        )
        return f"({count} skipped, e.g. {shown}{more}; {how})"

    def notes_text(self) -> str:
        """The cuts made while reading ignore files, one per line (``""`` when none)."""
        return "\n".join(f"({note})" for note in self.notes)

    def _skips(self, chain: _Chain, path: Path, *, is_dir: bool) -> bool:
        if self.include_ignored:
            return False
        name = path.name
        skipped = (
            name.startswith(".")
            or (is_dir and name in VCS_DIRS)
            or _decide(chain, self._relative(path), is_dir)
        )
        if skipped:
            self.skipped += 1
            if len(self.examples) < _MAX_EXAMPLES:
                shown = self.workspace.display(path)
                self.examples.append(shown + "/" if is_dir else shown)
        return skipped

    # -- rules ---------------------------------------------------------------------------------

    def _chain_above(self, folder: Path) -> _Chain:
        """The rules of the folders from the top down to ``folder``'s parent, and the
        repository's exclude file; empty from the first of them that is itself ignored or
        hidden (the model named a path inside it)."""
        if self.include_ignored:
            return ()
        top = self._walk_top()
        chain = self._exclude_rules()
        current = top
        for part in folder.relative_to(top).parts:
            chain = self._with_own_rules(current, _ignore_files_in(current), chain)
            current = current / part
            inside_root = current.is_relative_to(self.workspace.root) and current != (
                self.workspace.root
            )
            hidden = inside_root and part.startswith(".")
            if hidden or _decide(chain, self._relative(current), is_dir=True):
                chain = ()
        return chain

    def _with_own_rules(
        self, folder: Path, names: list[str] | tuple[str, ...], chain: _Chain
    ) -> _Chain:
        if self.include_ignored:
            return chain
        own: list[_Rules] = []
        for name in IGNORE_FILE_NAMES:
            if name in names:
                rules = self._load(folder / name, folder)
                if rules is not None:
                    own.append(rules)
        return (*own, *chain) if own else chain

    def _exclude_rules(self) -> _Chain:
        if self._exclude is None:
            self._exclude = ()
            top = self._walk_top()
            exclude = _exclude_file(top)
            if exclude is not None:
                rules = self._load(exclude, top, git_own=True)
                if rules is not None:
                    self._exclude = (rules,)
        return self._exclude

    def _load(self, file: Path, folder: Path, *, git_own: bool = False) -> _Rules | None:
        """The rules of ``file``, which apply below ``folder``; ``git_own`` for the
        repository's exclude file, which may live outside (a worktree's is in its repository)."""
        shown = self._shown(file)
        if not self._readable_rules(file, git_own):
            self._note(f"{shown} is not a regular file inside the project; it is not read")
            return None
        try:
            with file.open("rb") as handle:
                data = handle.read(MAX_IGNORE_FILE_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_IGNORE_FILE_BYTES:
            data = data[:MAX_IGNORE_FILE_BYTES].rsplit(b"\n", 1)[0]
            self._note(
                f"{shown} is larger than {MAX_IGNORE_FILE_BYTES // 1024} KiB; only its "
                "start applies"
            )
        lines = data.decode("utf-8-sig", errors="replace").splitlines()  # git skips a BOM
        if len(lines) > MAX_IGNORE_PATTERNS:
            lines = lines[:MAX_IGNORE_PATTERNS]
            self._note(
                f"{shown} has more than {MAX_IGNORE_PATTERNS} lines; only the first "
                f"{MAX_IGNORE_PATTERNS} apply"
            )
        patterns = self._compile(lines, shown)
        relative = self._relative(folder)
        prefix = "" if relative in ("", ".") else relative + "/"
        return _Rules(prefix, patterns)

    def _readable_rules(self, file: Path, git_own: bool) -> bool:
        """Only a regular file that stays inside the walk's top is read: a FIFO would block
        the walk for ever, a device never ends, and a link could point anywhere."""
        try:
            real = Path(os.path.realpath(file))
        except (OSError, ValueError):
            return False
        return (git_own or real.is_relative_to(self._walk_top())) and real.is_file()

    def _compile(self, lines: list[str], shown: str) -> tuple[_Pattern, ...]:
        import pathspec  # at the first ignore file read, not at every start (~20 ms)

        try:
            spec = pathspec.GitIgnoreSpec.from_lines(lines)
        except Exception:  # one bad pattern spoils the lot: keep the good ones
            good: list[str] = []
            for number, line in enumerate(lines, start=1):
                try:
                    pathspec.GitIgnoreSpec.from_lines([line])
                except Exception:
                    self._note(f"line {number} of {shown} is not a valid pattern and is skipped")
                    continue
                good.append(line)
            spec = pathspec.GitIgnoreSpec.from_lines(good)
        return tuple(
            (bool(pattern.include), pattern.regex)
            for pattern in spec.patterns
            if isinstance(pattern, pathspec.RegexPattern)
            and pattern.include is not None
            and pattern.regex is not None
        )

    def _note(self, text: str) -> None:
        if len(self.notes) < _MAX_NOTES:
            self.notes.append(text)

    # -- places --------------------------------------------------------------------------------

    def _walk_top(self) -> Path:
        """The repository's root when the workspace is inside one, else the workspace root."""
        if self._top is None:
            self._top = _repository_root(self.workspace.root) or self.workspace.root
        return self._top

    def _relative(self, path: Path) -> str:
        """``path`` relative to the walk's top, ``/``-separated (``""`` for the top itself).

        Plain string slicing: this runs for every entry of a walk, and every path it sees
        lies under the top (the walk starts inside the workspace, which is inside the top).
        """
        text = str(path)
        prefix = self._top_prefix
        if prefix is None:
            prefix = self._top_prefix = str(self._walk_top()).rstrip(os.sep) + os.sep
        if not text.startswith(prefix):
            return ""
        return text[len(prefix) :].replace(os.sep, "/")

    def _shown(self, path: Path) -> str:
        if path.is_relative_to(self.workspace.root):
            return self.workspace.display(path)
        return str(path)

    def _inside(self, path: Path) -> bool:
        from subagents.errors import ToolError

        try:
            self.workspace.resolve(path)
        except ToolError:
            return False
        return True


def _ignore_files_in(folder: Path) -> list[str]:
    return [name for name in IGNORE_FILE_NAMES if (folder / name).is_file()]


def _repository_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``.git`` (a folder, or the file of
    a worktree or submodule)."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _exclude_file(top: Path) -> Path | None:
    """``info/exclude`` of the repository at ``top``, following a worktree's ``.git`` file to
    the repository's common folder."""
    dot_git = top / ".git"
    git_dir: Path | None = dot_git if dot_git.is_dir() else None
    if git_dir is None and dot_git.is_file():
        git_dir = _linked_git_dir(dot_git)
    if git_dir is None:
        return None
    common = git_dir / "commondir"
    if common.is_file():
        try:
            git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
        except (OSError, UnicodeDecodeError):
            return None
    exclude = git_dir / "info" / "exclude"
    return exclude if exclude.is_file() else None


def _linked_git_dir(dot_git: Path) -> Path | None:
    try:
        with dot_git.open(encoding="utf-8") as handle:
            first = handle.readline(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    return target if target.is_absolute() else (dot_git.parent / target).resolve()
