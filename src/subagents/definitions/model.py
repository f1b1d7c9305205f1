"""AgentDefinition: one specialist, as read from a file or built in Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from subagents.status import AgentStatus, PermissionMode

__all__ = [
    "EFFORT_LEVELS",
    "SCOPE_RANK",
    "AgentDefinition",
    "AgentStatus",
    "Dialect",
    "Effort",
    "Isolation",
    "MemoryScope",
    "PermissionMode",
    "Scope",
]

Scope = Literal["builtin", "user", "project", "explicit"]
Dialect = Literal["markdown", "codex-toml", "json", "python"]
MemoryScope = Literal["user", "project", "local"]
Isolation = Literal["worktree"]
Effort = Literal["low", "medium", "high", "max"]
EFFORT_LEVELS: tuple[str, ...] = ("low", "medium", "high", "max")

# Higher rank wins when two scopes define the same name.
SCOPE_RANK: dict[Scope, int] = {"builtin": 0, "user": 1, "project": 2, "explicit": 3}


class AgentDefinition(BaseModel):
    """A subagent definition: who it is, what it may use, and what went wrong reading it.

    Build one directly (``AgentDefinition(name=..., description=..., system_prompt=...)``) or
    get one from :func:`subagents.definitions.parse_agent_file`. Parsers never raise: problems
    end up in ``validation_errors`` (the agent is then ``invalid``) or ``warnings``.

    ``tools`` is ``None`` to inherit every tool of the parent. ``mcp_servers`` names every MCP
    server the agent uses, in order; servers defined inline in the file also have their config
    in ``mcp_server_configs``. ``model`` is kept as written (an alias, ``inherit``,
    ``provider:model`` or a full model id); the models layer resolves it.

    Claude Code's other fields: ``skills`` (skill names whose ``SKILL.md`` is preloaded),
    ``memory`` (the scope of the agent's memory folder), ``isolation`` (``worktree``: work in
    a temporary git worktree), ``hooks`` (hooks scoped to the agent, in Claude Code's shape:
    event -> ``[{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}]``),
    ``effort`` (reasoning effort), ``initial_prompt`` (the first prompt when the agent runs as
    the main agent without one) and ``omit_claude_md`` (leave out CLAUDE.md / AGENTS.md).

    From the Python framework shape (``llm_config``, see :mod:`subagents.definitions.framework`):
    ``endpoint``, the base URL of the OpenAI-compatible server ``model`` runs on, and
    ``api_key_env``, the environment variable holding that server's key (never the key).

    ``parse_errors`` / ``parse_warnings`` hold what the reader found (bad YAML, a value of the
    wrong type); :func:`~subagents.definitions.validate_definition` starts from them each time it
    recomputes ``validation_errors`` / ``warnings``, so validating twice is harmless.
    ``unreadable`` marks a file that could not be read or understood at all (binary, bad
    YAML/TOML/JSON, ...): its parse error is then the only error reported.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    schema_version: int = 1
    name: str
    declared_name: str | None = None
    description: str
    system_prompt: str
    tools: list[str] | None = None
    disallowed_tools: list[str] = []
    model: str | None = None
    max_turns: int | None = None
    max_budget_tokens: int | None = None
    """``maxBudgetTokens``: the input and output tokens one session of this agent may spend as
    a subagent, within what its parent has left (see :mod:`subagents.runtime.budget`)."""
    max_budget_usd: float | None = None
    """``maxBudgetUsd``: what one session of this agent may spend in USD as a subagent, its
    calls priced by :mod:`subagents.models.prices`."""
    output_schema: dict[str, Any] | None = None
    """``outputSchema``: a JSON Schema its final answer must match (a typed result); the
    answer is asked for again once, then refused (see :mod:`subagents.runtime.typed_result`)."""
    max_duration_seconds: int | None = None
    """``maxDurationSeconds``: how long one session of this agent may run as a subagent; at
    it, a model call or tool call in flight is cut short (a hung provider or tool included),
    the session stops and its parent gets what it wrote."""
    permission_mode: PermissionMode | None = None
    mcp_servers: list[str] = []
    mcp_server_configs: dict[str, dict[str, Any]] = {}
    color: str | None = None
    background: bool = False
    temperature: float | None = None
    skills: list[str] = []
    memory: MemoryScope | None = None
    isolation: Isolation | None = None
    hooks: dict[str, list[dict[str, Any]]] = {}
    effort: Effort | None = None
    initial_prompt: str | None = None
    omit_claude_md: bool = False
    endpoint: str | None = None
    api_key_env: str | None = None
    scope: Scope = "explicit"
    source_path: Path | None = None
    dialect: Dialect = "python"
    priority: int = 0
    extra: dict[str, Any] = {}
    validation_errors: list[str] = []
    warnings: list[str] = []
    disabled: bool = False
    parse_errors: list[str] = []
    parse_warnings: list[str] = []
    unavailable_tool_names: list[str] = []
    unreadable: bool = False

    @property
    def status(self) -> AgentStatus:
        """``disabled`` beats ``invalid`` (any validation error) beats ``active``."""
        if self.disabled:
            return "disabled"
        if self.validation_errors:
            return "invalid"
        return "active"

    @property
    def unavailable_tools(self) -> list[str]:
        """Names in ``tools`` that cannot be used here (each one has a warning)."""
        return list(self.unavailable_tool_names)

    @property
    def location(self) -> str:
        """Where the definition came from, for messages: a path, or ``<scope>``."""
        return str(self.source_path) if self.source_path is not None else f"<{self.scope}>"
