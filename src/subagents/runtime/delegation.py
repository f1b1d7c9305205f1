"""Delegation: the Task tools and the subagent sessions they start (what the model is told
about the tools is :mod:`subagents.runtime.task_tools`).

One :class:`Delegation` belongs to one top-level run. It resolves a Task call to an agent
definition, builds the child session (fresh history, allowed tools, resolved model), runs it in
the foreground or background, and keeps every child for the life of the run so that ``resume``
can continue it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from subagents._preview import shorten
from subagents.errors import SubagentsError, ToolError, WorktreeError
from subagents.messages import ToolResultMessage, UserMessage
from subagents.runtime import events as ev
from subagents.runtime.assembly import SessionBuilder, hold_to_schema
from subagents.runtime.hooks import HookPayload, Hooks
from subagents.runtime.inbox import Inbox
from subagents.runtime.messaging import Messaging
from subagents.runtime.pause import RunPaused
from subagents.runtime.recorder import child_session_id
from subagents.runtime.requests import reminder, users_words, with_users_words
from subagents.runtime.result import RunResult, SpawnResult
from subagents.runtime.session import Session
from subagents.runtime.task_batch import (
    TASK_BATCH_DESCRIPTION,
    BatchItem,
    TaskBatchInput,
    item_prompt,
    results_file,
    summary,
    write_results,
)
from subagents.runtime.task_tools import (
    NONE_AVAILABLE,
    TASK_BACKGROUND_PARAMETERS,
    TaskCancelInput,
    TaskInput,
    TaskOutputInput,
    input_schema_of,
    no_background,
    task_schema,
    task_tool_description,
)
from subagents.runtime.typed_result import schema_prompt
from subagents.tools.base import Tool, ToolContext
from subagents.tools.names import (
    DELEGATION_TOOL_NAMES,
    TASK_BATCH_TOOL_NAME,
    TASK_CANCEL_TOOL_NAME,
    TASK_OUTPUT_TOOL_NAME,
    TASK_TOOL_NAME,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable
    from pathlib import Path

    from subagents.definitions.model import AgentDefinition
    from subagents.models.choice import ModelChoice
    from subagents.runtime.services import Services
    from subagents.runtime.worktree import Worktree, WorktreeOutcome
    from subagents.store.records import SessionRecord
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest, PermissionPolicy

__all__ = ["DELEGATION_TOOL_NAMES", "MAX_STOP_HOOK_RETURNS", "Delegation", "SubagentHandle"]

# A SubagentStop hook may send a subagent back to work; this bounds a hook that always does.
MAX_STOP_HOOK_RETURNS = 5


@dataclass(slots=True, eq=False)
class SubagentHandle:
    """A subagent started by this run: its session, and where its current run stands."""

    session: Session
    definition: AgentDefinition
    parent: Session
    resolved_model: str
    description: str
    background: bool = False
    task: asyncio.Task[SpawnResult] | None = None  # its run in the background, if it had one
    in_foreground: bool = False  # running now, in the Task call that waits for it
    result: SpawnResult | None = None
    delivered: bool = False
    rebound: bool = False
    model_fallback: ModelChoice | None = None  # why it runs on its parent's model, if it does
    worktree: Worktree | None = None  # isolation: worktree, while it is in one
    worktree_outcome: WorktreeOutcome | None = None  # what became of it when the run ended
    queued: bool = False  # waiting for a place: its parent runs max_concurrent already
    # a fork (Task fork=true) not started yet: its first message says it is one
    fork_opening: bool = False
    stall_reported: bool = False  # the watchdog reported it stalled (check_stalls)
    stop_reason: str | None = None  # why the harness stopped it, when it did

    @property
    def running(self) -> bool:
        return self.in_foreground or (self.task is not None and not self.task.done())

    @property
    def status(self) -> str:
        """``queued``, ``running``, or how its last run ended (``not started``)."""
        if self.running:
            return "queued" if self.queued else "running"
        return self.result.status if self.result is not None else "not started"


@dataclass(slots=True, eq=False)
class Delegation:
    """Subagent bookkeeping for one top-level run."""

    runtime: Services
    main: Session | None = None
    handles: dict[str, SubagentHandle] = field(default_factory=dict)
    spawn_results: list[SpawnResult] = field(default_factory=list)
    # builds its subagents' sessions for the run it belongs to (set by that Run)
    builder: SessionBuilder | None = None
    run_policy: PermissionPolicy | None = None  # the run's own, before any agent narrows it
    _semaphores: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    _tools: tuple[Tool, ...] | None = None
    # whether any subagent of the run went to the background: until one does, the questions
    # about background work are answered without walking every handle (a run may have 500)
    _any_background: bool = False
    # sessions new to the store with this run (the main session of the task it created, and
    # the subagents such sessions start): no subagent of theirs can be stored from before
    _new_in_store: set[str] = field(default_factory=set)
    # the agent types each session may start, with the inventory generation they hold for
    _allowed_types: dict[Session, tuple[int, frozenset[str] | None]] = field(default_factory=dict)
    messaging: Messaging = field(init=False)  # SendMessage and ListAgents of the run
    inbox: Inbox = field(default_factory=Inbox)  # what agents in the background ask people

    def __post_init__(self) -> None:
        self.messaging = Messaging(self)

    # -- tools -------------------------------------------------------------------------------

    def tools(self) -> tuple[Tool, ...]:
        """Task, TaskOutput and TaskCancel, bound to this run."""
        if self._tools is None:
            self._tools = (
                Tool(
                    name=TASK_TOOL_NAME,
                    description=self._task_description(),
                    parameters=task_schema(self._active_types(), budgeted=self._budgeted()),
                    function=self._task_tool,
                    input_model=TaskInput,
                    takes_context=True,
                    # no timer per subagent (a fan-out of hundreds would keep hundreds in
                    # the loop's heap): a subagent ends by its own turns and timeouts
                    timeout_seconds=None,
                    # Delegating changes nothing by itself, and a subagent runs under the
                    # same permission mode, so plan (read-only) mode may still delegate.
                    read_only=True,
                    compact_description=self._task_description(compact=True),
                    background_parameters=TASK_BACKGROUND_PARAMETERS,
                    parallel=True,
                ),
                Tool(
                    name=TASK_OUTPUT_TOOL_NAME,
                    description=(
                        "Get the status and result of a subagent started with "
                        "run_in_background; by default waits until it finishes."
                    ),
                    parameters=input_schema_of(TaskOutputInput),
                    function=self._task_output_tool,
                    input_model=TaskOutputInput,
                    takes_context=True,
                    timeout_seconds=3700,
                    read_only=True,
                ),
                Tool(
                    name=TASK_CANCEL_TOOL_NAME,
                    description="Stop a subagent that is running in the background.",
                    parameters=input_schema_of(TaskCancelInput),
                    function=self._task_cancel_tool,
                    input_model=TaskCancelInput,
                    takes_context=True,
                    read_only=True,
                ),
                Tool(
                    name=TASK_BATCH_TOOL_NAME,
                    description=TASK_BATCH_DESCRIPTION,
                    parameters=input_schema_of(TaskBatchInput),
                    function=self._task_batch_tool,
                    input_model=TaskBatchInput,
                    takes_context=True,
                    timeout_seconds=None,  # its items end by their own turns and timeouts
                    read_only=True,  # as Task: the items run under their own permissions
                ),
            )
        return self._tools

    def _task_description(self, *, compact: bool = False) -> str:
        runtime = self.runtime
        return runtime.task_descriptions.of(runtime.inventory, compact=compact)

    def _budgeted(self) -> bool:
        """Whether the run has a token budget its Task calls may share out."""
        return self._builder().context.budget.limits.tokens is not None

    def _active_types(self) -> tuple[str, ...]:
        return tuple(record.definition.name for record in self.runtime.inventory.active())

    # -- which agents a session may start (Agent(type, ...) in its tools) ---------------------

    def allowed_subagent_types_of(
        self, definition: AgentDefinition | None, parent: Session | None = None
    ) -> frozenset[str] | None:
        """The agent types a session running ``definition`` under ``parent`` may start:
        what its own ``tools`` allow, within what every ancestor allows (``None``: any)."""
        from subagents.definitions.validate import normalise_name
        from subagents.tools.specs import delegation_limit

        inherited = self.allowed_subagent_types(parent) if parent is not None else None
        own = delegation_limit(definition.tools) if definition is not None else None
        if own is None:
            return inherited
        mine = frozenset(normalise_name(name) for name in own)
        return mine if inherited is None else mine & inherited

    def allowed_subagent_types(self, session: Session) -> frozenset[str] | None:
        """The agent types ``session`` may start, from its definition and its ancestors'
        (worked out once per session and inventory generation: a parent may start hundreds)."""
        generation = self.runtime.inventory.generation
        kept = self._allowed_types.get(session)
        if kept is not None and kept[0] == generation:
            return kept[1]
        definition = self.runtime.definition_named(session.agent_type)
        allowed = self.allowed_subagent_types_of(definition, session.parent)
        self._allowed_types[session] = (generation, allowed)
        return allowed

    def task_tool_for(self, types: frozenset[str]) -> Tool:
        """The Task tool of a session limited to ``types``: its listing shows only those."""
        base = self.tools()[0]
        active = [
            record.definition
            for record in self.runtime.inventory.active()
            if record.definition.name in types
        ]
        description = task_tool_description(active)
        compact = task_tool_description(active, compact=True)
        if not active:
            description += NONE_AVAILABLE
            compact += NONE_AVAILABLE
        return Tool(
            name=base.name,
            description=description,
            compact_description=compact,
            parameters=task_schema(
                tuple(definition.name for definition in active), budgeted=self._budgeted()
            ),
            function=base.function,
            input_model=base.input_model,
            takes_context=True,
            timeout_seconds=base.timeout_seconds,
            read_only=True,
            background_parameters=TASK_BACKGROUND_PARAMETERS,
            parallel=True,
        )

    # -- Task ----------------------------------------------------------------------------------

    async def _task_tool(
        self,
        *,
        ctx: ToolContext,
        description: str,
        prompt: str,
        subagent_type: str = "",
        model: str | None = None,
        run_in_background: bool = False,
        resume: str | None = None,
        max_budget_tokens: int | None = None,
        fork: bool = False,
        output_schema: dict[str, Any] | None = None,
    ) -> str:
        parent = _session_of(ctx)
        if output_schema is not None:
            self._check_call_schema(subagent_type, output_schema)
        # a call that started its subagent before the process stopped continues it, as it was
        # accepted then; any other call is checked first
        rebound = None if resume else self._rebind(parent, ctx.tool_call_id, description)
        if rebound is None:
            self._check_task_call(parent, description, prompt, subagent_type, resume)
            if not resume:
                done = self._same_task_just_done(parent, ctx.tool_call_id, subagent_type, prompt)
                if done is not None:
                    return _not_started_again(done)
        if resume:
            handle = self._handle_for_resume(resume, parent, subagent_type)
            handle.description = description
        else:
            handle = rebound or self._start_handle(
                parent, subagent_type, description, model, ctx.tool_call_id, max_budget_tokens
            )
            if fork and rebound is None:
                _fork_from(handle, ctx.tool_call_id)
            if rebound is None and handle.definition.isolation == "worktree":
                await self._isolate_new(handle)
        child_prompt = None if rebound is not None else prompt
        if child_prompt is not None and output_schema is not None:
            hold_to_schema(handle.session, output_schema)
            child_prompt += schema_prompt(output_schema)
        if run_in_background:
            handle.background = True
            self._any_background = True
            self._builder().context.keep_watch()
            handle.session.background = True
            self.messaging.enable_reply(handle.session)
            handle.delivered = False
            handle.task = asyncio.ensure_future(self._run_child(handle, child_prompt))
            return (
                f"Started subagent '{handle.definition.name}' in the background with agent_id "
                f"{handle.session.agent_id}. You will be told when it finishes; call TaskOutput "
                "to wait for its result or TaskCancel to stop it."
            )
        # In the foreground the subagent runs in the Task call's own task, as any tool does:
        # a cancelled call (the run stopped, the tool's timeout) cancels it where it waits,
        # and it has ended, its SpawnResult recorded, by the time the call gives up.
        handle.background = False
        return _render_for_parent(handle, await self._run_in_foreground(handle, child_prompt))

    async def _run_in_foreground(self, handle: SubagentHandle, prompt: str | None) -> SpawnResult:
        """Run ``handle``'s subagent in the calling tool's own task (see :meth:`_run_child`)
        until it ends; its caller gets the result, so no notification follows."""
        handle.in_foreground = True
        try:
            spawn = await self._run_child(handle, prompt)
        finally:
            handle.in_foreground = False
        handle.delivered = True
        return spawn

    def _check_call_schema(self, subagent_type: str, schema: dict[str, Any]) -> None:
        """A Task call's ``output_schema``: a valid JSON Schema, for an agent whose file sets
        none (its own would contradict it)."""
        _check_call_schema(schema)
        definition = self.runtime.definition_named(subagent_type.strip())
        if definition is not None and definition.output_schema is not None:
            raise ToolError(
                f"the '{definition.name}' agent's file sets its outputSchema already: leave "
                "`output_schema` out of the Task call (its answer is that JSON)"
            )

    async def _task_batch_tool(
        self,
        *,
        ctx: ToolContext,
        description: str,
        subagent_type: str,
        prompt: str,
        items: list[Any],
        output_schema: dict[str, Any] | None = None,
        max_concurrent: int | None = None,
    ) -> str:
        parent = _session_of(ctx)
        self._check_task_call(parent, description, prompt, subagent_type, None)
        if output_schema is not None:
            self._check_call_schema(subagent_type, output_schema)
        most = self.runtime.config.subagents.max_concurrent
        gate = asyncio.Semaphore(min(max_concurrent or most, most))

        async def one(index: int, item: Any) -> BatchItem:
            call_id = f"{ctx.tool_call_id}#{index}"
            async with gate:
                # an item started before the process stopped continues, a finished one is
                # found finished: never run again
                handle = self._rebind(parent, call_id, description)
                opening = None
                if handle is None:
                    label = f"{description} [{index}]"
                    handle = self._start_handle(parent, subagent_type, label, None, call_id)
                    if handle.definition.isolation == "worktree":
                        await self._isolate_new(handle)
                    opening = item_prompt(prompt, item, index)
                    if output_schema is not None:
                        hold_to_schema(handle.session, output_schema)
                        opening += schema_prompt(output_schema)
                return BatchItem(index, item, await self._run_in_foreground(handle, opening))

        done = list(await asyncio.gather(*(one(i, item) for i, item in enumerate(items))))
        path = results_file(parent.workspace, ctx.tool_call_id)
        write_results(path, done)
        return summary(done, str(path.relative_to(parent.workspace)))

    def _start_handle(
        self,
        parent: Session,
        subagent_type: str,
        description: str,
        model_override: str | None,
        tool_call_id: str,
        budget_tokens: int | None = None,
    ) -> SubagentHandle:
        runtime = self.runtime
        allowed = self.allowed_subagent_types(parent)
        try:
            record = runtime.inventory.get(subagent_type)
        except SubagentsError as error:
            raise ToolError(str(error)) from None
        definition = record.definition
        if allowed is not None and definition.name not in allowed:
            raise ToolError(
                f"you may not start '{definition.name}': your agent file's tools allow only "
                f"Agent({', '.join(sorted(allowed)) or 'no agents'}); choose one of those or "
                "do this part of the work yourself"
            )
        max_depth = runtime.config.subagents.max_depth
        depth = parent.depth + 1
        if depth > max_depth:
            raise ToolError(
                f"cannot start '{definition.name}': the delegation depth limit of {max_depth} "
                "is reached; do this part of the work yourself"
            )
        child = self._builder().child(
            parent,
            definition,
            tool_call_id=tool_call_id,
            description=description,
            model_override=model_override,
            budget_tokens=budget_tokens,
        )
        session, fallback = child.session, child.fallback
        handle = SubagentHandle(session, definition, parent, child.resolved_model, description)
        if fallback is not None:
            handle.model_fallback = fallback
            if session.recorder is not None:
                session.add_trace(session.recorder.model_fallback_trace(session, fallback))
        self.handles[session.agent_id] = handle
        if parent.agent_id in self._new_in_store:
            self._new_in_store.add(session.agent_id)  # derived from a new id: new too
        return handle

    def new_in_store(self, session: Session) -> None:
        """Note that ``session`` was never stored before this run (the main session of a task
        the run created), so that its Task calls start subagents without asking the store
        whether an earlier process started them."""
        self._new_in_store.add(session.agent_id)

    def _same_task_just_done(
        self, parent: Session, call_id: str, subagent_type: str, prompt: str
    ) -> SubagentHandle | None:
        """The subagent that ``parent``'s previous turn started with this same Task (type and
        prompt), when it finished well: nothing ran in between that could change its answer.

        A small model given a subagent's answer often starts the same Task again instead of
        answering (a 1.5B model: up to three times a run, each one more subagent run); a
        Task made again after other work (the tests run anew after a fix) is run anew."""
        from subagents.definitions.validate import normalise_name
        from subagents.messages import AssistantMessage

        turns = [m for m in parent.messages if isinstance(m, AssistantMessage) and m.tool_calls]
        if len(turns) < 2 or call_id not in {call.id for call in turns[-1].tool_calls}:
            return None
        wanted = (normalise_name(subagent_type), prompt.strip())
        before: set[str] = set()
        for turn in reversed(turns[:-1]):  # the turns just before that made this same Task
            same = {
                call.id
                for call in turn.tool_calls
                if call.name == TASK_TOOL_NAME
                and not call.arguments.get("resume")
                and (
                    normalise_name(str(call.arguments.get("subagent_type", ""))),
                    str(call.arguments.get("prompt", "")).strip(),
                )
                == wanted
            }
            if not same:
                break
            before |= same
        return next(
            (
                handle
                for handle in self.handles.values()
                if handle.parent is parent
                and handle.session.parent_tool_call_id in before
                and handle.result is not None
                and handle.result.success
            ),
            None,
        )

    def _check_task_call(
        self, parent: Session, description: str, prompt: str, subagent_type: str, resume: str | None
    ) -> None:
        """Refuse a Task call a model can fix (empty or missing arguments), saying how."""
        problems: list[str] = []
        if not subagent_type.strip():
            resumed = self.handles.get(resume.strip()) if resume else None
            if resumed is not None and resumed.parent is parent:
                problems.append(
                    f"`subagent_type` is missing: agent {resumed.session.agent_id} is a "
                    f"'{resumed.definition.name}' agent, so pass "
                    f'subagent_type="{resumed.definition.name}" with resume'
                )
            else:
                types = ", ".join(self._types_for(parent)) or "(none available)"
                problems.append(f"`subagent_type` is missing: set it to one of: {types}")
        if not description.strip():
            problems.append(
                "`description` is empty: give a short (3-5 word) summary of the task, "
                'e.g. "find the secret word"'
            )
        if not prompt.strip():
            problems.append(
                "`prompt` is empty: write the complete task for the subagent, with everything "
                "it needs to know (it sees nothing of this conversation)"
            )
        if problems:
            raise ToolError(
                "Task was not run:\n- "
                + "\n- ".join(problems)
                + "\nCall Task again with "
                + ("this" if len(problems) == 1 else "these")
                + " fixed."
            )

    def _types_for(self, parent: Session) -> list[str]:
        """The agent types ``parent`` may start, as it can name them in ``subagent_type``."""
        allowed = self.allowed_subagent_types(parent)
        return [
            record.definition.name
            for record in self.runtime.inventory.active()
            if allowed is None or record.definition.name in allowed
        ]

    def _system_prompt(self, definition: AgentDefinition, workspace: Path) -> str:
        return self._builder().subagent_prompt(definition, workspace)

    # -- isolation: worktree -----------------------------------------------------------------

    async def _isolate_new(self, handle: SubagentHandle) -> None:
        """A new subagent that asks for a worktree gets one before it starts, or does not
        start: the parent gets a tool error saying why."""
        try:
            await self._enter_worktree(handle)
        except WorktreeError as error:
            del self.handles[handle.session.agent_id]
            raise ToolError(f"cannot start '{handle.definition.name}': {error}") from None

    async def _enter_worktree(self, handle: SubagentHandle) -> None:
        """Move an ``isolation: worktree`` subagent into its worktree (made on first use,
        found again when it is resumed or re-bound after a restart)."""
        if handle.definition.isolation != "worktree":
            return
        # git worktrees load only for an agent isolated in one (~3 ms of every run otherwise)
        from subagents.runtime.worktree import enter_worktree, worktree_prompt_note

        session = handle.session
        current = handle.worktree
        if current is not None and session.workspace == current.workspace:
            return  # entered already (a new subagent is put in its worktree before it starts)
        worktree = await enter_worktree(
            handle.parent.workspace, agent_name=handle.definition.name, session_id=session.agent_id
        )
        handle.worktree, handle.worktree_outcome = worktree, None
        root = worktree.workspace
        if session.workspace == root:
            return
        if not session.messages:  # a new session: tell it where it works
            session.system_prompt = self._system_prompt(
                handle.definition, root
            ) + worktree_prompt_note(worktree)
        self._move(session, session.workspace, root)

    def _move(self, session: Session, old: Path, root: Path) -> None:
        """``session``, and the subagents it has already started that worked where it did
        (re-adopted after a restart), now work in ``root``."""
        from subagents.runtime.worktree import rooted_permissions, rooted_sandbox

        session.workspace = root
        session.permissions = rooted_permissions(session.permissions, root, old)
        session.tool_sandbox = rooted_sandbox(session.tool_sandbox, root)
        for handle in list(self.handles.values()):
            child = handle.session
            own_worktree = handle.definition.isolation == "worktree"
            if handle.parent is session and child.workspace == old and not own_worktree:
                self._move(child, old, root)

    async def _leave_worktree(self, handle: SubagentHandle) -> None:
        """Remove the subagent's worktree if it changed nothing, else keep it; the outcome
        goes to the parent with the result, and into the trace."""
        worktree, handle.worktree = handle.worktree, None
        if worktree is None:
            return
        from subagents.runtime.worktree import leave_worktree, worktree_note

        outcome = handle.worktree_outcome = await leave_worktree(worktree)
        recorder = handle.parent.recorder
        if recorder is not None:
            step = "worktree_kept" if outcome.kept else "worktree_removed"
            trace = recorder.session_trace(handle.session, step, worktree_note(outcome))
            trace["status"] = "info"  # not the session's error, whatever became of the session
            trace["data"].update(
                worktree_path=str(worktree.path),
                worktree_branch=worktree.branch,
                worktree_kept=outcome.kept,
                worktree_changes=list(outcome.changes),
            )
            handle.parent.add_trace(trace)  # committed with the parent's next step

    def _rebind(
        self, parent: Session, tool_call_id: str, description: str
    ) -> SubagentHandle | None:
        """The subagent this very Task call started before the process stopped, if any.

        Its id is derived from the parent and the call, so a resumed parent finds the child
        instead of starting the work again.
        """
        recorder = parent.recorder
        if recorder is None:
            return None
        child_id = child_session_id(parent.agent_id, tool_call_id)
        existing = self.handles.get(child_id)
        if existing is not None:
            return existing
        if parent.agent_id in self._new_in_store:
            return None  # one look-up less per subagent: a fan-out of 500 made 500
        record = recorder.find_session(child_id)
        if record is None:
            return None
        session = self._builder().rebuilt(record, parent, recorder)
        definition = _definition_or_stub(self.runtime, record.agent_name, session.system_prompt)
        handle = SubagentHandle(session, definition, parent, record.model, description)
        handle.rebound = True
        self.handles[child_id] = handle
        self.adopt_background(session)
        return handle

    def _handle_for_resume(
        self, agent_id: str, parent: Session, subagent_type: str
    ) -> SubagentHandle:
        from subagents.definitions.validate import normalise_name

        handle = self.handles.get(agent_id.strip())
        if handle is None:
            types = {normalise_name(kind) for kind in self._types_for(parent)}
            if normalise_name(agent_id) in types:
                raise ToolError(
                    f"{agent_id!r} is an agent type, not an agent_id: to start a new "
                    f'{agent_id} agent, call Task with subagent_type="{agent_id}" and leave '
                    "out `resume`"
                )
            known = ", ".join(self.handles) or "none yet"
            raise ToolError(
                f"no subagent with agent_id {agent_id!r} in this run (known: {known}); "
                "start a new one by omitting `resume`"
            )
        kind = handle.definition.name
        if handle.parent is parent and normalise_name(subagent_type) != normalise_name(kind):
            raise ToolError(
                f"subagent {handle.session.agent_id} is a '{kind}' agent, not "
                f"'{subagent_type.strip()}': to continue it, pass subagent_type=\"{kind}\" with "
                f"resume; to start a new '{subagent_type.strip()}' agent, leave out `resume`"
            )
        if handle.running:
            raise ToolError(
                f"subagent {agent_id} is still running; wait for it with TaskOutput before "
                "resuming it"
            )
        if handle.parent is not parent:
            raise ToolError(f"subagent {agent_id} was started by another agent; only it can resume")
        return handle

    async def _run_child(self, handle: SubagentHandle, prompt: str | None) -> SpawnResult:
        session = handle.session
        parent = handle.parent
        definition = handle.definition
        events = session.events
        if events.active:
            events.emit(
                ev.SubagentStarted(
                    session.agent_id,
                    parent.agent_id,
                    definition.name,
                    handle.description,
                    handle.resolved_model,
                    handle.background,
                    session.parent_tool_call_id or "",
                )
            )
            if handle.model_fallback is not None:
                events.emit(_fallback_event(session, handle.model_fallback))
        semaphore = self._semaphores.get(parent.agent_id)
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.runtime.config.subagents.max_concurrent)
            self._semaphores[parent.agent_id] = semaphore
        started = time.perf_counter()
        result: RunResult | None = None
        handle.queued = semaphore.locked()
        try:
            if definition.isolation == "worktree":  # most agents have none: no coroutine
                await self._enter_worktree(handle)
        except WorktreeError as error:
            result = await session._finish(
                "failed", session._partial_output(), started, error=f"no worktree: {error}"
            )
            return self._record_spawn(handle, result, started)
        try:
            async with semaphore:
                handle.queued = False
                if prompt is None:  # re-bound after a restart: continue where it stood
                    result = await session.resume()
                else:
                    # a restarted parent runs its stored Task call again, which starts a
                    # child not in the store anew; a background child's call has its result
                    session.opening_replayed = not handle.background
                    result = await self._run_with_hooks(handle, prompt)
        except RunPaused:
            raise  # not finished: the run waits for a person, and resumes this session later
        except asyncio.CancelledError:
            handle.queued = False
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._leave_worktree(handle))
            self._record_spawn(handle, None, started)
            raise
        if handle.worktree is not None:
            await self._leave_worktree(handle)
        spawn = self._record_spawn(handle, result, started)
        if handle.background:
            kind = "agent_completed" if spawn.success else "agent_failed"
            ended = "finished" if spawn.success else f"ended ({spawn.status}: {spawn.error})"
            await session.notify_person(
                kind, f"background agent {definition.name} ({handle.description}) {ended}"
            )
        late = session.take_inbox()
        if late and result is not None and result.status != "cancelled":
            # a message reached it as it ended: it goes on with it, in the background
            self.continue_in_background(handle, "\n\n".join(late))
        return spawn

    def continue_in_background(self, handle: SubagentHandle, prompt: str) -> None:
        """Run the finished subagent of ``handle`` again on ``prompt`` (a message reached
        it), in the background: its parent is told when it ends, as of any background work."""
        handle.background = True
        self._any_background = True
        self._builder().context.keep_watch()
        handle.session.background = True
        handle.delivered = False
        self.messaging.enable_reply(handle.session)
        handle.task = asyncio.ensure_future(self._run_child(handle, prompt))

    def handle_of_stored(self, session_id: str) -> SubagentHandle | None:
        """The subagent ``session_id`` of this run's task, rebuilt from the store when this
        process has not met it yet (with the ancestors it needs); None when there is none."""
        handle = self.handles.get(session_id)
        main = self.main
        if handle is not None or main is None or main.recorder is None:
            return handle
        recorder = main.recorder
        record = recorder.find_session(session_id)
        if record is None or record.task_id != recorder.task_id:
            return None
        if record.parent_session_id == main.agent_id:
            parent = main
        else:
            above = self.handle_of_stored(record.parent_session_id or "")
            if above is None:
                return None
            parent = above.session
        session = self._builder().rebuilt(record, parent, recorder)
        definition = _definition_or_stub(self.runtime, record.agent_name, session.system_prompt)
        handle = SubagentHandle(session, definition, parent, record.model, record.task_description)
        handle.background = handle.rebound = handle.delivered = record.background
        if record.status in _ENDED:
            handle.result = _spawn_from_record(handle, record)
            handle.delivered = True
        self.handles[session_id] = handle
        return handle

    def _record_spawn(
        self, handle: SubagentHandle, result: RunResult | None, started: float
    ) -> SpawnResult:
        session = handle.session
        parent = handle.parent
        spawn = self._spawn_result(handle, result, started)
        handle.result = spawn
        self.spawn_results.append(spawn)
        if session.events.active:
            session.events.emit(
                ev.SubagentFinished(session.agent_id, parent.agent_id, spawn, session.usage)
            )
        if handle.background and not handle.delivered:
            self.listener_of(handle).notify(_render_notification(handle, spawn))
            handle.delivered = True
        return spawn

    def listener_of(self, handle: SubagentHandle) -> Session:
        """Who hears of the end of ``handle``'s background run: its parent, or, when that
        one has ended (a person messaged an agent below it), the nearest one above still at
        work (the main session, at the least)."""
        parent = handle.parent
        above = self.handles.get(parent.agent_id)
        while above is not None and not above.running:
            parent = above.parent
            above = self.handles.get(parent.agent_id)
        return parent

    def _run_with_hooks(self, handle: SubagentHandle, prompt: str) -> Awaitable[RunResult]:
        """The subagent run on ``prompt`` between its SubagentStart and SubagentStop hooks
        (the session's own run when it has no hooks: no coroutine in between)."""
        hooks = handle.session.hooks
        if hooks is None or not hooks:
            return handle.session.run(_opening(handle, prompt))
        return self._run_hooked(handle, hooks, prompt)

    async def _run_hooked(self, handle: SubagentHandle, hooks: Hooks, prompt: str) -> RunResult:
        session = handle.session
        parent_id = session.parent.agent_id if session.parent is not None else None
        start = await hooks.run(
            HookPayload(
                "SubagentStart",
                session.agent_id,
                session.agent_type,
                parent_id,
                prompt=prompt,
                cwd=str(session.workspace),
            ),
            subject=session.agent_type,
        )
        if start.additional_context:
            prompt = f"{prompt}\n\nAdditional context:\n{start.additional_context}"
        result: RunResult | None = None
        try:
            result = await session.run(_opening(handle, prompt))
            for returns in range(MAX_STOP_HOOK_RETURNS):
                verdict = await hooks.run(
                    HookPayload(
                        "SubagentStop",
                        session.agent_id,
                        session.agent_type,
                        parent_id,
                        result=result.output,
                        stop_hook_active=returns > 0,
                        cwd=str(session.workspace),
                    ),
                    subject=session.agent_type,
                )
                if not verdict.block or result.status == "cancelled":
                    break
                result = await session.run(
                    verdict.reason or "A stop hook asked you to continue working."
                )
            return result
        except RunPaused:
            raise  # waiting for a person is not a stop
        except BaseException:
            if result is None:  # exactly one stop per start, also on error and cancel
                await asyncio.shield(
                    hooks.run(
                        HookPayload(
                            "SubagentStop",
                            session.agent_id,
                            session.agent_type,
                            parent_id,
                            result="",
                            cwd=str(session.workspace),
                        ),
                        subject=session.agent_type,
                    )
                )
            raise

    def _spawn_result(
        self, handle: SubagentHandle, result: RunResult | None, started: float
    ) -> SpawnResult:
        session = handle.session
        error: str | None
        if result is not None:
            output, status, error = result.output, result.status, result.error
        else:
            output, status = session._partial_output(), "cancelled"
            error = handle.stop_reason or "cancelled"
        return SpawnResult(
            success=status == "completed",
            subagent_type=handle.definition.name,
            agent_id=session.agent_id,
            summary=output,
            duration_ms=(time.perf_counter() - started) * 1000,
            input_tokens=session.usage.input_tokens,
            output_tokens=session.usage.output_tokens,
            tool_use_count=session.tool_call_count,
            resolved_model=handle.resolved_model,
            background=handle.background,
            status=status,
            error=error,
            **_worktree_fields(handle.worktree_outcome),
        )

    # -- background ------------------------------------------------------------------------

    async def settle_background(self, session_id: str) -> bool:
        """Wait for a background child of session ``session_id`` whose result it has not seen.

        Returns True when one finished (its notification is then queued), False when there is
        nothing left to wait for, so that no background work is dropped when a parent answers.
        """
        if not self._any_background:
            return False
        waiting = [
            h.task
            for h in self.handles.values()
            if h.background
            and not h.delivered
            and h.task is not None
            and self.listener_of(h).agent_id == session_id
        ]
        if not waiting:
            return False
        session = self.session_by_id(session_id)
        if session is None:  # pragma: no cover - every session of a run is registered
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            return True
        main = session is self.main
        # a message for it (a background subagent asks something) wakes it too; the main
        # session also wakes when a question for a person comes or goes
        woken = [asyncio.ensure_future(session.inbox_filled())]
        session.waiting_on_children = True
        try:
            while True:
                if main:
                    self._pause_if_stuck()
                    woken.append(asyncio.ensure_future(self.inbox.changed()))
                done, _ = await asyncio.wait(
                    [*waiting, *woken], return_when=asyncio.FIRST_COMPLETED
                )
                if not main or any(task in done for task in (*waiting, woken[0])):
                    return True
                woken.pop().cancel()
        finally:
            session.waiting_on_children = False
            for task in woken:
                task.cancel()

    def _pause_if_stuck(self) -> None:
        """Pause the run when agents wait for a person and nothing else can go on: every
        running subagent waits for a person or for its own background subagents."""
        pending = self.inbox.pending()
        if not pending:
            return
        for handle in self.handles.values():
            session = handle.session
            idle = session.waiting_for is not None or session.waiting_on_children
            if handle.running and not idle:
                return
        raise RunPaused(pending[0])

    def check_stalls(self, now: float, limit: float) -> None:
        """The watchdog: report a running background subagent that took no step for
        ``limit`` seconds (its own, or one of the subagents below it; waiting for a person
        counts as a step), and stop it after ``limit`` more, saying why."""
        running = [h for h in self.background_handles() if h.running and not h.queued]
        if not running:
            return
        fresh: dict[str, float] = {}
        for handle in self.handles.values():
            if not handle.running:
                continue
            session = handle.session
            moment = now if session.waiting_for is not None else session.last_active
            below: Session | None = session
            while below is not None:  # a step below an agent counts for it too
                key = below.agent_id
                fresh[key] = max(fresh.get(key, moment), moment)
                below = below.parent
        for handle in running:
            quiet = now - fresh.get(handle.session.agent_id, now)
            if quiet >= 2 * limit:
                handle.stop_reason = (
                    f"stalled: no step for {quiet:.0f} s, stopped by the watchdog "
                    f"([subagents] stall_seconds = {limit:g})"
                )
                self._report_stall(handle, handle.stop_reason, stopped=True)
                assert handle.task is not None
                handle.task.cancel()
            elif quiet >= limit and not handle.stall_reported:
                handle.stall_reported = True
                message = (
                    f"no step for {quiet:.0f} s; it is stopped after {2 * limit:g} s without "
                    "one ([subagents] stall_seconds)"
                )
                self._report_stall(handle, message, stopped=False)

    def _report_stall(self, handle: SubagentHandle, message: str, *, stopped: bool) -> None:
        session = handle.session
        if session.events.active:
            session.events.emit(ev.AgentStalled(session.agent_id, message, stopped))
        recorder = handle.parent.recorder
        if recorder is not None:
            trace = recorder.session_trace(session, "stalled", message)
            trace["status"] = "warning"
            handle.parent.add_trace(trace)  # committed with the parent's next step

    def waits_alone(self, session_id: str) -> bool:
        """Whether session ``session_id`` runs in the background (it, or an agent above it
        below the main one), so that it waits for a person alone (runtime/inbox.py)."""
        session = self.session_by_id(session_id)
        while session is not None and session.parent is not None:
            if session.background:
                return True
            session = session.parent
        return False

    def has_background(self, session_id: str) -> bool:
        """Whether session ``session_id`` has a background subagent that is running or whose
        result it has not seen: only then are TaskOutput and TaskCancel offered to it."""
        return self._any_background and any(
            handle.parent.agent_id == session_id
            and handle.background
            and (not handle.delivered or handle.running)
            for handle in self.handles.values()
        )

    def _background_handle(self, tool: str, agent_id: str, parent: Session) -> SubagentHandle:
        """The background subagent ``agent_id`` of ``parent``, for TaskOutput / TaskCancel."""
        if not self.has_background(parent.agent_id):
            raise ToolError(no_background(tool, agent_id, self._types_for(parent)))
        return self._own_handle(agent_id, parent)

    async def _task_output_tool(
        self,
        *,
        ctx: ToolContext,
        agent_id: str,
        block: bool = True,
        timeout: float = 300.0,  # noqa: ASYNC109 - the model-facing argument's name
    ) -> str:
        handle = self._background_handle(TASK_OUTPUT_TOOL_NAME, agent_id, _session_of(ctx))
        if handle.running and block:
            assert handle.task is not None
            done, _ = await asyncio.wait([handle.task], timeout=timeout)
            if not done:
                return f"Subagent {agent_id} is still running after {timeout:g}s."
        if handle.running:
            return f"Subagent {agent_id} is still running."
        assert handle.result is not None
        handle.delivered = True
        _drop_notification(handle)
        return _render_for_parent(handle, handle.result)

    async def _task_cancel_tool(self, *, ctx: ToolContext, agent_id: str) -> str:
        handle = self._background_handle(TASK_CANCEL_TOOL_NAME, agent_id, _session_of(ctx))
        if not handle.running:
            return f"Subagent {agent_id} is not running (status: {handle.status})."
        assert handle.task is not None
        handle.task.cancel()
        await asyncio.wait([handle.task])
        handle.delivered = True
        _drop_notification(handle)
        return f"Subagent {agent_id} cancelled.\n\n{_worktree_text(handle)}".rstrip()

    def cancel_background(self, agent_id: str) -> str | None:
        """Stop the running background subagent ``agent_id`` (a person asked, from a UI);
        its name, or ``None`` when no such subagent is running. Its parent learns of it as
        of any background subagent that ended."""
        handle = self.handles.get(agent_id)
        if handle is None or not handle.background or not handle.running:
            return None
        assert handle.task is not None
        handle.task.cancel()
        return handle.definition.name

    def _own_handle(self, agent_id: str, parent: Session) -> SubagentHandle:
        handle = self.handles.get(agent_id.strip())
        if handle is None or handle.parent is not parent:
            mine = [h.session.agent_id for h in self.handles.values() if h.parent is parent]
            raise ToolError(
                f"no subagent with agent_id {agent_id!r} was started by you (yours: "
                f"{', '.join(mine) or 'none'})"
            )
        return handle

    def adopt_background(self, parent: Session) -> None:
        """After a restart: take back the background subagents ``parent`` had started.

        Unfinished ones continue in the background; finished ones whose result the parent never
        saw are announced to it again, so no background work is lost with the process.
        """
        recorder = parent.recorder
        if recorder is None:
            return
        for record in recorder.store.sessions(recorder.task_id):
            if record.parent_session_id != parent.agent_id or not record.background:
                continue
            if record.session_id in self.handles:
                continue
            session = self._builder().rebuilt(record, parent, recorder)
            definition = _definition_or_stub(self.runtime, record.agent_name, session.system_prompt)
            handle = SubagentHandle(
                session, definition, parent, record.model, record.task_description, background=True
            )
            handle.rebound = True
            handle.delivered = _was_delivered(parent, record.session_id)
            self.handles[record.session_id] = handle
            self._any_background = True
            if record.status in _ENDED:
                handle.result = _spawn_from_record(handle, record)
                if not handle.delivered:
                    parent.notify(_render_notification(handle, handle.result))
                    handle.delivered = True
            else:
                self.messaging.enable_reply(session)
                handle.task = asyncio.ensure_future(self._run_child(handle, None))

    # -- for the run's context (see Run) ----------------------------------------------------

    def _builder(self) -> SessionBuilder:
        builder = self.builder
        if builder is None:  # pragma: no cover - a Run sets it when it makes its delegation
            raise RuntimeError("this Delegation belongs to no Run; create it with Run(runtime)")
        return builder

    def agent_types_for(self, session_id: str) -> list[str]:
        session = self.session_by_id(session_id)
        return [] if session is None else self._types_for(session)

    def session_by_id(self, agent_id: str) -> Session | None:
        if self.main is not None and self.main.agent_id == agent_id:
            return self.main
        handle = self.handles.get(agent_id)
        return handle.session if handle is not None else None

    async def pause_for_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """The approver of a headless durable run: ask a person by pausing the run."""
        session = self.session_by_id(request.agent_id)
        if session is None:  # pragma: no cover - every session of a run is registered
            raise ToolError(f"no session {request.agent_id} in this run")
        raise session.ask(
            request.tool_call_id, request.tool_name, request.arguments, "approval", request.reason
        )

    def background_handles(self) -> list[SubagentHandle]:
        if not self._any_background:
            return []
        return [h for h in self.handles.values() if h.background]

    async def close(self) -> None:
        """Cancel whatever still runs; called when the top-level run ends."""
        running = [
            h.task for h in self.handles.values() if h.task is not None and not h.task.done()
        ]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)


