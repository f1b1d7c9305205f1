"""Runtime: the entry point that turns a prompt into a finished run.

It owns what every session of a run shares: the workspace, config, inventory of agents, the
models (built once per spec), the tool set, permissions, hooks and the event bus.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subagents.errors import ConfigError, StoreError
from subagents.models.base import Model
from subagents.runtime.budget import Limits, usd
from subagents.runtime.delegation import Delegation
from subagents.runtime.events import EventBus, InstructionsNotice
from subagents.runtime.hooks import Hooks
from subagents.runtime.instructions import InstructionsPerRun
from subagents.runtime.models import ModelChooser
from subagents.runtime.pause import HumanDecision, HumanQuestion
from subagents.runtime.permissions import Headless, RunPermissions
from subagents.runtime.prompt import MAIN_AGENT_PROMPT
from subagents.runtime.result import RunResult
from subagents.runtime.resumption import (
    adopt_if_imported,
    claim_to_continue,
    decisions_for,
    latest_conversation,
    pending_question,
)
from subagents.runtime.run import Run
from subagents.runtime.session import Session
from subagents.runtime.task_tools import TaskToolDescriptions
from subagents.runtime.toolbox import Toolbox
from subagents.store.base import TaskOwner
from subagents.store.lease import lease_refusal
from subagents.tools.base import Tool
from subagents.tools.names import ASK_HUMAN_TOOL_NAME

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.inventory import Inventory
    from subagents.mcp.config import MCPServerConfig, MCPServersConfig
    from subagents.mcp.consent import ProjectServerPolicy
    from subagents.redaction import Redactor
    from subagents.runtime.instructions import ProjectInstructions
    from subagents.store.base import Store
    from subagents.tools.permissions import Approver, PermissionMode
    from subagents.workflows.graph import Workflow

__all__ = ["ASK_HUMAN_TOOL_NAME", "MAIN_AGENT_PROMPT", "Runtime"]


class Runtime:
    """Runs agents in a workspace.

    ``model`` is the main agent's model (a :class:`Model` or a ``provider:model`` string).
    ``models`` maps resolved model strings (``"anthropic:claude-haiku-4-5"``) to ready model
    objects, and ``agent_models`` maps agent names to models; both take precedence over
    building a provider model, which is what tests and scripted demos use.

    With a ``store`` every run is a durable task: each step of each session is checkpointed,
    :meth:`resume` continues it after a crash or a pause, and ``headless="pause"`` makes a tool
    that needs approval pause the run for a person instead of being denied.

    ``allowed_tools`` / ``disallowed_tools`` are permission rules in Claude Code's syntax
    (``"Bash(npm run test:*)"``, ``"Read(./.env)"``; see :mod:`subagents.tools.rules`), as
    ``subagents run --allowedTools / --disallowedTools`` passes them; the rules of
    ``.claude/settings.json``, ``.claude/settings.local.json`` and ``~/.claude/settings.json``
    are added to them.

    ``max_budget_tokens`` caps the input and output tokens of each run's whole tree of agents,
    ``max_budget_usd`` what its calls cost (see :mod:`subagents.runtime.budget`); a resumed
    task keeps its own unless it is given.
    """

    def __init__(
        self,
        *,
        cwd: Path | str | None = None,
        config: Config | None = None,
        inventory: Inventory | None = None,
        agents: Sequence[AgentDefinition] = (),
        model: Model | str | None = None,
        models: Mapping[str, Model] | None = None,
        agent_models: Mapping[str, Model] | None = None,
        tools: Iterable[Tool] = (),
        builtin_tools: bool = True,
        permission_mode: PermissionMode = "default",
        approver: Approver | None = None,
        headless: Headless = "deny",
        hooks: Hooks | None = None,
        events: EventBus | None = None,
        stream: bool = False,
        store: Store | None = None,
        mcp_servers: MCPServersConfig
        | Mapping[str, MCPServerConfig]
        | Iterable[MCPServerConfig]
        | None = None,
        allowed_tools: Sequence[str] = (),
        disallowed_tools: Sequence[str] = (),
        project_mcp: ProjectServerPolicy | None = None,
        max_budget_tokens: int | None = None,
        max_budget_usd: float | Decimal | None = None,
    ) -> None:
        self.workspace = Path(cwd or Path.cwd()).resolve()
        self._config = config
        self._config_hooks_added = False
        self._inventory = inventory
        self._explicit_agents = tuple(agents)
        self.model_chooser = ModelChooser(
            config=lambda: self.config,
            definition_named=self.definition_named,
            main=model,
            models=models,
            agent_models=agent_models,
        )
        self._instructions = InstructionsPerRun()
        self.task_descriptions = TaskToolDescriptions()
        # a copy: hooks from config.toml are added to it without touching the caller's
        self.hooks = hooks.copy() if hooks is not None else Hooks()
        self.events = events if events is not None else EventBus()
        self.stream = stream
        self.store = store
        self.budget_limits = Limits(max_budget_tokens, usd(max_budget_usd))
        self._last_run: Run | None = None  # the run a UI shows (cancel_background; last_delegation)
        self.owner = TaskOwner.this_process()  # what this runtime claims its tasks as
        self.handing_over = False  # see hand_over()
        self.toolbox = Toolbox(
            workspace=self.workspace,
            config=lambda: self.config,
            inventory=lambda: self.inventory,
            inventory_if_read=lambda: self._inventory,
            store_files=self._store_files,
            events=self.events,
            tools=tools,
            builtin_tools=builtin_tools,
            mcp_servers=mcp_servers,
            project_mcp=project_mcp,
        )
        self.permissions = RunPermissions(
            workspace=self.workspace,
            config=lambda: self.config,
            store_files=self._store_files,
            mode=permission_mode,
            approver=approver,
            headless=headless,
            allowed_tools=tuple(allowed_tools),
            disallowed_tools=tuple(disallowed_tools),
        )
        if headless == "pause" and store is None:
            raise ConfigError(
                "headless='pause' needs a store to pause the run in.",
                hint="pass store=open_store() to Runtime, or use headless='deny' or 'allow'",
            )

    # -- shared state ------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            from subagents.config import load_config

            self._config = load_config(self.workspace)
        if not self._config_hooks_added:
            self._config_hooks_added = True
            self.hooks.add_commands(self._config.hooks, self.toolbox.environment())
        return self._config

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            from subagents.inventory import Inventory

            self._inventory = Inventory.discover(
                self.workspace,
                config=self.config,
                explicit=self._explicit_agents,
                known_mcp_servers=self.toolbox.known_mcp_servers(),
                tool_names=self.toolbox.tool_names(),
            )
            self.toolbox.hide_endpoint_keys()
        return self._inventory

    def _store_files(self) -> list[Path]:
        """The store's file, when it keeps one (tools must not write it)."""
        path = getattr(self.store, "path", None)
        return [path] if isinstance(path, Path) else []

    # -- running -----------------------------------------------------------------------------

    def main_session(self, delegation: Delegation, agent: str | None = None) -> Session:
        """The main session of a new run of ``delegation`` (see
        :class:`~subagents.runtime.assembly.SessionBuilder`)."""
        return self._run_of(delegation).builder.main(agent)

    def _run_of(self, delegation: Delegation) -> Run:
        builder = delegation.builder
        context = builder.context if builder is not None else None
        return context if isinstance(context, Run) else Run(self, delegation=delegation)

    @property
    def last_delegation(self) -> Delegation | None:
        """The delegation of the run this runtime started last (``None`` before any).

        Deprecated: with several runs at once on one runtime it may be another caller's run.
        Use ``RunResult.subagents``, the subagents of exactly that run.
        """
        warnings.warn(
            "Runtime.last_delegation is deprecated (it is whichever run started last); use "
            "RunResult.subagents",
            DeprecationWarning,
            stacklevel=2,
        )
        run = self._last_run
        return run.delegation if run is not None else None

    def session_hooks(self, definition: AgentDefinition | None, *, subagent: bool) -> Hooks:
        """The run's hooks plus those of ``definition``'s own file (see
        :mod:`subagents.runtime.agent_hooks`)."""
        from subagents.runtime.agent_hooks import scoped_hooks

        _ = self.config  # the config's own hooks join self.hooks on first use
        return scoped_hooks(
            self.hooks, definition, subagent=subagent, env=self.toolbox.environment()
        )

    async def run(
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
        """Run ``prompt`` with the main agent (or the agent named ``agent``) to completion.

        With a store, the run is the stored task ``result.task_id`` (``task_id`` chooses it, a
        new UUID4 by default); ``description``, ``tags`` and ``retention_days`` go on its record.
        ``delegate_to`` hands the prompt to that subagent at once (a Task call made by the
        harness, as for ``@agent`` in the chat); the main agent then answers with its result.
        """
        if task_id is not None:
            _check_task_id(task_id)
        await self.toolbox.start_mcp()
        self._announce_instruction_problems()
        run = self._last_run = Run(self)
        return await run.start(
            prompt,
            agent=agent,
            description=description,
            tags=tags,
            retention_days=retention_days,
            task_id=task_id,
            delegate_to=delegate_to,
        )

    async def continue_task(
        self, task_id: str, prompt: str, *, force: bool = False, delegate_to: str | None = None
    ) -> RunResult:
        """Go on with the conversation of the stored task ``task_id``: its main agent gets
        ``prompt`` after the whole history, in the same task (its trace holds every turn).

        The task must have ended (completed, failed, cancelled, out of turns); a task waiting
        for a person is resumed with its decision first, and a workflow task cannot be
        continued this way.
        """
        from subagents.runtime.recorder import Recorder

        store = self._require_store()
        task = store.get_task(task_id)
        claim_to_continue(store, task, self.owner, force=force)
        self._instructions.clear()
        await self.toolbox.start_mcp()
        run = self._last_run = Run(self, rule_arguments=self.permissions.restored_arguments(task))
        recorder = Recorder(store, task, self.redactor())
        return await run.follow_up(recorder, prompt, delegate_to=delegate_to)

    def latest_conversation(self) -> str | None:
        """The newest task of this workspace that can be continued (not a workflow, not
        waiting for a person, not running): what ``run --continue`` goes on with."""
        return latest_conversation(self._require_store(), self.workspace)

    async def run_workflow(
        self,
        workflow: Workflow,
        input: str | Mapping[str, Any] = "",
        *,
        task_id: str | None = None,
        description: str | None = None,
    ) -> RunResult:
        """Run ``workflow`` (see :mod:`subagents.workflows`) from its entry point on ``input``.

        With a store it is a durable task like any run: ``result.task_id`` names it, and
        :meth:`resume` continues it after a pause or a crash. ``result.workflow`` holds the
        final state and the path taken through the graph.
        """
        from subagents.workflows.runner import run_workflow

        if task_id is not None:
            _check_task_id(task_id)
        await self.toolbox.start_mcp()
        self.check_workflow(workflow)
        self._announce_instruction_problems()
        return await run_workflow(self, workflow, input, task_id=task_id, description=description)

    def check_workflow(self, workflow: Workflow, *, source: str = "") -> None:
        """Refuse ``workflow`` when it has problems here (unknown or inactive agents, tools
        this runtime does not have, a broken graph): every one, with its location."""
        from subagents.workflows.runner import check_workflow

        check_workflow(self, workflow, source=source)

    def _announce_instruction_problems(self) -> None:
        """Read the CLAUDE.md / AGENTS.md files afresh for this run, and say which were cut
        or skipped."""
        self._instructions.clear()
        if self.events.active:
            for warning in self.project_instructions(self.workspace).warnings:
                self.events.emit(InstructionsNotice(warning))

    def project_instructions(self, workspace: Path) -> ProjectInstructions:
        """The CLAUDE.md / AGENTS.md files for ``workspace``, read once per run: every
        session of a run starts from the same instructions."""
        return self._instructions.of(workspace)

    async def resume(
        self,
        task_id: str,
        decision: HumanDecision | None = None,
        *,
        force: bool = False,
        workflow: Workflow | None = None,
    ) -> RunResult:
        """Continue the stored task ``task_id`` where it stopped.

        After a crash every unfinished session continues from its last checkpoint (a parent's
        open Task call is bound to its running child again, not re-planned). A task waiting for
        a person needs ``decision``, which is delivered to exactly the session that asked.
        A task that another live process is running is refused; ``force`` takes it over (for an
        owner on another machine that is known to be gone). A workflow task continues at its
        node; ``workflow`` is needed only for one built in code with Python conditions.
        """
        from subagents.runtime.recorder import Recorder

        store = self._require_store()
        task = store.get_task(task_id)
        self._instructions.clear()  # the files as they are now, for the subagents it starts
        rule_arguments = self.permissions.restored_arguments(task)
        decisions = decisions_for(self, task, decision)
        ended = task.status in ("failed", "cancelled")
        holder = store.claim_task(task.id, self.owner, force=force)
        if holder is not None:
            raise lease_refusal(holder)
        await self.toolbox.start_mcp()
        if "workflow" in task.settings:
            from subagents.workflows.runner import resume_workflow

            return await resume_workflow(self, task, rule_arguments, decisions, workflow=workflow)
        reask = adopt_if_imported(
            task, rule_arguments, workspace=self.workspace, permissions=self.permissions
        )
        run = self._last_run = Run(
            self, decisions=decisions, reask_calls=reask, rule_arguments=rule_arguments
        )
        return await run.resume(Recorder(store, task, self.redactor()), ended=ended)

    # -- durability --------------------------------------------------------------------------

    def _require_store(self) -> Store:
        if self.store is None:
            raise StoreError(
                "This runtime has no store, so it has no tasks to resume.",
                hint="create it with Runtime(store=open_store(...))",
            )
        return self.store

    def pending_question(self, task_id: str) -> HumanQuestion | None:
        """What the stored task ``task_id`` waits for a person to answer, if it does."""
        store = self._require_store()
        return pending_question(store, store.get_task(task_id))

    def cancel_background(self, agent_id: str) -> str | None:
        """Stop the running background subagent ``agent_id`` of the run started last (the
        one a UI shows); its agent's name, or ``None`` when it is not running."""
        run = self._last_run
        return run.delegation.cancel_background(agent_id) if run is not None else None

    def send_message(self, to: str, text: str) -> str:
        """A person's message to the agent ``to`` (its agent_id or type, or ``main``) of the
        run started last: stored first, then read at that agent's next step (a finished
        subagent runs again on it, in the background). Once that run has ended the message
        waits in the store for :meth:`resume`. Returns the agent_id it went to; raises
        ToolError when ``to`` names no agent of the run."""
        from subagents.errors import ToolError

        run = self._last_run
        if run is None:
            raise ToolError("no run to message: start one with run() first")
        messaging = run.delegation.messaging
        if run.result is None:  # it runs
            return messaging.send(None, to, text).letter.to
        recorder = run.recorder
        if recorder is None:
            raise ToolError(
                "the run has ended and has no store to keep the message for a resume: "
                "message its agents while it runs, or give the runtime a store"
            )
        return messaging.post_for_later(to, text)

    def pending_questions(self) -> list[HumanQuestion]:
        """What the agents of the run started last wait for a person to answer while the
        rest of it goes on (approvals and questions from the background: see
        :mod:`subagents.runtime.inbox`), oldest first."""
        run = self._last_run
        return run.delegation.inbox.pending() if run is not None else []

    def answer(self, key: str, decision: HumanDecision) -> HumanQuestion:
        """Answer the waiting question ``key`` (its tool call's id, or the start of it; see
        :meth:`pending_questions`) with ``decision``: the agent that asked goes on. Raises
        ToolError when no question of the run waits under ``key``."""
        from subagents.errors import ToolError

        run = self._last_run
        point = run.delegation.inbox.find(key) if run is not None else None
        if run is None or point is None:
            waiting = ", ".join(q.tool_call_id for q in self.pending_questions()) or "none"
            raise ToolError(f"no question waits under {key!r} (waiting: {waiting})")
        question = next(q for q in run.delegation.inbox.pending() if q.wait_point == point)
        run.answer(point, decision)
        return question

    def credentials(self) -> list[str]:
        """Every credential this runtime was given (see
        :func:`subagents.secrets.known_credentials`), with the keys of the agents' own
        endpoints (``llm_config.api_key_env``): what must never be stored or printed."""
        return self.toolbox.credentials()

    def redactor(self) -> Redactor:
        """A redactor of every credential this runtime knows (see :meth:`credentials`)."""
        from subagents.redaction import Redactor

        # the credentials hold the environment's secrets already: no second scan of it
        return Redactor(self.credentials(), include_environment=False)

    def definition_named(self, name: str) -> AgentDefinition | None:
        """The current definition of the agent ``name``, if it has one."""
        record = self.inventory.records.get(name)
        return record.definition if record is not None else None

    def resume_sync(
        self, task_id: str, decision: HumanDecision | None = None, *, force: bool = False
    ) -> RunResult:
        """:meth:`resume` for code that is not async (see :meth:`run_sync`)."""
        return asyncio.run(self._closing_after(self.resume(task_id, decision, force=force)))

    def run_sync(
        self, prompt: str, *, agent: str | None = None, tags: Sequence[str] = ()
    ) -> RunResult:
        """:meth:`run` for code that is not async. Provider connections are closed at the end,
        since they belong to the event loop this call creates."""
        return asyncio.run(self._closing_after(self.run(prompt, agent=agent, tags=tags)))

    async def _closing_after(self, running: Awaitable[RunResult]) -> RunResult:
        try:
            return await running
        finally:
            await self.aclose()

    def hand_over(self) -> None:
        """From now on a run of this runtime that is cancelled stops as a crash stops it: its
        task stays as its last step left it (``running``), for another process to continue,
        instead of being recorded ``cancelled``. A worker that shuts down says so before its
        engine cancels the runs it leaves behind."""
        self.handing_over = True

    async def aclose(self) -> None:
        """Close the provider connections of the models this runtime built, and stop the MCP
        servers (they start again on the next run)."""
        await self.toolbox.aclose()
        await self.model_chooser.aclose()


def _check_task_id(task_id: str) -> None:
    from subagents.store.records import check_task_id

    try:
        check_task_id(task_id)
    except ValueError as error:
        raise StoreError(
            f"Cannot start the task: {error}.",
            hint="pass task_id= a name such as 'nightly-review-42', or leave it out for a "
            "fresh UUID",
        ) from None
