"""SessionSnapshot: what one checkpoint of a session stores, in plain values.

The recorder writes a snapshot, never the live session: :func:`snapshot_of` is the one place
that reads a session for the store, so a step that commits can be handed its input by an
engine in another process (see :mod:`subagents.runtime.steps`). The snapshot holds the
messages added since the session's last checkpoint, the counters a resume restores, and,
when the step writes the session's record, the rest of the record's fields (its facts).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from subagents.messages import Message, message_from_dict, message_to_dict
from subagents.todos import TodoItem, todos_from_state, todos_to_state

if TYPE_CHECKING:
    from subagents.runtime.session import Session
    from subagents.status import SessionStatus

__all__ = [
    "SNAPSHOT_VERSION",
    "SessionFacts",
    "SessionSnapshot",
    "checkpoint_id",
    "facts_of",
    "snapshot_of",
]

SNAPSHOT_VERSION = 2
"""The ``schema_version`` of a snapshot's dict: 2 nests the session's facts (version 1 carried
them flat in every snapshot; :meth:`SessionSnapshot.from_dict` reads both)."""


def checkpoint_id(task_id: str, session_id: str, index: int) -> str:
    """The id of a session's ``index``-th checkpoint: derived, so a replay writes the same.

    Session ids are unique across tasks (a main session's derives from its task, a child's
    from its parent and the call that started it), so the session and the index suffice; a
    hash of them would cost 10 µs on every step for nothing. ``task_id`` is accepted so that
    callers need not know this.
    """
    del task_id
    return f"{session_id}:{index}"


@dataclass(slots=True)
class SessionFacts:
    """What a session's record says besides its counters: who the session is and how it was
    set up. A snapshot carries them only when the record is written (the session's first
    step, a change of status, its end); they barely change, and gathering them every step
    would cost every step."""

    agent_type: str
    parent_id: str | None
    parent_tool_call_id: str | None
    description: str
    summary: str | None
    model_name: str
    tool_names: tuple[str, ...]
    system_prompt: str
    depth: int
    max_turns: int
    background: bool
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["tool_names"] = list(self.tool_names)
        data["created_at"] = self.created_at.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionFacts:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["tool_names"] = tuple(data.get("tool_names", ()))
        known["created_at"] = datetime.fromisoformat(data["created_at"])
        return cls(**known)


@dataclass(slots=True)
class SessionSnapshot:
    """One session as a checkpoint stores it (see the module docstring); not to be changed
    once made (not frozen: one is made per step, and frozen dataclasses are slow to build).

    ``first_message`` is the sequence number of ``new_messages[0]``; ``checkpoint_index``
    counts the session's checkpoints, from 0, and derives the checkpoint's id; ``facts``
    are there when the step writes the session's record too.
    """

    session_id: str
    status: SessionStatus
    first_message: int
    new_messages: tuple[Message, ...]
    turns: int
    run_turns: int
    tool_calls: int
    usage: dict[str, int]
    todos: tuple[TodoItem, ...]
    checkpoint_index: int
    approved_again: tuple[tuple[str, str], ...]
    facts: SessionFacts | None
    own_budget: dict[str, object] | None = None
    """A subagent's own budget limits (``Limits.to_state``), kept for its rebuild."""
    call_schema: dict[str, Any] | None = None
    """The outputSchema its Task call gave it (not its file's), kept for its rebuild."""
    schema_version: int = SNAPSHOT_VERSION

    @property
    def message_count(self) -> int:
        return self.first_message + len(self.new_messages)

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["status"] = str(self.status)
        data["new_messages"] = [message_to_dict(message) for message in self.new_messages]
        data["todos"] = todos_to_state(self.todos)
        data["usage"] = dict(self.usage)
        data["approved_again"] = [list(key) for key in self.approved_again]
        data["facts"] = self.facts.to_dict() if self.facts is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionSnapshot:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["new_messages"] = tuple(message_from_dict(m) for m in data["new_messages"])
        known["todos"] = todos_from_state(data.get("todos"))
        known["usage"] = dict(data.get("usage", {}))
        known["approved_again"] = tuple(
            (str(name), str(form)) for name, form in data.get("approved_again", ())
        )
        known["facts"] = _facts_of(data)
        known["schema_version"] = SNAPSHOT_VERSION
        return cls(**known)


def _facts_of(data: dict[str, Any]) -> SessionFacts | None:
    """The facts of a snapshot's dict: nested since version 2; every snapshot of version 1
    carried them flat, with ``write_record`` saying whether the record was to be written."""
    if data.get("schema_version", 1) >= 2:
        facts = data.get("facts")
        return SessionFacts.from_dict(facts) if facts is not None else None
    return SessionFacts.from_dict(data) if data.get("write_record") else None


def snapshot_of(session: Session, position: str, upto: int | None = None) -> SessionSnapshot:
    """What ``session``'s next checkpoint, at ``position``, stores: its messages not stored
    yet (those before ``upto``, when given). The session's facts ride along with its first
    checkpoint, when its status changes, and when it finishes."""
    messages = session.messages if upto is None else session.messages[:upto]
    first = session.persisted_messages
    usage = session.usage
    facts = None
    if session.recorded_status != session.status or position == "finished":
        facts = facts_of(session)
    return SessionSnapshot(
        session_id=session.agent_id,
        status=session.status,
        first_message=first,
        new_messages=tuple(messages[first:]) if first < len(messages) else (),
        turns=session.turns,
        run_turns=session.run_turns,
        tool_calls=session.tool_call_count,
        usage={
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "requests": usage.requests,
        },
        todos=session.todos,
        checkpoint_index=session.checkpoints,
        approved_again=tuple(sorted(session.approved_again)) if session.approved_again else (),
        facts=facts,
        own_budget=session.own_budget.limits.to_state() if session.own_budget else None,
        call_schema=session.call_schema,
    )


def facts_of(session: Session) -> SessionFacts:
    parent = session.parent
    return SessionFacts(
        agent_type=session.agent_type,
        parent_id=parent.agent_id if parent is not None else None,
        parent_tool_call_id=session.parent_tool_call_id,
        description=session.description,
        summary=session.summary,
        model_name=session.model.name,
        tool_names=tuple(session.tools.names()),
        system_prompt=session.system_prompt,
        depth=session.depth,
        max_turns=session.max_turns,
        background=session.background,
        created_at=session.created_at,
    )
