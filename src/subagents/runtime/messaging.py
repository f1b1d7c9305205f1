"""SendMessage and ListAgents: the agents of a run talk to each other, and a person to them.

One :class:`Messaging` belongs to one run, beside its
:class:`~subagents.runtime.delegation.Delegation`. A session may message its parent
(``to: "parent"``) and the subagents below it (by agent_id, or by agent type: the newest of
that type), never a sibling: a restricted agent cannot have a better-armed one act for it.
A person may message any agent of the task. The message is stored first
(:mod:`subagents.runtime.mail`), then delivered: to a running agent at its next step, to a
finished subagent by running it again, in the background, on the message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from subagents.errors import ToolError
from subagents.runtime.mail import (
    PERSON,
    Letter,
    letter_id,
    post,
    post_from_person,
    redacted,
)
from subagents.runtime.task_tools import input_schema_of
from subagents.tools.base import Tool, ToolContext
from subagents.tools.names import LIST_AGENTS_TOOL_NAME, SEND_MESSAGE_TOOL_NAME

if TYPE_CHECKING:
    from collections.abc import Iterable

    from subagents.runtime.delegation import Delegation, SubagentHandle
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.session import Session
    from subagents.store.records import SessionRecord

__all__ = ["ListAgentsInput", "Messaging", "SendMessageInput", "Sent"]

PARENT = "parent"


class SendMessageInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(
        description='Who gets it: "parent", or a subagent\'s agent_id, or its agent type '
        "(the newest agent of that type)."
    )
    message: str = Field(description="What to tell it.")


class ListAgentsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


SEND_DESCRIPTION = (
    "Send a message to another agent of this task: a subagent you started (running: it reads "
    "the message at its next step; finished: it continues in the background with it) or your "
    'parent (to="parent"). Use it to steer work in progress or to answer a question.'
)
LIST_DESCRIPTION = (
    "List the agents you can message: your subagents and your parent, with their agent_id, "
    "type, status and last activity."
)


@dataclass(frozen=True, slots=True)
class Sent:
    """A message as it went: the letter, its recipient's name, and what became of it."""

    letter: Letter
    recipient: str
    outcome: str  # "queued" (read at its next step) or "continued" (run again on it)


