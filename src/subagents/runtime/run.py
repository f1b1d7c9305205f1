"""Run: one run of a :class:`~subagents.runtime.runtime.Runtime`, from prompt to result.

A :class:`Run` owns everything that belongs to that one run and to no other: its delegation
(the subagents it starts), the person's decisions that resume it, the re-asked calls of an
imported task, its recorder and its result. The runtime it comes from holds configuration
only (config, inventory, models, tools), so any number of runs may go on at once on one
runtime without seeing each other's state.

A run is also what its sessions ask for what they cannot know alone: it is their
:class:`~subagents.runtime.context.RunContext`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from subagents.errors import SubagentsError
from subagents.messages import Usage
from subagents.runtime.agent_hooks import with_stop_hooks
from subagents.runtime.assembly import SessionBuilder
from subagents.runtime.budget import (
    Budget,
    Limits,
    budget_setting,
    call_cost,
    check_priced,
    restored_budget,
    run_limits,
)
from subagents.runtime.delegation import Delegation
from subagents.runtime.mentions import with_mentions
from subagents.runtime.pause import RunPaused
from subagents.runtime.recorder import Recorder, main_session_id
from subagents.runtime.result import RunResult, RunStatus
from subagents.runtime.tool_menu import description_profile
from subagents.store.lease import LeaseKeeper
from subagents.store.records import TaskRecord, new_id
from subagents.tools.names import TASK_TOOL_NAME

if TYPE_CHECKING:
    from subagents.models.prices import ModelPrice
    from subagents.runtime.pause import (
        DeliveredDecision,
        HumanDecision,
        HumanQuestion,
        WaitPoint,
    )
    from subagents.runtime.permissions import RuleArguments
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.services import Services
    from subagents.runtime.session import Session
    from subagents.runtime.tool_call import InterruptedPolicy
    from subagents.runtime.tool_menu import DescriptionProfile
    from subagents.store.records import SessionRecord

__all__ = ["Run", "check_delegation", "handed_to", "task_description"]


class Run:
    """One run: its delegation, decisions, recorder and result (see the module docstring)."""

    __slots__ = (
        "_budget",
        "_handed_over",
        "_priced_models",
        "_prices",
        "_profiles",
        "_seen_mail",
        "_watcher",
        "builder",
        "decisions",
        "delegation",
        "reask_calls",
        "recorder",
        "result",
        "runtime",
        "usage_by_model",
    )

    def __init__(
        self,
        runtime: Services,
        *,
        decisions: dict[WaitPoint, HumanDecision] | None = None,
        reask_calls: frozenset[str] = frozenset(),
        delegation: Delegation | None = None,
        rule_arguments: RuleArguments | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.runtime = runtime
        # the person's decision that resumes a paused run, by where it waits; handed out once
        self.decisions: dict[WaitPoint, HumanDecision] = dict(decisions or {})
        # calls that were pending when the task was imported: they ask a person before running
        self.reask_calls = reask_calls
        self.delegation = delegation if delegation is not None else Delegation(runtime)
        # rule_arguments: allowed_tools / disallowed_tools of a resumed task, with its own
        self.builder = SessionBuilder(runtime, self.delegation, self, rule_arguments)
        self.delegation.builder = self.builder
        self.recorder: Recorder | None = None
        self.result: RunResult | None = None
        self._profiles: dict[str, DescriptionProfile] = {}
        # a workflow's agent nodes share the workflow's budget
        self._budget = budget if budget is not None else Budget(run_limits(runtime))
        self._prices: Mapping[str, ModelPrice] | None = None
        self._priced_models: set[str] = set()  # models check_priced found a price for
        # what this run's calls used, by model (RunResult.usage_by_model)
        self.usage_by_model: dict[str, Usage] = {}
        self._seen_mail: str | None = None  # the store's mail counter as this run last read it
        self._handed_over: set[WaitPoint] = set()  # stored decisions this run handed over
        self._watcher: asyncio.Task[None] | None = None  # see keep_watch

    @property
    def main(self) -> Session | None:
        return self.delegation.main

    # -- starting and resuming ---------------------------------------------------------------

    async def start(
        self,
        prompt: str,
        *,
        agent: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        retention_days: int | None = None,
        task_id: str | None = None,
        delegate_to: str | None = None,
    ) -> RunResult:
        """Run ``prompt`` with the main agent (or the agent ``agent``) to the end
        (``delegate_to``: see :func:`handed_to`)."""
        runtime = self.runtime
        store = runtime.store
        new_task = store is not None and task_id is None
        if new_task:
            task_id = new_id()  # a root: the ids below it derive from it
        session = self.builder.main(
            agent, agent_id=main_session_id(task_id) if task_id is not None else None
        )
        if new_task:
            self.delegation.new_in_store(session)
        if delegate_to is not None:
            check_delegation(session, delegate_to)
        if store is not None:
            task = TaskRecord(
                description=task_description(description, prompt),
                prompt=prompt,
                assigned_agent=agent,
                model=session.model.name,
                workspace=str(runtime.workspace),
                tags=list(tags),
                retention_days=retention_days,
                settings=runtime.permissions.task_settings() | budget_setting(self._budget.limits),
            )
            recorder = self.recorder = Recorder(store, task, runtime.redactor())
            if task_id is not None:
                recorder.task.id = task_id
            session.recorder = recorder
            with store.transaction():  # the task and its lease land together: one commit
                recorder.start_task()
                store.claim_task(recorder.task_id, runtime.owner)
        if delegate_to is None:
            # a restart before its first checkpoint starts it over on the task's prompt
            session.opening_replayed = True
        work = handed_to(session, prompt, delegate_to) if delegate_to else _run(session, prompt)
        return await self._drive(session, with_stop_hooks(session, work))

    async def resume(self, recorder: Recorder, *, ended: bool) -> RunResult:
        """Continue the task of ``recorder``, claimed by this process, where it stopped
        (``ended``: it failed or was cancelled, and gets a fresh turn budget)."""
        self.recorder = recorder
        store, task = recorder.store, recorder.task
        sessions = store.sessions(task.id)
        main_record = next((r for r in sessions if r.parent_session_id is None), None)
        self._restore_budget(task, sessions)
        recorder.resume_task()
        if main_record is None:  # stopped before the first step was written: start over
            session = self.builder.main(task.assigned_agent, agent_id=main_session_id(task.id))
            session.recorder = recorder
            return await self._drive(session, with_stop_hooks(session, _run(session, task.prompt)))
        session = self.builder.rebuilt(main_record, None, recorder)
        self.delegation.main = session
        self.delegation.adopt_background(session)
        self.take_what_people_sent()
        if ended:  # a failed run gets a fresh turn budget, and is told how it ended
            session.run_turns = 0
            session.note_failure(task.error or task.status)
        return await self._drive(session, with_stop_hooks(session, session.resume()))

    async def follow_up(
        self, recorder: Recorder, prompt: str, *, delegate_to: str | None = None
    ) -> RunResult:
        """Continue the finished conversation of ``recorder``'s task (claimed by this process)
        with ``prompt``: its main session, rebuilt with the whole history, gets one more
        user message and a fresh turn budget (``delegate_to``: see :func:`handed_to`)."""
        self.recorder = recorder
        store, task = recorder.store, recorder.task
        sessions = store.sessions(task.id)
        main_record = next((r for r in sessions if r.parent_session_id is None), None)
        self._restore_budget(task, sessions)
        if main_record is None:  # it never got to its first step: start it with this prompt
            session = self.builder.main(task.assigned_agent, agent_id=main_session_id(task.id))
        else:
            session = self.builder.rebuilt(main_record, None, recorder)
            self.delegation.main = session
            self.delegation.adopt_background(session)
            self.take_what_people_sent()
        if delegate_to is not None:
            try:
                check_delegation(session, delegate_to)
            except SubagentsError:
                store.release_task(task.id, self.runtime.owner)  # nothing ran: give it back
                raise
        recorder.resume_task()
        session.recorder = recorder
        session.run_turns = 0
        work = handed_to(session, prompt, delegate_to) if delegate_to else _run(session, prompt)
        return await self._drive(session, with_stop_hooks(session, work))

    def _restore_budget(self, task: TaskRecord, sessions: Sequence[SessionRecord]) -> None:
        self._budget = restored_budget(task, sessions, self.runtime)

    async def step(
        self,
        recorder: Recorder,
        agent: str,
        prompt: str,
        agent_id: str,
        *,
        schema: dict[str, Any] | None = None,
    ) -> RunResult:
        """Run ``agent`` on ``prompt`` as one step of the task ``recorder`` writes, in the
        session ``agent_id`` (a workflow's agent node, or one item of a map node, whose
        ``schema`` its answer must match). A session of that id already in the store (a crash,
        a pause) is rebuilt and continued, not started again. The task stays the caller's: it
        is neither finished nor released here."""
        self.recorder = recorder
        record = recorder.find_session(agent_id)
        if record is None:
            session = self.builder.main(agent, agent_id=agent_id, node=True)
            session.recorder = recorder
            if schema is not None:
                from subagents.runtime.assembly import hold_to_schema

                hold_to_schema(session, schema)
            work = session.run(prompt)
        else:
            session = self.builder.rebuilt(record, None, recorder, agent=agent)
            self.delegation.main = session
            self.delegation.adopt_background(session)
            if record.status in ("error", "cancelled"):  # a failed step gets a fresh budget
                session.run_turns = 0
                session.note_failure(record.status)
            work = session.resume()
        return await self._drive(session, with_stop_hooks(session, work), owns_task=False)

    async def _drive(
        self, session: Session, work: Awaitable[RunResult], *, owns_task: bool = True
    ) -> RunResult:
        result: RunResult | None = None
        stopped: RunResult | None = None  # what the task records when the run is cancelled
        recorder = self.recorder if owns_task else None
        keeper = None
        if recorder is not None:  # renews the task's lease while it runs
            keeper = LeaseKeeper(recorder.store, recorder.task_id, self.runtime.owner)
            keeper.start()
        if recorder is not None:  # else when a subagent goes to the background
            self.keep_watch()
        try:
            try:
                result = await work
            except RunPaused as pause:
                result = _unfinished(
                    session,
                    "awaiting_human",
                    pause.question.reason(),
                    pause.question,
                )
            except asyncio.CancelledError:
                # stopped on purpose (Ctrl-C, a UI's stop): the task says so, not "running"
                # as after a crash; 'subagents resume' continues it all the same. A runtime
                # handing its runs over (a worker shutting down) leaves them "running".
                if not self.runtime.handing_over:
                    stopped = _unfinished(session, "cancelled", "stopped before it finished")
                raise
        finally:
            watcher, self._watcher = self._watcher, None
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            self.decisions.clear()
            try:
                await self.delegation.close()
            finally:
                if result is not None:
                    result.subagents = tuple(self.delegation.spawn_results)
                    result.usage_by_model = self.usage_by_model
                if recorder is not None:
                    if keeper is not None:
                        await keeper.stop()
                    # the outcome and the release land together, so that a resumer never
                    # finds the task free but still marked running
                    with recorder.store.transaction():
                        if result is not None:
                            result.task_id = recorder.task_id
                            recorder.finish_task(result)
                        elif stopped is not None:
                            recorder.finish_task(stopped)
                        recorder.store.release_task(recorder.task_id, self.runtime.owner)
        self.result = result
        return result

    # -- RunContext: what a session asks of its run ------------------------------------------

    @property
    def pending_decisions(self) -> bool:
        return bool(self.decisions)

    def take_decision(self, wait_point: WaitPoint) -> HumanDecision | None:
        if not self.decisions:
            return None
        return self.decisions.pop(wait_point, None)

    def must_ask_again(self, tool_call_id: str) -> bool:
        return tool_call_id in self.reask_calls

    @property
    def budget(self) -> Budget:
        return self._budget

    def room(self) -> Limits:
        return Limits(self._budget.left(), self._budget.left_usd())

    def spend(self, agent: str, model: str, usage: Usage, cost: Decimal | None) -> None:
        self._budget.charge(agent, usage, cost)
        self.usage_by_model.setdefault(model, Usage()).add(usage)

    def call_cost(self, model: str, usage: Usage) -> Decimal:
        return call_cost(model, usage, self._model_prices())

    def check_priced(self, model: str) -> None:
        if model not in self._priced_models:  # asked before every call: look it up once
            check_priced(model, self._model_prices())
            self._priced_models.add(model)

    def _model_prices(self) -> Mapping[str, ModelPrice]:
        if self._prices is None:
            self._prices = self.runtime.config.model_prices()
        return self._prices

    @property
    def interrupted_tool_calls(self) -> InterruptedPolicy:
        return self.runtime.config.subagents.interrupted_tool_calls

    @property
    def max_repeated_failures(self) -> int:
        return self.runtime.config.subagents.max_repeated_failures

    def description_profile(self, model_name: str) -> DescriptionProfile:
        profile = self._profiles.get(model_name)  # asked once by each session: 500 in a fan-out
        if profile is None:
            providers = self.runtime.config.providers
            profile = self._profiles[model_name] = description_profile(model_name, providers)
        return profile

    def has_background(self, session_id: str) -> bool:
        return self.delegation.has_background(session_id)

    async def settle_background(self, session_id: str) -> bool:
        return await self.delegation.settle_background(session_id)

    def waits_alone(self, session_id: str) -> bool:
        return self.recorder is not None and self.delegation.waits_alone(session_id)

    async def wait_for_person(self, question: HumanQuestion) -> HumanDecision:
        return await self.delegation.inbox.wait(question)

    def answer(self, point: WaitPoint, decision: HumanDecision) -> bool:
        """Hand a person's ``decision`` to the agent waiting at ``point``; when none waits
        there yet, keep it for the call that will ask (False when nobody waits)."""
        if self.delegation.inbox.answer(point, decision):
            return True
        self.decisions[point] = decision
        return False

    def take_posted_decisions(self, decisions: Sequence[DeliveredDecision]) -> None:
        """Hand over the decisions people stored for the task (``subagents inbox TASK KEY``)
        to the agents that wait for them, or keep them for the calls that will ask."""
        for delivered in decisions:
            point = delivered.wait_point
            if point not in self._handed_over:
                self._handed_over.add(point)
                self.answer(point, delivered.decision)

    def keep_watch(self) -> None:
        """Start :meth:`watch`, once for the run."""
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self.watch())

    async def watch(self) -> None:
        """While the run goes on: deliver what people store for the task from another
        process, messages (``subagents send``) and decisions (``subagents inbox TASK KEY``),
        and stop background subagents that stall (``[subagents] stall_seconds``), looking
        every :data:`~subagents.runtime.mail.POLL_SECONDS` (more often for a shorter
        ``stall_seconds``)."""
        from subagents.runtime.mail import POLL_SECONDS

        stall = self.runtime.config.subagents.stall_seconds
        interval = min(POLL_SECONDS, stall / 4) if stall else POLL_SECONDS
        while True:
            await asyncio.sleep(interval)
            try:
                if stall:
                    self.delegation.check_stalls(time.monotonic(), stall)
                self.take_what_people_sent()
            except Exception:  # a store hiccup: look again next time
                _log().warning("could not read what people sent the task", exc_info=True)

    def take_what_people_sent(self) -> None:
        """Deliver the messages and decisions stored for the task since this run last
        looked (one read of the store's mail counter when nothing came)."""
        recorder = self.recorder
        if recorder is None:
            return
        from subagents.runtime.inbox import decisions_in
        from subagents.runtime.mail import letters_in, mail_key, not_in_store

        store = recorder.store
        mark = store.get_meta(mail_key(recorder.task_id))
        if mark is None or mark == self._seen_mail:
            return
        self._seen_mail = mark
        traces = store.traces(recorder.task_id)  # read once for the messages and decisions
        self.delegation.messaging.deliver_stored(not_in_store(store, letters_in(traces)))
        self.take_posted_decisions(decisions_in(traces))

    def offers_messages(self, session_id: str) -> bool:
        session = self.delegation.session_by_id(session_id)
        return session is not None and self.delegation.messaging.offered_to(session)

    def agent_types_for(self, session_id: str) -> list[str]:
        return self.delegation.agent_types_for(session_id)


def _log() -> logging.Logger:
    return logging.getLogger(__name__)


def check_delegation(session: Session, agent: str) -> None:
    """Refuse, before anything runs, a hand-off to an agent the main session cannot start."""
    from subagents.errors import AgentNotFoundError

    if session.tools.get(TASK_TOOL_NAME) is None:
        raise AgentNotFoundError(agent, available=[])
    available = session.agent_types()
    if agent not in available:
        raise AgentNotFoundError(agent, available=available)


def handed_to(session: Session, prompt: str, agent: str) -> Awaitable[RunResult]:
    """The person named the agent (``@agent prompt``): the main session's next turn is a
    Task call to it, made by the harness rather than asked of the model, which then answers
    with what the agent found. The call is in the history like any other, so a crash or a
    resume finds it."""
    from subagents.messages import AssistantMessage, ToolCall, UserMessage

    session.messages.append(UserMessage(prompt))
    session.request = prompt
    arguments = {"description": f"@{agent}", "prompt": prompt, "subagent_type": agent}
    call = ToolCall(f"handoff_{len(session.messages)}", TASK_TOOL_NAME, arguments)
    session.messages.append(AssistantMessage("", (call,)))
    return session.resume()


def _unfinished(
    session: Session, status: RunStatus, error: str, question: HumanQuestion | None = None
) -> RunResult:
    """What a run that stops before its main session finishes tells its caller and its task."""
    return RunResult(
        output=session._partial_output(),
        status=status,
        agent_id=session.agent_id,
        agent_type=session.agent_type,
        model_name=session.model.name,
        messages=session.messages,
        usage=session.usage,
        turns=session.turns,
        tool_calls=session.tool_call_count,
        error=error,
        question=question,
    )


def _run(session: Session, prompt: str) -> Coroutine[Any, Any, RunResult]:
    """``session`` run on a person's ``prompt``, told which of the agents it may start the
    prompt asks for by name (:mod:`subagents.runtime.mentions`)."""
    compact = session.description_profile() == "compact"
    return session.run(with_mentions(prompt, session.agent_types(), pass_words_on=compact))


def task_description(description: str | None, prompt: str) -> str:
    """What names a task: its description, else the first line of its prompt."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    return description or first_line[:100]