def _definition_or_stub(services: Services, name: str, system_prompt: str) -> AgentDefinition:
    """The current definition of ``name``, or a stand-in if it is gone since the run began."""
    from subagents.definitions.model import AgentDefinition

    definition = services.definition_named(name)
    if definition is not None:
        return definition
    return AgentDefinition(
        name=name, description="(restored from the store)", system_prompt=system_prompt
    )


def _fallback_event(session: Session, choice: ModelChoice) -> ev.ModelFallback:
    return ev.ModelFallback(
        agent_id=session.agent_id,
        agent_type=session.agent_type,
        requested=choice.requested or "",
        reason=choice.fallback or "",
        hint=choice.hint or "",
        model_name=session.model.name,
    )


def _session_of(ctx: ToolContext) -> Session:
    session = ctx.session
    if not isinstance(session, Session):
        raise ToolError("the Task tools only work inside a subagents session")
    return session


_ENDED = frozenset({"completed", "error", "cancelled"})


def _trailer(handle: SubagentHandle) -> str:
    """The end of a subagent's result: its agent_id, and how to continue it where its parent
    can (it is shown Task's ``resume``); else what to do with the answer.

    The compact profile shows no ``resume``: told to pass it "to the Task tool", a 1.5B main
    agent started the same Task again in 6 samples of 6; told the subagent had finished and
    to reply when its answer does, it replied in 6 of 6 (and in 4 of 4 of three other runs'
    turns alike), but after the first step of a two-step request too: the line also says what
    the parent was asked (:func:`subagents.runtime.requests.reminder`)."""
    agent_id = handle.session.agent_id
    if handle.parent.offers_argument(TASK_TOOL_NAME, "resume"):
        return (
            f'agent_id: {agent_id} (pass resume="{agent_id}" and '
            f'subagent_type="{handle.definition.name}" to the Task tool to continue it)'
        )
    finished = "the subagent has finished; its answer is above."
    return f"agent_id: {agent_id} ({finished} {reminder(handle.parent)})"