@dataclass(slots=True, eq=False)
class Messaging:
    """The messages of one run (see the module docstring)."""

    delegation: Delegation
    _tools: tuple[Tool, Tool] | None = None
    _handled: set[str] = field(default_factory=set)  # letters delivered by this process

    # -- the tools ---------------------------------------------------------------------------

    def tools(self) -> tuple[Tool, Tool]:
        if self._tools is None:
            self._tools = (
                Tool(
                    name=SEND_MESSAGE_TOOL_NAME,
                    description=SEND_DESCRIPTION,
                    parameters=input_schema_of(SendMessageInput),
                    function=self._send_tool,
                    input_model=SendMessageInput,
                    takes_context=True,
                    read_only=True,  # it changes no file; the recipient runs its own tools
                ),
                Tool(
                    name=LIST_AGENTS_TOOL_NAME,
                    description=LIST_DESCRIPTION,
                    parameters=input_schema_of(ListAgentsInput),
                    function=self._list_tool,
                    input_model=ListAgentsInput,
                    takes_context=True,
                    read_only=True,
                ),
            )
        return self._tools

    def enable_reply(self, session: Session) -> None:
        """Give ``session`` SendMessage, to answer its parent (a background subagent, or one
        a message reached), when it lacks it: its menu is built again."""
        if session.parent is None or session.tools.get(SEND_MESSAGE_TOOL_NAME) is not None:
            return
        definition = self.delegation.runtime.definition_named(session.agent_type)
        if definition is not None and SEND_MESSAGE_TOOL_NAME in definition.disallowed_tools:
            return
        session.tools.add(self.tools()[0])
        session.forget_menu()

    def offered_to(self, session: Session) -> bool:
        """Whether the session has someone to message now: a subagent of its own running in
        the background, or an agent that messaged it (it may answer)."""
        if session.corresponded:
            return True
        return any(
            handle.background and handle.running
            for handle in self.delegation.background_handles()
            if handle.parent is session
        )

    async def _send_tool(self, *, ctx: ToolContext, to: str, message: str) -> str:
        sender = _session_of(ctx)
        if not message.strip():
            raise ToolError("`message` is empty: write what the agent should know or do")
        sent = self.send(sender, to, message, key=ctx.tool_call_id)
        who = f"{sent.recipient} ({sent.letter.to})"
        if sent.outcome == "continued":
            return (
                f"Message sent. {who} had finished; it now continues in the background with "
                "your message, and you will be told when it finishes (TaskOutput waits for it)."
            )
        if sent.letter.to == (sender.parent.agent_id if sender.parent else None):
            return f"Message sent to your parent, {who}."
        return f"Message sent to {who}; it reads it at its next step."

    async def _list_tool(self, *, ctx: ToolContext) -> str:
        return self.listing(_session_of(ctx))

    # -- sending -------------------------------------------------------------------------------

    def send(self, sender: Session | None, to: str, text: str, *, key: str | None = None) -> Sent:
        """Send ``text`` from ``sender`` (``None``: a person) to the agent ``to`` names;
        stored, then delivered. ``key`` (the tool call's id) makes a repeated send the same
        message. Raises ToolError when ``to`` names nobody ``sender`` may message."""
        session, handle = self._recipient(sender, to)
        sender_id = PERSON if sender is None else sender.agent_id
        sender_name = PERSON if sender is None else sender.agent_type
        letter = Letter(letter_id(sender_id, key), sender_id, sender_name, session.agent_id, text)
        recorder = self._recorder()
        if recorder is not None:
            letter = redacted(letter, recorder.redactor)
            if not session.holds(letter.mark):  # sent again after a restart: stored already
                post(recorder.store, recorder.task_id, letter, session.agent_type)
                self._handled.add(letter.id)
        return self.deliver(letter, session, handle)

    def post_for_later(self, to: str, text: str) -> str:
        """Store a person's message to the agent ``to`` of this run, which has ended: a
        resume of its task delivers it. Returns the agent_id it goes to."""
        session, _ = self._recipient(None, to)
        recorder = self._recorder()
        assert recorder is not None
        store, task_id = recorder.store, recorder.task_id
        post_from_person(
            store, task_id, session.agent_id, session.agent_type, text, recorder.redactor
        )
        return session.agent_id

    def deliver(self, letter: Letter, session: Session, handle: SubagentHandle | None) -> Sent:
        """Put ``letter`` where ``session`` reads it, once."""
        self._handled.add(letter.id)
        if session.holds(letter.mark):
            return Sent(letter, session.agent_type, "queued")
        reply_to = self._reply_to(letter, session)
        if reply_to is not None:
            session.corresponded = True
            self.enable_reply(session)
        text = letter.rendered(reply_to)
        if handle is not None and not handle.running and handle.result is not None:
            self.delegation.continue_in_background(handle, text)
            return Sent(letter, session.agent_type, "continued")
        session.notify(text)
        return Sent(letter, session.agent_type, "queued")

    def _reply_to(self, letter: Letter, session: Session) -> str | None:
        """How ``session`` answers ``letter``'s sender with SendMessage, if it can."""
        if letter.sender == PERSON:
            return None
        if session.parent is not None and session.parent.agent_id == letter.sender:
            return PARENT
        return letter.sender

    def _recorder(self) -> Recorder | None:
        main = self.delegation.main
        return main.recorder if main is not None else None

    # -- whom a session may message --------------------------------------------------------------

    def _recipient(self, sender: Session | None, to: str) -> tuple[Session, SubagentHandle | None]:
        from subagents.definitions.validate import normalise_name

        wanted = to.strip()
        reachable = self._reachable(sender)
        if sender is not None and wanted.lower() == PARENT:
            if sender.parent is None:
                raise ToolError(
                    "you have no parent agent: you are the main agent; answer the user in your "
                    "reply instead"
                )
            parent = sender.parent
            return parent, self.delegation.handles.get(parent.agent_id)
        for session, handle in reachable:
            if session.agent_id == wanted:
                return session, handle
        by_type = [
            (session, handle)
            for session, handle in reachable
            if normalise_name(session.agent_type) == normalise_name(wanted)
        ]
        if by_type:
            return by_type[-1]  # the newest of that type
        stored = self._stored_below(sender)  # started before a restart, not met since
        chosen = [r for r in stored if r.session_id == wanted] or [
            r for r in stored if normalise_name(r.agent_name) == normalise_name(wanted)
        ]
        rebuilt = self.delegation.handle_of_stored(chosen[-1].session_id) if chosen else None
        if rebuilt is not None:
            return rebuilt.session, rebuilt
        if self.delegation.session_by_id(wanted) is not None:
            raise ToolError(
                f"you may not message agent {wanted}: only your parent and the subagents you "
                "started (and theirs); ListAgents shows them"
            )
        names = [f"{s.agent_id} ({s.agent_type})" for s, _ in reachable]
        if sender is not None and sender.parent is not None:
            names.insert(0, '"parent"')
        raise ToolError(
            f"no agent {wanted!r} to message; you can message: {', '.join(names) or 'nobody yet'}"
        )

    def _reachable(self, sender: Session | None) -> list[tuple[Session, SubagentHandle | None]]:
        """Whom ``sender`` may message besides its parent: the subagents below it (a person:
        every agent of the run), oldest first."""
        delegation = self.delegation
        found: list[tuple[Session, SubagentHandle | None]] = []
        if sender is None and delegation.main is not None:
            found.append((delegation.main, None))
        for handle in delegation.handles.values():
            if sender is None or _below(handle.session, sender):
                found.append((handle.session, handle))
        return found

    def listing(self, viewer: Session) -> str:
        """ListAgents' answer for ``viewer``."""
        lines = []
        now = time.monotonic()
        parent = viewer.parent
        if parent is not None:
            handle = self.delegation.handles.get(parent.agent_id)
            state = handle.status if handle is not None else "running"
            lines.append(f'- to="parent": {parent.agent_type} ({parent.agent_id}), {state}')
        for session, handle in self._reachable(viewer):
            assert handle is not None
            ago = f"{max(0, now - session.last_active):.0f}s ago"
            mode = "background" if handle.background else "foreground"
            task = " ".join(handle.description.split())[:80]
            lines.append(
                f"- {session.agent_id}: {session.agent_type}, {handle.status} ({mode}), "
                f'last active {ago}; task: "{task}"'
            )
        for record in self._stored_below(viewer):
            task = " ".join(record.task_description.split())[:80]
            lines.append(
                f"- {record.session_id}: {record.agent_name}, {record.status} (before the last "
                f'restart); task: "{task}"'
            )
        if not lines:
            return "You have no agents to message: no parent, and no subagents started yet."
        head = 'Agents you can message (SendMessage to= their agent_id, or "parent"):'
        return "\n".join([head, *lines])

    def _stored_below(self, sender: Session | None) -> list[SessionRecord]:
        """The subagents below ``sender`` (a person: every one) that the store holds and this
        process has not met: started before a restart. Oldest first."""
        recorder = self._recorder()
        if recorder is None:
            return []
        records = recorder.store.sessions(recorder.task_id)
        parents = {record.session_id: record.parent_session_id for record in records}
        known = set(self.delegation.handles)
        found = []
        for record in sorted(records, key=lambda r: r.created_at):
            if record.parent_session_id is None or record.session_id in known:
                continue
            if sender is None or _descends(record.session_id, sender.agent_id, parents):
                found.append(record)
        return found

    # -- mail stored by others, or before a restart ----------------------------------------------

    def deliver_stored(self, letters: Iterable[Letter]) -> None:
        """Deliver ``letters``, stored for this run's task and not in their recipients' stored
        histories (a restart came between sending and delivering, or a person sent them from
        another process), to the recipients that have not read them yet."""
        for letter in letters:
            if letter.id in self._handled:
                continue
            session, handle = self._stored_recipient(letter.to)
            if session is None:
                self._handled.add(letter.id)
            else:
                self.deliver(letter, session, handle)

    def _stored_recipient(self, agent_id: str) -> tuple[Session | None, SubagentHandle | None]:
        main = self.delegation.main
        if main is not None and main.agent_id == agent_id:
            return main, None
        handle = self.delegation.handle_of_stored(agent_id)
        return (handle.session, handle) if handle is not None else (None, None)


def _descends(session_id: str, ancestor_id: str, parents: dict[str, str | None]) -> bool:
    """Whether the stored session ``session_id`` is below ``ancestor_id``."""
    above = parents.get(session_id)
    seen = 0
    while above is not None and seen < len(parents):  # a damaged store could hold a cycle
        if above == ancestor_id:
            return True
        above, seen = parents.get(above), seen + 1
    return False


def _below(session: Session, ancestor: Session) -> bool:
    parent = session.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


def _session_of(ctx: ToolContext) -> Session:
    from subagents.runtime.session import Session

    session = ctx.session
    if not isinstance(session, Session):
        raise ToolError("SendMessage and ListAgents only work inside a subagents session")
    return session
