"""The questions a run's background agents wait on a person for, while the rest goes on.

In a durable run with nobody at the terminal, a tool call that needs approval (or an
``AskHuman`` call, or a crash-recovery question) used to pause the whole run. An agent running
in the background (a background subagent, or one below it) now waits alone: its question is
stored (an ``awaiting_human`` checkpoint of its session, and a ``wait`` trace record), listed by
``subagents inbox`` and :meth:`Runtime.pending_questions`, and answered in any order, from
this process (:meth:`Runtime.answer`) or another (``subagents inbox TASK KEY``, which stores
the decision: :func:`post_decision`). The other agents go on. Only when nothing is left that
could go on (every running agent waits for a person or for its subagents, and the main agent
for its background work) does the run pause as before, naming one of the questions.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from subagents.runtime.mail import mail_key
from subagents.runtime.pause import DeliveredDecision

if TYPE_CHECKING:
    from collections.abc import Iterable

    from subagents.runtime.pause import HumanDecision, HumanQuestion, WaitPoint
    from subagents.store.base import Store
    from subagents.store.records import TraceRecord

__all__ = [
    "DECISION_POSTED_STEP",
    "Inbox",
    "decisions_in",
    "post_decision",
    "posted_decisions",
    "waiting_questions",
]

DECISION_POSTED_STEP = "decision_posted"


@dataclass(slots=True, eq=False)
class Inbox:
    """The questions of one run that wait for a person, each with the future its asker
    awaits."""

    _waiting: dict[WaitPoint, tuple[HumanQuestion, asyncio.Future[HumanDecision]]] = field(
        default_factory=dict
    )
    _changed: asyncio.Event | None = None

    def pending(self) -> list[HumanQuestion]:
        """The questions waiting, oldest first."""
        return [question for question, _ in self._waiting.values()]

    async def wait(self, question: HumanQuestion) -> HumanDecision:
        """Wait for a person's answer to ``question``."""
        future: asyncio.Future[HumanDecision] = asyncio.get_running_loop().create_future()
        point = question.wait_point
        self._waiting[point] = (question, future)
        self._poke()
        try:
            return await future
        finally:
            self._waiting.pop(point, None)
            self._poke()

    def answer(self, point: WaitPoint, decision: HumanDecision) -> bool:
        """Hand ``decision`` to the agent waiting at ``point``: False when none waits there."""
        waiting = self._waiting.get(point)
        if waiting is None or waiting[1].done():
            return False
        waiting[1].set_result(decision)
        return True

    def find(self, key: str) -> WaitPoint | None:
        """The wait point of the waiting question ``key`` names (its tool call's id, or the
        start of it)."""
        wanted = key.strip()
        points = [p for p in self._waiting if p.key == wanted] or [
            p for p in self._waiting if wanted and p.key.startswith(wanted)
        ]
        return points[0] if len(points) == 1 else None

    async def changed(self) -> None:
        """Wait until a question comes or goes."""
        if self._changed is None:
            self._changed = asyncio.Event()
        self._changed.clear()
        await self._changed.wait()

    def _poke(self) -> None:
        if self._changed is not None:
            self._changed.set()


def post_decision(store: Store, delivered: DeliveredDecision) -> None:
    """Store a person's decision for the wait point of ``delivered`` (answered from another
    process than the one running the task, or while none runs it): the running process hands
    it over at its next look at the store, a resumed run when it gets there."""
    from subagents.store.base import StepWrite
    from subagents.store.records import TraceRecord

    point = delivered.wait_point
    record = TraceRecord(
        task_id=point.task_id,
        session_id=point.session_id,
        kind="wait",
        step_name=DECISION_POSTED_STEP,
        message=f"a person answered: {delivered.decision.what(delivered.tool_name)}",
        data=delivered.to_dict(),
    )
    with store.transaction() as tx:
        store.commit(StepWrite(point.task_id, traces=[record]), tx=tx)
    store.set_meta(mail_key(point.task_id), f"decision-{uuid.uuid4().hex[:16]}")


def posted_decisions(store: Store, task_id: str) -> list[DeliveredDecision]:
    """The decisions people stored for ``task_id``, oldest first (a later one for the same
    wait point replaces an earlier one)."""
    return decisions_in(store.traces(task_id))


def decisions_in(traces: Iterable[TraceRecord]) -> list[DeliveredDecision]:
    """The decisions people stored, among a task's trace records (see
    :func:`posted_decisions`)."""
    found: dict[WaitPoint, DeliveredDecision] = {}
    for trace in traces:
        if trace.step_name == DECISION_POSTED_STEP and trace.kind == "wait":
            try:
                delivered = DeliveredDecision.from_dict(trace.data)
            except (KeyError, TypeError, ValueError):
                continue  # not one this version can read: the person answers again
            found.pop(delivered.wait_point, None)
            found[delivered.wait_point] = delivered
    return list(found.values())


def waiting_questions(store: Store, task_id: str, *, answered: bool = False) -> list[HumanQuestion]:
    """What the agents of stored task ``task_id`` wait for a person to answer and nobody has
    answered yet (``answered``: those somebody answered, not yet handed over): the question
    of each session whose latest checkpoint waits, oldest first."""
    from subagents.runtime.pause import HumanQuestion

    posted = {delivered.wait_point for delivered in posted_decisions(store, task_id)}
    found: dict[WaitPoint, HumanQuestion] = {}
    for session in store.sessions(task_id):
        if session.status != "awaiting_human":
            continue
        checkpoint = store.latest_checkpoint(task_id, session.session_id)
        if checkpoint is None or checkpoint.question is None:
            continue
        question = HumanQuestion.from_dict(checkpoint.question)
        point = question.wait_point
        if (point in posted) == answered and question.kind != "budget":
            found.setdefault(point, question)
    return list(found.values())
