"""Worktree isolation: a subagent with ``isolation: worktree`` works in a git worktree of its own.

When such a subagent starts, :func:`enter_worktree` adds a worktree of the project's repository
on a new branch ``subagents/<agent>-<8 hex>`` that starts at the current ``HEAD``, and the
subagent's file tools and Bash work there instead of in the project. Two subagents started at
once each get their own, so they never overwrite each other's files.

What it starts from: the last commit. Uncommitted changes of the project's checkout (modified,
staged and untracked files) are not copied into it, as in Claude Code; the subagent and its
parent are told when there were some. Ignored files that a ``.worktreeinclude`` at the root
names (``.env``, local settings) are copied in (see :mod:`subagents.runtime.worktree_include`).

Where: ``<git common dir>/subagents/worktrees/<name>`` (inside ``.git``), so the project's
checkout never shows it as untracked files and the project's own Glob/Grep never walk it. Its
name is derived from the subagent's session id, which is itself derived from the Task call that
started it: a run resumed after a crash finds the same worktree again and continues in it.

When it ends (:func:`leave_worktree`): nothing changed (no modified or untracked file, still
on its branch, no commit) -> the worktree and its branch are removed. Otherwise both are kept
and the parent is told where they are. Removal is done by ``git worktree remove`` without
``--force`` (git itself refuses a worktree with changes) and the branch is deleted only while it
still points at the commit it started from, so a worktree with work in it is never deleted, not
even when a file appears between the check and the removal. Ignored files (build output, caches)
do not count as changes and go with the worktree.

The repository's git hooks do not run when the worktree is made (``core.hooksPath`` points
nowhere for the harness's own git calls): creating a worktree for a subagent must not run
project code.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from subagents._process import run_process
from subagents.errors import WorktreeError

if TYPE_CHECKING:
    from subagents.tools.permissions import PermissionPolicy
    from subagents.tools.sandbox import BashSandbox

__all__ = [
    "GIT_TIMEOUT_SECONDS",
    "Worktree",
    "WorktreeError",
    "WorktreeOutcome",
    "enter_worktree",
    "leave_worktree",
    "rooted_permissions",
    "rooted_sandbox",
    "worktree_note",
    "worktree_prompt_note",
]

GIT_TIMEOUT_SECONDS = 60.0
MAX_GIT_OUTPUT_BYTES = 32 << 20  # of each end kept: a git output is read whole up to twice it
"""The longest one git command of the harness may take (a huge checkout takes a while)."""

_BRANCH_PREFIX = "subagents/"
_FOLDER = ("subagents", "worktrees")
# Variables that would point git at another repository than the workspace's.
_GIT_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
)
_NOT_THE_STORE = ":(exclude,glob)**/.subagents/*.db*"
# One git operation on a repository's worktrees at a time (per common git dir), per event loop:
# an asyncio lock belongs to the loop it was first awaited in, and run_sync makes a new one.
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


class _GitMissingError(WorktreeError):
    """No ``git`` on PATH."""


@dataclass(frozen=True, slots=True)
class Worktree:
    """One subagent's worktree: where it is, its branch, and the commit it started from.

    ``base`` is ``None`` when an existing branch was taken over without a record of where it
    started; such a branch is never deleted. ``uncommitted`` counts the changes of the
    project's checkout that the worktree does not have (``git status`` lines when it was made).
    """

    repository: Path
    path: Path
    branch: str
    base: str | None
    uncommitted: int = 0
    subfolder: str = ""
    included: str = ""  # what .worktreeinclude brought in, for the subagent's prompt

    @property
    def workspace(self) -> Path:
        """Where the subagent works: the worktree's copy of the project's folder."""
        return self.path / self.subfolder if self.subfolder else self.path


@dataclass(frozen=True, slots=True)
class WorktreeOutcome:
    """What became of a worktree when its subagent ended: ``kept`` with what changed, or
    removed. ``problem`` says why a clean worktree could not be removed (it is then kept)."""

    worktree: Worktree
    kept: bool
    changes: tuple[str, ...] = ()
    problem: str | None = None


async def enter_worktree(workspace: Path, *, agent_name: str, session_id: str) -> Worktree:
    """The worktree of the subagent ``session_id``: made on first use, found again after."""
    git = await _Git.find(workspace)
    subfolder = _subfolder(workspace, git.toplevel)
    name = _worktree_name(agent_name, session_id)
    path = git.common_dir.joinpath(*_FOLDER, name)
    branch = f"{_BRANCH_PREFIX}{name}"
    async with _lock_for(git.common_dir):
        if await git.is_worktree(path):
            base, uncommitted = _read_record(path)
            return Worktree(git.toplevel, path, branch, base, uncommitted, subfolder)
        base = await git.head_commit()
        uncommitted = await git.count_changes(git.toplevel, but_the_store=True)
        if await git.branch_exists(branch):  # its worktree was removed by hand: take it over
            await git.run("worktree", "add", str(path), branch)
            recorded_base: str | None = None
        else:
            await git.run("worktree", "add", "-b", branch, str(path), base)
            recorded_base = base
        included = await _include(git, path)
        worktree = Worktree(
            git.toplevel, path, branch, recorded_base, uncommitted, subfolder, included
        )
        _write_record(worktree)
        return worktree


async def _include(git: _Git, path: Path) -> str:
    """Copy what ``.worktreeinclude`` names into the new worktree; a note for the prompt."""
    from subagents.runtime.worktree_include import INCLUDE_FILE_NAME, copy_included

    try:
        return (await copy_included(git.run, git.toplevel, path)).note()
    except (WorktreeError, OSError) as error:
        text = error.message if isinstance(error, WorktreeError) else str(error)
        return f"{INCLUDE_FILE_NAME} could not be applied ({text}); no ignored file was copied."


async def leave_worktree(worktree: Worktree) -> WorktreeOutcome:
    """Remove ``worktree`` and its branch if nothing changed in it; keep them otherwise."""
    path = worktree.path
    if not path.is_dir():
        return await _folder_gone(worktree)
    try:
        git = await _Git.find(path)
        async with _lock_for(git.common_dir):
            changes = await _changes(git, worktree)
            if changes:
                return WorktreeOutcome(worktree, kept=True, changes=tuple(changes))
            # no --force: git refuses if a file changed since the check above
            await git.run("worktree", "remove", str(path), cwd=worktree.repository)
            _record_path(path).unlink(missing_ok=True)
            if worktree.base is not None:
                # deleted only while it still points where it started
                await git.run(
                    "update-ref",
                    "-d",
                    f"refs/heads/{worktree.branch}",
                    worktree.base,
                    cwd=worktree.repository,
                )
    except WorktreeError as error:
        return WorktreeOutcome(worktree, kept=True, problem=error.message)
    except OSError as error:
        return WorktreeOutcome(worktree, kept=True, problem=f"it could not be checked: {error}")
    return WorktreeOutcome(worktree, kept=False)


async def _folder_gone(worktree: Worktree) -> WorktreeOutcome:
    """The worktree's folder was deleted during the run: forget it, and keep its branch
    unless it never moved."""
    gone = "its folder was deleted during the run"
    try:
        git = await _Git.find(worktree.repository)
        async with _lock_for(git.common_dir):
            await git.run("worktree", "prune")
            _record_path(worktree.path).unlink(missing_ok=True)
            if worktree.base is None:
                return WorktreeOutcome(worktree, kept=True, problem=gone)
            await git.run("update-ref", "-d", f"refs/heads/{worktree.branch}", worktree.base)
    except (WorktreeError, OSError):
        return WorktreeOutcome(worktree, kept=True, problem=f"{gone}; its branch has moved")
    return WorktreeOutcome(worktree, kept=False, problem=gone)


async def _changes(git: _Git, worktree: Worktree) -> list[str]:
    changes: list[str] = []
    changed_files = await git.count_changes(worktree.path)
    if changed_files:
        changes.append(f"{changed_files} changed or new file{'s' * (changed_files != 1)}")
    on_branch = await git.current_branch(worktree.path)
    if on_branch != worktree.branch:
        changes.append(f"it is on {on_branch or 'a detached HEAD'}, not {worktree.branch}")
    head = await git.head_commit(worktree.path)
    if worktree.base is None:
        changes.append("its branch was taken over, so its commits cannot be told apart")
    elif head != worktree.base:
        commits = await git.run(
            "rev-list", "--count", f"{worktree.base}..{head}", cwd=worktree.path
        )
        count = int(commits.strip() or "0")
        changes.append(f"{count} new commit{'s' * (count != 1)}" if count else "a moved HEAD")
    return changes


# -- what sessions are told -------------------------------------------------------------------


def worktree_prompt_note(worktree: Worktree) -> str:
    """What a subagent's system prompt says about its worktree."""
    text = (
        "\n\n<isolation>\n"
        f"You work in an isolated git worktree at {worktree.path}, on the branch "
        f"{worktree.branch}, started from the last commit of {worktree.repository}. Your "
        "changes stay here and do not touch the main checkout; commit them on this branch if "
        "you want to hand over commits."
    )
    if worktree.uncommitted:
        text += (
            f" The main checkout had {worktree.uncommitted} uncommitted change(s) that are not "
            "in this worktree."
        )
    if worktree.included:
        text += f" {worktree.included}"
    return text + "\n</isolation>"


