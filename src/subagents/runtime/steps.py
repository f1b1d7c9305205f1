"""Steps: the units of work a session's loop is made of, each with plain inputs and outputs.

A session (:mod:`subagents.runtime.session`) sequences three kinds of step:

- :func:`model_step` asks the model for one turn and cleans up the tool calls it made
  (bounded, repaired, with ids unique in the session and derived, not random);
- :func:`tool_step` settles one tool call: runs it, or answers it from a person's decision,
  from the ledger of a call that finished before a crash, or by the crash-recovery policy;
- :func:`commit_step` writes a checkpoint of a :class:`~subagents.runtime.snapshot.SessionSnapshot`
  (:func:`commit_step_in_group` with those other sessions write at the same moment).

Each takes an input dataclass and returns an output dataclass, both with ``to_dict`` and
``from_dict``: the seam a durable-execution engine wraps, storing a step's output and handing
it back on replay instead of running the step again. What a step needs besides its input (the
model, the session's tools, its run, the recorder) is its environment, passed beside it and
never serialised. A step returns the trace records it made; the session commits them with its
next checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from subagents.messages import (
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_dict,
    message_to_dict,
    tool_call_from_dict,
    tool_call_to_dict,
)
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseCompleted,
    ToolSpec,
)
from subagents.models.tool_arguments import (
    bound_tool_calls,
    refuse_repairs_of_cut_calls,
)
from subagents.runtime import events as ev
from subagents.runtime.answer_check import (
    AnswerProblem,
    check_answer,
    collapse_loop,
    cut_call_may_run,
    retry_settings,
)
from subagents.runtime.pause import DeliveredDecision, HumanDecision, HumanQuestion, RunPaused
from subagents.runtime.tool_call import INTERRUPTED_TEXT, after_crash, in_ledger
from subagents.store.records import RecordFields
from subagents.tools.base import ToolContext
from subagents.tools.execution import ToolOutcome, execute_tool_call
from subagents.tools.name_repair import repair_tool_names
from subagents.tools.names import ASK_HUMAN_TOOL_NAME

if TYPE_CHECKING:
    from subagents.models.retry import RetryNotice
    from subagents.runtime.hooks import HookEventName, HookPayload
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.session import Session
    from subagents.runtime.snapshot import SessionSnapshot
    from subagents.store.records import ToolLedgerEntry
    from subagents.tools.base import Tool
    from subagents.tools.permissions import PermissionPolicy

__all__ = [
    "ANSWER_REJECTED_STEP",
    "CommitStepInput",
    "ModelStepInput",
    "ModelStepOutput",
    "ToolStepInput",
    "ToolStepOutput",
    "commit_step",
    "commit_step_in_group",
    "model_step",
    "tool_step",
]


def _records_to_list(records: Sequence[RecordFields]) -> list[RecordFields]:
    return [dict(record) for record in records]


def _records_from_list(data: Sequence[RecordFields]) -> tuple[RecordFields, ...]:
    return tuple(dict(record) for record in data)


# -- the model step --------------------------------------------------------------------------

ANSWER_REJECTED_STEP = "answer_rejected"
"""The trace step of an answer cut off inside a call, or caught in a loop (answer_check)."""


@dataclass(slots=True)
class ModelStepInput:
    """One turn's request: the system prompt, the history so far, the tools on offer.

    ``messages`` is the session's own list, not a copy (a copy per turn would cost every run
    for the sake of an engine): serialise the input when the step starts, before the session
    appends the answer.
    """

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    settings: ModelSettings
    turn: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "messages": [message_to_dict(message) for message in self.messages],
            "tools": [asdict(spec) for spec in self.tools],
            "settings": asdict(self.settings),
            "turn": self.turn,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelStepInput:
        return cls(
            system=str(data["system"]),
            messages=tuple(message_from_dict(m) for m in data["messages"]),
            tools=tuple(ToolSpec(**spec) for spec in data["tools"]),
            settings=ModelSettings(**data["settings"]),
            turn=int(data["turn"]),
        )


@dataclass(slots=True)
class ModelStepOutput:
    """The model's answer, the tool calls to run (cleaned up: see :func:`model_step`), the
    trace records of the request and how long it took."""

    response: ModelResponse
    calls: tuple[ToolCall, ...]
    traces: tuple[RecordFields, ...] = ()
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        response = self.response
        return {
            "response": {
                "text": response.text,
                "tool_calls": [tool_call_to_dict(call) for call in response.tool_calls],
                "usage": asdict(response.usage),
                "stop_reason": response.stop_reason,
                "model_name": response.model_name,
                "reasoning": [dict(block) for block in response.reasoning],
                "tool_calls_from_text": response.tool_calls_from_text,
            },
            "calls": [tool_call_to_dict(call) for call in self.calls],
            "traces": _records_to_list(self.traces),
            "duration_ms": self.duration_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelStepOutput:
        raw = data["response"]
        response = ModelResponse(
            text=str(raw["text"]),
            tool_calls=tuple(tool_call_from_dict(call) for call in raw["tool_calls"]),
            usage=Usage(**raw["usage"]),
            stop_reason=raw["stop_reason"],
            model_name=str(raw["model_name"]),
            reasoning=tuple(dict(block) for block in raw["reasoning"]),
            tool_calls_from_text=raw["tool_calls_from_text"],
        )
        return cls(
            response=response,
            calls=tuple(tool_call_from_dict(call) for call in data["calls"]),
            traces=_records_from_list(data["traces"]),
            duration_ms=float(data["duration_ms"]),
        )


async def model_step(session: Session, step: ModelStepInput) -> ModelStepOutput:
    """Ask ``session``'s model for one turn.

    The tool calls come back bounded, with names repaired and ids unique in the session; an
    id a server left out or reused is derived from the session, the turn and the position,
    so that a replay of the turn finds the same ids (and the same subagents).

    An answer cut off inside a tool call, or caught in a loop, is asked again once with a
    note saying so (:mod:`subagents.runtime.answer_check`); the second answer is the turn's,
    and the tokens of both are counted.
    """
    request = ModelRequest(step.system, step.messages, step.tools, step.settings)
    first = await _ask(session, step.turn, request)
    problem = check_answer(first.response, first.calls)
    if problem is None:
        return first
    traces = (*first.traces, *_noticed(session, problem, asking_again=True))
    again = ModelRequest(
        step.system,
        [*step.messages, UserMessage(problem.note)],
        step.tools,
        retry_settings(step.settings, problem),
    )
    second = await _ask(session, step.turn, again)
    still = check_answer(second.response, second.calls)
    traces += second.traces
    if still is not None:
        traces += _noticed(session, still, asking_again=False)
    response = second.response
    if still is not None and still.repetition is not None and not second.calls:
        response.text, _ = collapse_loop(response.text)
    usage = Usage()
    usage.add(first.response.usage)
    usage.add(response.usage)
    response.usage = usage
    return ModelStepOutput(response, second.calls, traces, first.duration_ms + second.duration_ms)


def _noticed(
    session: Session, problem: AnswerProblem, *, asking_again: bool
) -> tuple[RecordFields, ...]:
    """Say that the answer has ``problem`` (an event; the trace record returned); a loop the
    turn asked again did not mend counts toward the session's loop guard."""
    verdict = "asked again" if asking_again else "taken as it is"
    summary = f"{problem.summary}; {verdict}"
    if session.events.active:
        session.events.emit(ev.AnswerRejected(session.agent_id, summary, asking_again))
    if problem.repetition is not None and not asking_again:
        session.note_repeated_answer(problem.summary)
    recorder = session.recorder
    if recorder is None:
        return ()
    data: dict[str, Any] = {"kind": problem.kind, "asked_again": asking_again}
    if problem.repetition is not None:
        data["repeats"] = problem.repetition.repeats
        data["chars"] = problem.repetition.chars
    trace = recorder.trace(
        session.agent_id,
        session.agent_type,
        "session",
        ANSWER_REJECTED_STEP,
        recorder.redactor.text(summary),
        data,
        status="warning",
    )
    return (trace,)


