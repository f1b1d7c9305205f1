"""Running a workflow as a durable task.

A workflow run is a task in the store, like any run. Its progress (the state, the node to run
next, how often each node ran, the path taken, the parallel branches under way) is the state
of a checkpoint of the task's *workflow session*, written after every node execution: a crash
loses at most the node that was running, and that node is found again on resume.

- An **agent node** runs its agent as a top-level session of the task whose id derives from
  the node's key (``review#0``), so a resume after a crash finds the session and continues it
  (see :meth:`subagents.runtime.run.Run.step`), and a finished one is not run again.
- A **tool node** follows the ledger rules of the agent loop: a side-effecting call is
  recorded as started before it runs; found started but not finished after a crash, it asks a
  person rather than running twice. It runs under the run's permission policy: where a call
  would ask, the run pauses at the node.
- A **human node**, and a node listed in ``checkpoints``, pause the run with
  ``awaiting_human`` at a wait point whose key is the node's; the decision that resumes it is
  recorded in the next checkpoint and in the trace.
- A **fan-out** runs its branches concurrently, each up to the join; the join merges their
  updates in the order of the fan-out's list.

Node keys are ``{lane}{node}#{n}``: ``n`` counts the node's executions in its lane (the main
line, or one branch of a fan-out), so every id a replay needs is derived, never random.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any

from subagents.errors import (
    SubagentsError,
    WorkflowConditionError,
    WorkflowError,
    WorkflowValidationError,
)
from subagents.messages import ToolCall, Usage
from subagents.runtime.budget import Budget, budget_setting, restored_budget, run_limits
from subagents.runtime.events import (
    WorkflowMapProgress,
    WorkflowNodeFinished,
    WorkflowNodeStarted,
)
from subagents.runtime.pause import DeliveredDecision, HumanDecision, HumanQuestion, WaitPoint
from subagents.runtime.result import RunResult
from subagents.runtime.steps import error_outcome
from subagents.runtime.tool_call import INTERRUPTED_TEXT, after_crash, in_ledger
from subagents.status import RunStatus
from subagents.store.base import StepWrite
from subagents.store.records import CheckpointRecord, TraceRecord
from subagents.tools.base import ToolContext
from subagents.tools.execution import execute_tool_call
from subagents.workflows.conditions import evaluate_condition, render_template, route_key
from subagents.workflows.graph import (
    END,
    AgentNode,
    ConditionNode,
    HumanNode,
    JoinNode,
    MapNode,
    ToolNode,
    Workflow,
)
from subagents.workflows.state import StateUpdate, WorkflowMessage, WorkflowState
from subagents.workflows.validate import problem_errors, validate_workflow

if TYPE_CHECKING:
    from subagents.runtime.permissions import RuleArguments
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.services import Services
    from subagents.store.records import TaskRecord, ToolLedgerEntry
    from subagents.tools.base import Tool, ToolRegistry
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest, PermissionPolicy

__all__ = [
    "PROGRESS_VERSION",
    "NodeVisit",
    "WorkflowOutcome",
    "check_workflow",
    "definition_of",
    "list_to_map",
    "node_session_id",
    "resume_workflow",
    "run_workflow",
    "stored_input",
    "workflow_session_id",
    "workflow_task",
]

PROGRESS_VERSION = 1
"""The ``schema_version`` of a workflow checkpoint's progress."""

_WORKFLOW_NAMESPACE = uuid.UUID("3d6f0a8e-5b1c-4e7a-9f2d-8c4b6a1e0f93")


def workflow_session_id(task_id: str) -> str:
    """The id of a workflow task's own session (its checkpoints and wait points)."""
    return str(uuid.uuid5(_WORKFLOW_NAMESPACE, task_id))


def node_session_id(task_id: str, key: str) -> str:
    """The id of the session an agent node runs in: derived from the task and the node key."""
    return str(uuid.uuid5(_WORKFLOW_NAMESPACE, f"{task_id}:{key}"))


@dataclass(slots=True)
class NodeVisit:
    """One node execution: which node, under which key, how it went, where it led."""

    node: str
    key: str
    kind: str
    status: str = "ok"
    duration_ms: float = 0.0
    session_id: str | None = None
    next: str | list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "key": self.key,
            "kind": self.kind,
            "status": self.status,
            "duration_ms": round(self.duration_ms, 3),
            "session_id": self.session_id,
            "next": self.next,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeVisit:
        nxt = data.get("next")
        return cls(
            node=str(data["node"]),
            key=str(data["key"]),
            kind=str(data.get("kind", "")),
            status=str(data.get("status", "ok")),
            duration_ms=float(data.get("duration_ms") or 0.0),
            session_id=data.get("session_id"),
            next=[str(n) for n in nxt] if isinstance(nxt, list) else nxt,
        )


@dataclass(slots=True)
class WorkflowOutcome:
    """What a workflow run leaves: its final state and the path it took."""

    name: str
    state: WorkflowState
    path: list[NodeVisit]
    iterations: int


@dataclass(slots=True)
class _Lane:
    """The main line of a run, or one branch of a fan-out."""

    prefix: str
    cursor: str | None
    state: WorkflowState
    counts: dict[str, int] = field(default_factory=dict)
    update: StateUpdate = field(default_factory=StateUpdate)
    """What a branch changed since the fan-out (merged at the join)."""
    done: bool = False

    def key(self, node: str) -> str:
        return f"{self.prefix}{node}#{self.counts.get(node, 0)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "cursor": self.cursor,
            "state": self.state.to_dict(),
            "counts": dict(self.counts),
            "update": self.update.to_dict(),
            "done": self.done,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _Lane:
        return cls(
            prefix=str(data.get("prefix", "")),
            cursor=data.get("cursor"),
            state=WorkflowState.from_dict(data.get("state") or {}),
            counts={str(k): int(v) for k, v in (data.get("counts") or {}).items()},
            update=StateUpdate.from_dict(data.get("update") or {}),
            done=bool(data.get("done")),
        )


