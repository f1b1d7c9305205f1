"""Typed events a session emits while it runs; the UI, traces and the store subscribe to them.

Events are only built when somebody listens (:attr:`EventBus.active`), so an unobserved run
pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from subagents.messages import ToolCall, Usage

if TYPE_CHECKING:
    from subagents.models.base import ModelResponse
    from subagents.runtime.pause import HumanQuestion
    from subagents.runtime.result import RunResult, SpawnResult
    from subagents.todos import TodoItem
    from subagents.tools.execution import ToolOutcome

__all__ = [
    "AgentStalled",
    "AnswerRejected",
    "Event",
    "EventBus",
    "EventHandler",
    "InstructionsNotice",
    "LoopNoticed",
    "MCPServerFailed",
    "ModelFallback",
    "ModelResponded",
    "ModelRetrying",
    "SessionFinished",
    "SessionPaused",
    "SessionStarted",
    "SubagentFinished",
    "SubagentStarted",
    "TextDelta",
    "TodosUpdated",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnStarted",
    "WorkflowMapProgress",
    "WorkflowNodeFinished",
    "WorkflowNodeStarted",
]


@dataclass(slots=True, frozen=True)
class SessionStarted:
    agent_id: str
    agent_type: str
    parent_id: str | None
    model_name: str
    depth: int
    task_id: str | None = None  # the stored task the session belongs to, when stored
    kind: Literal["session_started"] = "session_started"


@dataclass(slots=True, frozen=True)
class TurnStarted:
    agent_id: str
    turn: int
    kind: Literal["turn_started"] = "turn_started"


@dataclass(slots=True, frozen=True)
class TextDelta:
    agent_id: str
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(slots=True, frozen=True)
class ModelResponded:
    agent_id: str
    turn: int
    response: ModelResponse
    duration_ms: float
    kind: Literal["model_responded"] = "model_responded"


@dataclass(slots=True, frozen=True)
class ToolCallStarted:
    agent_id: str
    call: ToolCall
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(slots=True, frozen=True)
class ToolCallFinished:
    agent_id: str
    call: ToolCall
    outcome: ToolOutcome
    kind: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(slots=True, frozen=True)
class SessionFinished:
    """The last event of every session, whatever its outcome (see ``result.status``)."""

    agent_id: str
    result: RunResult
    kind: Literal["session_finished"] = "session_finished"


@dataclass(slots=True, frozen=True)
class MCPServerFailed:
    """An MCP server could not be started; the run goes on without its tools."""

    server: str
    error: str
    kind: Literal["mcp_server_failed"] = "mcp_server_failed"


@dataclass(slots=True, frozen=True)
class ModelFallback:
    """A subagent runs on its parent's model (``model_name``) instead of ``requested``,
    because of ``reason`` (``"no ANTHROPIC_API_KEY"``); ``hint`` says how to change that."""

    agent_id: str
    agent_type: str
    requested: str
    reason: str
    hint: str
    model_name: str
    kind: Literal["model_fallback"] = "model_fallback"


@dataclass(slots=True, frozen=True)
class InstructionsNotice:
    """A CLAUDE.md / AGENTS.md file was cut or skipped (see
    :mod:`subagents.runtime.instructions`); the run goes on with what could be read."""

    message: str
    kind: Literal["instructions_notice"] = "instructions_notice"


@dataclass(slots=True, frozen=True)
class LoopNoticed:
    """The session repeated a tool call (see :mod:`subagents.runtime.loop_guard`): the model
    was told (``stopped`` false), or the session stops with a loop error (``stopped``)."""

    agent_id: str
    message: str
    stopped: bool
    tool_call_id: str = ""  # the call that repeated
    kind: Literal["loop_noticed"] = "loop_noticed"


@dataclass(slots=True, frozen=True)
class AgentStalled:
    """A background subagent took no step for ``[subagents] stall_seconds``: reported
    (``stopped`` false), then, after as long again, stopped (``stopped``)."""

    agent_id: str
    message: str
    stopped: bool
    kind: Literal["agent_stalled"] = "agent_stalled"


@dataclass(slots=True, frozen=True)
class SessionPaused:
    """The session waits for a person (approval, AskHuman, crash recovery); the run stops
    here until ``subagents resume`` delivers a decision, or (``alone``) only this session
    waits, in the run's inbox, while the rest goes on (see :mod:`subagents.runtime.inbox`)."""

    agent_id: str
    question: HumanQuestion
    alone: bool = False
    kind: Literal["session_paused"] = "session_paused"


