"""The trace of one task, read back from the store: a tree of sessions with their model calls,
tool calls and durations, and the JSON "seed format" of ``subagents trace --json``.

Everything here is built from what the recorder wrote (trace records, session records and
checkpoints). A tool call's result is read from its tool result message, where it is stored
once (``result_in_message``; older records carry it themselves). Large tool arguments and
errors are recorded as bounded previews (``arguments_preview`` / ``result_preview`` say so);
the whole values are in the session's messages, which the export writes out. The recorder already
redacts secrets; the view redacts again, so a record written by an older or foreign writer
cannot leak one.

Times: a model-call or tool-call record is stamped when the call ended, so its start is the
stamp minus its duration. A session lasts from its first checkpoint or call to its last one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from subagents.messages import Usage
from subagents.redaction import Redactor
from subagents.store.records import TaskRecord, TraceRecord, TraceStatus
from subagents.todos import TodoItem, todos_from_state, todos_to_state
from subagents.tracing.preview import preview_text

if TYPE_CHECKING:
    from subagents.models.prices import Cost, ModelPrice
    from subagents.store.base import Store
    from subagents.store.records import CheckpointRecord, SessionRecord

__all__ = [
    "EventTrace",
    "ModelCallTrace",
    "SessionTrace",
    "TaskTrace",
    "ToolCallTrace",
    "build_trace",
    "trace_to_json",
]

MODEL_CALL_STEP = "model_call"
_LONGEST_MS = 366 * 24 * 3600 * 1000.0
"""Longer than any run; a duration beyond it is bad data and is ignored."""
SESSION_FINISHED_STEP = "session_finished"


@dataclass(slots=True)
class ToolCallTrace:
    """One tool call of a session, as recorded when it ended."""

    call_id: str
    name: str
    """The name the model called (``mcp__server__tool`` for MCP tools)."""
    server: str
    tool: str
    outcome: str
    """``ok``, ``error``, ``timeout``, ``denied``... as the tool executor reported it."""
    failed: bool
    arguments: dict[str, Any]
    result: str | None
    error: str | None
    duration_ms: float | None
    started_at: datetime
    finished_at: datetime
    child_session_id: str | None = None
    """For a Task call: the subagent session it started."""
    arguments_preview: bool = False
    """The arguments were large: ``arguments`` is a bounded preview (see
    :mod:`subagents.tracing.preview`); the whole arguments are in the session's messages."""
    result_preview: bool = False
    """Likewise for ``result`` / ``error``: the whole text is the tool result message."""
    repairs: tuple[str, ...] = ()
    """What was mended to make the call usable (invalid JSON, a misspelled tool name)."""


@dataclass(slots=True)
class ModelCallTrace:
    """One model request of a session."""

    model: str
    turn: int | None
    input_tokens: int
    output_tokens: int
    stop_reason: str | None
    message: str
    status: TraceStatus
    duration_ms: float | None
    started_at: datetime
    finished_at: datetime
    tool_call_ids: list[str] = field(default_factory=list)
    """The tool calls this response asked for (as far as the records show)."""
    response_id: str = ""
    response_model: str = ""
    finish_reason: str = ""
    """In the provider's own words ("" for records older than it, or no provider's)."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usage_estimated: bool = False
    """The server reported no token counts: these are estimated from lengths."""

    @property
    def usage(self) -> Usage:
        return Usage(
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens
        )


@dataclass(slots=True)
class EventTrace:
    """Any other record of a session: ``session_finished`` and steps this view does not know."""

    kind: str
    name: str
    message: str
    status: TraceStatus
    timestamp: datetime
    duration_ms: float | None
    data: dict[str, Any]


@dataclass(slots=True)
class SessionTrace:
    """One agent session (main or subagent) with what it did and the subagents it started."""

    session_id: str
    agent: str
    parent_session_id: str | None
    parent_tool_call_id: str | None
    description: str
    status: str
    model: str
    depth: int
    turns: int
    input_tokens: int
    output_tokens: int
    message_count: int
    started_at: datetime
    finished_at: datetime
    error: str | None = None
    model_calls: list[ModelCallTrace] = field(default_factory=list)
    tool_calls: list[ToolCallTrace] = field(default_factory=list)
    events: list[EventTrace] = field(default_factory=list)
    children: list[SessionTrace] = field(default_factory=list)
    todos: tuple[TodoItem, ...] = ()
    """The session's todo list as its last checkpoint kept it (TodoWrite); each change is
    also one ``todos_updated`` event."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def usage(self) -> Usage:
        return Usage(
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens
        )

    @property
    def usage_estimated(self) -> bool:
        """Whether some of its token counts are estimates (a server that reported none)."""
        return any(call.usage_estimated for call in self.model_calls)

    @property
    def duration_ms(self) -> float:
        return _milliseconds(self.finished_at - self.started_at)

    @property
    def failed_tool_calls(self) -> int:
        return sum(1 for call in self.tool_calls if call.failed)

    def walk(self) -> Iterator[SessionTrace]:
        """This session and every session below it, depth first, in start order."""
        stack = [self]
        while stack:
            session = stack.pop()
            yield session
            stack.extend(reversed(session.children))