_MAX_DESCRIPTION_SHOWN = 200


def _whose(handle: SubagentHandle) -> str:
    """The line before a subagent's answer, for a parent on the compact profile: which agent
    answered, to which Task. Given two answers "HERON-17 OSPREY-58" alone, a 1.5B main agent
    wrote "the code words in docs/alpha.txt are [insert code words]" 8 samples of 8; with
    this line before each it wrote both code words 8 of 8."""
    if handle.parent.description_profile() != "compact":
        return ""
    task = shorten(" ".join(handle.description.split()), _MAX_DESCRIPTION_SHOWN)
    return f'The {handle.definition.name} agent ("{task}") answered:\n'


def _not_started_again(done: SubagentHandle) -> str:
    """The answer to a Task made again right after the same one finished."""
    assert done.result is not None
    return (
        f"Not started again: this is the Task you made last turn, and its agent "
        f"{done.session.agent_id} ({done.definition.name}) already answered:\n\n"
        f"{done.result.summary}\n\nUse that answer: reply to the user, or go on with the "
        "next step of the work. If it is not what you needed, call Task with a prompt that "
        "says what to do differently."
    )


def _render_for_parent(handle: SubagentHandle, spawn: SpawnResult) -> str:
    if spawn.success:
        return f"{_whose(handle)}{spawn.summary}\n\n{_worktree_text(handle)}{_trailer(handle)}"
    partial = spawn.summary or "(no output)"
    raise ToolError(
        f"Subagent '{spawn.subagent_type}' did not finish ({spawn.status}): {spawn.error}\n\n"
        f"Partial output:\n{partial}\n\n{_worktree_text(handle)}{_trailer(handle)}"
    )