@dataclass(slots=True, frozen=True)
class TodosUpdated:
    """A session's todo list, as TodoWrite set it (or as a resumed session brought it back)."""

    agent_id: str
    todos: tuple[TodoItem, ...]
    kind: Literal["todos_updated"] = "todos_updated"


@dataclass(slots=True, frozen=True)
class SubagentStarted:
    """A parent session delegated through the Task tool (emitted in the parent's name)."""

    agent_id: str
    parent_id: str
    subagent_type: str
    description: str
    resolved_model: str
    background: bool
    tool_call_id: str = ""  # the parent's Task call that started it
    kind: Literal["subagent_started"] = "subagent_started"


@dataclass(slots=True, frozen=True)
class SubagentFinished:
    agent_id: str
    parent_id: str
    result: SpawnResult
    usage: Usage = field(default_factory=Usage)
    kind: Literal["subagent_finished"] = "subagent_finished"


@dataclass(slots=True, frozen=True)
class WorkflowNodeStarted:
    """A workflow runs one of its nodes (``detail``: the agent or tool it runs)."""

    agent_id: str
    """The workflow's own session."""
    workflow: str
    node: str
    node_type: str
    key: str
    detail: str = ""
    kind: Literal["workflow_node_started"] = "workflow_node_started"


@dataclass(slots=True, frozen=True)
class WorkflowNodeFinished:
    """A workflow node finished; ``next`` is where the run goes (``end``, or the nodes of a
    fan-out joined by commas)."""

    agent_id: str
    workflow: str
    node: str
    key: str
    next: str
    duration_ms: float
    kind: Literal["workflow_node_finished"] = "workflow_node_finished"


@dataclass(slots=True, frozen=True)
class WorkflowMapProgress:
    """Where a map node's items stand: sent when one ends (and when the map starts)."""

    agent_id: str
    node: str
    total: int
    done: int
    failed: int
    running: int
    kind: Literal["workflow_map_progress"] = "workflow_map_progress"

    @property
    def queued(self) -> int:
        return self.total - self.done - self.failed - self.running


@dataclass(slots=True, frozen=True)
class ModelRetrying:
    """The session's model call failed and is tried again in ``delay_s`` seconds (the
    provider's ``Retry-After`` when it sent one): attempt ``attempt`` of ``max_attempts``,
    because of ``reason`` (``"HTTP 429"``, ``"timeout"``, ``"connection reset"``)."""

    agent_id: str
    attempt: int
    max_attempts: int
    delay_s: float
    reason: str
    kind: Literal["model_retrying"] = "model_retrying"


@dataclass(slots=True, frozen=True)
class AnswerRejected:
    """The model's answer was cut off inside a tool call or caught in a loop (see
    :mod:`subagents.runtime.answer_check`): ``message`` says how, and whether the turn is
    asked again (``asking_again``) or the answer taken as it is."""

    agent_id: str
    message: str
    asking_again: bool
    kind: Literal["answer_rejected"] = "answer_rejected"


Event = (
    SessionStarted
    | TurnStarted
    | TextDelta
    | ModelResponded
    | ToolCallStarted
    | ToolCallFinished
    | SessionFinished
    | SessionPaused
    | SubagentStarted
    | SubagentFinished
    | MCPServerFailed
    | ModelFallback
    | InstructionsNotice
    | TodosUpdated
    | LoopNoticed
    | AgentStalled
    | WorkflowNodeStarted
    | WorkflowNodeFinished
    | WorkflowMapProgress
    | ModelRetrying
    | AnswerRejected
)
EventHandler = Callable[[Event], None]


class EventBus:
    """Fan-out of events to handlers. A handler that raises is removed from nothing and
    breaks nothing: its exception is kept in :attr:`handler_errors` and the run goes on."""

    __slots__ = ("_handlers", "handler_errors")

    def __init__(self, handlers: list[EventHandler] | None = None) -> None:
        self._handlers: list[EventHandler] = list(handlers or ())
        self.handler_errors: list[BaseException] = []

    @property
    def active(self) -> bool:
        return bool(self._handlers)

    def subscribe(self, handler: EventHandler) -> Callable[[], None]:
        """Add ``handler``; returns a function that removes it again."""
        self._handlers.append(handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                self._handlers.remove(handler)

        return unsubscribe

    def emit(self, event: Event) -> None:
        for handler in self._handlers:
            try:
                handler(event)
            except Exception as error:  # a broken UI must not kill the run
                self.handler_errors.append(error)