@dataclass(slots=True)
class _FanOut:
    key: str
    branches: list[_Lane]

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "branches": [b.to_dict() for b in self.branches]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _FanOut:
        return cls(str(data["key"]), [_Lane.from_dict(b) for b in data.get("branches") or ()])


@dataclass(slots=True)
class _Progress:
    main: _Lane
    iterations: int = 0
    path: list[NodeVisit] = field(default_factory=list)
    fanout: _FanOut | None = None
    confirmed: list[str] = field(default_factory=list)
    """Keys of checkpoint nodes a person let through (so a resume does not ask again)."""
    checkpoints: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": PROGRESS_VERSION,
            "main": self.main.to_dict(),
            "iterations": self.iterations,
            "path": [visit.to_dict() for visit in self.path],
            "fanout": self.fanout.to_dict() if self.fanout is not None else None,
            "confirmed": list(self.confirmed),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], checkpoints: int) -> _Progress:
        version = data.get("schema_version", 1)
        if not isinstance(version, int) or version > PROGRESS_VERSION:
            raise WorkflowError(
                f"this workflow task was written by a newer subagents (progress schema "
                f"{version}; this one reads up to {PROGRESS_VERSION})",
                hint="upgrade with 'pip install -U subagents'",
            )
        fanout = data.get("fanout")
        return cls(
            main=_Lane.from_dict(data.get("main") or {}),
            iterations=int(data.get("iterations") or 0),
            path=[NodeVisit.from_dict(v) for v in data.get("path") or ()],
            fanout=_FanOut.from_dict(fanout) if isinstance(fanout, Mapping) else None,
            confirmed=[str(k) for k in data.get("confirmed") or ()],
            checkpoints=checkpoints,
        )


@dataclass(slots=True)
class _Tally:
    """A map node's items: how many ended well, failed, run now."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0


class _ItemFailed(Exception):
    """One item of a map node failed (its tool failed, its agent did not complete, its
    result did not match the outputSchema): ``on_item_error`` says what follows."""


def list_to_map(value: Any) -> Any:
    """A map's list: the field's value, or the list its text holds as JSON (a tool node's
    output is text)."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
        return parsed if isinstance(parsed, list) else value
    return value


def _typed_item(node: MapNode, content: str) -> Any:
    """A tool item's result: as it is, or read as JSON held to the node's outputSchema."""
    if node.output_schema is None:
        return content
    from subagents.runtime.typed_result import typed_answer

    typed, problem = typed_answer(node.output_schema, content)
    if typed is None:
        raise _ItemFailed(f"its result does not match the outputSchema: {problem}")
    return json.loads(typed)


class _Paused(BaseException):
    """A node waits for a person (raised inside the engine, never out of it; a
    BaseException, like RunPaused, so that no tool layer turns it into a failure)."""

    def __init__(self, question: HumanQuestion) -> None:
        super().__init__(question.text)
        self.question = question