def _worktree_text(handle: SubagentHandle) -> str:
    outcome = handle.worktree_outcome
    if outcome is None:
        return ""
    from subagents.runtime.worktree import worktree_note

    return f"{worktree_note(outcome)}\n\n"


def _worktree_fields(outcome: WorktreeOutcome | None) -> dict[str, str]:
    if outcome is None or not outcome.kept:
        return {}
    return {
        "worktree_path": str(outcome.worktree.path),
        "worktree_branch": outcome.worktree.branch,
    }


def _render_notification(handle: SubagentHandle, spawn: SpawnResult) -> str:
    state = "completed" if spawn.success else f"ended with status {spawn.status}: {spawn.error}"
    body = spawn.summary or "(no output)"
    return (
        f"<task-notification>\nBackground subagent '{spawn.subagent_type}' "
        f"({handle.description}) {state}.\n\n{body}\n\n{_worktree_text(handle)}"
        f"{_trailer(handle)}\n</task-notification>"
    )


def _was_delivered(parent: Session, agent_id: str) -> bool:
    """Whether the parent's history already holds this subagent's result (notification or
    TaskOutput answer, both of which end with its agent_id trailer)."""
    marker = f"agent_id: {agent_id} "
    return any(
        isinstance(m, UserMessage | ToolResultMessage) and marker in m.content
        for m in parent.messages
    )