def worktree_note(outcome: WorktreeOutcome) -> str:
    """What the parent is told, with the subagent's answer, about its worktree."""
    worktree = outcome.worktree
    lines: list[str] = []
    if outcome.kept:
        why = "; ".join(outcome.changes) or outcome.problem or "it may hold changes"
        lines.append(
            f"The subagent worked in an isolated git worktree, kept because it has changes "
            f"({why}):\n  path: {worktree.path}\n  branch: {worktree.branch}\n"
            f"Review them with `git -C {worktree.path} status` / `git diff`, merge the branch "
            f"when they are right, and remove it with `git worktree remove {worktree.path}` and "
            f"`git branch -D {worktree.branch}` when done."
        )
        if outcome.problem and outcome.changes:
            lines.append(f"(Note: {outcome.problem}.)")
    elif outcome.problem:
        lines.append(
            f"The subagent worked in an isolated git worktree, but {outcome.problem}; its "
            f"branch {worktree.branch} never moved and was removed."
        )
    else:
        lines.append(
            "The subagent worked in an isolated git worktree and changed nothing there; the "
            "worktree and its branch were removed."
        )
    if worktree.uncommitted:
        lines.append(
            f"Your checkout had {worktree.uncommitted} uncommitted change(s) that were not "
            "copied into its worktree (it started from the last commit)."
        )
    return "\n".join(lines)