async def _ask(session: Session, turn: int, request: ModelRequest) -> ModelStepOutput:
    """One request of the turn, its answer, its trace and its calls cleaned up."""
    events = session.events
    recorder = session.recorder
    if not events.active and recorder is None:
        response = await session.model.request(request)
        return ModelStepOutput(response, _clean_calls(session, response))
    sent = time.perf_counter()
    if events.active:
        from subagents.models.retry import listening_to_retries

        with listening_to_retries(lambda retry: _emit_retry(session, retry)):
            if session.stream:
                response = await _stream_model(session, request)
            else:
                response = await session.model.request(request)
    else:
        response = await session.model.request(request)
    duration_ms = (time.perf_counter() - sent) * 1000
    if events.active:
        events.emit(ev.ModelResponded(session.agent_id, turn, response, duration_ms))
    traces = (recorder.model_trace(session, response, duration_ms),) if recorder else ()
    return ModelStepOutput(response, _clean_calls(session, response), traces, duration_ms)


def _emit_retry(session: Session, retry: RetryNotice) -> None:
    if session.events.active:
        session.events.emit(
            ev.ModelRetrying(
                session.agent_id, retry.attempt, retry.max_attempts, retry.delay_s, retry.reason
            )
        )


async def _stream_model(session: Session, request: ModelRequest) -> ModelResponse:
    final: ModelResponse | None = None
    async for item in session.model.stream(request):
        if isinstance(item, ResponseCompleted):
            final = item.response
        else:
            session.events.emit(ev.TextDelta(session.agent_id, item.text))
    if final is None:
        raise RuntimeError(f"model {session.model.name} ended its stream without a response")
    return final


