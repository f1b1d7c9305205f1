"""Messages between the agents of a task, and from a person to them (SendMessage,
``subagents send``, the chat's ``@agent-id``).

A message is stored before it is delivered: a trace record of its recipient's session
(``message_sent``), written on its own. It is delivered as a user message at the recipient's
next step, marked with its id; it is *delivered* exactly when the recipient's history holds
that mark. So after a crash the store tells which messages still wait (:func:`undelivered`), and
a message sent again (a tool call run again after a restart) is not delivered twice.

A process running a task learns of a message another process stored (a person's ``subagents
send``) from a counter in the store's ``meta`` table (:func:`mail_key`), which it reads
every :data:`POLL_SECONDS`: one row, not the task's traces.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from subagents.redaction import Redactor
    from subagents.store.base import Store
    from subagents.store.records import SessionRecord, TraceRecord

__all__ = [
    "MESSAGE_SENT_STEP",
    "PERSON",
    "POLL_SECONDS",
    "Letter",
    "letter_id",
    "letters_in",
    "mail_key",
    "not_in_store",
    "post",
    "post_from_person",
    "recipient",
    "redacted",
    "stored_letters",
    "undelivered",
]

MESSAGE_SENT_STEP = "message_sent"
PERSON = "person"  # the sender id of a message from a person (CLI, chat)
POLL_SECONDS = 1.0
_NAMESPACE = uuid.UUID("5b0f2a52-8a3c-4c55-9a3e-8e0a3c5d7f10")


@dataclass(frozen=True, slots=True)
class Letter:
    """One message: its id, who sent it (an agent id, or :data:`PERSON`) under which name,
    to which session, and its text (redacted, as stored)."""

    id: str
    sender: str
    sender_name: str
    to: str
    text: str

    @property
    def mark(self) -> str:
        """What marks it in its recipient's history: present once it is delivered."""
        return f'<agent-message id="{self.id}"'

    def rendered(self, reply_to: str | None) -> str:
        """The user message its recipient gets (``reply_to``: how it can answer, if it can)."""
        who = "a person" if self.sender == PERSON else f"{self.sender_name} ({self.sender})"
        reply = (
            f'\nTo answer, call SendMessage with to="{reply_to}"; otherwise go on with your work, '
            "taking this into account."
            if reply_to
            else "\nGo on with your work, taking this into account."
        )
        return f'{self.mark} from="{who}">\n{self.text}\n</agent-message>{reply}'


def letter_id(sender: str, key: str | None = None) -> str:
    """A message's id: derived from the sender and ``key`` (its tool call's id), so that a
    call run again after a restart sends the same message, or new when there is no key."""
    if key is None:
        return f"msg-{uuid.uuid4().hex[:16]}"
    return f"msg-{uuid.uuid5(_NAMESPACE, f'{sender}/{key}').hex[:16]}"


def mail_key(task_id: str) -> str:
    """The ``meta`` key that changes each time a message to ``task_id`` is stored."""
    return f"mail.{task_id}"


def post(store: Store, task_id: str, letter: Letter, recipient_name: str) -> None:
    """Store ``letter`` (already redacted) as a trace record of its recipient, and tell
    whoever runs the task that mail came (:func:`mail_key`)."""
    from subagents.store.base import StepWrite
    from subagents.store.records import TraceRecord

    record = TraceRecord(
        task_id=task_id,
        session_id=letter.to,
        kind="session",
        step_name=MESSAGE_SENT_STEP,
        message=f"message from {letter.sender_name}",
        agent=recipient_name,
        data={
            "message_id": letter.id,
            "from": letter.sender,
            "from_name": letter.sender_name,
            "to": letter.to,
            "text": letter.text,
        },
    )
    with store.transaction() as tx:
        store.commit(StepWrite(task_id, traces=[record]), tx=tx)
    store.set_meta(mail_key(task_id), letter.id)


def redacted(letter: Letter, redactor: Redactor) -> Letter:
    """``letter`` with the secrets of its text replaced, as it may be stored."""
    text = redactor.text(letter.text)
    return letter if text == letter.text else replace(letter, text=text)


def post_from_person(
    store: Store, task_id: str, to: str, to_name: str, text: str, redactor: Redactor
) -> Letter:
    """Store a person's message ``text`` to the session ``to`` (its agent ``to_name``) of
    ``task_id``, redacted (see :func:`post`); the letter as stored."""
    letter = redacted(Letter(letter_id(PERSON), PERSON, PERSON, to, text), redactor)
    post(store, task_id, letter, to_name)
    return letter


def stored_letters(store: Store, task_id: str) -> list[Letter]:
    """Every message stored for ``task_id``, oldest first, each once."""
    return letters_in(store.traces(task_id))


def letters_in(traces: Iterable[TraceRecord]) -> list[Letter]:
    """The messages among a task's trace records, oldest first, each once."""
    letters: dict[str, Letter] = {}
    for trace in traces:
        if trace.step_name != MESSAGE_SENT_STEP or trace.kind != "session":
            continue
        data = trace.data
        letter = Letter(
            id=str(data.get("message_id", "")),
            sender=str(data.get("from", "")),
            sender_name=str(data.get("from_name", "")),
            to=str(data.get("to", "")),
            text=str(data.get("text", "")),
        )
        if letter.id and letter.to:
            letters.setdefault(letter.id, letter)
    return list(letters.values())


def recipient(sessions: Sequence[SessionRecord], to: str) -> SessionRecord:
    """The session of a task that a person names with ``to``: its id, the start of its id
    (8 characters or more), ``main``, or its agent type (the newest of that type). Raises
    :class:`~subagents.errors.SubagentsError` naming the agents when ``to`` names none."""
    from subagents.definitions.validate import normalise_name
    from subagents.errors import SubagentsError

    wanted = to.strip()
    if wanted.lower() == "main":
        found = [s for s in sessions if s.parent_session_id is None]
    else:
        found = [s for s in sessions if s.session_id == wanted]
    if not found and len(wanted) >= 8:
        found = [s for s in sessions if s.session_id.startswith(wanted)]
    if not found:
        named = [s for s in sessions if normalise_name(s.agent_name) == normalise_name(wanted)]
        found = sorted(named, key=lambda s: s.created_at)[-1:]
    if len(found) == 1:
        return found[0]
    agents = ", ".join(f"{s.session_id[:8]} ({s.agent_name})" for s in sessions) or "none yet"
    what = "names more than one agent" if found else "names no agent of this task"
    raise SubagentsError(
        f"{to!r} {what}; its agents: {agents}",
        hint="name the agent by its id (or the start of it), its type, or 'main'; "
        "'subagents tasks show TASK' lists them",
    )


def undelivered(store: Store, task_id: str) -> list[Letter]:
    """The messages stored for ``task_id`` that their recipient's stored history does not
    hold yet (one look at the store's mail counter when none was ever sent)."""
    if store.get_meta(mail_key(task_id)) is None:
        return []
    return not_in_store(store, stored_letters(store, task_id))


def not_in_store(store: Store, letters: Iterable[Letter]) -> list[Letter]:
    """The ``letters`` their recipient's stored history does not hold (each recipient's
    history read once)."""
    histories: dict[str, str] = {}
    waiting = []
    for letter in letters:
        held = histories.get(letter.to)
        if held is None:
            held = histories[letter.to] = "\n".join(
                str(message.get("content", "")) for message in store.messages(letter.to)
            )
        if letter.mark not in held:
            waiting.append(letter)
    return waiting
