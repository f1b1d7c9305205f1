"""Agent memory: a folder an agent keeps across runs (``memory: user | project | local``).

As in Claude Code, an agent whose file says ``memory: SCOPE`` owns one folder:

- ``user``: ``~/.claude/agent-memory/<agent>/`` (home is ``config.resolve_home()``), for what
  it learns across projects;
- ``project``: ``.claude/agent-memory/<agent>/`` in the project, shared through version
  control;
- ``local``: ``.claude/agent-memory-local/<agent>/`` in the project, for one person.

The folder is created when a session of the agent starts. The first part of its
``MEMORY.md`` (:data:`MAX_MEMORY_LINES` lines, :data:`MAX_MEMORY_BYTES` bytes, with a note
when cut) goes into the agent's system prompt with a short instruction on keeping it, and
the file tools may read and write inside that folder, and only there, even when it lies
outside the workspace or under a protected folder such as ``.claude/`` (see
:class:`subagents.tools.workspace.Workspace` ``grants``). Protected names inside it (a
``.git``) and symlinks leading out of it are still refused.

A folder that would resolve elsewhere (a symlink planted in a project pointing at another
place) is not granted: the prompt says memory is unavailable and why.

As in Claude Code, an agent with memory may keep it even when its ``tools`` leave out Read,
Write or Edit: it gets each of them that its parent has (never one the parent lacks, nor one
its own ``disallowedTools`` names), confined to the memory folder (:func:`with_memory_tools`).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.errors import ToolError
from subagents.tools.workspace import workspace_of

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition, MemoryScope
    from subagents.tools.base import Tool, ToolContext, ToolRegistry

__all__ = [
    "MAX_MEMORY_BYTES",
    "MAX_MEMORY_LINES",
    "MEMORY_FILE_NAME",
    "MEMORY_TOOL_NAMES",
    "AgentMemory",
    "memory_folder",
    "memory_grants",
    "memory_prompt",
    "open_memory",
    "project_checkout",
    "with_memory_tools",
]

MEMORY_FILE_NAME = "MEMORY.md"
MEMORY_TOOL_NAMES: tuple[str, ...] = ("Read", "Write", "Edit")
"""The tools an agent with memory gets, confined to its folder, when its list lacks them."""
MAX_MEMORY_LINES = 200
MAX_MEMORY_BYTES = 25 * 1024

_FOLDERS: dict[str, str] = {
    "user": ".claude/agent-memory",
    "project": ".claude/agent-memory",
    "local": ".claude/agent-memory-local",
}
_SCOPE_ADVICE: dict[str, str] = {
    "user": "It is yours across every project: keep what holds beyond this one.",
    "project": "It belongs to this project and is shared with its team through version "
    "control: write nothing personal and no secrets.",
    "local": "It belongs to this project and stays on this machine, out of version control.",
}


@dataclass(frozen=True, slots=True)
class AgentMemory:
    """An agent's memory folder; ``problem`` says why it cannot be used, when it cannot."""

    agent: str
    scope: MemoryScope
    folder: Path
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.problem is None

    @property
    def index(self) -> Path:
        return self.folder / MEMORY_FILE_NAME


def memory_folder(
    agent: str, scope: MemoryScope, *, workspace: Path, home: Path | None = None
) -> Path:
    """Where the memory of ``agent`` lives for ``scope`` (whether or not it exists).

    A project's memory stays in the project when the agent works in a git worktree the
    harness made inside the repository's ``.git`` (``isolation: worktree``): such a worktree
    is thrown away, its memory must not be.
    """
    from subagents.config import resolve_home

    base = resolve_home(home) if scope == "user" else project_checkout(workspace)
    return base / _FOLDERS[scope] / agent