@dataclass(slots=True)
class TaskTrace:
    """The whole trace of one task; ``roots`` normally holds the main session only."""

    task: TaskRecord
    roots: list[SessionTrace] = field(default_factory=list)
    workflow_path: list[dict[str, Any]] = field(default_factory=list)
    """A workflow task's node executions in order: node, kind, key, next, duration_ms and
    session_id (an agent node's session); decisions of a person appear as ``decision``."""

    def sessions(self) -> Iterator[SessionTrace]:
        for root in self.roots:
            yield from root.walk()

    @property
    def input_tokens(self) -> int:
        return sum(session.input_tokens for session in self.sessions())

    @property
    def output_tokens(self) -> int:
        return sum(session.output_tokens for session in self.sessions())

    @property
    def cache_read_tokens(self) -> int:
        return sum(session.cache_read_tokens for session in self.sessions())

    @property
    def usage_estimated(self) -> bool:
        return any(session.usage_estimated for session in self.sessions())

    @property
    def cache_write_tokens(self) -> int:
        return sum(session.cache_write_tokens for session in self.sessions())

    @property
    def cache_hit_rate(self) -> float | None:
        """The share of every input token read from a provider's cache (``None``: no input,
        or no provider said anything of its cache, which cannot tell a miss from silence)."""
        from subagents.models.prices import cache_hit_rate, prompt_tokens

        prompted = sum(prompt_tokens(s.model, s.usage) for s in self.sessions())
        return cache_hit_rate(self.cache_read_tokens, self.cache_write_tokens, prompted)

    def cost(self, prices: Mapping[str, ModelPrice] | None = None) -> Cost:
        """What the task's calls cost in USD (see :mod:`subagents.models.prices`)."""
        from subagents.models.prices import cost_of, total_cost

        return total_cost(cost_of(s.model, s.usage, prices) for s in self.sessions())

    @property
    def started_at(self) -> datetime:
        starts = [self.task.started_at or self.task.created_at]
        starts += [root.started_at for root in self.roots]
        return min(starts)

    @property
    def finished_at(self) -> datetime:
        if self.task.completed_at is not None:
            return self.task.completed_at
        ends = [root.finished_at for root in self.roots]
        return max([*ends, self.task.updated_at])

    @property
    def duration_ms(self) -> float:
        return _milliseconds(self.finished_at - self.started_at)


def _milliseconds(delta: timedelta) -> float:
    return max(delta.total_seconds() * 1000.0, 0.0)


# -- building ---------------------------------------------------------------------------------


def build_trace(store: Store, task_id: str, *, redactor: Redactor | None = None) -> TaskTrace:
    """Read the task (id or unique prefix) and everything it recorded into a tree.

    Raises :class:`~subagents.errors.StoreError` when the task does not exist or the store
    cannot be read.
    """
    redact = redactor or Redactor()
    task = store.get_task(task_id)
    records = store.traces(task.id)
    checkpoints = store.checkpoints(task.id)
    by_session: dict[str | None, list[TraceRecord]] = {}
    for record in records:
        by_session.setdefault(record.session_id, []).append(record)
    checkpoints_by_session: dict[str, list[CheckpointRecord]] = {}
    for checkpoint in checkpoints:
        checkpoints_by_session.setdefault(checkpoint.session_id, []).append(checkpoint)

    sessions = [
        _session_trace(
            session,
            by_session.get(session.session_id, []),
            checkpoints_by_session.get(session.session_id, []),
            redact,
            lambda session_id: _tool_results(store, session_id),
        )
        for session in store.sessions(task.id)
    ]
    return TaskTrace(
        task=_redacted_task(task, redact),
        roots=_link(sessions),
        workflow_path=_workflow_path(records, redact),
    )


