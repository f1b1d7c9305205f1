"""Tool, the context a tool runs in, and the registry of known tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from subagents.errors import ToolDefinitionError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from subagents.models.base import ToolSpec
    from subagents.todos import TodoItem
    from subagents.tools.sandbox import BashSandbox

__all__ = ["Tool", "ToolContext", "ToolFunction", "ToolRegistry", "ToolSession"]

ToolFunction = Callable[..., Awaitable[Any] | Any]


class ToolSession(Protocol):
    """What a tool may ask of the session that called it: where to keep the todo list
    (TodoWrite). The runtime's :class:`~subagents.runtime.session.Session` is one; the tools
    that belong to the runtime (Task, TaskOutput, TaskCancel, AskHuman) narrow it to that."""

    def set_todos(self, todos: tuple[TodoItem, ...]) -> None: ...


@dataclass(slots=True)
class ToolContext:
    """What a running tool may know about where it runs.

    ``workspace`` is the root every file tool is confined to. ``session`` is the runtime
    session that issued the call (``None`` outside a session); the Task tool uses it to
    delegate. ``env`` is the environment for subprocesses a tool starts; ``None`` means
    :func:`~subagents.secrets.tool_environment` of the process without config. ``sandbox``,
    when set, is the OS sandbox Bash runs its commands in (see :mod:`subagents.tools.sandbox`).
    ``grants`` are folders outside ``workspace`` the file tools may also use (an agent's memory
    folder; see :class:`~subagents.tools.workspace.Workspace`).
    """

    workspace: Path
    agent_id: str = ""
    agent_type: str = ""
    tool_call_id: str = ""
    session: ToolSession | None = None
    env: Mapping[str, str] | None = None
    sandbox: BashSandbox | None = None
    grants: tuple[Path, ...] = ()


@dataclass(slots=True)
class Tool:
    """One tool a model can call.

    ``function`` receives the validated arguments as keyword arguments, plus ``ctx`` (a
    :class:`ToolContext`) when ``takes_context`` is set. It returns a string (anything else is
    rendered as JSON) or raises :class:`subagents.errors.ToolError` with a message for the model.

    ``input_model`` validates arguments before the call; ``parameters`` is its JSON Schema as
    shown to the model. ``fallback_tools`` are tried in order when this tool fails or times out.
    ``timeout_seconds`` bounds a call that waits on anything; None sets no bound (the Task
    tool's: its subagent is bounded by its own turns and its model's and tools' timeouts).
    ``needs_approval`` defaults to ``not read_only``. ``writes_paths`` names the arguments
    that are paths of files the tool writes: the permission layer checks them against the
    protected paths (see :mod:`subagents.tools.protected`).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: ToolFunction
    input_model: type[BaseModel] | None = None
    takes_context: bool = False
    output_schema: dict[str, Any] | None = None
    timeout_seconds: float | None = 300.0
    fallback_tools: tuple[str, ...] = ()
    read_only: bool = False
    idempotent: bool = False
    needs_approval: bool | None = None
    writes_paths: tuple[str, ...] = ()
    mcp_server: str | None = None
    """The MCP server the tool comes from (``None`` for every other tool)."""
    compact_description: str | None = None
    """What the compact description profile shows (default: the description's first sentence;
    see :mod:`subagents.runtime.tool_menu`)."""
    background_parameters: tuple[str, ...] = ()
    """Optional parameters that start work in the background (Task's ``run_in_background``):
    the compact profile, which shows only required ones, shows these when the session's
    prompt asks for work in the background (see :mod:`subagents.runtime.tool_menu`)."""
    parallel: bool = False
    """Several calls of it in one answer are worth making (Task: subagents that work at the
    same time); a model constrained to one call per answer is offered a form for them."""
    _spec: ToolSpec | None = field(default=None, repr=False, compare=False)

    @property
    def requires_approval(self) -> bool:
        if self.needs_approval is None:
            return not self.read_only
        return self.needs_approval

    @property
    def spec(self) -> ToolSpec:
        """The model-facing description, built once."""
        if self._spec is None:
            from subagents.models.base import ToolSpec

            self._spec = ToolSpec(self.name, self.description, self.parameters, self.parallel)
        return self._spec


class ToolRegistry:
    """Tools by name. Iteration order is registration order."""

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        if not replace and tool.name in self._tools:
            raise ToolDefinitionError(
                f"A tool named {tool.name!r} is already registered.",
                hint="give the new tool another name, or pass replace=True to override it",
            )
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def mcp_servers(self) -> dict[str, str]:
        """Tool name -> MCP server, for the tools that come from an MCP server."""
        return {name: t.mcp_server for name, t in self._tools.items() if t.mcp_server is not None}

    def copy(self) -> ToolRegistry:
        """A registry of its own holding the same tools."""
        copied = ToolRegistry()
        copied._tools = dict(self._tools)
        return copied

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry holding only the named tools that exist here, in the given order."""
        picked = ToolRegistry()
        for name in names:
            tool = self._tools.get(name)
            if tool is not None:
                picked._tools[name] = tool
        return picked
