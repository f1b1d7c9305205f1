"""Recorder: writes every step of every session of one task to the store.

A step is one atomic commit: the messages the session added since its last step, its session
record (status, turns, usage), a checkpoint, trace records and, for side-effecting tools, the
tool ledger. Everything written passes through the redactor first, so secrets never reach
the store. The same records are what ``subagents trace`` and the export show.

Each value is stored whole once. A tool call's arguments live in the assistant message that
made the call, its result in the tool result message; the ledger entries, the trace record and
a paused run's question describe the call with the arguments whole while small and a bounded
preview otherwise (see :mod:`subagents.tracing.preview`: the first characters and entries, and
a note saying the full value is in the session's messages). The trace record of a call that
succeeded points at its result message instead of copying the result. Crash recovery needs no
arguments from the ledger: it re-reads the call from the messages and only the ledger's status
and, for an entry closed in a commit of its own, its result (kept whole: it may exist nowhere
else yet).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from subagents.errors import StoreVersionError
from subagents.messages import message_from_dict, message_to_dict
from subagents.runtime.snapshot import checkpoint_id
from subagents.status import (
    FINISHED_TASK_STATUSES,
    TRACE_STATUS_OF_OUTCOME,
    TRACE_STATUS_OF_SESSION,
    task_status,
)
from subagents.store.codec import UPGRADE_ADVICE, dump_json
from subagents.store.group import commit_group
from subagents.store.records import (
    RECORD_SCHEMA_VERSION,
    LedgerStatus,
    RecordFields,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceKind,
    TraceStatus,
)
from subagents.store.steplog import (
    UNSET_SEQUENCE,
    EncodedStep,
    StepRow,
    checkpoint_text,
    json_array,
)
from subagents.todos import todo_counts, todos_to_state
from subagents.tracing.preview import preview_arguments, preview_text

if TYPE_CHECKING:
    from subagents.messages import Message, ToolCall
    from subagents.models.base import ModelResponse
    from subagents.models.choice import ModelChoice
    from subagents.redaction import Redactor
    from subagents.runtime.pause import DeliveredDecision, HumanQuestion
    from subagents.runtime.result import RunResult
    from subagents.runtime.session import Session
    from subagents.runtime.snapshot import SessionFacts, SessionSnapshot
    from subagents.store.base import Store
    from subagents.tools.base import Tool
    from subagents.tools.execution import ToolOutcome

__all__ = ["MODEL_FALLBACK_STEP", "Recorder", "child_session_id", "main_session_id"]

MODEL_FALLBACK_STEP = "model_fallback"
"""The trace step of a subagent that runs on its parent's model instead of its own."""

_CHILD_NAMESPACE = uuid.UUID("6f1d2c8e-3b7a-4f5e-9c1d-2a8b7e6f5d4c")
_CHILD_NAMESPACE_BYTES = _CHILD_NAMESPACE.bytes


def child_session_id(parent_session_id: str, tool_call_id: str) -> str:
    """The id of the subagent a Task call starts: derived, so that a replay finds it again."""
    return _uuid5(f"{parent_session_id}:{tool_call_id}")