def project_checkout(workspace: Path) -> Path:
    """``workspace``, or its place in the main checkout when it lies in a linked git worktree
    kept inside that checkout's ``.git`` folder (where isolated subagents work)."""
    for directory in (workspace, *workspace.parents):
        marker = directory / ".git"
        if marker.is_dir():
            return workspace
        if marker.is_file():
            return _main_checkout(marker, directory, workspace) or workspace
    return workspace


def _main_checkout(marker: Path, top: Path, workspace: Path) -> Path | None:
    """The main checkout's counterpart of ``workspace`` for the worktree whose ``.git`` file is
    ``marker`` at ``top``; ``None`` unless the worktree lies inside the main ``.git`` folder."""
    try:
        text = marker.read_text(encoding="utf-8", errors="replace")[:4096]
        if not text.startswith("gitdir:"):
            return None
        gitdir = top / text.split(":", 1)[1].strip()
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return None  # a submodule (no commondir) or an unreadable file: an ordinary checkout
    real_top = Path(os.path.realpath(top))
    if common.name != ".git" or not real_top.is_relative_to(common):
        return None
    try:
        return common.parent / Path(os.path.realpath(workspace)).relative_to(real_top)
    except ValueError:
        return None


def open_memory(
    definition: AgentDefinition | None, *, workspace: Path, home: Path | None = None
) -> AgentMemory | None:
    """The memory folder of ``definition``, created if missing; ``None`` when it has none.

    Never raises: a folder that cannot be made or that resolves outside its scope's base
    comes back with a ``problem``.
    """
    if definition is None or definition.memory is None:
        return None
    from subagents.config import resolve_home
    from subagents.definitions.validate import NAME_PATTERN

    scope, agent = definition.memory, definition.name
    folder = memory_folder(agent, scope, workspace=workspace, home=home)
    if not NAME_PATTERN.match(agent):
        return AgentMemory(agent, scope, folder, f"the agent name {agent!r} is not valid")
    base = Path(
        os.path.realpath(resolve_home(home) if scope == "user" else project_checkout(workspace))
    )
    # Checked before the folder is made too, so that a planted link makes nothing elsewhere.
    problem = _escape(folder, base)
    if problem is None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            return AgentMemory(agent, scope, folder, f"{folder} cannot be created ({error})")
        problem = _escape(folder, base)
    if problem is not None:
        return AgentMemory(agent, scope, folder, problem)
    return AgentMemory(agent, scope, Path(os.path.realpath(folder)))


def _escape(folder: Path, base: Path) -> str | None:
    """Why ``folder`` is no place for memory: a link leading outside ``base``, or a file."""
    real = Path(os.path.realpath(folder))
    if not real.is_relative_to(base):
        return f"{folder} leads to {real}, outside {base}; remove that link"
    if real.exists() and not real.is_dir():
        return f"{folder} is not a folder; move that file away"
    return None


def memory_grants(
    definition: AgentDefinition | None, *, workspace: Path, home: Path | None = None
) -> tuple[Path, ...]:
    """The folders the file tools of a session running ``definition`` may use beyond the
    workspace: its memory folder, when it has a usable one."""
    memory = open_memory(definition, workspace=workspace, home=home)
    return (memory.folder,) if memory is not None and memory.usable else ()


def memory_prompt(
    definition: AgentDefinition | None, *, workspace: Path, home: Path | None = None
) -> str:
    """The system-prompt block about the agent's memory ("" when it keeps none)."""
    memory = open_memory(definition, workspace=workspace, home=home)
    if memory is None:
        return ""
    if not memory.usable:
        return f"\n\n# Memory\nYour memory folder is not available in this run: {memory.problem}."
    return (
        "\n\n# Memory\n"
        f"You keep a memory folder that outlives this session: {memory.folder}\n"
        f"{_SCOPE_ADVICE[memory.scope]} Consult it before you start. As you work, record what "
        "will help next time (conventions, decisions, pitfalls, where things are) with Write "
        f"and Edit in that folder, using its absolute path. {MEMORY_FILE_NAME} is its index "
        f"and the part you see here: keep it under {MAX_MEMORY_LINES} lines, put details in "
        f"other files of the folder and name them in {MEMORY_FILE_NAME}.\n\n" + _index_text(memory)
    )