# -- the session's surroundings -------------------------------------------------------------


def rooted_permissions(
    policy: PermissionPolicy | None, root: Path, moved_from: Path | None = None
) -> PermissionPolicy | None:
    """``policy`` with its protected paths (``.git``, ``.claude``, ...) taken from ``root``, and
    its ``/path`` permission rules holding in ``root`` as they did in ``moved_from``."""
    if policy is None:
        return policy
    rooted = copy.copy(policy)  # keeps whatever else the policy holds
    if policy.protected is not None:
        rooted.protected = dataclasses.replace(policy.protected, root=Path(os.path.realpath(root)))
    if policy.rules and moved_from is not None:
        rooted.rules = policy.rules.moved(moved_from, root)
    return rooted


def rooted_sandbox(sandbox: BashSandbox | None, root: Path) -> BashSandbox | None:
    """``sandbox`` writing ``root`` instead of the project (everything else stays read-only)."""
    if sandbox is None:
        return None
    from subagents.tools.sandbox import BashSandbox

    return BashSandbox.for_workspace(root, network=sandbox.network)


# -- git ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Git:
    toplevel: Path
    common_dir: Path

    @classmethod
    async def find(cls, workspace: Path) -> _Git:
        try:
            out = await _git(workspace, "rev-parse", "--show-toplevel", "--git-common-dir")
        except _GitMissingError:
            raise
        except WorktreeError as error:
            raise WorktreeError(
                f"isolation: worktree needs a git repository, and {workspace} is not in one "
                f"({error.message})",
                hint="run the agent from inside a git repository (git init, then commit once), "
                "or remove `isolation: worktree` from its agent file",
            ) from None
        lines = out.splitlines()
        if len(lines) < 2:
            raise WorktreeError(
                f"isolation: worktree needs a git work tree, and {workspace} is not in one "
                "(a bare repository or a .git folder)",
                hint="run the agent from a checkout, or remove `isolation: worktree` from its "
                "agent file",
            )
        toplevel = Path(lines[0])
        common = Path(lines[1])
        if not common.is_absolute():
            common = workspace / common
        return cls(_real(toplevel), _real(common))

    async def run(
        self, *args: str, cwd: Path | None = None, allow_exit: int = 0, stdin: str | None = None
    ) -> str:
        return await _git(cwd or self.toplevel, *args, allow_exit=allow_exit, stdin=stdin)

    async def head_commit(self, where: Path | None = None) -> str:
        try:
            return (await self.run("rev-parse", "--verify", "HEAD^{commit}", cwd=where)).strip()
        except WorktreeError:
            raise WorktreeError(
                f"isolation: worktree starts from the last commit, and {where or self.toplevel} "
                "has no commit yet",
                hint="commit once (git add -A && git commit -m init), or remove "
                "`isolation: worktree` from the agent file",
            ) from None

    async def count_changes(self, where: Path, *, but_the_store: bool = False) -> int:
        """Changed, staged and untracked files under ``where``; ``but_the_store`` leaves out
        the task store and its companions (``.subagents/*.db*``), which a run writes as it
        goes."""
        paths = ["--", ".", _NOT_THE_STORE] if but_the_store else []
        out = await self.run("status", "--porcelain", "--untracked-files=all", *paths, cwd=where)
        return sum(1 for line in out.splitlines() if line.strip())

    async def current_branch(self, where: Path) -> str | None:
        try:
            out = await self.run("symbolic-ref", "--quiet", "--short", "HEAD", cwd=where)
        except WorktreeError:
            return None
        return out.strip() or None

    async def branch_exists(self, branch: str) -> bool:
        try:
            await self.run("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        except WorktreeError:
            return False
        return True

    async def is_worktree(self, path: Path) -> bool:
        if not (path / ".git").is_file():
            return False
        out = await self.run("worktree", "list", "--porcelain", "-z")
        listed = [entry.removeprefix("worktree ") for entry in out.split("\0")]
        real = _real(path)
        return any(_real(Path(item)) == real for item in listed if item)


async def _git(cwd: Path, *args: str, allow_exit: int = 0, stdin: str | None = None) -> str:
    """Run one git command; its stdout, or WorktreeError with git's own words. Exit code
    ``allow_exit`` counts as success too (``check-ignore`` exits 1 when nothing matched)."""
    command = ["git", "-c", "core.hooksPath=/dev/null", *args]
    what = f"`git {' '.join(args[:2])}`"
    try:
        finished = await run_process(
            command,
            timeout_seconds=GIT_TIMEOUT_SECONDS,
            keep_bytes=MAX_GIT_OUTPUT_BYTES,
            cwd=cwd,
            env=_git_environment(),
            stdin=stdin.encode("utf-8", "surrogateescape") if stdin is not None else None,
        )
    except FileNotFoundError:
        raise _GitMissingError(
            "isolation: worktree needs git, which is not installed (no `git` on PATH)",
            hint="install git, or remove `isolation: worktree` from the agent file",
        ) from None
    except OSError as error:
        raise WorktreeError(
            f"cannot run git in {cwd}: {error}", hint="check that the folder exists"
        ) from None
    if finished.timed_out:
        raise WorktreeError(
            f"{what} took longer than {GIT_TIMEOUT_SECONDS:g}s in {cwd}",
            hint="check the repository (git status) and try again",
        )
    if finished.returncode not in (0, allow_exit):
        said = finished.stderr.data().decode(errors="replace").strip()
        raise WorktreeError(
            f"{what} failed in {cwd}: {(said or f'exit code {finished.returncode}')[:500]}",
            hint="check the repository with git status",
        )
    if not finished.stdout.whole:
        raise WorktreeError(
            f"{what} printed {finished.stdout.total} bytes in {cwd}, too many to read",
            hint="make the repository smaller for the agent (a .gitignore), or run it without "
            "`isolation: worktree`",
        )
    return finished.stdout.data().decode(errors="replace")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _git_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARIABLES}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


