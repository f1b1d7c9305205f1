"""Session: one agent's isolated conversation, and the loop that drives it.

The loop is: request (system prompt, history, tool schemas) -> response -> run every tool call
of the turn concurrently -> append the results -> repeat, until the model answers without tool
calls or the turn limit is reached. The loop guard (:mod:`subagents.runtime.loop_guard`) watches
the results: a call repeated gets a note, a failing call repeated too often ends the run.
Anything a model or a tool can get wrong becomes a tool result or a ``failed`` RunResult; the
loop itself raises only for cancellation and for a pause
(:class:`~subagents.runtime.pause.RunPaused`), which travels up to the run.

With a recorder, each step is committed to the store: the model's answer (``after_model``),
the turn's tool results (``after_tools``), and a side-effecting tool's ledger entry before and
after it runs. :meth:`Session.resume` continues from whatever the history holds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from subagents.models.base import ModelRequest, ModelResponse, ModelSettings, ResponseCompleted
from subagents.models.tool_arguments import bound_tool_calls, refuse_repairs_of_cut_calls
from subagents.runtime import events as ev
from subagents.runtime.hooks import HookEventName, HookPayload, Hooks
from subagents.runtime.loop_guard import (
    DEFAULT_MAX_REPEATED_FAILURES,
    LoopFinding,
    LoopGuard,
    loop_trace,
    resume_note,
)
from subagents.runtime.pause import HumanDecision, HumanQuestion, RunPaused
from subagents.runtime.result import RunResult, RunStatus
from subagents.runtime.tool_menu import ToolMenu, default_profile
from subagents.status import SessionStatus, session_status
from subagents.todos import TodoItem
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.execution import ToolOutcome, execute_tool_call
from subagents.tools.name_repair import repair_tool_names
from subagents.tools.names import ASK_HUMAN_TOOL_NAME, DELEGATION_TOOL_NAMES

if TYPE_CHECKING:
    from subagents.models.base import Model, ToolSpec
    from subagents.runtime.context import InterruptedPolicy, RunContext
    from subagents.runtime.recorder import Recorder
    from subagents.store.records import ToolLedgerEntry, TraceRecord
    from subagents.tools.base import Tool
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
    todos: tuple[TodoItem, ...] = ()  # set by TodoWrite, kept in every checkpoint
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    _inbox: list[str] = field(default_factory=list)
    _menu: ToolMenu | None = None  # the tool specs offered, built at the first request
    _traces: list[TraceRecord] = field(default_factory=list)  # committed with the next step
    _call_ids: set[str] | None = None  # every tool call id of this session so far
    # (tool name, stored form of its arguments) a person approved, whose arguments lost a
    # secret to redaction: the model's identical new call runs without asking again
    _approved_again: set[tuple[str, str]] = field(default_factory=set)
    _loop_guard: LoopGuard | None = None  # the latest tool calls, to notice repeats
    _loop_stop: LoopFinding | None = None  # the repeated failure that stops this run

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

    def add_trace(self, trace: TraceRecord) -> None:
        """Record ``trace`` with the session's next step."""
        self._traces.append(trace)

    def set_todos(self, todos: tuple[TodoItem, ...]) -> None:
        """Replace the todo list (TodoWrite): stored with the next checkpoint, recorded in the
        trace and announced to the UI."""
        self.todos = todos
        if self.recorder is not None:
            self._traces.append(self.recorder.todos_trace(self))
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
                    self.agent_id, self.agent_type, parent_id, self.model.name, self.depth
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
                self.run_turns += 1
                self.turns += 1
                self._deliver_inbox()
                if recorder is not None and self.persisted_messages < len(self.messages):
                    recorder.step(self, "before_model")
                if events.active:
                    events.emit(ev.TurnStarted(self.agent_id, self.turns))
                response = await self._request_model()
                self.usage.add(response.usage)
                calls = (
                    self._unique_ids(
                        repair_tool_names(
                            refuse_repairs_of_cut_calls(
                                bound_tool_calls(response.tool_calls), response.stop_reason
                            ),
                            self.tools,
                        )
                    )
                    if response.tool_calls
                    else ()
                )
                self.messages.append(
                    AssistantMessage(response.text, calls, reasoning=response.reasoning)
                )
                if not calls:
                    if self._inbox:  # a background result arrived while the model answered
                        continue
                    context = self.context
                    if context is not None and await context.settle_background(self.agent_id):
                        continue  # a background subagent finished: show the model its result
                    if response.stop_reason == "max_tokens":
                        return self._finish(
                            "failed", self._partial_output(), started, error=_CUT_OFF
                        )
                    return self._finish("completed", response.text, started)
                if recorder is not None and self._needs_durable_calls(calls):
                    traces, self._traces = self._traces, []
                    recorder.step(self, "after_model", traces=traces)
                await self._run_tool_calls(calls)
                if self._loop_stop is not None:
                    return self._stop_for_loop(started)
            return self._finish(
                "max_turns",
                self._partial_output(),
                started,
                error=f"stopped after reaching the limit of {self.max_turns} turns; "
                "raise max_turns (agent frontmatter `maxTurns` or config "
                "`[subagents] max_turns`) if the task needs more",
            )
        except RunPaused as pause:
            self.status = "awaiting_human"
            if recorder is not None:
                traces, self._traces = self._traces, []
                recorder.step(self, "awaiting_human", traces=traces, question=pause.question)
            if events.active:
                events.emit(ev.SessionPaused(self.agent_id, pause.question))
            raise
        except asyncio.CancelledError:
            self._finish("cancelled", self._partial_output(), started, error="cancelled")
            raise
        except Exception as error:
            return self._finish(
                "failed",
                self._partial_output(),
                started,
                error=f"{type(error).__name__}: {error}",
            )

    def _unique_ids(self, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        """``calls`` with ids that no other call of this session has.

        Some servers send no ids or reuse ``call_0`` every turn; results are matched to calls
        by id, and a subagent's id is derived from its Task call's, so ids must be unique.
        """
        seen = self._call_ids
        if seen is None:
            seen = self._call_ids = {
                call.id
                for message in self.messages
                if isinstance(message, AssistantMessage)
                for call in message.tool_calls
            }
        unique: list[ToolCall] | None = None
        for index, call in enumerate(calls):
            call_id = call.id
            if not call_id or call_id in seen:
                call_id = self._derived_call_id(call, index, seen)
                if unique is None:
                    unique = list(calls)
                unique[index] = replace(call, id=call_id)
            seen.add(call_id)
        return calls if unique is None else tuple(unique)

    def _derived_call_id(self, call: ToolCall, index: int, seen: set[str]) -> str:
        """A new id for ``call``, the ``index``-th of this turn, derived from the session, the
        turn and the position: a replay of the same turn finds the same id (and so the same
        subagent, whose id derives from it), where a random one would start another."""
        attempt = 0
        while True:
            source = f"{self.agent_id}:{self.turns}:{index}:{call.id}:{attempt}"
            call_id = f"{call.id or 'call'}_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
            if call_id not in seen:
                return call_id
            attempt += 1

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
            return self._stop_for_loop(started) if self._loop_stop is not None else None
        if not last.tool_calls:
            return self._finish("completed", last.content, started)
        return None

    def _deliver_inbox(self) -> None:
        if self._inbox:
            pending, self._inbox[:] = list(self._inbox), []
            self.messages.append(UserMessage("\n\n".join(pending)))

    async def _request_model(self) -> ModelResponse:
        request = ModelRequest(self.system_prompt, self.messages, self._offered(), self.settings)
        events = self.events
        recorder = self.recorder
        if not events.active and recorder is None:
            return await self.model.request(request)
        sent = time.perf_counter()
        if self.stream and events.active:
            response = await self._stream_model(request)
        else:
            response = await self.model.request(request)
        duration_ms = (time.perf_counter() - sent) * 1000
        if events.active:
            events.emit(ev.ModelResponded(self.agent_id, self.turns, response, duration_ms))
        if recorder is not None:
            self._traces.append(recorder.model_trace(self, response, duration_ms))
        return response

    def _offered(self) -> Sequence[ToolSpec]:
        """The tool specs this turn offers the model (see :mod:`subagents.runtime.tool_menu`)."""
        menu = self._menu
        if menu is None:
            context, name = self.context, self.model.name
            profile = (
                default_profile(name) if context is None else context.description_profile(name)
            )
            menu = self._menu = ToolMenu.of(self.tools, profile)
        if not menu.varies:
            return menu.everything
        context = self.context
        return menu.for_turn(
            background=context is not None and context.has_background(self.agent_id)
        )

    def _offered_names(self) -> list[str]:
        return [spec.name for spec in self._offered()]

    def _agent_types(self) -> list[str]:
        """The agent types this session may start, when it has the Task tool."""
        context = self.context
        if context is None or self.tools.get("Task") is None:
            return []
        return context.agent_types_for(self.agent_id)

    async def _stream_model(self, request: ModelRequest) -> ModelResponse:
        final: ModelResponse | None = None
        async for item in self.model.stream(request):
            if isinstance(item, ResponseCompleted):
                final = item.response
            else:
                self.events.emit(ev.TextDelta(self.agent_id, item.text))
        if final is None:
            raise RuntimeError(f"model {self.model.name} ended its stream without a response")
        return final

    async def _run_tool_calls(
        self, calls: tuple[ToolCall, ...], *, recovering: bool = False
    ) -> None:
        self.tool_call_count += len(calls)
        if len(calls) == 1:
            outcomes = [await self._run_tool_call(calls[0], recovering=recovering)]
        else:
            gathered = await asyncio.gather(
                *(self._run_tool_call(call, recovering=recovering) for call in calls),
                return_exceptions=True,
            )
            outcomes = []
            for item in gathered:
                if isinstance(item, BaseException):
                    raise item  # a pause (or a bug) wins once every sibling has finished
                outcomes.append(item)
        findings = self._watch_for_loops(calls, outcomes)
        self.messages.extend(outcome.message for outcome in outcomes)
        recorder = self.recorder
        if recorder is not None:
            traces, self._traces = self._traces, []
            traces.extend(
                recorder.tool_trace(self, c, o) for c, o in zip(calls, outcomes, strict=True)
            )
            if findings:
                traces.extend(loop_trace(recorder, self, finding) for finding in findings)
            recorder.step(self, "after_tools", traces=traces)

    def _watch_for_loops(
        self, calls: tuple[ToolCall, ...], outcomes: list[ToolOutcome]
    ) -> list[LoopFinding]:
        """Show the loop guard the turn's calls; a repeated one gets a note in its result
        (``outcomes`` is updated), and a failing loop at the limit stops the run."""
        guard = self._loop_guard
        if guard is None:
            guard = self._loop_guard = LoopGuard(self._max_repeated_failures())
        found = guard.watch(calls, outcomes, self.tools)
        for index, finding in found:
            outcomes[index] = self._note_loop(outcomes[index], finding)
        return [finding for _, finding in found]

    def _note_loop(self, outcome: ToolOutcome, finding: LoopFinding) -> ToolOutcome:
        message = outcome.message
        noted = replace(message, content=f"{message.content}\n\n{finding.note}")
        if finding.stops and self._loop_stop is None:
            self._loop_stop = finding
        if self.events.active:
            self.events.emit(
                ev.LoopNoticed(self.agent_id, finding.summary, finding.stops, finding.tool_call_id)
            )
        return replace(outcome, message=noted)

    def _max_repeated_failures(self) -> int:
        context = self.context
        return DEFAULT_MAX_REPEATED_FAILURES if context is None else context.max_repeated_failures

    def _stop_for_loop(self, started: float) -> RunResult:
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
        return self._finish("failed", self._partial_output(), started, error=error)

    async def _run_tool_call(self, call: ToolCall, *, recovering: bool = False) -> ToolOutcome:
        events = self.events
        if events.active:
            events.emit(ev.ToolCallStarted(self.agent_id, call))
        outcome = await self._settled_or_run(call, recovering)
        if events.active:
            events.emit(ev.ToolCallFinished(self.agent_id, call, outcome))
        return outcome

    async def _settled_or_run(self, call: ToolCall, recovering: bool) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if self._approved_again and self._approved_before(call):
            return await self._execute(call, tool, permissions=False)
        decision = self._decision_for(call)
        if decision is not None:
            return await self._apply_decision(call, tool, decision)
        if recovering and tool is not None and _lost_a_secret(call):
            return self._not_run(call, tool, _SECRET_LOST)
        if recovering and tool is not None and not tool.read_only and self._imported_call(call):
            raise RunPaused(
                self._question(call, "approval", "it was pending when the task was imported")
            )
        if recovering and tool is not None and self.recorder is not None:
            entry = self.recorder.ledger_by_call(self.agent_id).get(call.id)
            if entry is not None and entry.status != "started":
                return _outcome_from_ledger(call, entry)
            if entry is not None and not (tool.read_only or tool.idempotent):
                policy = self._interrupted_policy()
                if policy == "ask":
                    raise RunPaused(self._question(call, "crash_recovery"))
                if policy == "fail":
                    outcome = _error_outcome(call, _INTERRUPTED, "error")
                    self.recorder.write_ledger(
                        self.recorder.ledger_entry(self, call, tool, outcome)
                    )
                    return outcome
        return await self._execute(call, tool)

    def _imported_call(self, call: ToolCall) -> bool:
        context = self.context
        return context is not None and context.must_ask_again(call.id)

    def _interrupted_policy(self) -> InterruptedPolicy:
        context = self.context
        return "ask" if context is None else context.interrupted_tool_calls

    async def _execute(
        self,
        call: ToolCall,
        tool: Tool | None,
        *,
        permissions: PermissionPolicy | bool | None = True,
    ) -> ToolOutcome:
        hooks = self.hooks
        if hooks is not None and hooks:
            denial = await self._pre_tool_use(call)
            if denial is not None:
                return denial
        recorder = self.recorder
        tracked = recorder is not None and tool is not None and not tool.read_only
        if tracked:
            assert recorder is not None and tool is not None
            recorder.write_ledger(recorder.ledger_entry(self, call, tool))
        ctx = ToolContext(
            self.workspace,
            self.agent_id,
            self.agent_type,
            call.id,
            self,
            env=self.tool_env,
            sandbox=self.tool_sandbox,
            grants=self.file_grants,
        )
        policy = self.permissions if permissions is True else permissions or None
        if tool is None and self.tools.get(call.name) is None:
            outcome = await execute_tool_call(
                call,
                self.tools,
                ctx,
                offered=self._offered_names(),
                agent_types=self._agent_types(),
            )
        else:
            outcome = await execute_tool_call(call, self.tools, ctx, permissions=policy)
        if tracked:
            assert recorder is not None and tool is not None
            recorder.write_ledger(recorder.ledger_entry(self, call, tool, outcome))
        if hooks is not None and hooks:
            await self._post_tool_use(call, outcome)
        return outcome

    # -- people ------------------------------------------------------------------------------

    def _decision_for(self, call: ToolCall) -> HumanDecision | None:
        context = self.context
        return None if context is None else context.take_decision(call.id)

    async def _apply_decision(
        self, call: ToolCall, tool: Tool | None, decision: HumanDecision
    ) -> ToolOutcome:
        """Deliver a person's decision about ``call``: run it, or tell the model why not."""
        if call.name == ASK_HUMAN_TOOL_NAME:
            return _answer(call, decision)
        if decision.action == "reject":
            reason = decision.reason or "no reason given"
            outcome = _error_outcome(call, f"A person rejected this call: {reason}", "denied")
            recorder = self.recorder
            if recorder is not None and tool is not None and not tool.read_only:
                # close the ledger entry the paused call left open: it never ran
                recorder.write_ledger(recorder.ledger_entry(self, call, tool, outcome))
            return outcome
        if decision.action == "modify" and decision.arguments is not None:
            modified = ToolCall(call.id, call.name, dict(decision.arguments))
            outcome = await self._execute(modified, tool, permissions=False)
            outcome.ran_with = dict(decision.arguments)
            return outcome
        if _lost_a_secret(call) and self.recorder is not None:
            # The stored arguments are not the model's: running them would write
            # "[REDACTED]" where a secret was. Let the model send the call again instead.
            self._approved_again.add((call.name, _stored_form(call.arguments)))
            return self._not_run(call, tool, _SECRET_LOST_APPROVED)
        # the person approved: no second permission check
        return await self._execute(call, tool, permissions=False)

    def _approved_before(self, call: ToolCall) -> bool:
        """Whether a person approved this very call (as stored) before the pause."""
        recorder = self.recorder
        if recorder is None:
            return False
        key = (call.name, _stored_form(recorder.redactor.value(call.arguments)))
        if key not in self._approved_again:
            return False
        self._approved_again.discard(key)
        return True

    def _not_run(self, call: ToolCall, tool: Tool | None, text: str) -> ToolOutcome:
        """Answer ``call`` without running it, closing the ledger entry it may have left."""
        outcome = _error_outcome(call, text, "error")
        recorder = self.recorder
        if recorder is not None and tool is not None and not tool.read_only:
            recorder.write_ledger(recorder.ledger_entry(self, call, tool, outcome))
        return outcome

    def _question(self, call: ToolCall, kind: str, detail: str | None = None) -> HumanQuestion:
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
        return RunPaused(self._question(call, kind, detail))

    # -- hooks -------------------------------------------------------------------------------

    def _hook_payload(self, event: HookEventName, call: ToolCall) -> HookPayload:
        return HookPayload(
            event,
            self.agent_id,
            self.agent_type,
            parent_id=self.parent.agent_id if self.parent is not None else None,
            tool_name=call.name,
            tool_input=call.arguments,
            cwd=str(self.workspace),
        )

    async def _pre_tool_use(self, call: ToolCall) -> ToolOutcome | None:
        assert self.hooks is not None
        if not self.hooks.has("PreToolUse"):
            return None
        verdict = await self.hooks.run(self._hook_payload("PreToolUse", call), subject=call.name)
        if not verdict.block:
            return None
        reason = verdict.reason or "no reason given"
        return _error_outcome(call, f"Tool call denied by a PreToolUse hook: {reason}", "denied")

    async def _post_tool_use(self, call: ToolCall, outcome: ToolOutcome) -> None:
        assert self.hooks is not None
        if not self.hooks.has("PostToolUse"):
            return
        payload = self._hook_payload("PostToolUse", call)
        payload.tool_response = outcome.message.content
        payload.tool_error = outcome.message.is_error
        await self.hooks.run(payload, subject=call.name)

    # -- finishing ---------------------------------------------------------------------------

    def _partial_output(self) -> str:
        """Every piece of assistant text so far, so that nothing the agent wrote is lost."""
        texts = [m.content for m in self.messages if isinstance(m, AssistantMessage) and m.content]
        return "\n\n".join(texts)

    def _finish(
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
            traces, self._traces = self._traces, []
            traces.append(recorder.session_trace(self, "session_finished", error or status))
            recorder.step(self, "finished", traces=traces)
        if self.events.active:
            self.events.emit(ev.SessionFinished(self.agent_id, result))
        return result


_CUT_OFF = (
    "the model's answer was cut off at its output token limit (max_tokens), so it is "
    "incomplete; the output holds what it wrote. Ask for a shorter answer or split the work, "
    "or resume the task to let the model continue"
)

_SECRET_LOST = (
    "This call was not run: the run stopped before it finished, and its arguments held a "
    "secret, which is never stored, so they did not survive. Make the call again (read the "
    "value again first if you need it)."
)
_SECRET_LOST_APPROVED = (
    "A person approved this call, but its arguments held a secret, which is never stored, so "
    "they did not survive the pause and the call was not run. Make exactly the same call "
    "again: it will run without asking again."
)


def _lost_a_secret(call: ToolCall) -> bool:
    """Whether ``call``'s arguments, as the store gave them back, lost something to redaction."""
    from subagents.tracing.redact import REDACTED, TRUNCATED

    markers = (REDACTED, TRUNCATED)
    pending: list[object] = [call.arguments]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if any(marker in value for marker in markers):
                return True
        elif isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list | tuple):
            pending.extend(value)
    return False


def _stored_form(arguments: object) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


_INTERRUPTED = (
    "This call was started before the process stopped and did not report back, so it may or "
    "may not have taken effect. Check its effect before you try it again."
)

# Calls that start or steer other sessions, or a person (see runtime/delegation.py).
_DELEGATING_TOOLS = frozenset({*DELEGATION_TOOL_NAMES, ASK_HUMAN_TOOL_NAME})


def _error_outcome(call: ToolCall, text: str, status: str) -> ToolOutcome:
    message = ToolResultMessage(call.id, call.name, text, is_error=True)
    return ToolOutcome(message, call.name, 0.0, status)  # type: ignore[arg-type]


def _outcome_from_ledger(call: ToolCall, entry: ToolLedgerEntry) -> ToolOutcome:
    """A call that completed before a crash: its recorded result, without running it again."""
    message = ToolResultMessage(call.id, call.name, entry.result or "", entry.is_error)
    return ToolOutcome(message, entry.tool_name, 0.0, "error" if entry.is_error else "ok")


def _answer(call: ToolCall, decision: HumanDecision) -> ToolOutcome:
    if decision.action == "reject":
        reason = decision.reason or "no reason given"
        return _error_outcome(call, f"The person declined to answer: {reason}", "denied")
    answer = decision.values.get("answer") or decision.reason
    if decision.arguments and "answer" in decision.arguments:
        answer = str(decision.arguments["answer"])
    text = f"The person answered: {answer}" if answer else "The person approved."
    return ToolOutcome(ToolResultMessage(call.id, call.name, text), call.name, 0.0, "ok")
