"""The exception hierarchy: one root, and every message ends with what to do next.

Errors a model can act on (bad tool arguments, unknown agent, a failing tool) do not use these
classes to escape the loop: they become tool results. These are raised to the caller when a
person has to act (bad config, a missing API key, an unreadable store).
"""

from __future__ import annotations

__all__ = [
    "AgentDefinitionError",
    "AgentNotFoundError",
    "AgentUnavailableError",
    "ConfigError",
    "LoopDetectedError",
    "MCPServerError",
    "ModelConfigurationError",
    "ModelError",
    "ModelRetriesExhaustedError",
    "ScriptExhaustedError",
    "ScriptNotConsumedError",
    "StoreCorruptError",
    "StoreError",
    "StoreUnavailableError",
    "StoreVersionError",
    "SubagentsError",
    "TaskLeasedError",
    "TaskNotFoundError",
    "ToolDefinitionError",
    "ToolError",
    "TracingError",
    "WorkerError",
    "WorkflowConditionError",
    "WorkflowError",
    "WorkflowValidationError",
    "WorktreeError",
]


class SubagentsError(Exception):
    """Root of every error this library raises on purpose.

    ``message`` says what went wrong; ``hint`` says what the user should do about it. ``str()``
    joins them so that a plain ``print(error)`` is already actionable.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} - {self.hint}"
        return self.message


class ConfigError(SubagentsError):
    """A config file is unreadable or holds a bad value; the message names file, line and key."""


class AgentDefinitionError(SubagentsError):
    """An agent definition cannot be parsed or written."""


class AgentNotFoundError(SubagentsError):
    """No active agent has the requested name."""

    def __init__(
        self, name: str, *, available: list[str], closest: list[str] | None = None
    ) -> None:
        self.name = name
        self.available = available
        self.closest = closest or []
        listing = ", ".join(available) if available else "(none)"
        message = f"No agent named {name!r}."
        if self.closest:
            message += f" Did you mean {', '.join(repr(c) for c in self.closest)}?"
        super().__init__(
            message,
            hint=f"use one of: {listing} (run 'subagents agents list' to see them all)",
        )


class AgentUnavailableError(AgentNotFoundError):
    """An agent of that name exists but is ``invalid`` or ``disabled``."""

    def __init__(
        self, name: str, *, status: str, reasons: list[str], location: str, available: list[str]
    ) -> None:
        self.name = name
        self.available = available
        self.closest = []
        self.status = status
        self.reasons = reasons
        self.location = location
        why = "; ".join(reasons) if reasons else "no reason recorded"
        if status == "disabled":
            hint = "re-enable it in config.toml ([subagents] enabled, disabled, agents)"
        else:
            hint = f"fix {location} (run 'subagents agents validate' to see every problem)"
        SubagentsError.__init__(self, f"Agent {name!r} ({location}) is {status}: {why}.", hint=hint)


class ToolDefinitionError(SubagentsError):
    """A tool was declared wrongly (bad signature, duplicate name)."""


class ToolError(SubagentsError):
    """Raised by a tool to report a failure to the model; the loop turns it into a tool result
    with ``is_error`` set. The message should tell the model what to do differently."""


class LoopDetectedError(SubagentsError):
    """A session made the same tool call, failing the same way, ``[subagents]
    max_repeated_failures`` times, or wrote that many answers caught in a loop (``looped``:
    the last one's description); the session stopped and its task can be resumed."""

    PREFIX = "Loop detected:"

    def __init__(
        self,
        tool: str,
        arguments_preview: str,
        error: str,
        count: int,
        *,
        task_id: str | None = None,
        looped: str | None = None,
    ) -> None:
        self.tool = tool
        self.arguments_preview = arguments_preview
        self.error = error
        self.count = count
        self.task_id = task_id
        resume = (
            f"resume it with 'subagents resume {task_id[:8]}' (the agent is told to do "
            "something different), or "
            if task_id
            else ""
        )
        what = (
            f"{count} answers of the model repeated one passage over and over (the last: {looped})"
            if looped is not None
            else f"{tool} {arguments_preview} failed {count} times the same way: {error}"
        )
        super().__init__(
            f"{self.PREFIX} {what}",
            hint=f"{resume}raise [subagents] max_repeated_failures in config.toml (0 never stops)",
        )


class ModelConfigurationError(SubagentsError):
    """A model cannot be built: unknown provider, missing SDK extra, missing API key."""


class ModelError(SubagentsError):
    """A provider answered with an error that retrying will not fix."""

    def __init__(
        self, message: str, *, hint: str | None = None, status_code: int | None = None
    ) -> None:
        self.status_code = status_code
        super().__init__(message, hint=hint)


class ModelRetriesExhaustedError(ModelError):
    """A provider kept failing with retryable errors until the retry budget ran out."""


class ScriptExhaustedError(SubagentsError):
    """A ScriptedModel was asked for more responses than it was given."""


class ScriptNotConsumedError(SubagentsError):
    """A ScriptedModel still held responses when its test said the run was over
    (``assert_consumed()``); ``unconsumed`` holds them."""

    def __init__(self, message: str, *, hint: str | None = None, unconsumed: tuple[object, ...]):
        self.unconsumed = unconsumed
        super().__init__(message, hint=hint)


class StoreError(SubagentsError):
    """The task store cannot do what was asked (unknown task, busy or unwritable file)."""


class StoreCorruptError(StoreError):
    """The store file is not a readable database (truncated, overwritten, not SQLite)."""


class StoreVersionError(StoreError):
    """The store or one of its records was written by a newer subagents."""


class StoreUnavailableError(StoreError):
    """The store's database server could not be reached or dropped the connection; what was
    committed is kept, and the same call may succeed later."""


class TaskNotFoundError(StoreError):
    """No task has the id (or unique id prefix) asked for."""


class TaskLeasedError(StoreError):
    """Another owner holds a live lease on the task; the message says until when."""


class TracingError(SubagentsError):
    """A trace cannot be exported: the OpenTelemetry extra is missing, or the exporter failed."""


class MCPServerError(SubagentsError):
    """An MCP server could not be started, reached or kept alive; names the server."""

    def __init__(self, server: str, message: str, *, hint: str | None = None) -> None:
        self.server = server
        super().__init__(message, hint=hint)


class WorktreeError(SubagentsError):
    """A worktree for ``isolation: worktree`` cannot be made (no git, not a repository, no
    commit yet) or a git command failed; the message says what to do."""


class WorkerError(SubagentsError):
    """A run could not be queued for the workers, or a worker could not start or carry one
    out (see :mod:`subagents.workers`)."""


class WorkflowError(SubagentsError):
    """A workflow cannot be loaded or run (unknown name, unreadable file, a node that failed)."""


class WorkflowConditionError(WorkflowError):
    """A condition or template is not a valid safe expression, or failed on the state;
    ``position`` is the 0-based character offset of the problem in ``expression``."""

    def __init__(
        self,
        message: str,
        *,
        expression: str = "",
        position: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.expression = expression
        self.position = position
        super().__init__(message, hint=hint)


class WorkflowValidationError(WorkflowError):
    """A workflow has problems; ``problems`` lists every one with its location
    (``"nodes.fix.agent"``, ``"edges[2].to"``)."""

    def __init__(self, name: str, problems: list[tuple[str, str]], *, source: str = "") -> None:
        self.workflow = name
        self.problems = problems
        self.source = source
        where = f" ({source})" if source else ""
        listing = "; ".join(f"{location}: {message}" for location, message in problems)
        super().__init__(
            f"Workflow {name!r}{where} has {len(problems)} problem(s): {listing}",
            hint=f"fix the file, then check it with 'subagents workflow validate {source or name}'",
        )