def _workflow_path(records: list[TraceRecord], redact: Redactor) -> list[dict[str, Any]]:
    """The nodes a workflow ran and the decisions that let it go on, in order."""
    path: list[dict[str, Any]] = []
    for record in records:
        if not (record.agent or "").startswith("workflow:"):
            continue
        if record.kind == "step" and "node" in record.data:
            path.append(dict(record.data))
        elif record.kind == "wait" and record.step_name == "decision":
            path.append({"decision": redact.text(record.message)})
    return path


def _tool_results(store: Store, session_id: str) -> dict[str, str]:
    """The results of the session's tool calls, by tool call id, from its messages."""
    results = {}
    for message in store.messages(session_id):
        call_id = message.get("tool_call_id")
        if message.get("role") == "tool" and isinstance(call_id, str):
            results[call_id] = str(message.get("content", ""))
    return results


def _redacted_task(task: TaskRecord, redact: Redactor) -> TaskRecord:
    return TaskRecord.model_validate(redact.value(task.model_dump(mode="json")))


def _session_trace(
    session: SessionRecord,
    records: list[TraceRecord],
    checkpoints: list[CheckpointRecord],
    redact: Redactor,
    tool_results: Callable[[str], dict[str, str]],
) -> SessionTrace:
    model_calls: list[ModelCallTrace] = []
    tool_calls: list[ToolCallTrace] = []
    events: list[EventTrace] = []
    results: dict[str, str] | None = None
    for record in sorted(records, key=lambda r: r.timestamp):
        if record.kind == "tool_call":
            if record.data.get("result_in_message") is True and results is None:
                results = tool_results(session.session_id)
            tool_calls.append(_tool_call(record, redact, results or {}))
        elif record.kind == "step" and record.step_name == MODEL_CALL_STEP:
            model_calls.append(_model_call(record, redact))
        else:
            events.append(_event(record, redact))
    _assign_tool_calls(model_calls, tool_calls)

    moments = [c.created_at for c in checkpoints]
    moments += [m.started_at for m in model_calls] + [m.finished_at for m in model_calls]
    moments += [t.started_at for t in tool_calls] + [t.finished_at for t in tool_calls]
    moments += [e.timestamp for e in events]
    if not moments:
        moments = [session.created_at, session.updated_at]
    usage = session.usage or {}
    last_state = checkpoints[-1].state if checkpoints else {}
    return SessionTrace(
        session_id=session.session_id,
        agent=session.agent_name,
        parent_session_id=session.parent_session_id,
        parent_tool_call_id=session.parent_tool_call_id,
        description=redact.text(session.task_description),
        status=session.status,
        model=session.model,
        depth=session.depth,
        turns=session.turns,
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cache_read_tokens=_count(usage.get("cache_read_tokens")),
        cache_write_tokens=_count(usage.get("cache_write_tokens")),
        message_count=_message_count(last_state, events),
        started_at=min(moments),
        finished_at=max(moments),
        error=_session_error(session, events),
        model_calls=model_calls,
        tool_calls=tool_calls,
        events=events,
        todos=todos_from_state(redact.value(last_state.get("todos"))),
    )


def _duration(record: TraceRecord) -> float | None:
    """The record's duration when it is a plausible one (bad data must not break the view)."""
    value = record.duration_ms
    if value is None or not math.isfinite(value) or not 0 <= value <= _LONGEST_MS:
        return None
    return value


def _started(finished: datetime, duration_ms: float | None) -> datetime:
    try:
        return finished - timedelta(milliseconds=duration_ms) if duration_ms else finished
    except OverflowError:  # a stamp near year 1
        return finished


def _tool_call(record: TraceRecord, redact: Redactor, results: dict[str, str]) -> ToolCallTrace:
    data = record.data
    finished = record.timestamp
    duration = _duration(record)
    started = _started(finished, duration)
    failed = record.status == "error"
    error = data.get("error")
    result = data.get("result")
    result_cut = data.get("result_preview") is True
    if data.get("result_in_message") is True:
        found = results.get(str(data.get("tool_call_id") or ""))
        result, result_cut = preview_text(found) if found is not None else (None, False)
    arguments = data.get("arguments")
    return ToolCallTrace(
        call_id=str(data.get("tool_call_id") or ""),
        name=record.step_name,
        server=str(data.get("server") or "builtin"),
        tool=str(data.get("tool") or record.step_name),
        outcome=record.message or ("error" if failed else "ok"),
        failed=failed,
        arguments=redact.value(arguments) if isinstance(arguments, dict) else {},
        result=redact.text(str(result)) if result is not None else None,
        error=redact.text(str(error)) if error is not None else None,
        duration_ms=duration,
        started_at=started,
        finished_at=finished,
        arguments_preview=data.get("arguments_preview") is True,
        result_preview=result_cut,
        repairs=_repairs(data.get("repairs"), redact),
    )