def _spawn_from_record(handle: SubagentHandle, record: SessionRecord) -> SpawnResult:
    return SpawnResult(
        success=record.status == "completed",
        subagent_type=record.agent_name,
        agent_id=record.session_id,
        summary=record.summary or "",
        duration_ms=0.0,
        input_tokens=int(record.usage.get("input_tokens", 0)),
        output_tokens=int(record.usage.get("output_tokens", 0)),
        tool_use_count=record.tool_calls,
        resolved_model=record.model,
        background=True,
        status=record.status,
        error=None if record.status == "completed" else f"ended with status {record.status}",
    )


def _drop_notification(handle: SubagentHandle) -> None:
    """The parent read the result through TaskOutput/TaskCancel: do not tell it twice."""
    marker = f"agent_id: {handle.session.agent_id} "
    inbox = handle.parent._inbox
    inbox[:] = [item for item in inbox if marker not in item]


_MAX_CALL_SCHEMA_CHARS = 20_000


def _check_call_schema(schema: dict[str, Any]) -> None:
    """Refuse, saying why, an ``output_schema`` that is no JSON Schema or is too large."""
    import json

    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if len(json.dumps(schema, default=str)) > _MAX_CALL_SCHEMA_CHARS:
        raise ToolError(
            f"`output_schema` is larger than {_MAX_CALL_SCHEMA_CHARS} characters: give a "
            "smaller schema, or none"
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise ToolError(
            f"`output_schema` is not a valid JSON Schema: {error.message}; fix it or leave it out"
        ) from None


def _fork_from(handle: SubagentHandle, call_id: str) -> None:
    """Make the new subagent of ``handle`` a fork: its history is its parent's up to the
    turn that made the Task call ``call_id``, under its parent's system prompt, so that its
    first request begins exactly as its parent's last one did (a provider's prompt cache
    serves that part; with the same tools and model, all of it)."""
    from subagents.messages import AssistantMessage

    parent, session = handle.parent, handle.session
    messages = parent.messages
    upto = len(messages)
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, AssistantMessage) and any(
            call.id == call_id for call in message.tool_calls
        ):
            upto = at
            break
    session.messages = list(messages[:upto])
    session.system_prompt = parent.system_prompt
    handle.fork_opening = True