class _Stopped(BaseException):
    """The run ends early: ``status`` says how, the message why."""

    def __init__(self, status: RunStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


# -- entry points ------------------------------------------------------------------------------


async def run_workflow(
    runtime: Services,
    workflow: Workflow,
    input: str | Mapping[str, Any] = "",
    *,
    task_id: str | None = None,
    description: str | None = None,
) -> RunResult:
    """Run ``workflow`` from its entry point with ``input`` (text, appended as the first
    message and kept as the ``input`` field; or a mapping of initial state fields)."""
    from subagents.runtime.recorder import Recorder

    store = runtime.store
    state = _initial_state(input)
    progress = _Progress(main=_Lane("", workflow.entry_point, state))
    recorder = None
    if store is not None:
        task = workflow_task(runtime, workflow, input, task_id=task_id, description=description)
        recorder = Recorder(store, task, runtime.redactor())
        recorder.start_task()
        store.claim_task(task.id, runtime.owner)
    engine = _Engine(runtime, workflow, recorder, progress, {})
    return await engine.drive()


def workflow_task(
    runtime: Services,
    workflow: Workflow,
    input: str | Mapping[str, Any] = "",
    *,
    task_id: str | None = None,
    description: str | None = None,
) -> TaskRecord:
    """The task record of a run of ``workflow`` on ``input`` (status ``pending``; not yet
    redacted): what it keeps to run, or to resume, in any process."""
    from subagents.store.records import TaskRecord, new_id

    state = _initial_state(input)
    text = state.extra.get("input") if not isinstance(input, Mapping) else None
    prompt = text if isinstance(text, str) else json.dumps(state.as_dict(), default=str)
    if not isinstance(text, str):
        text = None
    first = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return TaskRecord(
        id=task_id or new_id(),
        description=description or f"workflow {workflow.name}: {first}"[:100],
        prompt=prompt,
        model=runtime.model_chooser.main_name,
        workspace=str(runtime.workspace),
        tags=["workflow"],
        settings={
            "permission_mode": runtime.permissions.mode,
            "headless": runtime.permissions.headless,
            # a mapping's input is kept as the prompt, JSON: a resume before the first
            # checkpoint starts from those fields again, not from their text
            "workflow": {**_stored_definition(workflow), "state_input": text is None},
            **budget_setting(run_limits(runtime)),
        },
    )


def check_workflow(runtime: Services, workflow: Workflow, *, source: str = "") -> None:
    """Refuse ``workflow`` when it has problems here (unknown or inactive agents, tools
    ``runtime`` does not have, a broken graph): every one, with its location."""
    agents = {name: record.status for name, record in runtime.inventory.records.items()}
    tools = runtime.toolbox.base_tools().names()
    errors = problem_errors(validate_workflow(workflow, agents=agents, tools=tools))
    if errors:
        raise WorkflowValidationError(workflow.name, errors, source=source)


async def resume_workflow(
    runtime: Services,
    task: TaskRecord,
    rules: RuleArguments,
    decisions: dict[WaitPoint, HumanDecision],
    *,
    workflow: Workflow | None = None,
) -> RunResult:
    """Continue the workflow task ``task`` (claimed by the caller) at its node. The graph is
    the one the task started with (``workflow`` for one built in code), checked again against
    ``runtime``'s agents and tools; an imported task is made this workspace's own first."""
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.resumption import adopt_if_imported

    store = runtime.store
    assert store is not None
    try:
        # an archive's settings are not taken
        adopt_if_imported(task, rules, workspace=runtime.workspace, permissions=runtime.permissions)
        if workflow is None:
            workflow = definition_of(task)
        check_workflow(runtime, workflow, source=f"task {task.id[:8]}")
    except BaseException:
        store.release_task(task.id, runtime.owner)
        raise
    recorder = Recorder(store, task, runtime.redactor())
    session_id = workflow_session_id(task.id)
    latest = store.latest_checkpoint(task.id, session_id)
    if latest is None:  # stopped before its first node finished: start over, same ids
        state = _initial_state(stored_input(task))
        progress = _Progress(main=_Lane("", workflow.entry_point, state))
    else:
        try:
            progress = _Progress.from_dict(
                latest.state.get("workflow") or {}, _checkpoint_count(latest.checkpoint_id)
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            store.release_task(task.id, runtime.owner)
            raise WorkflowError(
                f"Task {task.id}: its last workflow checkpoint cannot be read "
                f"({type(error).__name__}: {error}).",
                hint=f"see it with 'subagents tasks show {task.id[:8]}'; start the workflow again",
            ) from None
    recorder.resume_task()
    engine = _Engine(runtime, workflow, recorder, progress, decisions)
    return await engine.drive()


def stored_input(task: TaskRecord) -> str | Mapping[str, Any]:
    """The input a workflow task started with: its text, or the state fields it was given."""
    stored = task.settings.get("workflow")
    if isinstance(stored, Mapping) and stored.get("state_input"):
        try:
            fields = json.loads(task.prompt)
        except (json.JSONDecodeError, RecursionError):
            fields = None
        if isinstance(fields, dict):
            return fields
    return task.prompt


def _stored_definition(workflow: Workflow) -> dict[str, Any]:
    """What the task keeps of its workflow: the graph itself, so that a resume runs the graph
    the task started with (a code-built graph with Python conditions keeps only its name)."""
    try:
        return {"name": workflow.name, "definition": workflow.to_file_dict()}
    except Exception:  # a callable condition cannot be saved
        return {"name": workflow.name, "definition": None}


def definition_of(task: TaskRecord) -> Workflow:
    """The graph a workflow task started with, as its record keeps it."""
    stored = task.settings.get("workflow")
    definition = stored.get("definition") if isinstance(stored, Mapping) else None
    if not isinstance(definition, Mapping):
        name = stored.get("name") if isinstance(stored, Mapping) else "?"
        raise WorkflowError(
            f"Task {task.id} runs the workflow {name!r}, built in code with Python conditions, "
            "so its graph is not in the store.",
            hint="resume it from that code: Runtime.resume_workflow(task_id, workflow)",
        )
    try:
        return Workflow.model_validate(dict(definition))
    except ValueError as error:  # pydantic's ValidationError: a damaged or tampered record
        raise WorkflowError(
            f"Task {task.id} holds a workflow graph this subagents cannot read: "
            f"{str(error).splitlines()[0]}",
            hint=f"see it with 'subagents tasks show {task.id[:8]}'; start the workflow again",
        ) from None


def _checkpoint_count(checkpoint_id: str) -> int:
    index = checkpoint_id.rpartition(":")[2]
    return int(index) + 1 if index.isdigit() else 0


def _initial_state(input: str | Mapping[str, Any]) -> WorkflowState:
    if isinstance(input, Mapping):
        state = WorkflowState.from_dict(dict(input))
        text = input.get("input")
        if isinstance(text, str) and not state.messages:
            state.messages.append(WorkflowMessage("user", text))
        return state
    state = WorkflowState(extra={"input": input})
    if input:
        state.messages.append(WorkflowMessage("user", input))
    return state


# -- the engine --------------------------------------------------------------------------------


class _Engine:
    """One workflow run, from its progress to its end or its next pause."""

    def __init__(
        self,
        runtime: Services,
        workflow: Workflow,
        recorder: Recorder | None,
        progress: _Progress,
        decisions: dict[WaitPoint, HumanDecision],
    ) -> None:
        self.runtime = runtime
        self.workflow = workflow
        self.recorder = recorder
        self.progress = progress
        self.decisions = dict(decisions)
        self.delivered: list[DeliveredDecision] = []
        self.task_id = recorder.task_id if recorder is not None else "workflow"
        self.session_id = workflow_session_id(self.task_id)
        self.started = perf_counter()
        self.traces: list[TraceRecord] = []
        self._tools: dict[str, Tool] | None = None
        self.usage_by_model: dict[str, Usage] = {}  # the agent nodes' calls
        self._ledger_read: Mapping[str, ToolLedgerEntry] | None = None  # see _ledger
        # one budget for every agent node (see subagents.runtime.budget)
        self.budget = (
            restored_budget(recorder.task, recorder.store.sessions(recorder.task_id), runtime)
            if recorder is not None
            else Budget(run_limits(runtime))
        )

    async def drive(self) -> RunResult:
        from subagents.store.lease import LeaseKeeper

        recorder = self.recorder
        keeper = None
        if recorder is not None:
            keeper = LeaseKeeper(recorder.store, recorder.task_id, self.runtime.owner)
            keeper.start()
        result: RunResult | None = None
        try:
            await self.runtime.toolbox.start_mcp()
            result = await self._drive()
        finally:
            if keeper is not None:
                await keeper.stop()
            if recorder is not None:
                if result is not None:
                    recorder.finish_task(result)
                recorder.store.release_task(recorder.task_id, self.runtime.owner)
        return result

    async def _drive(self) -> RunResult:
        progress = self.progress
        try:
            while True:
                if progress.fanout is not None:
                    await self._run_fanout(progress.fanout)
                    continue
                cursor = progress.main.cursor
                if cursor is None or cursor == END:
                    break
                await self._run_node(progress.main, cursor)
        except _Paused as paused:
            self._commit(position="awaiting_human", question=paused.question)
            return self._result("awaiting_human", question=paused.question)
        except _Stopped as stopped:
            self._commit(position="finished")
            return self._result(stopped.status, error=str(stopped))
        self._commit(position="finished")
        return self._result("completed")

    # -- nodes ---------------------------------------------------------------------------------

    async def _run_node(self, lane: _Lane, name: str) -> None:
        workflow = self.workflow
        progress = self.progress
        node = workflow.nodes.get(name)
        if node is None:
            raise _Stopped("failed", f"the workflow has no node {name!r}")
        if progress.iterations >= workflow.max_iterations:
            raise _Stopped(
                "max_turns",
                f"max_iterations ({workflow.max_iterations}) node executions reached before "
                f"node {name!r}; raise max_iterations in the workflow if it needs more",
            )
        key = lane.key(name)
        if name in workflow.checkpoints and key not in progress.confirmed:
            self._confirm(lane, name, key)
        started = perf_counter()
        events = self.runtime.events
        if events.active:
            events.emit(
                WorkflowNodeStarted(
                    self.session_id, workflow.name, name, node.type, key, _detail(node)
                )
            )
        lane.state.current_agent = node.agent if isinstance(node, AgentNode) else None
        update, session_id = await self._execute(node, name, key, lane)
        visit = NodeVisit(name, key, node.type, "ok", 0.0, session_id)
        lane.state.apply(update)
        if lane.prefix:  # a branch remembers what it changed, for the join
            lane.update.messages.extend(update.messages)
            lane.update.fields.update(update.fields)
        lane.counts[name] = lane.counts.get(name, 0) + 1
        progress.iterations += 1
        target = self._next(name, lane.state)
        visit.next = target
        visit.duration_ms = (perf_counter() - started) * 1000.0
        progress.path.append(visit)
        if isinstance(target, list):
            if lane.prefix:
                raise _Stopped("failed", f"node {name!r} fans out inside a branch of a fan-out")
            branches = [
                _Lane(f"{key}/{index}.", node_name, lane.state.copy())
                for index, node_name in enumerate(target)
            ]
            progress.fanout = _FanOut(key, branches)
            lane.cursor = None
        else:
            lane.cursor = target
        self._trace_visit(visit, lane)
        self._commit(position="after_node")
        if events.active:
            events.emit(
                WorkflowNodeFinished(
                    self.session_id, workflow.name, name, key, _where(target), visit.duration_ms
                )
            )

    async def _execute(
        self, node: Any, name: str, key: str, lane: _Lane
    ) -> tuple[StateUpdate, str | None]:
        state = lane.state
        if isinstance(node, AgentNode):
            return await self._agent(node, name, key, state)
        if isinstance(node, ToolNode):
            return await self._tool(node, name, key, state), None
        if isinstance(node, MapNode):
            return await self._map(node, name, key, state), None
        if isinstance(node, ConditionNode):
            value = self._evaluate(node.expression, state, f"node {name!r}")
            return StateUpdate(fields={"routing_key": route_key(value)}), None
        if isinstance(node, HumanNode):
            return self._human(node, name, key, state), None
        assert isinstance(node, JoinNode)
        return StateUpdate(), None

    async def _agent(
        self, node: AgentNode, name: str, key: str, state: WorkflowState
    ) -> tuple[StateUpdate, str | None]:

        prompt = self._render(node.prompt, state, f"node {name!r} prompt") if node.prompt else ""
        if not prompt.strip():
            prompt = _default_prompt(state)
        session_id = node_session_id(self.task_id, key)
        result = await self._run_agent(node.agent, prompt, session_id, name)
        if result.status != "completed":
            raise _Stopped(
                "failed",
                f"node {name!r}: agent {node.agent!r} ended with {result.status}: "
                f"{result.error or 'no error given'}",
            )
        message = WorkflowMessage("assistant", result.output, node=name, name=node.agent)
        fields: dict[str, Any] = {"current_agent": node.agent}
        if node.output:
            fields[node.output] = result.output
        return StateUpdate([message], fields), session_id

    async def _run_agent(
        self,
        agent: str,
        prompt: str,
        session_id: str,
        name: str,
        schema: dict[str, Any] | None = None,
    ) -> RunResult:
        """``agent`` run on ``prompt`` in the session ``session_id`` of the task (continued,
        not started again, when the store has it), held to ``schema`` when one is given; a
        pause inside it pauses the workflow."""
        from subagents.runtime.assembly import hold_to_schema
        from subagents.runtime.run import Run
        from subagents.runtime.typed_result import schema_prompt

        if schema is not None:
            prompt += schema_prompt(schema)
        run = Run(self.runtime, decisions=self._decisions_under(session_id), budget=self.budget)
        try:
            if self.recorder is not None:
                result = await run.step(self.recorder, agent, prompt, session_id, schema=schema)
            else:
                session = run.builder.main(agent, agent_id=session_id, node=True)
                if schema is not None:
                    hold_to_schema(session, schema)
                result = await run._drive(session, session.run(prompt), owns_task=False)
        except SubagentsError as error:  # no such agent, no model: a person must act
            raise _Stopped("failed", f"node {name!r}: {error}") from None
        finally:
            for model, used in run.usage_by_model.items():
                self.usage_by_model.setdefault(model, Usage()).add(used)
        if result.status == "awaiting_human" and result.question is not None:
            raise _Paused(result.question)
        return result

    async def _map(self, node: MapNode, name: str, key: str, state: WorkflowState) -> StateUpdate:
        """Run ``node``'s body for each item of its list, ``max_concurrent`` at a time, each
        durable on its own (a tool item by its ledger entry, an agent item by its session), so
        that a resumed map runs only what had not finished."""
        view = state.as_dict()
        items = list_to_map(view.get(node.over))
        if not isinstance(items, list):
            raise _Stopped(
                "failed",
                f"node {name!r}: the state field {node.over!r} holds "
                f"{type(items).__name__ if items is not None else 'nothing'}, not a list to map "
                "over; set it (the workflow's input, or an earlier node's output)",
            )
        tool = self._tool_named(node.tool, name) if node.tool is not None else None
        tally = _Tally(len(items))
        results: list[Any] = [None] * len(items)
        failed: dict[int, str] = {}
        halted: list[BaseException] = []
        gate = asyncio.Semaphore(node.max_concurrent)
        self._map_progress(name, tally)

        async def one(index: int, item: Any) -> None:
            async with gate:
                if halted:  # a failure or a pause stopped the map: this one never starts
                    return
                tally.running += 1
                data = {**view, node.as_: item, "index": index}
                item_key = f"{key}/{index}"
                try:
                    if tool is not None:
                        results[index] = await self._map_tool(node, tool, item_key, data, name)
                    else:
                        results[index] = await self._map_agent(node, item_key, data, name)
                    tally.done += 1
                except _ItemFailed as failure:
                    tally.failed += 1
                    failed[index] = str(failure)
                    if node.on_item_error == "fail":
                        halted.append(
                            _Stopped("failed", f"node {name!r}: item {index} failed: {failure}")
                        )
                except (_Paused, _Stopped) as stop:  # the items in flight end first
                    halted.append(stop)
                finally:
                    tally.running -= 1
                    self._map_progress(name, tally)

        await asyncio.gather(*(one(index, item) for index, item in enumerate(items)))
        if halted:
            raise halted[0]
        output = [
            {"error": failed[index]} if index in failed else value
            for index, value in enumerate(results)
            if index not in failed or node.on_item_error == "collect"
        ]
        summary = f"{tally.done} of {len(items)} items done" + (
            f", {len(failed)} failed ({node.on_item_error})" if failed else ""
        )
        body = node.tool or node.agent
        message = WorkflowMessage("tool" if tool else "assistant", summary, node=name, name=body)
        return StateUpdate([message], {node.output: output} if node.output else {})

    async def _map_tool(
        self, node: MapNode, tool: Tool, key: str, data: Mapping[str, Any], name: str
    ) -> Any:
        arguments = self._render_value_in(node.arguments, data, f"node {name!r} arguments")
        content, is_error = await self._call(tool, key, arguments, name)
        if is_error:
            raise _ItemFailed(f"{tool.name} failed: {content}")
        return _typed_item(node, content)

    async def _map_agent(self, node: MapNode, key: str, data: Mapping[str, Any], name: str) -> Any:
        assert node.agent is not None
        item = data[node.as_]
        template = node.prompt or "{{ " + node.as_ + " }}"
        prompt = self._render_in(template, data, f"node {name!r} prompt")
        if not prompt.strip():
            prompt = item if isinstance(item, str) else json.dumps(item)
        session_id = node_session_id(self.task_id, key)
        result = await self._run_agent(node.agent, prompt, session_id, name, node.output_schema)
        if result.status != "completed":
            raise _ItemFailed(
                f"agent {node.agent!r} ended with {result.status}: "
                f"{result.error or 'no error given'}"
            )
        if node.output_schema is not None:
            return json.loads(result.output)  # held to the schema: compact JSON
        return result.output

    def _map_progress(self, name: str, tally: _Tally) -> None:
        events = self.runtime.events
        if events.active:
            events.emit(
                WorkflowMapProgress(
                    self.session_id,
                    name,
                    tally.total,
                    tally.done,
                    tally.failed,
                    tally.running,
                )
            )

    def _decisions_under(self, session_id: str) -> dict[WaitPoint, HumanDecision]:
        """The decisions that wait points of the session ``session_id`` (or below) await."""
        return {
            point: decision
            for point, decision in self.decisions.items()
            if point.session_path and point.session_path[0] == session_id
        }

    async def _tool(self, node: ToolNode, name: str, key: str, state: WorkflowState) -> StateUpdate:
        tool = self._tool_named(node.tool, name)
        arguments = self._render_value(node.arguments, state, f"node {name!r} arguments")
        content, is_error = await self._call(tool, key, arguments, name)
        if is_error:
            raise _Stopped("failed", f"node {name!r}: tool {tool.name} failed: {content}")
        message = WorkflowMessage("tool", content, node=name, name=tool.name)
        fields = {node.output: content} if node.output else {}
        return StateUpdate([message], fields)

    async def _call(
        self, tool: Tool, key: str, arguments: dict[str, Any], name: str
    ) -> tuple[str, bool]:
        """``tool`` called with ``arguments`` as the call ``key`` of node ``name``, under the
        ledger's rules: (its result, whether it is an error). A call the ledger says finished
        is not run again."""
        call = ToolCall(key, tool.name, arguments)
        content: str | None = None
        is_error = False
        recorder = self.recorder if in_ledger(tool) else None
        if recorder is not None:
            content, is_error = self._settled_or_ask(recorder, tool, name, call)
        if content is None:
            ctx = ToolContext(
                self.runtime.workspace,
                self.session_id,
                f"workflow:{self.workflow.name}",
                key,
                env=self.runtime.toolbox.environment(),
                sandbox=self.runtime.toolbox.bash_sandbox(),
            )
            # asked first, so that a call waiting for a person is not in the ledger as started
            policy = self._permissions(name, key)
            if policy.needs_check(tool):
                verdict = await policy.check(tool, call, ctx)
                if not verdict.approved:
                    raise _Stopped(
                        "failed", f"node {name!r}: {tool.name} not allowed: {verdict.reason}"
                    )
                if verdict.arguments is not None:
                    call = ToolCall(key, tool.name, dict(verdict.arguments))
            if recorder is not None:  # committed with other items starting now, if any
                await recorder.write_ledger_in_group(
                    recorder.ledger_entry(self.session_id, call, tool)
                )
            outcome = await execute_tool_call(call, self._registry(), ctx)
            content, is_error = outcome.message.content, outcome.message.is_error
            if recorder is not None:
                entry = recorder.ledger_entry(self.session_id, call, tool, outcome)
                await recorder.write_ledger_in_group(entry)
        return content, is_error

    def _ledger(self, recorder: Recorder) -> Mapping[str, ToolLedgerEntry]:
        """The workflow session's ledger as the store had it when the run began: what an
        earlier process left (a call of this run is met once; a map of 1,000 items read it
        whole 1,000 times)."""
        if self._ledger_read is None:
            self._ledger_read = recorder.ledger_by_call(self.session_id)
        return self._ledger_read

    def _settled_or_ask(
        self, recorder: Recorder, tool: Tool, name: str, call: ToolCall
    ) -> tuple[str | None, bool]:
        """A tool node met again, settled by its ledger entry as a session's call is (see
        :mod:`subagents.runtime.tool_call`): its result when it finished, ``None`` to run it;
        one that started and never finished (a crash) follows ``interrupted_tool_calls``."""
        entry = self._ledger(recorder).get(call.id)
        policy = self.runtime.config.subagents.interrupted_tool_calls
        recovery = after_crash(entry, tool, policy)
        if recovery == "run":
            return None, False
        if recovery == "settled":
            assert entry is not None
            return entry.result or "", entry.is_error
        if recovery == "fail":
            interrupted = error_outcome(call, INTERRUPTED_TEXT, "error")
            recorder.write_ledger(recorder.ledger_entry(self.session_id, call, tool, interrupted))
            raise _Stopped(
                "failed",
                f"node {name!r}: {tool.name} was running when the process stopped and may or "
                "may not have taken effect; not run again ([subagents] interrupted_tool_calls "
                "= 'fail')",
            )
        point = WaitPoint(self.task_id, (self.session_id,), f"{call.id}:rerun")
        decision = self.decisions.pop(point, None)
        if decision is None:
            raise _Paused(
                self._question(
                    point,
                    name,
                    "crash_recovery",
                    f"Tool node {name!r} ({tool.name}) was running when the process stopped: "
                    "it may or may not have taken effect. Approve to run it again, reject to "
                    "stop the workflow.",
                    call.arguments,
                )
            )
        self._deliver(point, decision, tool.name)
        if decision.action == "reject":
            raise _Stopped(
                "cancelled", f"node {name!r} not run again: {decision.reason or 'rejected'}"
            )
        return None, False

    def _permissions(self, name: str, key: str) -> PermissionPolicy:
        """The run's policy, with a person asked by pausing the run at this node."""
        from subagents.tools.permissions import ApprovalDecision

        runtime = self.runtime
        point = WaitPoint(self.task_id, (self.session_id,), f"{key}:approval")

        async def approve_here(request: ApprovalRequest) -> ApprovalDecision:
            decision = self.decisions.pop(point, None)
            if decision is None:
                why = f" ({request.reason})" if request.reason else ""
                raise _Paused(
                    self._question(
                        point,
                        name,
                        "approval",
                        f"Tool node {name!r} wants to run {request.tool_name}{why}.",
                        request.arguments,
                    )
                )
            self._deliver(point, decision, request.tool_name)
            if decision.action == "reject":
                return ApprovalDecision(False, decision.reason or "rejected by a person")
            return ApprovalDecision(True, arguments=decision.arguments)

        return runtime.permissions.for_run(approve_here if self.recorder is not None else None)

    def _human(self, node: HumanNode, name: str, key: str, state: WorkflowState) -> StateUpdate:
        point = WaitPoint(self.task_id, (self.session_id,), key)
        decision = self.decisions.pop(point, None)
        if decision is None:
            text = self._render(node.question, state, f"node {name!r} question")
            raise _Paused(self._question(point, name, "workflow", text, {}))
        self._deliver(point, decision, name)
        return _decision_update(decision, name)

    def _confirm(self, lane: _Lane, name: str, key: str) -> None:
        """Before a checkpoint node: a person lets the run go on, changes the state, or
        stops it."""
        point = WaitPoint(self.task_id, (self.session_id,), f"{key}:confirm")
        decision = self.decisions.pop(point, None)
        if decision is None:
            node = self.workflow.nodes[name]
            what = node.description or f"{node.type} node"
            raise _Paused(
                self._question(
                    point, name, "workflow", f"Run node {name!r} ({what})? Checkpoint.", {}
                )
            )
        self._deliver(point, decision, name)
        if decision.action == "reject":
            raise _Stopped(
                "cancelled",
                f"stopped at checkpoint {name!r}: {decision.reason or 'rejected by a person'}",
            )
        lane.state.apply(_decision_update(decision, name))
        self.progress.confirmed.append(key)
        self._commit(position="confirmed")  # a crash inside the node must not ask again

    # -- routing -------------------------------------------------------------------------------

    def _next(self, name: str, state: WorkflowState) -> str | list[str] | None:
        """Where the run goes after ``name``: the first matching outgoing edge's target."""
        edges = self.workflow.outgoing(name)
        if not edges:
            return None
        node = self.workflow.nodes[name]
        for index, edge in enumerate(self.workflow.edges):
            if edge.from_ != name:
                continue
            where = f"edge {index} (from {name!r})"
            if isinstance(edge.to, dict):
                if edge.condition is not None:
                    value = self._evaluate(edge.condition, state, where)
                elif isinstance(node, HumanNode):
                    value = state.next_action
                else:
                    value = state.routing_key
                chosen = edge.to.get(route_key(value), edge.to.get("default"))
                if chosen is not None:
                    return None if chosen == END else chosen
                continue
            if edge.condition is not None and not self._evaluate(edge.condition, state, where):
                continue
            if isinstance(edge.to, list):
                return list(edge.to)
            return None if edge.to == END else edge.to
        raise _Stopped(
            "failed",
            f"no edge from node {name!r} matches (routing_key={state.routing_key!r}, "
            f"next_action={state.next_action!r}); add a 'default' entry or an edge without "
            "a condition",
        )

    async def _run_fanout(self, fanout: _FanOut) -> None:
        outcomes = await asyncio.gather(
            *(self._run_branch(branch) for branch in fanout.branches), return_exceptions=True
        )
        for outcome in outcomes:  # the first branch (in list order) that stopped decides
            if isinstance(outcome, _Paused | _Stopped):
                raise outcome
            if isinstance(outcome, BaseException):
                raise outcome
        joins = {branch.cursor for branch in fanout.branches if branch.cursor is not None}
        if len(joins) > 1:
            raise _Stopped(
                "failed",
                f"the branches of fan-out {fanout.key} reach different joins: {sorted(joins)}",
            )
        main = self.progress.main
        main.state.merge([branch.update for branch in fanout.branches])
        main.cursor = joins.pop() if joins else None
        self.progress.fanout = None
        self._commit(position="after_node")

    async def _run_branch(self, branch: _Lane) -> None:
        while not branch.done:
            cursor = branch.cursor
            if cursor is None or cursor == END:
                branch.cursor = None
                branch.done = True
                return
            if isinstance(self.workflow.nodes.get(cursor), JoinNode):
                branch.done = True
                return
            await self._run_node(branch, cursor)

    # -- helpers -------------------------------------------------------------------------------

    def _evaluate(self, condition: Any, state: WorkflowState, where: str) -> Any:
        try:
            return evaluate_condition(condition, state.as_dict())
        except WorkflowConditionError as error:
            raise _Stopped("failed", f"{where}: {error}") from None

    def _render(self, template: str, state: WorkflowState, where: str) -> str:
        return self._render_in(template, state.as_dict(), where)

    def _render_in(self, template: str, data: Mapping[str, Any], where: str) -> str:
        try:
            return render_template(template, data)
        except WorkflowConditionError as error:
            raise _Stopped("failed", f"{where}: {error}") from None

    def _render_value(self, value: Any, state: WorkflowState, where: str) -> Any:
        return self._render_value_in(value, state.as_dict(), where)

    def _render_value_in(self, value: Any, data: Mapping[str, Any], where: str) -> Any:
        if isinstance(value, str):
            return self._render_in(value, data, where)
        if isinstance(value, dict):
            return {k: self._render_value_in(v, data, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self._render_value_in(v, data, where) for v in value]
        return value

    def _registry(self) -> ToolRegistry:
        return self.runtime.toolbox.base_tools()

    def _tool_named(self, tool_name: str, node: str) -> Tool:
        tool = self._registry().get(tool_name)
        if tool is None:
            raise _Stopped(
                "failed",
                f"node {node!r}: no tool {tool_name!r} here (check the tool name, and that "
                "its MCP server is configured and running: 'subagents mcp list')",
            )
        return tool

    def _question(
        self,
        point: WaitPoint,
        node: str,
        kind: str,
        text: str,
        arguments: dict[str, Any],
    ) -> HumanQuestion:
        return HumanQuestion(
            kind=kind,  # type: ignore[arg-type]
            task_id=self.task_id,
            session_id=self.session_id,
            session_path=list(point.session_path),
            agent_type=f"workflow:{self.workflow.name}",
            tool_call_id=point.key,
            tool_name=node,
            arguments=arguments,
            text=text,
        )

    def _deliver(self, point: WaitPoint, decision: HumanDecision, what: str) -> None:
        delivered = DeliveredDecision(point, decision, what)
        self.delivered.append(delivered)
        self.traces.append(
            TraceRecord(
                task_id=self.task_id,
                session_id=self.session_id,
                kind="wait",
                step_name="decision",
                message=f"{decision.action} at {point.key}"
                + (f": {decision.reason}" if decision.reason else ""),
                agent=f"workflow:{self.workflow.name}",
                data=self._redacted(delivered.to_dict()),
            )
        )

    def _trace_visit(self, visit: NodeVisit, lane: _Lane) -> None:
        where = _where(visit.next)
        self.traces.append(
            TraceRecord(
                task_id=self.task_id,
                session_id=self.session_id,
                kind="step",
                step_name=f"node {visit.node}",
                message=f"{visit.kind} node {visit.node} -> {where}",
                agent=f"workflow:{self.workflow.name}",
                duration_ms=visit.duration_ms,
                data={**visit.to_dict(), "lane": lane.prefix or "main"},
            )
        )

    def _redacted(self, value: Any) -> Any:
        return self.recorder.redactor.value(value) if self.recorder is not None else value

    def _commit(self, *, position: str, question: HumanQuestion | None = None) -> None:
        recorder = self.recorder
        progress = self.progress
        if recorder is None:
            self.traces.clear()
            return
        state: dict[str, Any] = {
            "schema_version": 1,
            "workflow": self._redacted(progress.to_dict()),
        }
        if self.delivered:
            state["decisions"] = [self._redacted(d.to_dict()) for d in self.delivered]
            self.delivered.clear()
        traces = list(self.traces)
        self.traces.clear()
        question_data = None
        if question is not None:
            question_data = {"schema_version": 1, **self._redacted(question.to_dict())}
            question_data["wait_point"] = question.wait_point.to_dict()
            traces.append(
                TraceRecord(
                    task_id=self.task_id,
                    session_id=self.session_id,
                    kind="wait",
                    step_name="awaiting_human",
                    message=self._redacted(question.text),
                    status="warning",
                    agent=f"workflow:{self.workflow.name}",
                    data={"wait_point": question.wait_point.to_dict(), "kind": question.kind},
                )
            )
        checkpoint = CheckpointRecord(
            checkpoint_id=f"{self.session_id}:{progress.checkpoints}",
            task_id=self.task_id,
            session_id=self.session_id,
            position=position,
            state=state,
            awaiting_human=question is not None,
            question=question_data,
        )
        progress.checkpoints += 1
        recorder.store.commit(StepWrite(task_id=self.task_id, checkpoint=checkpoint, traces=traces))

    def _result(
        self,
        status: RunStatus,
        *,
        error: str | None = None,
        question: HumanQuestion | None = None,
    ) -> RunResult:
        progress = self.progress
        state = progress.main.state
        last = next((m for m in reversed(state.messages) if m.role != "user"), None)
        output = last.content if last is not None else ""
        if question is not None:
            error = question.reason()
        result = RunResult(
            output=output,
            status=status,
            agent_id=self.session_id,
            agent_type=f"workflow:{self.workflow.name}",
            model_name="workflow",
            messages=[],
            turns=progress.iterations,
            duration_ms=(perf_counter() - self.started) * 1000.0,
            error=error,
            task_id=self.recorder.task_id if self.recorder is not None else None,
            question=question,
            usage_by_model=self.usage_by_model,
        )
        result.workflow = WorkflowOutcome(
            self.workflow.name, state, list(progress.path), progress.iterations
        )
        return result


def _where(target: str | list[str] | None) -> str:
    """Where a node led, for people: ``end``, a node, or a fan-out's nodes."""
    if target is None:
        return END
    return ", ".join(target) if isinstance(target, list) else target


def _detail(node: Any) -> str:
    if isinstance(node, AgentNode):
        return node.agent
    if isinstance(node, ToolNode):
        return node.tool
    return ""


def _default_prompt(state: WorkflowState) -> str:
    """What an agent node without a prompt is asked: the run's input and what came since."""
    text = state.extra.get("input")
    lines = [text] if isinstance(text, str) and text else []
    for message in state.messages:
        if message.role == "user" and message.content == text:
            continue
        who = message.name or message.role
        lines.append(f"[{who}] {message.content}")
    return "\n\n".join(lines) or "Begin."


def _decision_update(decision: HumanDecision, node: str) -> StateUpdate:
    """A person's decision as a state update: the action, their message, their changes."""
    fields: dict[str, Any] = {"next_action": decision.action}
    for key, value in decision.values.items():
        fields[key] = _parsed(value)
    if decision.arguments:
        updates = decision.arguments.get("state_updates", decision.arguments)
        if isinstance(updates, dict):
            fields.update(updates)
    text = decision.reason or decision.action
    return StateUpdate([WorkflowMessage("human", text, node=node)], fields)


def _parsed(value: str) -> Any:
    """``--set`` values: JSON when they read as JSON (numbers, true, lists), else text."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value