def _repairs(value: object, redact: Redactor) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(redact.text(note) for note in value if isinstance(note, str))


def _model_call(record: TraceRecord, redact: Redactor) -> ModelCallTrace:
    data = record.data
    finished = record.timestamp
    duration = _duration(record)
    turn = data.get("turn")
    stop_reason = data.get("stop_reason")
    return ModelCallTrace(
        model=str(data.get("model") or ""),
        turn=turn if isinstance(turn, int) else None,
        input_tokens=_count(data.get("input_tokens")),
        output_tokens=_count(data.get("output_tokens")),
        cache_read_tokens=_count(data.get("cache_read_tokens")),
        cache_write_tokens=_count(data.get("cache_write_tokens")),
        usage_estimated=data.get("usage_estimated") is True,
        stop_reason=str(stop_reason) if stop_reason is not None else None,
        message=redact.text(record.message),
        status=record.status,
        duration_ms=duration,
        started_at=_started(finished, duration),
        finished_at=finished,
        response_id=_label(data.get("response_id")),
        response_model=_label(data.get("response_model")),
        finish_reason=_label(data.get("finish_reason")),
    )


def _label(value: object) -> str:
    return value[:200] if isinstance(value, str) else ""


def _event(record: TraceRecord, redact: Redactor) -> EventTrace:
    return EventTrace(
        kind=record.kind,
        name=record.step_name,
        message=redact.text(record.message),
        status=record.status,
        timestamp=record.timestamp,
        duration_ms=_duration(record),
        data=redact.value(record.data),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _assign_tool_calls(model_calls: list[ModelCallTrace], tool_calls: list[ToolCallTrace]) -> None:
    """Give each tool call to the last model call that ended before the tool call did."""
    for call in tool_calls:
        asker = None
        for model_call in model_calls:
            if model_call.finished_at <= call.finished_at:
                asker = model_call
            else:
                break
        if asker is not None:
            asker.tool_call_ids.append(call.call_id)


def _message_count(last_state: dict[str, Any], events: list[EventTrace]) -> int:
    for event in reversed(events):
        count = event.data.get("message_count")
        if event.name == SESSION_FINISHED_STEP and isinstance(count, int):
            return max(count, _count(last_state.get("message_count")))
    return _count(last_state.get("message_count"))


def _session_error(session: SessionRecord, events: list[EventTrace]) -> str | None:
    if session.status != "error":
        return None
    for event in reversed(events):
        if event.name == SESSION_FINISHED_STEP and event.status == "error":
            return event.message or "failed"
    return "failed"


def _link(sessions: list[SessionTrace]) -> list[SessionTrace]:
    """Nest sessions under their parents (children by start time) and bind each subagent to
    the Task call that started it; sessions whose parent is missing become roots."""
    by_id = {session.session_id: session for session in sessions}
    roots: list[SessionTrace] = []
    for session in sessions:
        parent = by_id.get(session.parent_session_id or "")
        if parent is None or parent is session or _is_ancestor(session, parent, by_id):
            roots.append(session)
            continue
        parent.children.append(session)
        for call in parent.tool_calls:
            if call.call_id and call.call_id == session.parent_tool_call_id:
                call.child_session_id = session.session_id
    for session in sessions:
        session.children.sort(key=lambda child: child.started_at)
    roots.sort(key=lambda root: (root.depth, root.started_at))
    return roots


def _is_ancestor(
    session: SessionTrace, candidate: SessionTrace, by_id: dict[str, SessionTrace]
) -> bool:
    """Whether ``session`` is above ``candidate`` already: bad data must not make a cycle."""
    seen: set[str] = set()
    current: SessionTrace | None = candidate
    while current is not None and current.session_id not in seen:
        if current is session:
            return True
        seen.add(current.session_id)
        current = by_id.get(current.parent_session_id or "")
    return False


# -- the seed format --------------------------------------------------------------------------


def trace_to_json(trace: TaskTrace) -> dict[str, Any]:
    """The trace as plain JSON data: ``task``, ``steps``, ``tool_calls``, ``subagent_sessions``
    (every session, the main one with ``parent_id`` null) and ``totals``; a workflow's also
    ``workflow_path`` (see :attr:`TaskTrace.workflow_path`)."""
    sessions = list(trace.sessions())
    steps: list[tuple[datetime, dict[str, Any]]] = []
    tool_calls: list[tuple[datetime, dict[str, Any]]] = []
    for session in sessions:
        steps += [(m.finished_at, _model_step_json(session, m)) for m in session.model_calls]
        steps += [(e.timestamp, _event_step_json(session, e)) for e in session.events]
        tool_calls += [(c.finished_at, _tool_call_json(session, c)) for c in session.tool_calls]
    steps.sort(key=lambda item: item[0])
    tool_calls.sort(key=lambda item: item[0])
    return {
        "task": trace.task.model_dump(mode="json"),
        "steps": [step for _, step in steps],
        "tool_calls": [call for _, call in tool_calls],
        "subagent_sessions": [_session_json(session) for session in sessions],
        **({"workflow_path": trace.workflow_path} if trace.workflow_path else {}),
        "totals": {
            "duration_ms": trace.duration_ms,
            "sessions": len(sessions),
            "model_calls": sum(len(s.model_calls) for s in sessions),
            "tool_calls": sum(len(s.tool_calls) for s in sessions),
            "failed_tool_calls": sum(s.failed_tool_calls for s in sessions),
            "tokens": {
                **_tokens(trace.input_tokens, trace.output_tokens),
                "cache_read_tokens": trace.cache_read_tokens,
                "cache_write_tokens": trace.cache_write_tokens,
                "cache_hit_rate": trace.cache_hit_rate,
            },
        },
    }


def _tokens(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _model_step_json(session: SessionTrace, call: ModelCallTrace) -> dict[str, Any]:
    return {
        "step_name": MODEL_CALL_STEP,
        "message": call.message,
        "timestamp": call.finished_at.isoformat(),
        "status": call.status,
        "agent": session.agent,
        "session_id": session.session_id,
        "tool_calls": list(call.tool_call_ids),
        "duration_ms": call.duration_ms,
        "model": call.model,
        "turn": call.turn,
        "tokens": {
            **_tokens(call.input_tokens, call.output_tokens),
            "cache_read_tokens": call.cache_read_tokens,
            "cache_write_tokens": call.cache_write_tokens,
        },
        "stop_reason": call.stop_reason,
    }


def _event_step_json(session: SessionTrace, event: EventTrace) -> dict[str, Any]:
    return {
        "step_name": event.name,
        "message": event.message,
        "timestamp": event.timestamp.isoformat(),
        "status": event.status,
        "agent": session.agent,
        "session_id": session.session_id,
        "tool_calls": [],
        "duration_ms": event.duration_ms,
        "data": event.data,
    }


def _tool_call_json(session: SessionTrace, call: ToolCallTrace) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "server": call.server,
        "tool": call.tool,
        "arguments": call.arguments,
        "arguments_preview": call.arguments_preview,
        "result": call.result,
        "error": call.error,
        "result_preview": call.result_preview,
        "status": "error" if call.failed else "ok",
        "outcome": call.outcome,
        "duration_ms": call.duration_ms,
        "agent": session.agent,
        "session_id": session.session_id,
        "timestamp": call.finished_at.isoformat(),
        "child_session_id": call.child_session_id,
        "repairs": list(call.repairs),
    }


def _session_json(session: SessionTrace) -> dict[str, Any]:
    return {
        "id": session.session_id,
        "agent": session.agent,
        "parent_id": session.parent_session_id,
        "parent_tool_call_id": session.parent_tool_call_id,
        "description": session.description,
        "depth": session.depth,
        "message_count": session.message_count,
        "status": session.status,
        "model": session.model,
        "turns": session.turns,
        "model_calls": len(session.model_calls),
        "tool_calls": len(session.tool_calls),
        "failed_tool_calls": session.failed_tool_calls,
        "tokens": {
            **_tokens(session.input_tokens, session.output_tokens),
            "cache_read_tokens": session.cache_read_tokens,
            "cache_write_tokens": session.cache_write_tokens,
        },
        "started_at": session.started_at.isoformat(),
        "duration_ms": session.duration_ms,
        "error": session.error,
        "todos": todos_to_state(session.todos),
    }