def _subfolder(workspace: Path, toplevel: Path) -> str:
    """The workspace's place in its repository (``""`` at the top), as a relative path."""
    try:
        relative = Path(os.path.realpath(workspace)).relative_to(toplevel)
    except ValueError:
        return ""
    return relative.as_posix() if relative.parts else ""


def _lock_for(common_dir: Path) -> asyncio.Lock:
    locks = _LOCKS.setdefault(asyncio.get_running_loop(), {})
    key = str(common_dir)
    lock = locks.get(key)
    if lock is None:
        lock = locks[key] = asyncio.Lock()
    return lock


def _worktree_name(agent_name: str, session_id: str) -> str:
    # a valid folder and branch name whatever the agent is called (no "..", no leading dot)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", agent_name)
    slug = re.sub(r"\.{2,}", ".", slug).strip(".-")[:40].strip(".-") or "agent"
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


def _record_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.json")


def _write_record(worktree: Worktree) -> None:
    """Beside the worktree: the commit it started from, which removal relies on."""
    record = {
        "schema_version": 1,
        "branch": worktree.branch,
        "base": worktree.base,
        "repository": str(worktree.repository),
        "uncommitted": worktree.uncommitted,
    }
    # without it, a restarted run finds no base and keeps the branch: the safe side
    with contextlib.suppress(OSError):
        _record_path(worktree.path).write_text(json.dumps(record), encoding="utf-8")


def _read_record(path: Path) -> tuple[str | None, int]:
    """The base commit and uncommitted count of an existing worktree; without a readable
    record its branch is never deleted."""
    try:
        data = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None, 0
    if not isinstance(data, dict):
        return None, 0
    base = data.get("base")
    uncommitted = data.get("uncommitted")
    return (
        base if isinstance(base, str) and re.fullmatch(r"[0-9a-f]{40,64}", base) else None,
        uncommitted if isinstance(uncommitted, int) and uncommitted >= 0 else 0,
    )