def _uuid5(name: str) -> str:
    """``str(uuid.uuid5(_CHILD_NAMESPACE, name))``, without building a ``UUID`` (a fifth of
    the cost, paid by every subagent): the SHA-1 of the namespace and the name, its first 16
    bytes marked as version 5 of the RFC 4122 variant."""
    digest = bytearray(hashlib.sha1(_CHILD_NAMESPACE_BYTES + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


QUESTION_VERSION = 1
"""The ``schema_version`` of a checkpoint's question (it carries its wait point)."""

STATE_VERSION = 1
"""The ``schema_version`` of a checkpoint's state (counters, todos, decisions)."""


def main_session_id(task_id: str) -> str:
    """The id of a task's main session: derived from the task's, so that a run rebuilt or
    started over from the store alone has the same one."""
    return _uuid5(f"{task_id}:main")


def _now() -> datetime:
    return datetime.now(UTC)


def _now_text() -> str:
    """Now, in UTC, in ISO 8601 as pydantic writes a record's timestamps (``...T12:00:00.
    123456Z``), at a fifth of the cost of ``datetime.now(UTC).isoformat()``: the seconds are
    formatted once a second (a step stamps three or four records)."""
    global _stamped_second, _second_text
    now = time.time()
    second = int(now)
    if second != _stamped_second:
        _second_text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _stamped_second = second
    micro = int((now - second) * 1_000_000)
    return f"{_second_text}.{micro:06d}Z" if micro else f"{_second_text}Z"


def _time_text(moment: datetime) -> str:
    """``moment`` as pydantic writes a record's timestamp."""
    return to_json(moment).decode()[1:-1]


_PREVIEWS_KEPT = 64
_stamped_second = -1
_second_text = ""


def _step_rows(
    session_id: str,
    messages: list[str],
    first_seq: int,
    checkpoint: str,
    ledger: Sequence[RecordFields],
    traces: Sequence[RecordFields],
) -> tuple[StepRow, ...]:
    """The rows of a step of ``session_id``: its own, then one for each other session whose
    records ride with it (a child's trace in its parent's step), in the order they appear."""
    own_ledger = [entry for entry in ledger if entry["session_id"] == session_id]
    own_traces = [trace for trace in traces if trace["session_id"] == session_id]
    row = StepRow(
        session_id,
        json_array(messages),
        len(messages),
        first_seq,
        checkpoint,
        dump_json(own_ledger) if own_ledger else None,
        dump_json(own_traces) if own_traces else None,
    )
    if len(own_ledger) == len(ledger) and len(own_traces) == len(traces):
        return (row,)
    others: dict[str | None, tuple[list[RecordFields], list[RecordFields]]] = {}
    for column, records in ((0, ledger), (1, traces)):
        for record in records:
            owner = record["session_id"]
            if owner != session_id:
                others.setdefault(owner, ([], []))[column].append(record)
    return (
        row,
        *(
            StepRow(
                owner,
                ledger=dump_json(entries) if entries else None,
                traces=dump_json(records) if records else None,
            )
            for owner, (entries, records) in others.items()
        ),
    )


class Recorder:
    """The bridge between a run's sessions and the store; one per task.

    The records of a step are built as plain fields (:data:`~subagents.store.records.
    RecordFields`), redacted as they are built, and encoded once into the rows the store
    appends (:class:`~subagents.store.steplog.EncodedStep`): nothing built here is validated
    again on the way in. Reading validates every record as its model."""

    __slots__ = ("_previews", "redactor", "store", "task")

    def __init__(self, store: Store, task: TaskRecord, redactor: Redactor) -> None:
        self.store = store
        self.task = task
        self.redactor = redactor
        # a call's arguments as its records show them: its ledger entries and its trace
        # record show the same, made once (by id: the arguments dict is kept with its preview)
        self._previews: dict[int, tuple[dict[str, Any], dict[str, Any], bool]] = {}

    @property
    def task_id(self) -> str:
        return self.task.id

    # -- writing -----------------------------------------------------------------------------

    def start_task(self) -> None:
        now = _now()
        self.task.status = "running"
        self.task.started_at = self.task.started_at or now
        self.task.updated_at = now
        self.task.prompt = self.redactor.text(self.task.prompt)
        self.task.description = self.redactor.text(self.task.description)
        self.store.create_task(self.task)

    def resume_task(self) -> None:
        self.task.status = "running"
        self.task.updated_at = _now()
        self.store.update_task(self.task)

    def finish_task(self, result: RunResult) -> None:
        task = self.task
        now = _now()
        task.status = task_status(result.status)
        task.result = self.redactor.text(result.output)
        task.error = self.redactor.text(result.error) if result.error else None
        task.updated_at = now
        task.completed_at = now if task.status in FINISHED_TASK_STATUSES else None
        self.store.update_task(task)

    def commit(
        self,
        snapshot: SessionSnapshot,
        position: str,
        *,
        traces: Sequence[RecordFields] = (),
        ledger: Sequence[RecordFields] = (),
        question: HumanQuestion | None = None,
        decisions: Sequence[DeliveredDecision] = (),
    ) -> int:
        """Commit what ``snapshot`` holds, with a checkpoint at ``position``; returns the
        checkpoint's sequence. ``decisions``: a person's, delivered in this step."""
        sequence = self.store.append(
            self.step_write(snapshot, position, traces, ledger, question, decisions)
        )
        assert sequence is not None
        return sequence

    def commit_in_group(
        self,
        snapshot: SessionSnapshot,
        position: str,
        committed: Callable[[int | None], None],
        *,
        traces: Sequence[RecordFields] = (),
        ledger: Sequence[RecordFields] = (),
        decisions: Sequence[DeliveredDecision] = (),
    ) -> Awaitable[None]:
        """:meth:`commit`, in one transaction with the steps other sessions commit in the
        same turn of the event loop (see :mod:`subagents.store.group`); ``committed`` gets
        the checkpoint's sequence as soon as it is written. The rows are built at once; the
        awaitable returned is the group's commit of them."""
        write = self.step_write(snapshot, position, traces, ledger, None, decisions)
        return commit_group(self.store).commit(write, committed)

    def step_write(
        self,
        snapshot: SessionSnapshot,
        position: str,
        traces: Sequence[RecordFields],
        ledger: Sequence[RecordFields],
        question: HumanQuestion | None,
        decisions: Sequence[DeliveredDecision],
    ) -> EncodedStep:
        """The rows of one step, redacted, with its checkpoint at ``position``."""
        session_id = snapshot.session_id
        task_id = self.task.id
        messages = [self._message_json(message) for message in snapshot.new_messages]
        state: dict[str, Any] = {
            "schema_version": STATE_VERSION,
            "message_count": snapshot.message_count,
            "turns": snapshot.turns,
            "run_turns": snapshot.run_turns,
            "tool_calls": snapshot.tool_calls,
            "usage": snapshot.usage,
            "status": snapshot.status,
            "checkpoint": snapshot.checkpoint_index,
        }
        value = self.redactor.value
        if snapshot.todos:
            state["todos"] = value(todos_to_state(snapshot.todos))
        if snapshot.own_budget:
            state["own_budget"] = snapshot.own_budget
        if snapshot.call_schema is not None:
            state["output_schema"] = snapshot.call_schema
        if snapshot.approved_again:
            state["approved_again"] = value([list(key) for key in snapshot.approved_again])
        if decisions:
            state["decisions"] = [self._decision(delivered) for delivered in decisions]
        checkpoint: RecordFields = {
            "schema_version": RECORD_SCHEMA_VERSION,
            "checkpoint_id": checkpoint_id(task_id, session_id, snapshot.checkpoint_index),
            "task_id": task_id,
            "session_id": session_id,
            "sequence": UNSET_SEQUENCE,  # here for the field order; the store's to set
            "position": position,
            "state": state,
            "awaiting_human": question is not None,
            "question": self._question(question) if question is not None else None,
            "created_at": _now_text(),
        }
        rows = _step_rows(
            session_id,
            messages,
            snapshot.first_message,
            checkpoint_text(checkpoint),
            ledger,
            traces,
        )
        # The session record changes rarely (its turns and usage are in every checkpoint):
        # write it with the first step, when the status changes, and at the end.
        session = None
        if snapshot.facts is not None:
            session = (
                session_id,
                task_id,
                dump_json(self.session_record(snapshot, snapshot.facts)),
            )
        return EncodedStep(task_id, None, session, rows)

    def _message_json(self, message: Message) -> str:
        data = message_to_dict(message)
        encoded = self.redactor.json(data)
        if encoded is None:  # a lone surrogate: the ASCII-escaping encoder keeps it
            encoded = dump_json(self.redactor.value(data))
        return encoded

    def session_record(self, snapshot: SessionSnapshot, facts: SessionFacts) -> RecordFields:
        return {
            "schema_version": RECORD_SCHEMA_VERSION,
            "session_id": snapshot.session_id,
            "task_id": self.task.id,
            "parent_session_id": facts.parent_id,
            "parent_tool_call_id": facts.parent_tool_call_id,
            "agent_name": facts.agent_type,
            "task_description": self.redactor.text(facts.description),
            "status": snapshot.status,
            "summary": self.redactor.text(facts.summary) if facts.summary else None,
            "model": facts.model_name,
            "tool_names": list(facts.tool_names),
            "system_prompt": self.redactor.text(facts.system_prompt),
            "depth": facts.depth,
            "max_turns": facts.max_turns,
            "turns": snapshot.turns,
            "tool_calls": snapshot.tool_calls,
            "usage": dict(snapshot.usage),
            "background": facts.background,
            "created_at": _time_text(facts.created_at),
            "updated_at": _now_text(),
        }

    def ledger_entry(
        self,
        session_id: str,
        call: ToolCall,
        tool: Tool,
        outcome: ToolOutcome | None = None,
        *,
        with_result: bool = True,
    ) -> RecordFields:
        """The ledger entry of ``call``: 'started' without ``outcome``; else its closing
        entry, holding the result unless ``with_result`` is false (it is committed with the
        tool result message)."""
        now = _now_text()
        status: LedgerStatus = "started"
        if outcome is not None:
            status = "failed" if outcome.message.is_error else "completed"
        return {
            "schema_version": RECORD_SCHEMA_VERSION,
            "task_id": self.task.id,
            "session_id": session_id,
            "tool_call_id": call.id,
            "tool_name": call.name,
            "arguments": self._arguments(call.arguments)[0],
            "status": status,
            "read_only": tool.read_only,
            "idempotent": tool.idempotent,
            "result": self.redactor.text(outcome.message.content)
            if outcome is not None and with_result
            else None,
            "is_error": outcome.message.is_error if outcome is not None else False,
            "started_at": now,
            "finished_at": now if outcome is not None else None,
        }

    def _arguments(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Redacted whole (a secret must not survive half cut), then previewed. The records
        that hold them are encoded and never changed, so they may share the call's own."""
        previews = self._previews
        known = previews.get(id(arguments))
        if known is not None and known[0] is arguments:
            return known[1], known[2]
        shown, cut = preview_arguments(self.redactor.shared_value(arguments))
        if len(previews) >= _PREVIEWS_KEPT:
            previews.clear()
        previews[id(arguments)] = (arguments, shown, cut)
        return shown, cut

    def _text(self, text: str) -> tuple[str, bool]:
        return preview_text(self.redactor.text(text))

    def _question(self, question: HumanQuestion) -> dict[str, Any]:
        data = question.to_dict()
        data["arguments"], data["arguments_preview"] = self._arguments(question.arguments)
        data["text"] = self.redactor.text(question.text)
        data["schema_version"] = QUESTION_VERSION
        data["wait_point"] = question.wait_point.to_dict()
        return data

    def _decision(self, delivered: DeliveredDecision) -> dict[str, Any]:
        """A decision as stored: redacted, its arguments (for modify) previewed too."""
        data = delivered.to_dict()
        data["reason"] = self.redactor.text(data["reason"]) if data["reason"] else None
        data["values"] = self.redactor.value(data["values"])
        if data["arguments"] is not None:
            data["arguments"], data["arguments_preview"] = self._arguments(data["arguments"])
        return data

    def write_ledger(self, entry: RecordFields) -> None:
        """One ledger change on its own: 'started' must be durable before the tool runs."""
        row = StepRow(entry["session_id"], ledger=dump_json([entry]))
        self.store.append(EncodedStep(self.task.id, None, None, (row,)))

    def write_ledger_in_group(self, entry: RecordFields) -> Awaitable[None]:
        """:meth:`write_ledger`, in one transaction with what other writers commit in the same
        turn of the event loop (the items of a workflow's map node starting together)."""
        row = StepRow(entry["session_id"], ledger=dump_json([entry]))
        step = EncodedStep(self.task.id, None, None, (row,))
        return commit_group(self.store).commit(step, _no_checkpoint)

    # -- trace records -----------------------------------------------------------------------

    def trace(
        self,
        session_id: str | None,
        agent: str | None,
        kind: TraceKind,
        step_name: str,
        message: str,
        data: dict[str, Any],
        *,
        status: TraceStatus = "info",
        duration_ms: float | None = None,
    ) -> RecordFields:
        """A trace record of this task; ``message`` and ``data`` as they are stored (the
        caller redacts what may hold a secret)."""
        return {
            "schema_version": RECORD_SCHEMA_VERSION,
            "task_id": self.task.id,
            "session_id": session_id,
            "kind": kind,
            "step_name": step_name,
            "message": message,
            "timestamp": _now_text(),
            "status": status,
            "agent": agent,
            "duration_ms": duration_ms,
            "data": data,
        }

    def model_trace(
        self, session: Session, response: ModelResponse, duration_ms: float
    ) -> RecordFields:
        usage = response.usage
        data = {
            "model": session.model.name,
            "turn": session.turns,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            **({"cache_read_tokens": usage.cache_read_tokens} if usage.cache_read_tokens else {}),
            **(
                {"cache_write_tokens": usage.cache_write_tokens} if usage.cache_write_tokens else {}
            ),
            "stop_reason": response.stop_reason,
            **({"usage_estimated": True} if response.usage_estimated else {}),
            **_provider_facts(response),
            **_text_calls_note(response),
        }
        return self.trace(
            session.agent_id,
            session.agent_type,
            "step",
            "model_call",
            _model_message(response),
            data,
            duration_ms=duration_ms,
        )

    def tool_trace(self, session: Session, call: ToolCall, outcome: ToolOutcome) -> RecordFields:
        failed = outcome.status != "ok"
        server = call.name.split("__")[1] if call.name.startswith("mcp__") else "builtin"
        ran_with = outcome.ran_with
        arguments, arguments_cut = self._arguments(call.arguments if ran_with is None else ran_with)
        # A result is stored once, in the tool result message (the trace view reads it there);
        # an error is kept here too (previewed), for the trace to say what went wrong.
        content, content_cut = self._text(outcome.message.content) if failed else ("", False)
        data = {
            "server": server,
            "tool": outcome.tool_name,
            "tool_call_id": call.id,
            "arguments": arguments,
            "arguments_preview": arguments_cut,
            "result": None,
            "result_in_message": not failed,
            "error": content if failed else None,
            "result_preview": content_cut,
            **self._repairs(call),
            **self._model_arguments(call, ran_with),
        }
        return self.trace(
            session.agent_id,
            session.agent_type,
            "tool_call",
            call.name,
            outcome.status,
            data,
            status=TRACE_STATUS_OF_OUTCOME[outcome.status],
            duration_ms=outcome.duration_ms,
        )

    def _model_arguments(self, call: ToolCall, ran_with: dict[str, Any] | None) -> dict[str, Any]:
        """For a call a person or an approver modified: what the model asked for (the trace's
        ``arguments`` are the ones that ran)."""
        if ran_with is None:
            return {}
        model_arguments, cut = self._arguments(call.arguments)
        return {"modified": True, "model_arguments": model_arguments, "model_arguments_cut": cut}

    def _repairs(self, call: ToolCall) -> dict[str, list[str]]:
        """``{"repairs": [...]}`` for a call that was repaired, redacted; else nothing."""
        if not call.repairs:
            return {}
        return {"repairs": [self.redactor.text(note) for note in call.repairs]}

    def wait_trace(self, session: Session, question: HumanQuestion) -> RecordFields:
        """The run waits for a person at the question's wait point."""
        data = {
            "question_kind": question.kind,
            "wait_point": question.wait_point.to_dict(),
            "tool_name": question.tool_name,
            "text": self.redactor.text(question.text),
        }
        return self.trace(
            session.agent_id, session.agent_type, "wait", "waiting", question.kind, data
        )

    def decision_trace(self, session: Session, delivered: DeliveredDecision) -> RecordFields:
        """A person's decision reached its wait point: what it was, and where."""
        data = self._decision(delivered)
        return self.trace(
            session.agent_id, session.agent_type, "wait", "decided", str(data["what"]), data
        )

    def todos_trace(self, session: Session) -> RecordFields:
        """TodoWrite replaced the session's list: the list itself, redacted."""
        data = {"todos": self.redactor.value(todos_to_state(session.todos))}
        return self.trace(
            session.agent_id,
            session.agent_type,
            "session",
            "todos_updated",
            todo_counts(session.todos),
            data,
        )

    def session_trace(self, session: Session, step_name: str, message: str) -> RecordFields:
        data = {
            "agent_id": session.agent_id,
            "parent_id": session.parent.agent_id if session.parent is not None else None,
            "message_count": len(session.messages),
            "status": session.status,
            "model": session.model.name,
        }
        return self.trace(
            session.agent_id,
            session.agent_type,
            "session",
            step_name,
            self.redactor.text(message),
            data,
            status=TRACE_STATUS_OF_SESSION[session.status],
        )

    def model_fallback_trace(self, session: Session, choice: ModelChoice) -> RecordFields:
        """A warning in ``session``'s trace: it runs on its parent's model, and why."""
        message = self.redactor.text(
            f"runs on {session.model.name} (its parent's model) instead of "
            f"{choice.requested}: {choice.fallback}; {choice.hint}"
        )
        data = {
            "requested": self.redactor.text(choice.requested or ""),
            "reason": choice.fallback,
            "model": session.model.name,
        }
        return self.trace(
            session.agent_id,
            session.agent_type,
            "session",
            MODEL_FALLBACK_STEP,
            message,
            data,
            status="warning",
        )

    # -- reading, for resume -------------------------------------------------------------------

    def find_session(self, session_id: str) -> SessionRecord | None:
        from subagents.errors import StoreError

        try:
            return self.store.get_session(session_id)
        except StoreError:
            return None

    def load_messages(self, session_id: str) -> list[Message]:
        return [message_from_dict(data) for data in self.store.messages(session_id)]

    def ledger_by_call(self, session_id: str) -> dict[str, ToolLedgerEntry]:
        return {e.tool_call_id: e for e in self.store.ledger(self.task.id, session_id)}

    def checkpoint_state(self, session_id: str) -> dict[str, Any]:
        checkpoint = self.store.latest_checkpoint(self.task.id, session_id)
        if checkpoint is None:
            return {}
        version = checkpoint.state.get("schema_version", 1)
        if not isinstance(version, int) or version > STATE_VERSION:
            raise StoreVersionError(
                f"the checkpoint of session {session_id} was written by a newer subagents "
                f"(state schema {version}; this one reads up to {STATE_VERSION})",
                hint=UPGRADE_ADVICE,
            )
        return dict(checkpoint.state)


def _no_checkpoint(sequence: int | None) -> None:
    """A ledger entry written in a group: no checkpoint to number."""


def _model_message(response: ModelResponse) -> str:
    if not response.tool_calls:
        return "answer"
    written = " written as text" if response.tool_calls_from_text is not None else ""
    return f"{len(response.tool_calls)} tool calls{written}"


def _provider_facts(response: ModelResponse) -> dict[str, str]:
    """What the provider said of its response (id, model, finish reason), when it did."""
    facts = {
        "response_id": response.response_id,
        "response_model": response.response_model,
        "finish_reason": response.finish_reason,
    }
    return {key: value for key, value in facts.items() if value}


def _text_calls_note(response: ModelResponse) -> dict[str, Any]:
    """The trace's mark on a response whose tool calls were read from its text."""
    note = response.tool_calls_from_text
    return {} if note is None else {"tool_calls_from_text": note}