def _index_text(memory: AgentMemory) -> str:
    real = Path(os.path.realpath(memory.index))
    if not real.is_relative_to(memory.folder):
        return (
            f"{MEMORY_FILE_NAME} leads to {real}, outside your memory folder, so it was not "
            "read; replace the link by a file of its own."
        )
    try:
        head, more = _read_head(memory.index)
    except FileNotFoundError:
        return f"{MEMORY_FILE_NAME} does not exist yet: create it when you have something to keep."
    except OSError as error:
        return f"{MEMORY_FILE_NAME} cannot be read ({error.strerror or error})."
    note = ""
    if more:
        note = (
            f"\n[{MEMORY_FILE_NAME} goes on beyond this point ({more}); read the rest with Read "
            "if you need it, and move details out of it into other files.]"
        )
    return f"<memory file={MEMORY_FILE_NAME!r}>\n{head.rstrip()}{note}\n</memory>"


def _read_head(path: Path) -> tuple[str, str]:
    """The first lines of ``path`` within the caps, and what was left out ("" if nothing)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{MEMORY_FILE_NAME} is not a regular file")
        data = os.read(fd, MAX_MEMORY_BYTES + 1)
    finally:
        os.close(fd)
    cut_bytes = len(data) > MAX_MEMORY_BYTES
    text = data[:MAX_MEMORY_BYTES].decode("utf-8", errors="replace")
    if cut_bytes:
        text = text.rsplit("\n", 1)[0] if "\n" in text else text  # no half line
    lines = text.split("\n")
    if len(lines) > MAX_MEMORY_LINES and any(lines[MAX_MEMORY_LINES:]):
        shown = f"only its first {MAX_MEMORY_LINES} lines are shown"
        return "\n".join(lines[:MAX_MEMORY_LINES]), shown
    if cut_bytes:
        return text, f"only its first {MAX_MEMORY_BYTES // 1024} kB are shown"
    return text, ""


def with_memory_tools(
    definition: AgentDefinition | None,
    tools: ToolRegistry,
    available: ToolRegistry,
    grants: tuple[Path, ...],
) -> ToolRegistry:
    """``tools`` plus, for each of :data:`MEMORY_TOOL_NAMES` it lacks, ``available``'s (the
    parent's) version of that tool confined to the ``grants`` (the memory folder).

    Nothing is added without a grant, for a tool ``available`` lacks, or for one the
    definition's ``disallowedTools`` names.
    """
    if not grants or definition is None:
        return tools
    for name in MEMORY_TOOL_NAMES:
        tool = available.get(name)
        if tool is None or name in tools or name in definition.disallowed_tools:
            continue
        if not tool.takes_context or "file_path" not in tool.parameters.get("properties", {}):
            continue  # not the file tool this expects (replaced by your own)
        tools.add(_confined(tool, grants))
    return tools


def _confined(tool: Tool, grants: tuple[Path, ...]) -> Tool:
    """``tool`` (a file tool taking ``file_path``) refusing every path outside ``grants``."""
    run = tool.function
    where = ", ".join(str(folder) for folder in grants)

    def confined(ctx: ToolContext, **arguments: object) -> object:
        workspace = workspace_of(ctx)
        path = workspace.resolve(str(arguments.get("file_path", "")))
        if workspace.grant_of(path) is None:
            raise ToolError(
                f"{tool.name} is yours only for your memory folder {where}; "
                f"{workspace.display(path)} is outside it. Use a path inside that folder."
            )
        return run(ctx=ctx, **arguments)

    return dataclasses.replace(
        tool,
        function=confined,
        description=f"{tool.description}\n\nFor you, {tool.name} works only inside your "
        f"memory folder: {where}.",
        _spec=None,
    )