def _fork_opening(handle: SubagentHandle, prompt: str) -> str:
    """A fork's first message: it is a fork now, working as its agent type, on ``prompt``."""
    definition = handle.definition
    role = definition.system_prompt.strip()
    return (
        "You are now a fork of the agent whose conversation is above: you know what it "
        f"knew. You work as the '{definition.name}' agent"
        + (f", whose instructions are:\n{role}\n\n" if role else ".\n\n")
        + f"Do only this, then answer with what you found or did:\n{prompt}"
    )


def _opening(handle: SubagentHandle, prompt: str) -> str:
    """The subagent's first message: ``prompt``, which agents it is asked to start
    (:func:`subagents.runtime.mentions.subagent_opening`), and on the compact profile the
    user's own words (:func:`subagents.runtime.requests.with_users_words`); a fork's says it
    is one (:func:`_fork_opening`)."""
    session = handle.session
    if handle.fork_opening:
        handle.fork_opening = False
        return _fork_opening(handle, prompt)
    names = session.agent_types()
    if names:
        from subagents.runtime.mentions import subagent_opening

        prompt = subagent_opening(prompt, handle.definition.system_prompt, names)
    if session.description_profile() == "compact":
        prompt = with_users_words(prompt, users_words(handle.parent))
    return prompt
