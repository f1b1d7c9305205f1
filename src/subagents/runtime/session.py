"""Session: one agent's isolated conversation, and the loop that drives it.

The loop is: request (system prompt, history, tool schemas) -> response -> run every tool call
of the turn concurrently -> append the results -> repeat, until the model answers without tool
calls or the turn limit is reached. The work itself is done by the steps of
:mod:`subagents.runtime.steps` (model, tool, commit), which the loop sequences; this module
keeps the session's state and the order of things. The loop guard
(:mod:`subagents.runtime.loop_guard`) watches the results: a call repeated gets a note, a
failing call repeated too often ends the run. Anything a model or a tool can get wrong becomes
a tool result or a ``failed`` RunResult; the loop itself raises only for cancellation and for
a pause (:class:`~subagents.runtime.pause.RunPaused`), which travels up to the run.

With a recorder, each step is committed to the store: the model's answer (``after_model``),
the turn's tool results (``after_tools``), and a side-effecting tool's ledger entry before and
after it runs. A commit writes a :class:`~subagents.runtime.snapshot.SessionSnapshot`, with the
trace records the steps returned and those others added since (:meth:`Session.add_trace`).
:meth:`Session.resume` continues from whatever the history holds. Messages added before a model
call (a background result, say) are committed first (``before_model``), except the opening
prompt of a session that a restart would start again on the same prompt (the main session of a
new task, a foreground subagent): it goes with the first checkpoint, and a run killed before
that has no record of the session, which the restarted run starts afresh.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from subagents.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from subagents.models.base import ModelSettings
from subagents.runtime import events as ev
from subagents.runtime.answer_check import CUT_OFF_MARK
from subagents.runtime.budget import BUDGET_KEY, Budget, Limits
from subagents.runtime.hooks import Hooks, notify
from subagents.runtime.loop_guard import (
    DEFAULT_MAX_REPEATED_FAILURES,
    LoopFinding,
    LoopGuard,
    loop_trace,
    resume_note,
)
from subagents.runtime.pause import (
    DeliveredDecision,
    HumanDecision,
    HumanQuestion,
    RunPaused,
    WaitPoint,
)
from subagents.runtime.requests import own_words
from subagents.runtime.result import RunResult, RunStatus
from subagents.runtime.snapshot import snapshot_of
from subagents.runtime.steps import (
    CommitStepInput,
    ModelStepInput,
    ToolStepInput,
    ToolStepOutput,
    commit_step,
    commit_step_in_group,
    model_step,
    tool_step,
)
from subagents.runtime.tool_call import in_ledger
from subagents.runtime.tool_menu import (
    DescriptionProfile,
    ToolMenu,
    asks_for_background,
    asks_for_work_at_once,
    default_profile,
)
from subagents.runtime.typed_result import typed_answer, typed_retry_note
from subagents.status import SessionStatus, session_status
from subagents.todos import TodoItem
from subagents.tools.base import ToolRegistry
from subagents.tools.execution import ToolOutcome
from subagents.tools.names import ASK_HUMAN_TOOL_NAME, DELEGATION_TOOL_NAMES

if TYPE_CHECKING:
    from subagents.models.base import Model, ToolSpec
    from subagents.runtime.context import RunContext
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.snapshot import SessionSnapshot
    from subagents.store.records import RecordFields
    from subagents.tools.permissions import PermissionPolicy
    from subagents.tools.sandbox import BashSandbox

__all__ = ["DEFAULT_MAX_TURNS", "Session", "SessionStatus"]

DEFAULT_MAX_TURNS = 50


@dataclass(slots=True, eq=False)
class Session:
    """One agent's conversation: its model, its allowed tools and its own history.

    A session never sees another session's messages. ``tools`` is exactly the set it may
    call: the harness refuses anything else, whatever the model asks.
    """

    model: Model
    system_prompt: str
    tools: ToolRegistry
    workspace: Path
    agent_type: str = "main"
    agent_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    parent: Session | None = None
    depth: int = 0
    max_turns: int = DEFAULT_MAX_TURNS
    settings: ModelSettings = field(default_factory=ModelSettings)
    permissions: PermissionPolicy | None = None
    events: ev.EventBus = field(default_factory=ev.EventBus)
    stream: bool = False
    hooks: Hooks | None = None
    context: RunContext | None = None  # the run this session belongs to
    recorder: Recorder | None = None
    parent_tool_call_id: str | None = None
    description: str = ""
    background: bool = False
    messages: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # maxBudgetTokens / maxBudgetUsd of its agent, within what its parent had left
    # (runtime/budget.py)
    own_budget: Budget | None = None
    # maxDurationSeconds of its agent: (the monotonic time it must stop by, the seconds)
    time_limit: tuple[float, int] | None = None
    status: SessionStatus = "initializing"
    summary: str | None = None
    turns: int = 0
    run_turns: int = 0
    tool_call_count: int = 0
    persisted_messages: int = 0
    recorded_status: SessionStatus | None = None  # the status last written to the store
    tool_env: Mapping[str, str] | None = None  # for tools' subprocesses (see ToolContext.env)
    tool_sandbox: BashSandbox | None = None  # where Bash runs commands (ToolContext.sandbox)
    file_grants: tuple[Path, ...] = ()  # folders beyond the workspace (ToolContext.grants)
    # its agent file lists its tools: the menu shows each one (see runtime/tool_menu.py)
    names_its_tools: bool = False
    todos: tuple[TodoItem, ...] = ()  # set by TodoWrite, kept in every checkpoint
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    checkpoints: int = 0  # checkpoints written so far: the next one's index
    # A run that restarts before this session's first checkpoint starts it again on the same
    # prompt (the task's, or the Task call's its parent stored before starting it): its
    # opening messages go to the store with that checkpoint, not in one of their own.
    opening_replayed: bool = False
    # (tool name, stored form of its arguments) a person approved, whose arguments lost a
    # secret to redaction: the model's identical new call runs without asking again
    approved_again: set[tuple[str, str]] = field(default_factory=set)
    _request: str = ""  # what run() was last asked, in the asker's words (see `request`)
    _inbox: list[str] = field(default_factory=list)
    # set when something reaches the inbox: a parent waiting for its background work wakes
    _arrived: asyncio.Event | None = None
    # when it last began a turn or got its model's answer (time.monotonic), for ListAgents
    last_active: float = field(default_factory=time.monotonic)
    # a message reached it (runtime/messaging.py): it is offered SendMessage to answer
    corresponded: bool = False
    # what it waits for a person to answer, alone (runtime/inbox.py)
    waiting_for: HumanQuestion | None = None
    # it waits for its background subagents (nothing of its own to do until one ends)
    waiting_on_children: bool = False
    _menu: ToolMenu | None = None  # the tool specs offered, built at the first request
    # trace records not yet committed: the steps' and those others add (add_trace)
    _traces: list[RecordFields] = field(default_factory=list)
    _call_ids: set[str] | None = None  # every tool call id of this session so far
    # calls whose 'started' ledger entry went to the store with the turn that made them
    ledger_opened: set[str] = field(default_factory=set)
    _loop_guard: LoopGuard | None = None  # the latest tool calls, to notice repeats
    _loop_stop: LoopFinding | None = None  # the repeated failure that stops this run
    _answer_now: bool = False  # the loop guard asks the next turn to answer without tools
    # outputSchema of its agent: the JSON Schema its final answer must match
    output_schema: dict[str, Any] | None = None
    call_schema: dict[str, Any] | None = None  # the one its Task call gave, if it was that
    _typed_retried: bool = False  # its answer did not match once: the next one is final

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def path(self) -> list[str]:
        """Session ids from the main session down to this one."""
        ids: list[str] = []
        session: Session | None = self
        while session is not None:
            ids.append(session.agent_id)
            session = session.parent
        return ids[::-1]

    def notify(self, text: str) -> None:
        """Queue a message that reaches the model at the start of its next turn."""
        self._inbox.append(text)
        if self._arrived is not None:
            self._arrived.set()

    def forget_menu(self) -> None:
        """Its tools changed: the next turn builds its menu again."""
        self._menu = None

    def holds(self, mark: str) -> bool:
        """Whether ``mark`` is in a message of its history or waiting in its inbox."""
        return any(mark in item for item in self._inbox) or any(
            isinstance(m, UserMessage) and mark in m.content for m in self.messages
        )

    def take_inbox(self) -> list[str]:
        """What waits in the inbox, taken out of it."""
        pending, self._inbox[:] = list(self._inbox), []
        return pending

    async def inbox_filled(self) -> None:
        """Wait until something is in the inbox."""
        while not self._inbox:
            if self._arrived is None:
                self._arrived = asyncio.Event()
            self._arrived.clear()
            await self._arrived.wait()

    def add_trace(self, trace: RecordFields) -> None:
        """Record ``trace`` with the session's next step."""
        self._traces.append(trace)

    def set_todos(self, todos: tuple[TodoItem, ...]) -> None:
        """Replace the todo list (TodoWrite): stored with the next checkpoint, recorded in the
        trace and announced to the UI."""
        self.todos = todos
        if self.recorder is not None:
            self.add_trace(self.recorder.todos_trace(self))
        if self.events.active:
            self.events.emit(ev.TodosUpdated(self.agent_id, todos))

    def note_failure(self, error: str) -> None:
        """Before resuming a run that failed: if its last message is an answer (cut off, or
        followed by an error), tell the model so that it continues instead of stopping; if
        the loop guard stopped it, tell the model which call it must not repeat."""
        last = self.messages[-1] if self.messages else None
        if isinstance(last, AssistantMessage) and not last.tool_calls:
            self.messages.append(
                UserMessage(
                    f"The run stopped before it was done ({error}). Continue the work from "
                    "where it stopped; do not repeat what you already wrote."
                )
            )
        else:
            note = resume_note(error)
            if note is not None:  # stopped by the loop guard: say so, or it loops again
                self.messages.append(UserMessage(note))

    async def run(self, prompt: str) -> RunResult:
        """Add ``prompt`` as a user message and run until a final answer or the turn limit."""
        self.messages.append(UserMessage(prompt))
        self.request = prompt
        self.run_turns = 0
        return await self._run_loop(resuming=False)

    async def resume(self) -> RunResult:
        """Continue from the history as it stands: after a crash, or a pause for a person.

        Tool calls of the last turn that have no result yet are settled first (see
        :meth:`_run_tool_call`); a session whose last message is a final answer is finished.
        """
        return await self._run_loop(resuming=True)

    async def _run_loop(self, *, resuming: bool) -> RunResult:
        started = time.perf_counter()
        events = self.events
        if events.active:
            parent_id = self.parent.agent_id if self.parent is not None else None
            events.emit(
                ev.SessionStarted(
                    self.agent_id,
                    self.agent_type,
                    parent_id,
                    self.model.name,
                    self.depth,
                    self.recorder.task_id if self.recorder is not None else None,
                )
            )
            if self.todos:  # a resumed session shows the list it had
                events.emit(ev.TodosUpdated(self.agent_id, self.todos))
        self.status = "active"
        recorder = self.recorder
        try:
            if resuming:
                finished = await self._settle_last_turn(started)
                if finished is not None:
                    return finished
            while self.run_turns < self.max_turns:
                stopped = self._own_budget_spent()
                if stopped is not None:
                    return await self._finish(
                        "failed", self._partial_output(), started, error=stopped
                    )
                self._check_budget()
                self.run_turns += 1
                self.turns += 1
                self.last_active = time.monotonic()
                self._deliver_inbox()
                if recorder is not None and self._unstored_messages_at_risk():
                    await self._commit_in_group(recorder, "before_model", ())
                if events.active:
                    events.emit(ev.TurnStarted(self.agent_id, self.turns))
                settings = self.settings
                if self._answer_now:  # it kept making the same call: it must answer now
                    settings, self._answer_now = replace(settings, tool_choice="none"), False
                step = ModelStepInput(
                    self.system_prompt, self.messages, self._offered(), settings, self.turns
                )
                answered = await self._in_time(model_step(self, step), "a model call")
                response, calls = answered.response, answered.calls
                self.last_active = time.monotonic()
                if answered.traces:
                    self._traces.extend(answered.traces)
                self.usage.add(response.usage)
                self._spend(response.usage)
                if self._looping():  # its answers kept looping: the last one is not taken
                    return await self._stop_for_loop(started)
                self.messages.append(
                    AssistantMessage(response.text, calls, reasoning=response.reasoning)
                )
                # an answer the loop guard asked for ends the session: a background result
                # would only start the loop again (a model that kept starting one agent)
                forced = settings.tool_choice == "none"
                if not calls and not forced:
                    if self._inbox:  # a background result arrived while the model answered
                        continue
                    context = self.context
                    if context is not None and await context.settle_background(self.agent_id):
                        continue  # a background subagent finished: show the model its result
                if not calls:
                    if response.stop_reason == "max_tokens":
                        output = f"{self._partial_output()}\n\n{CUT_OFF_MARK}".lstrip()
                        return await self._finish("failed", output, started, error=_CUT_OFF)
                    if self.output_schema is None:
                        return await self._finish("completed", response.text, started)
                    typed = await self._typed_finish(response.text, started)
                    if typed is None:
                        continue  # told what is wrong: it answers again
                    return typed
                if recorder is not None and self._needs_durable_calls(calls):
                    opened = self._open_ledger(recorder, calls)
                    traces = self._take_traces()
                    await self._commit_in_group(recorder, "after_model", traces, ledger=opened)
                await self._in_time(self._run_tool_calls(calls), "its tool calls")
                if self._loop_stop is not None:
                    return await self._stop_for_loop(started)
            return await self._finish(
                "max_turns",
                self._partial_output(),
                started,
                error=f"stopped after reaching the limit of {self.max_turns} turns; "
                "raise max_turns (agent frontmatter `maxTurns` or config "
                "`[subagents] max_turns`) if the task needs more",
            )
        except RunPaused as pause:
            self.status = "awaiting_human"
            asker = pause.question.session_id == self.agent_id
            if recorder is not None:
                traces = self._take_traces()
                if asker:  # where it waits: traced once
                    traces.append(recorder.wait_trace(self, pause.question))
                self._commit(recorder, "awaiting_human", traces, question=pause.question)
            if events.active:
                events.emit(ev.SessionPaused(self.agent_id, pause.question))
            if asker and pause.question.kind != "budget":
                await asyncio.shield(self.notify_person("agent_needs_input", pause.question.text))
            raise
        except _TimeLimitPassed as passed:
            return await self._finish(
                "failed", self._partial_output(), started, error=self._time_up(passed.during)
            )
        except asyncio.CancelledError:
            if recorder is not None:
                self._store_opening(recorder)
            await self._finish("cancelled", self._partial_output(), started, error="cancelled")
            raise
        except Exception as error:
            return await self._finish(
                "failed",
                self._partial_output(),
                started,
                error=f"{type(error).__name__}: {error}",
            )

    def call_ids(self) -> set[str]:
        """Every tool call id of this session so far (the model step adds the new ones)."""
        seen = self._call_ids
        if seen is None:
            seen = self._call_ids = {
                call.id
                for message in self.messages
                if isinstance(message, AssistantMessage)
                for call in message.tool_calls
            }
        return seen

    def _take_traces(self) -> list[RecordFields]:
        traces, self._traces = self._traces, []
        return traces

    def _commit(
        self,
        recorder: Recorder,
        position: str,
        traces: Sequence[RecordFields],
        *,
        question: HumanQuestion | None = None,
        decisions: tuple[DeliveredDecision, ...] = (),
        ledger: tuple[RecordFields, ...] = (),
        upto: int | None = None,
    ) -> None:
        """Run the commit step: a checkpoint of this session at ``position`` (holding its
        messages up to ``upto``, all by default)."""
        snapshot = snapshot_of(self, position, upto)
        step = CommitStepInput(
            snapshot, position, tuple(traces), ledger, question=question, decisions=decisions
        )
        commit_step(recorder, step)
        self._committed(snapshot.message_count, _recorded_status(snapshot), None)

    def _commit_in_group(
        self,
        recorder: Recorder,
        position: str,
        traces: Sequence[RecordFields],
        *,
        decisions: tuple[DeliveredDecision, ...] = (),
        ledger: tuple[RecordFields, ...] = (),
    ) -> Awaitable[None]:
        """:meth:`_commit` for the steps of the loop: in one transaction with those other
        sessions of the process commit at the same moment (see :mod:`subagents.store.group`).
        The step is built at once; the awaitable returned waits for its commit."""
        snapshot = snapshot_of(self, position)
        step = CommitStepInput(snapshot, position, tuple(traces), ledger, decisions=decisions)
        # what the callback needs, not the snapshot: a step waiting for its group's commit
        # holds as little as it can for the garbage collector to visit
        committed = partial(self._committed, snapshot.message_count, _recorded_status(snapshot))
        return commit_step_in_group(recorder, step, committed)

    def _committed(
        self, message_count: int, recorded_status: SessionStatus | None, sequence: int | None
    ) -> None:
        """Checkpoint ``sequence``, holding the first ``message_count`` messages, is stored,
        with the session's record when ``recorded_status`` (the status it stored) is given."""
        self.persisted_messages = message_count
        if recorded_status is not None:
            self.recorded_status = recorded_status
        self.checkpoints += 1

    def _open_ledger(
        self, recorder: Recorder, calls: tuple[ToolCall, ...]
    ) -> tuple[RecordFields, ...]:
        """The 'started' ledger entries of the turn's side-effecting calls, committed with the
        turn itself rather than one commit each before the call runs. A call that is denied
        or paused before it runs closes its entry like one that ran."""
        entries = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and in_ledger(tool):
                entries.append(recorder.ledger_entry(self.agent_id, call, tool))
                self.ledger_opened.add(call.id)
        return tuple(entries)

    def _store_opening(self, recorder: Recorder) -> None:
        """A session stopped before its first checkpoint stores its opening prompt now, as
        it would have before its first model call, had a restart not started it again: a
        stopped run continued later (``subagents continue``) goes on from it."""
        if not self._opening_waits():
            return
        opening = self._opening_length()
        if self.persisted_messages < opening:
            self._commit(recorder, "before_model", (), upto=opening)

    def _unstored_messages_at_risk(self) -> bool:
        """Whether messages not in the store yet must be before the model is asked: any
        but the opening (what precedes the model's first answer) of a session a restart
        would start again (:attr:`opening_replayed`)."""
        if self.persisted_messages >= len(self.messages):
            return False
        if not self._opening_waits():
            return True
        return self._opening_length() < len(self.messages)

    def _opening_waits(self) -> bool:
        """Whether this session's opening still waits for its first checkpoint."""
        return self.opening_replayed and self.checkpoints == 0

    def _opening_length(self) -> int:
        """How many messages open the session: those before the model's first answer."""
        return next(
            (at for at, m in enumerate(self.messages) if isinstance(m, AssistantMessage)),
            len(self.messages),
        )

    def _needs_durable_calls(self, calls: tuple[ToolCall, ...]) -> bool:
        """Whether the calls must be on disk before they run.

        Read-only calls need not be: after a crash the model is simply asked again. A
        side-effecting call must be, for the ledger to name it, and so must a delegation, so
        that a restarted parent finds the child its call started instead of starting another.
        """
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is None or not tool.read_only or call.name in _DELEGATING_TOOLS:
                return True
        return False

    async def _settle_last_turn(self, started: float) -> RunResult | None:
        """On resume: answer the last turn's open tool calls, or finish a finished session."""
        last = self.messages[-1] if self.messages else None
        if not isinstance(last, AssistantMessage):
            return None
        answered = {m.tool_call_id for m in self.messages if isinstance(m, ToolResultMessage)}
        pending = tuple(call for call in last.tool_calls if call.id not in answered)
        if pending:
            await self._run_tool_calls(pending, recovering=True)
            return await self._stop_for_loop(started) if self._loop_stop is not None else None
        if not last.tool_calls:
            # a message came for it, or a background subagent's result it has not seen: it
            # goes on with that instead of finishing again
            context = self.context
            if self._inbox or (
                context is not None and await context.settle_background(self.agent_id)
            ):
                return None
            return await self._finish("completed", last.content, started)
        return None

    def _deliver_inbox(self) -> None:
        if self._inbox:
            self.messages.append(UserMessage("\n\n".join(self.take_inbox())))

    def _offered(self) -> Sequence[ToolSpec]:
        """The tool specs this turn offers the model (see :mod:`subagents.runtime.tool_menu`)."""
        menu = self._menu
        if menu is None:
            menu = self._menu = ToolMenu.of(
                self.tools,
                self.description_profile(),
                chosen=self.names_its_tools,
                background=asks_for_background(self._prompt()),
                at_once=asks_for_work_at_once(self._prompt()),
            )
        if not menu.varies:
            return menu.everything
        context = self.context
        if context is None:
            return menu.quiet
        return menu.for_turn(
            background=context.has_background(self.agent_id),
            mail=context.offers_messages(self.agent_id),
        )

    def description_profile(self) -> DescriptionProfile:
        """How tools are described to this session's model; "compact" also has the harness
        keep the user's words in view (:mod:`subagents.runtime.requests`)."""
        context, name = self.context, self.model.name
        return default_profile(name) if context is None else context.description_profile(name)

    @property
    def request(self) -> str:
        """What the session was last asked, without the harness's lines (its first message
        when it was resumed from the store)."""
        return self._request or own_words(self._prompt())

    @request.setter
    def request(self, prompt: str) -> None:
        self._request = own_words(prompt)

    def _prompt(self) -> str:
        """What the session was asked to do: its first user message."""
        first = next((m for m in self.messages if isinstance(m, UserMessage)), None)
        return first.content if first is not None else ""

    def offered_names(self) -> list[str]:
        return [spec.name for spec in self._offered()]

    def offers_argument(self, tool: str, argument: str) -> bool:
        """Whether the model sees ``argument`` among ``tool``'s (the compact profile shows
        required ones only)."""
        spec = next((spec for spec in self._offered() if spec.name == tool), None)
        properties = spec.parameters.get("properties") if spec is not None else None
        return isinstance(properties, dict) and argument in properties

    def agent_types(self) -> list[str]:
        """The agent types this session may start, when it has the Task tool."""
        context = self.context
        if context is None or self.tools.get("Task") is None:
            return []
        return context.agent_types_for(self.agent_id)

    async def _run_tool_calls(
        self, calls: tuple[ToolCall, ...], *, recovering: bool = False
    ) -> None:
        """Run the tool step of every call of the turn, concurrently, then commit the turn."""
        self.tool_call_count += len(calls)
        if len(calls) == 1:
            # the only call of the turn: its closing ledger entry goes with the turn's commit
            step = ToolStepInput(calls[0], recovering, close_with_turn=True)
            outputs = [await tool_step(self, step)]
        else:
            gathered = await asyncio.gather(
                *(tool_step(self, ToolStepInput(call, recovering)) for call in calls),
                return_exceptions=True,
            )
            outputs = []
            for item in gathered:
                if isinstance(item, BaseException):
                    raise item  # a pause (or a bug) wins once every sibling has finished
                outputs.append(item)
        findings = self._watch_for_loops(calls, outputs)
        self.messages.extend(output.outcome.message for output in outputs)
        recorder = self.recorder
        if recorder is not None:
            traces = self._take_traces()
            for output in outputs:
                traces.extend(output.traces)
            if findings:
                traces.extend(loop_trace(recorder, self, finding) for finding in findings)
            decisions = tuple(o.decision for o in outputs if o.decision is not None)
            closing = tuple(entry for output in outputs for entry in output.closing)
            await self._commit_in_group(
                recorder, "after_tools", traces, decisions=decisions, ledger=closing
            )

    def note_repeated_answer(self, description: str) -> None:
        """Count an answer caught in a loop (the model step found it) toward the loop guard;
        at its limit, the session stops after this turn's model step."""
        finding = self._guard().looped_answer(description)
        if finding is None or self._loop_stop is not None:
            return
        self._loop_stop = finding
        if self.recorder is not None:
            self.add_trace(loop_trace(self.recorder, self, finding))
        if self.events.active:
            self.events.emit(ev.LoopNoticed(self.agent_id, finding.summary, True))

    def _looping(self) -> bool:
        """Whether the loop guard stops the session (the model step may have just decided)."""
        return self._loop_stop is not None

    def _guard(self) -> LoopGuard:
        guard = self._loop_guard
        if guard is None:
            guard = self._loop_guard = LoopGuard(self._max_repeated_failures())
        return guard

    def _watch_for_loops(
        self, calls: tuple[ToolCall, ...], outputs: list[ToolStepOutput]
    ) -> list[LoopFinding]:
        """Show the loop guard the turn's calls; a repeated one gets a note in its result
        (``outputs`` is updated, its trace too), and a failing loop at the limit stops the
        run."""
        found = self._guard().watch(calls, [output.outcome for output in outputs], self.tools)
        recorder = self.recorder
        for index, finding in found:
            noted = self._note_loop(outputs[index].outcome, finding)
            traces = (recorder.tool_trace(self, calls[index], noted),) if recorder else ()
            outputs[index] = ToolStepOutput(noted, traces, outputs[index].ledger)
        return [finding for _, finding in found]

    def _note_loop(self, outcome: ToolOutcome, finding: LoopFinding) -> ToolOutcome:
        message = outcome.message
        noted = replace(message, content=f"{message.content}\n\n{finding.note}")
        if finding.stops and self._loop_stop is None:
            self._loop_stop = finding
        if finding.asks_for_answer:
            self._answer_now = True
        if self.events.active:
            self.events.emit(
                ev.LoopNoticed(self.agent_id, finding.summary, finding.stops, finding.tool_call_id)
            )
        return replace(outcome, message=noted)

    def _max_repeated_failures(self) -> int:
        context = self.context
        return DEFAULT_MAX_REPEATED_FAILURES if context is None else context.max_repeated_failures

    async def _stop_for_loop(self, started: float) -> RunResult:
        """End the run on the repeated failure the loop guard found; a later run of this
        session starts with a fresh guard."""
        finding, self._loop_stop, self._loop_guard = self._loop_stop, None, None
        assert finding is not None
        # only the main session's task is resumed by `subagents resume`; a subagent's parent
        # hears of the loop through its Task call's result
        task_id = (
            self.recorder.task_id if self.recorder is not None and self.parent is None else None
        )
        error = str(finding.error_for(task_id))
        return await self._finish("failed", self._partial_output(), started, error=error)

    def wait_point(self, key: str) -> WaitPoint:
        """Where this session waits for a person about ``key`` (a tool call id)."""
        task_id = self.recorder.task_id if self.recorder is not None else ""
        return WaitPoint(task_id, tuple(self.path), key)

    def question(self, call: ToolCall, kind: str, detail: str | None = None) -> HumanQuestion:
        """The question to ask a person about ``call`` (``kind``: see QuestionKind)."""
        wants = f"{self.agent_type} wants to run {call.name}"
        texts = {
            "approval": f"{wants} ({detail}); approve, reject or modify."
            if detail
            else f"{wants}; approve, reject or modify.",
            "crash_recovery": f"{call.name} was started before the process stopped and may or "
            "may not have taken effect. Approve to run it again, reject to tell the agent it "
            "did not complete, or modify its arguments.",
        }
        text = texts.get(kind) or str(call.arguments.get("question", "The agent has a question."))
        return HumanQuestion(
            kind=kind,  # type: ignore[arg-type]
            task_id=self.recorder.task_id if self.recorder is not None else "",
            session_id=self.agent_id,
            session_path=self.path,
            agent_type=self.agent_type,
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=dict(call.arguments),
            text=text,
        )

    def _own_budgets(self) -> Iterator[tuple[Session, Budget]]:
        """The own budgets (``maxBudgetTokens`` / ``maxBudgetUsd``) of this session and its
        ancestors, nearest first."""
        session: Session | None = self
        while session is not None:
            if session.own_budget is not None:
                yield session, session.own_budget
            session = session.parent

    def _spend(self, usage: Usage) -> None:
        """Count a model call against the run's budget and the own budgets up the tree,
        priced when one of them has a limit in USD."""
        context = self.context
        cost = None
        if context is not None and self._priced():
            cost = context.call_cost(self.model.name, usage)
        if context is not None:
            context.spend(self.agent_type, self.model.name, usage, cost)
        for _, budget in self._own_budgets():
            budget.charge(self.agent_type, usage, cost)

    def _priced(self) -> bool:
        """Whether this session's calls count against a budget in USD."""
        context = self.context
        run_priced = context is not None and context.budget.priced
        return run_priced or any(budget.priced for _, budget in self._own_budgets())

    async def _in_time(self, work: Awaitable[_T], during: str) -> _T:
        """``work`` (a model call, the turn's tool calls), cancelled when the session's time
        limit passes while it runs: a model or a tool that hangs cannot hold a subagent past
        its ``maxDurationSeconds`` (raises :class:`_TimeLimitPassed`)."""
        if self.time_limit is None:
            return await work
        limit = asyncio.timeout_at(self.time_limit[0])
        try:
            async with limit:
                return await work
        except TimeoutError:
            if not limit.expired():  # the work's own timeout, not the session's
                raise
            raise _TimeLimitPassed(during) from None

    def _time_up(self, during: str | None) -> str:
        assert self.time_limit is not None
        cut = f", cutting {during} short" if during else ""
        return (
            f"stopped after its time limit of {self.time_limit[1]} s{cut} "
            "(maxDurationSeconds in the agent's file): the output holds what it wrote so far"
        )

    async def _typed_finish(self, answer: str, started: float) -> RunResult | None:
        """The end of a session whose answer must match its ``outputSchema``: completed
        with the answer as JSON, or failed on a second answer that does not match; ``None``
        when it is told what is wrong and asked again (see
        :mod:`subagents.runtime.typed_result`)."""
        assert self.output_schema is not None
        value, problem = typed_answer(self.output_schema, answer)
        if problem is None:
            return await self._finish("completed", value or "", started)
        if not self._typed_retried:
            self._typed_retried = True
            self.messages.append(UserMessage(typed_retry_note(problem)))
            return None
        error = f"its answer does not match its outputSchema: {problem}"
        return await self._finish("failed", answer, started, error=error)

    def _own_budget_spent(self) -> str | None:
        """Why this session may make no more calls when its time limit is past or its own
        budget, or an ancestor's, is spent (the error it ends with; its parent gets what it
        wrote so far)."""
        if self.time_limit is not None and time.monotonic() >= self.time_limit[0]:
            return self._time_up(None)
        for session, budget in self._own_budgets():
            if budget.reached():
                whose = "its" if session is self else f"the budget of {session.agent_type}, its"
                return (
                    f"stopped at {whose} budget ({budget.report()}; maxBudgetTokens or "
                    "maxBudgetUsd in the agent's file): the output holds what it wrote so far"
                )
        return None

    def room(self) -> Limits:
        """What this session's own budget and its ancestors' leave (``None`` for a kind: no
        limit of that kind of their own)."""
        budgets = [budget for _, budget in self._own_budgets()]
        tokens = [room for budget in budgets if (room := budget.left()) is not None]
        dollars = [rest for budget in budgets if (rest := budget.left_usd()) is not None]
        return Limits(min(tokens, default=None), min(dollars, default=None))

    def _check_budget(self) -> None:
        """Pause before a model call the run's budget has no room for (see
        :mod:`subagents.runtime.budget`)."""
        context = self.context
        if context is None:
            return
        if self._priced():
            context.check_priced(self.model.name)
        budget = context.budget
        if not budget.reached():
            return
        task_id = self.recorder.task_id if self.recorder is not None else ""
        raise RunPaused(
            HumanQuestion(
                kind="budget",
                task_id=task_id,
                session_id=self.agent_id,
                session_path=self.path,
                agent_type=self.agent_type,
                tool_call_id=BUDGET_KEY,
                tool_name="",
                arguments=budget.arguments(),
                text=f"The run reached its budget: {budget.report()} spent. Resume it "
                "with a larger budget to go on.",
            )
        )

    async def wait_for_person(self, question: HumanQuestion) -> HumanDecision:
        """Wait, alone, for a person's answer to ``question`` while the rest of the run goes
        on (see :mod:`subagents.runtime.inbox`): the question is stored first, in an
        ``awaiting_human`` checkpoint, so that ``subagents inbox`` lists it and a restart
        asks it again."""
        context = self.context
        assert context is not None  # only a session of a run waits alone
        self.status = "awaiting_human"
        recorder = self.recorder
        if recorder is not None:
            traces = [*self._take_traces(), recorder.wait_trace(self, question)]
            self._commit(recorder, "awaiting_human", traces, question=question)
        if self.events.active:
            self.events.emit(ev.SessionPaused(self.agent_id, question, alone=True))
        self.waiting_for = question
        try:
            await self.notify_person("agent_needs_input", question.text)
            return await context.wait_for_person(question)
        finally:
            self.waiting_for = None
            self.status = "active"
            self.last_active = time.monotonic()

    async def notify_person(self, kind: str, message: str) -> None:
        """Run the ``Notification`` hooks for ``kind`` (see :mod:`subagents.runtime.hooks`)."""
        await notify(
            self.hooks,
            kind,
            message,
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            parent_id=self.parent.agent_id if self.parent is not None else None,
            cwd=str(self.workspace),
        )

    def ask(
        self,
        call_id: str,
        tool_name: str,
        arguments: dict[str, object],
        kind: str,
        detail: str | None = None,
    ) -> RunPaused:
        """The pause to raise for a question about one of this session's tool calls;
        ``detail`` says why it asks, when there is more to say than the tool's name."""
        call = ToolCall(call_id, tool_name, dict(arguments))
        return RunPaused(self.question(call, kind, detail))

    # -- finishing ---------------------------------------------------------------------------

    def _partial_output(self) -> str:
        """Every piece of assistant text so far, so that nothing the agent wrote is lost."""
        texts = [m.content for m in self.messages if isinstance(m, AssistantMessage) and m.content]
        return "\n\n".join(texts)

    async def _finish(
        self, status: RunStatus, output: str, started: float, *, error: str | None = None
    ) -> RunResult:
        self.status = session_status(status)
        self.summary = output
        result = RunResult(
            output=output,
            status=status,
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            model_name=self.model.name,
            messages=self.messages,
            usage=self.usage,
            turns=self.turns,
            tool_calls=self.tool_call_count,
            duration_ms=(time.perf_counter() - started) * 1000,
            error=error,
        )
        recorder = self.recorder
        if recorder is not None and status != "cancelled":
            traces = self._take_traces()
            traces.append(recorder.session_trace(self, "session_finished", error or status))
            await self._commit_in_group(recorder, "finished", traces)
        if self.events.active:
            self.events.emit(ev.SessionFinished(self.agent_id, result))
        return result


_T = TypeVar("_T")


class _TimeLimitPassed(Exception):
    """A session's time limit passed during a model call or its tool calls (``during``)."""

    def __init__(self, during: str) -> None:
        super().__init__(during)
        self.during = during


_CUT_OFF = (
    "the model's answer was cut off at its output token limit (max_tokens), so it is "
    "incomplete; the output holds what it wrote. Ask for a shorter answer or split the work, "
    "or resume the task to let the model continue"
)

# Calls that start or steer other sessions, or a person (see runtime/delegation.py).
_DELEGATING_TOOLS = frozenset({*DELEGATION_TOOL_NAMES, ASK_HUMAN_TOOL_NAME})


def _recorded_status(snapshot: SessionSnapshot) -> SessionStatus | None:
    """The status ``snapshot`` stores in its session's record; None when it writes none."""
    return snapshot.status if snapshot.facts is not None else None