def _clean_calls(session: Session, response: ModelResponse) -> tuple[ToolCall, ...]:
    if not response.tool_calls:
        return ()
    tools = session.tools
    calls = refuse_repairs_of_cut_calls(
        bound_tool_calls(response.tool_calls),
        response.stop_reason,
        lambda name: cut_call_may_run(name, tools),
    )
    return _unique_ids(session, repair_tool_names(calls, tools))


def _unique_ids(session: Session, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """``calls`` with ids that no other call of the session has.

    Some servers send no ids or reuse ``call_0`` every turn; results are matched to calls
    by id, and a subagent's id is derived from its Task call's, so ids must be unique.
    """
    seen = session.call_ids()
    unique: list[ToolCall] | None = None
    for index, call in enumerate(calls):
        call_id = call.id
        if not call_id or call_id in seen:
            call_id = derived_call_id(session.agent_id, session.turns, index, call.id, seen)
            if unique is None:
                unique = list(calls)
            unique[index] = replace(call, id=call_id)
        seen.add(call_id)
    return calls if unique is None else tuple(unique)


def derived_call_id(session_id: str, turn: int, index: int, sent: str, seen: set[str]) -> str:
    """A new id for the ``index``-th call of ``turn``, sent with id ``sent`` (maybe empty),
    derived from the session, the turn and the position: a replay of the same turn finds the
    same id (and so the same subagent, whose id derives from it), where a random one would
    start another."""
    attempt = 0
    while True:
        source = f"{session_id}:{turn}:{index}:{sent}:{attempt}"
        call_id = f"{sent or 'call'}_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
        if call_id not in seen:
            return call_id
        attempt += 1


# -- the tool step ---------------------------------------------------------------------------


@dataclass(slots=True)
class ToolStepInput:
    """One tool call to settle; ``recovering``: it was left open by a crash or a pause;
    ``close_with_turn``: its closing ledger entry is committed with the turn's results (in
    :attr:`ToolStepOutput.closing`) instead of on its own as soon as it is known."""

    call: ToolCall
    recovering: bool = False
    close_with_turn: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": tool_call_to_dict(self.call),
            "recovering": self.recovering,
            "close_with_turn": self.close_with_turn,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolStepInput:
        return cls(
            tool_call_from_dict(data["call"]),
            bool(data.get("recovering", False)),
            bool(data.get("close_with_turn", False)),
        )


@dataclass(slots=True)
class ToolStepOutput:
    """What came of the call, its trace records, the ledger entries written for it, the
    person's decision it delivered, if one resumed it, and the ledger entry that closes it
    when that goes to the store with the turn's commit (``close_with_turn``)."""

    outcome: ToolOutcome
    traces: tuple[RecordFields, ...] = ()
    ledger: tuple[RecordFields, ...] = ()
    decision: DeliveredDecision | None = None
    closing: tuple[RecordFields, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "outcome": {
                "message": message_to_dict(outcome.message),
                "tool_name": outcome.tool_name,
                "duration_ms": outcome.duration_ms,
                "status": outcome.status,
                "ran_with": outcome.ran_with,
            },
            "traces": _records_to_list(self.traces),
            "ledger": _records_to_list(self.ledger),
            "decision": self.decision.to_dict() if self.decision is not None else None,
            "closing": _records_to_list(self.closing),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolStepOutput:
        raw = data["outcome"]
        message = message_from_dict(raw["message"])
        assert isinstance(message, ToolResultMessage)
        outcome = ToolOutcome(
            message, str(raw["tool_name"]), float(raw["duration_ms"]), raw["status"]
        )
        outcome.ran_with = raw.get("ran_with")
        decision = data.get("decision")
        return cls(
            outcome=outcome,
            traces=_records_from_list(data["traces"]),
            ledger=_records_from_list(data["ledger"]),
            decision=DeliveredDecision.from_dict(decision) if decision is not None else None,
            closing=_records_from_list(data.get("closing", ())),
        )


async def tool_step(session: Session, step: ToolStepInput) -> ToolStepOutput:
    """Settle one of ``session``'s tool calls (see :class:`_CallStep` for the ways)."""
    call = step.call
    events = session.events
    if events.active:
        events.emit(ev.ToolCallStarted(session.agent_id, call))
    settling = _CallStep(session, call, step.recovering, step.close_with_turn)
    outcome = await settling.settle()
    if events.active:
        events.emit(ev.ToolCallFinished(session.agent_id, call, outcome))
    recorder = session.recorder
    delivered = settling.delivered
    traces: tuple[RecordFields, ...] = ()
    if recorder is not None:
        traces = (recorder.tool_trace(session, call, outcome),)
        if delivered is not None:
            traces = (recorder.decision_trace(session, delivered), *traces)
    closing = (settling.closing,) if settling.closing is not None else ()
    return ToolStepOutput(outcome, traces, tuple(settling.ledger), delivered, closing)


class _CallStep:
    """One tool call being settled, and the ledger entries written on the way."""

    __slots__ = (
        "call",
        "close_with_turn",
        "closing",
        "delivered",
        "ledger",
        "recovering",
        "session",
    )

    def __init__(
        self, session: Session, call: ToolCall, recovering: bool, close_with_turn: bool = False
    ) -> None:
        self.session = session
        self.call = call
        self.recovering = recovering
        self.close_with_turn = close_with_turn
        self.ledger: list[RecordFields] = []
        self.closing: RecordFields | None = None
        self.delivered: DeliveredDecision | None = None

    def _write_ledger(self, entry: RecordFields) -> None:
        recorder = self.session.recorder
        assert recorder is not None
        recorder.write_ledger(entry)
        self.ledger.append(entry)

    def _open_ledger(self, tool: Tool) -> None:
        """'started' is durable before the call runs: written now unless the turn's commit
        already holds it."""
        session, call = self.session, self.call
        if call.id in session.ledger_opened:
            session.ledger_opened.discard(call.id)
            return
        recorder = session.recorder
        assert recorder is not None
        self._write_ledger(recorder.ledger_entry(session.agent_id, call, tool))

    def _close_ledger(self, tool: Tool, outcome: ToolOutcome) -> None:
        session, call = self.session, self.call
        session.ledger_opened.discard(call.id)
        recorder = session.recorder
        assert recorder is not None
        if self.close_with_turn:  # the tool result message, in the same commit, holds it
            self.closing = recorder.ledger_entry(
                session.agent_id, call, tool, outcome, with_result=False
            )
        else:
            self._write_ledger(recorder.ledger_entry(session.agent_id, call, tool, outcome))

    async def settle(self) -> ToolOutcome:
        try:
            return await self._settle()
        except RunPaused as pause:
            # an agent in the background waits for the person alone (runtime/inbox.py)
            session, question = self.session, pause.question
            context = session.context
            mine = question.session_id == session.agent_id and question.tool_call_id == (
                self.call.id
            )
            if not mine or context is None or not context.waits_alone(session.agent_id):
                raise
            decision = await session.wait_for_person(question)
            self.delivered = DeliveredDecision(question.wait_point, decision, self.call.name)
            return await self.apply_decision(session.tools.get(self.call.name), decision)

    async def _settle(self) -> ToolOutcome:
        session, call, recovering = self.session, self.call, self.recovering
        tool = session.tools.get(call.name)
        # a call the model sends again after a person approved it (never the stored one a
        # pause or a crash left open: its arguments are the redacted ones)
        if not recovering and session.approved_again and self._approved_before():
            return await self.execute(call, tool, permissions=False)
        context = session.context
        if context is not None and context.pending_decisions:
            wait_point = session.wait_point(call.id)
            decision = context.take_decision(wait_point)
            if decision is not None:
                self.delivered = DeliveredDecision(wait_point, decision, call.name)
                return await self.apply_decision(tool, decision)
        if recovering and tool is not None and lost_a_secret(call):
            return self.not_run(tool, _SECRET_LOST)
        if recovering and tool is not None and not tool.read_only and self._imported():
            raise RunPaused(
                session.question(call, "approval", "it was pending when the task was imported")
            )
        recorder = session.recorder
        if recovering and tool is not None and recorder is not None:
            entry = recorder.ledger_by_call(session.agent_id).get(call.id)
            policy = "ask" if context is None else context.interrupted_tool_calls
            recovery = after_crash(entry, tool, policy)
            if recovery == "settled":
                assert entry is not None
                return _outcome_from_ledger(call, entry)
            if recovery == "ask":
                raise RunPaused(session.question(call, "crash_recovery"))
            if recovery == "fail":
                outcome = error_outcome(call, INTERRUPTED_TEXT, "error")
                self._close_ledger(tool, outcome)
                return outcome
        return await self.execute(call, tool)

    def _imported(self) -> bool:
        context = self.session.context
        return context is not None and context.must_ask_again(self.call.id)

    async def execute(
        self,
        call: ToolCall,
        tool: Tool | None,
        *,
        permissions: PermissionPolicy | bool | None = True,
    ) -> ToolOutcome:
        session = self.session
        recorder = session.recorder
        tracked = recorder is not None and tool is not None and in_ledger(tool)
        hooks = session.hooks
        if hooks is not None and hooks:
            denial = await _pre_tool_use(session, call)
            if denial is not None:
                if tracked and call.id in session.ledger_opened:
                    assert tool is not None
                    self._close_ledger(tool, denial)
                return denial
        if tracked:
            assert tool is not None
            self._open_ledger(tool)
        ctx = ToolContext(
            session.workspace,
            session.agent_id,
            session.agent_type,
            call.id,
            session,
            env=session.tool_env,
            sandbox=session.tool_sandbox,
            grants=session.file_grants,
        )
        policy = session.permissions if permissions is True else permissions or None
        if tool is None and session.tools.get(call.name) is None:
            outcome = await execute_tool_call(
                call,
                session.tools,
                ctx,
                offered=session.offered_names(),
                agent_types=session.agent_types(),
            )
        else:
            outcome = await execute_tool_call(call, session.tools, ctx, permissions=policy)
        if tracked:
            assert tool is not None
            self._close_ledger(tool, outcome)
        if hooks is not None and hooks:
            await _post_tool_use(session, call, outcome)
        return outcome

    async def apply_decision(self, tool: Tool | None, decision: HumanDecision) -> ToolOutcome:
        """Deliver a person's decision about the call: run it, or tell the model why not."""
        session, call = self.session, self.call
        if call.name == ASK_HUMAN_TOOL_NAME:
            return _answer(call, decision)
        if decision.action == "reject":
            reason = decision.reason or "no reason given"
            outcome = error_outcome(call, f"A person rejected this call: {reason}", "denied")
            if session.recorder is not None and tool is not None and in_ledger(tool):
                self._close_ledger(tool, outcome)  # the paused call's entry: it never ran
            return outcome
        if decision.action == "modify" and decision.arguments is not None:
            modified = ToolCall(call.id, call.name, dict(decision.arguments))
            outcome = await self.execute(modified, tool, permissions=False)
            outcome.ran_with = dict(decision.arguments)
            return outcome
        if lost_a_secret(call) and session.recorder is not None:
            # The stored arguments are not the model's: running them would write
            # "[REDACTED]" where a secret was. Let the model send the call again instead.
            session.approved_again.add((call.name, stored_form(call.arguments)))
            return self.not_run(tool, _SECRET_LOST_APPROVED)
        # the person approved: no second permission check
        return await self.execute(call, tool, permissions=False)

    def _approved_before(self) -> bool:
        """Whether a person approved this very call (as stored) before the pause."""
        session, call = self.session, self.call
        recorder = session.recorder
        if recorder is None:
            return False
        key = (call.name, stored_form(recorder.redactor.value(call.arguments)))
        if key not in session.approved_again:
            return False
        session.approved_again.discard(key)
        return True

    def not_run(self, tool: Tool | None, text: str) -> ToolOutcome:
        """Answer the call without running it, closing the ledger entry it may have left."""
        session, call = self.session, self.call
        outcome = error_outcome(call, text, "error")
        if session.recorder is not None and tool is not None and in_ledger(tool):
            self._close_ledger(tool, outcome)
        return outcome


# -- hooks around a tool ---------------------------------------------------------------------


def _hook_payload(session: Session, event: HookEventName, call: ToolCall) -> HookPayload:
    from subagents.runtime.hooks import HookPayload

    return HookPayload(
        event,
        session.agent_id,
        session.agent_type,
        parent_id=session.parent.agent_id if session.parent is not None else None,
        tool_name=call.name,
        tool_input=call.arguments,
        cwd=str(session.workspace),
    )


async def _pre_tool_use(session: Session, call: ToolCall) -> ToolOutcome | None:
    hooks = session.hooks
    assert hooks is not None
    if not hooks.has("PreToolUse"):
        return None
    verdict = await hooks.run(_hook_payload(session, "PreToolUse", call), subject=call.name)
    if not verdict.block:
        return None
    reason = verdict.reason or "no reason given"
    return error_outcome(call, f"Tool call denied by a PreToolUse hook: {reason}", "denied")


async def _post_tool_use(session: Session, call: ToolCall, outcome: ToolOutcome) -> None:
    hooks = session.hooks
    assert hooks is not None
    if not hooks.has("PostToolUse"):
        return
    payload = _hook_payload(session, "PostToolUse", call)
    payload.tool_response = outcome.message.content
    payload.tool_error = outcome.message.is_error
    await hooks.run(payload, subject=call.name)


# -- the commit step -------------------------------------------------------------------------


@dataclass(slots=True)
class CommitStepInput:
    """A checkpoint to write: the session as it stands, where in the loop, and the trace
    records, ledger entries, question (where it waits) and decisions (delivered in this step)
    that go with it."""

    snapshot: SessionSnapshot
    position: str
    traces: tuple[RecordFields, ...] = ()
    ledger: tuple[RecordFields, ...] = ()
    question: HumanQuestion | None = None
    decisions: tuple[DeliveredDecision, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot": self.snapshot.to_dict(),
            "position": self.position,
            "traces": _records_to_list(self.traces),
            "ledger": _records_to_list(self.ledger),
            "question": self.question.to_dict() if self.question is not None else None,
            "decisions": [delivered.to_dict() for delivered in self.decisions],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommitStepInput:
        from subagents.runtime.snapshot import SessionSnapshot

        question = data.get("question")
        return cls(
            snapshot=SessionSnapshot.from_dict(data["snapshot"]),
            position=str(data["position"]),
            traces=_records_from_list(data.get("traces", ())),
            ledger=_records_from_list(data.get("ledger", ())),
            question=HumanQuestion.from_dict(question) if question is not None else None,
            decisions=tuple(DeliveredDecision.from_dict(d) for d in data.get("decisions", ())),
        )


def commit_step(recorder: Recorder, step: CommitStepInput) -> int:
    """Write ``step`` to the store in one transaction; returns its checkpoint's sequence."""
    return recorder.commit(
        step.snapshot,
        step.position,
        traces=step.traces,
        ledger=step.ledger,
        question=step.question,
        decisions=step.decisions,
    )


def commit_step_in_group(
    recorder: Recorder, step: CommitStepInput, committed: Callable[[int | None], None]
) -> Awaitable[None]:
    """:func:`commit_step`, in one transaction with the steps other sessions commit in the
    same turn of the event loop; ``committed`` gets the checkpoint's sequence once it is
    stored. The step's rows are built at once; awaiting it waits for the commit (the
    awaitable of the commit itself: no coroutine of its own to resume, as hundreds of
    sessions waiting on one group commit would each pay)."""
    return recorder.commit_in_group(
        step.snapshot,
        step.position,
        committed,
        traces=step.traces,
        ledger=step.ledger,
        decisions=step.decisions,
    )


# -- answers that are not a tool's ------------------------------------------------------------

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


def lost_a_secret(call: ToolCall) -> bool:
    """Whether ``call``'s arguments, as the store gave them back, lost something to redaction."""
    from subagents.redaction import REDACTED, TRUNCATED

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


def stored_form(arguments: object) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def error_outcome(call: ToolCall, text: str, status: str) -> ToolOutcome:
    message = ToolResultMessage(call.id, call.name, text, is_error=True)
    return ToolOutcome(message, call.name, 0.0, status)  # type: ignore[arg-type]


def _outcome_from_ledger(call: ToolCall, entry: ToolLedgerEntry) -> ToolOutcome:
    """A call that completed before a crash: its recorded result, without running it again."""
    message = ToolResultMessage(call.id, call.name, entry.result or "", entry.is_error)
    return ToolOutcome(message, entry.tool_name, 0.0, "error" if entry.is_error else "ok")


def _answer(call: ToolCall, decision: HumanDecision) -> ToolOutcome:
    if decision.action == "reject":
        reason = decision.reason or "no reason given"
        return error_outcome(call, f"The person declined to answer: {reason}", "denied")
    answer = decision.values.get("answer") or decision.reason
    if decision.arguments and "answer" in decision.arguments:
        answer = str(decision.arguments["answer"])
    text = f"The person answered: {answer}" if answer else "The person approved."
    return ToolOutcome(ToolResultMessage(call.id, call.name, text), call.name, 0.0, "ok")
