"""Assembly: the one place a session is put together.

A session is built in three situations: the main session of a new run, a subagent started by
a Task call, and either of them rebuilt from the store on resume. All three go through
:class:`SessionBuilder`, which resolves the same things the same way (tools, model, system
prompt, limits, permissions, hooks, where it works) and records them in a :class:`SessionSpec`:
the serialisable description of a session that the store keeps (as its session record) and a
rebuild starts from.

Rules the three paths share:

- **Tools** are resolved from the definition and the parent (the run's tools for the main
  session) in one function. A rebuilt session gets that same resolution cut down to the names
  the store recorded: it never gains a tool it did not have, and loses one its definition, its
  parent or the run's rules no longer allow (the store may come from an imported archive).
- **AskHuman** is the harness's: the main session gets it whenever someone can answer, whatever
  its definition's ``tools`` list says; a subagent gets it when its definition allows it (no
  ``tools`` list, or one that names it), like any tool its parent has.
- **max_turns** is the definition's ``maxTurns``, else ``[subagents] max_turns``; a rebuilt
  session keeps the limit it was started with (the store's), as it keeps its history.
- **The system prompt**: a subagent is told where it works (the ``<env>`` block), since it
  starts with nothing but its prompt; the main session is not (it has the user). A rebuilt
  session keeps the prompt it was started with, so the model sees the same conversation.

A parent that fans out to many subagents of one agent starts each of them from the same
resolution: the builder works out a definition's tools, permission policy and model settings
under a given parent once per run (:class:`_ChildTemplate`), and its system prompt once per
workspace and day, and hands each child its own copy of the tool registry. What is read from
disk at each start (memory folders, preloaded skills) is not kept.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from subagents.errors import ToolError
from subagents.messages import Usage
from subagents.runtime.ask_human import ask_human_tool
from subagents.runtime.budget import Budget, Limits, usd
from subagents.runtime.memory import memory_grants, with_memory_tools
from subagents.runtime.prompt import compose_system_prompt
from subagents.runtime.recorder import child_session_id
from subagents.runtime.session import Session
from subagents.runtime.tool_menu import someone_can_answer
from subagents.todos import todos_from_state
from subagents.tools.names import DELEGATION_TOOL_NAMES, TASK_TOOL_NAME

if TYPE_CHECKING:
    from pathlib import Path

    from subagents.definitions.model import AgentDefinition
    from subagents.models.base import Model, ModelSettings
    from subagents.models.choice import ModelChoice
    from subagents.runtime.context import RunContext
    from subagents.runtime.delegation import Delegation
    from subagents.runtime.hooks import Hooks
    from subagents.runtime.instructions import ProjectInstructions
    from subagents.runtime.permissions import RuleArguments
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.services import Services
    from subagents.store.records import SessionRecord
    from subagents.tools.base import ToolRegistry
    from subagents.tools.permissions import PermissionPolicy
    from subagents.tools.rules import PermissionRules

__all__ = ["SESSION_SPEC_VERSION", "ChildSession", "SessionBuilder", "SessionRole", "SessionSpec"]

SESSION_SPEC_VERSION = 1

SessionRole = Literal["main", "subagent"]


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """What a session is, in plain values: enough to build it again in any process.

    ``agent_type`` is the definition's name (``"main"`` for the default main agent);
    ``definition`` is the name to look the definition up by (``None``: the default main agent).
    ``permission_mode`` is the mode the session's policy resolved to when it was built: shown,
    never trusted on a rebuild (the policy is derived again from the run and the definition).
    """

    agent_id: str
    agent_type: str
    role: SessionRole
    model_name: str
    tool_names: tuple[str, ...]
    system_prompt: str
    max_turns: int
    depth: int
    workspace: str | None = None
    definition: str | None = None
    parent_id: str | None = None
    parent_tool_call_id: str | None = None
    description: str = ""
    background: bool = False
    permission_mode: str | None = None
    schema_version: int = SESSION_SPEC_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tool_names"] = list(self.tool_names)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionSpec:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["tool_names"] = tuple(known.get("tool_names", ()))
        return cls(**known)

    @classmethod
    def of(cls, session: Session) -> SessionSpec:
        """The spec of a built session."""
        parent = session.parent
        permissions = session.permissions
        default_main = parent is None and session.agent_type == "main"
        return cls(
            agent_id=session.agent_id,
            agent_type=session.agent_type,
            role="main" if parent is None else "subagent",
            model_name=session.model.name,
            tool_names=tuple(session.tools.names()),
            system_prompt=session.system_prompt,
            max_turns=session.max_turns,
            depth=session.depth,
            workspace=str(session.workspace),
            definition=None if default_main else session.agent_type,
            parent_id=parent.agent_id if parent is not None else None,
            parent_tool_call_id=session.parent_tool_call_id,
            description=session.description,
            background=session.background,
            permission_mode=permissions.mode if permissions is not None else None,
        )

    @classmethod
    def from_record(cls, record: SessionRecord, *, definition: str | None) -> SessionSpec:
        """The spec the store kept for a session (``definition``: the main session's agent,
        which the task record names)."""
        return cls(
            agent_id=record.session_id,
            agent_type=record.agent_name,
            role="main" if record.parent_session_id is None else "subagent",
            model_name=record.model,
            tool_names=tuple(record.tool_names),
            system_prompt=record.system_prompt,
            max_turns=record.max_turns,
            depth=record.depth,
            definition=definition,
            parent_id=record.parent_session_id,
            parent_tool_call_id=record.parent_tool_call_id,
            description=record.task_description,
            background=record.background,
        )


@dataclass(frozen=True, slots=True)
class ChildSession:
    """A new subagent's session, the model it resolved to, and why it runs on its parent's
    model when it does."""

    session: Session
    resolved_model: str
    fallback: ModelChoice | None


@dataclass(frozen=True, slots=True)
class _ChildTemplate:
    """What every subagent of ``definition`` started by one parent shares: worked out for the
    first, handed to the others. It holds the objects it was worked out from, so that the
    identities in its key (see :meth:`SessionBuilder._child_template`) stay theirs while it
    is kept, and the inventory's generation, which names the agents the Task tool offers."""

    definition: AgentDefinition
    parent: Session
    parent_tools: ToolRegistry
    parent_permissions: PermissionPolicy | None
    generation: int
    tools: ToolRegistry  # never handed out: each child gets a copy
    permissions: PermissionPolicy
    settings: ModelSettings
    # the run's hooks, shared as every session without hooks of its own shares them; None
    # for an agent with hooks in its file: each of its sessions gets a copy of its own
    hooks: Hooks | None


@dataclass(frozen=True, slots=True)
class _KeptPrompt:
    """A subagent's system prompt and what it was composed from (see
    :meth:`SessionBuilder.subagent_prompt`)."""

    definition: AgentDefinition
    instructions: ProjectInstructions
    prompt: str


class SessionBuilder:
    """Builds the sessions of one run: main, child and rebuilt, the same way."""

    __slots__ = (
        "_child_templates",
        "_prompts",
        "context",
        "delegation",
        "rule_arguments",
        "runtime",
    )

    def __init__(
        self,
        runtime: Services,
        delegation: Delegation,
        context: RunContext,
        rule_arguments: RuleArguments | None = None,
    ) -> None:
        self.runtime = runtime
        self.delegation = delegation
        self.context = context  # what the sessions it builds ask of their run
        self.rule_arguments = rule_arguments  # None: the runtime's own
        self._child_templates: dict[tuple[int, int, int, int], _ChildTemplate] = {}
        # subagent prompts that read nothing from disk, by (definition, workspace, day)
        self._prompts: dict[tuple[int, Path, date], _KeptPrompt] = {}

    @property
    def rules(self) -> PermissionRules:
        """The run's permission rules (read once per set of rule arguments)."""
        return self.runtime.permissions.rules(self.rule_arguments)

    # -- the three ways in -------------------------------------------------------------------

    def main(
        self, agent: str | None = None, *, agent_id: str | None = None, node: bool = False
    ) -> Session:
        """The main session of a new run (``agent``: run that agent as the main one;
        ``agent_id``: its id, derived from the task's when the run is stored; ``node``: the
        session is a workflow's agent node, which runs on the agent's own model as a
        subagent would, the run's model standing in for the parent's)."""
        runtime = self.runtime
        definition = runtime.inventory.get(agent).definition if agent else None
        workspace = runtime.workspace
        grants = memory_grants(definition, workspace=workspace)
        prompt = compose_system_prompt(
            definition,
            workspace=workspace,
            subagent=False,
            instructions=runtime.project_instructions(workspace),
        )
        session = self._session(
            definition,
            parent=None,
            agent_id=agent_id,
            model=(
                runtime.model_chooser.for_node(definition)
                if node
                else runtime.model_chooser.main(definition)
            ),
            system_prompt=prompt,
            tools=self.tools_for(definition, None, grants),
            max_turns=self._max_turns(definition),
            grants=grants,
        )
        self.delegation.main = session
        return session

    def child(
        self,
        parent: Session,
        definition: AgentDefinition,
        *,
        tool_call_id: str,
        description: str,
        model_override: str | None = None,
        budget_tokens: int | None = None,
    ) -> ChildSession:
        """A new subagent of ``parent`` started by its Task call ``tool_call_id`` (which may
        give it ``budget_tokens``); a problem the parent's model can act on is a
        :class:`ToolError`."""
        workspace = parent.workspace
        grants = memory_grants(definition, workspace=workspace)
        template = self._child_template(parent, definition)
        # None: the agent brings MCP servers of its own, so its tools are resolved each time
        tools = self._own_tools(definition, parent) if template is None else template.tools.copy()
        if not tools.names() and definition.tools != []:  # an agent may choose to have no tools
            available = parent.tools.names()
            raise ToolError(
                f"agent '{definition.name}' has no usable tools here (its tools: "
                f"{definition.tools}, disallowed: {definition.disallowed_tools}, available to "
                f"you: {', '.join(available) or 'none'}); pick another agent or fix its `tools` "
                "list"
            )
        tools = with_memory_tools(definition, tools, parent.tools, grants)
        model, resolved, fallback = self.runtime.model_chooser.for_child(
            parent, definition, model_override
        )
        session = self._session(
            definition,
            parent=parent,
            agent_id=child_session_id(parent.agent_id, tool_call_id),
            model=model,
            system_prompt=self.subagent_prompt(definition, workspace),
            tools=tools,
            max_turns=self._max_turns(definition),
            grants=grants,
            parent_tool_call_id=tool_call_id,
            description=description,
            template=template,
        )
        session.own_budget = self._own_budget(definition, parent, budget_tokens)
        session.time_limit = _time_limit(definition)
        return ChildSession(session, resolved, fallback)

    def _own_budget(
        self, definition: AgentDefinition, parent: Session, asked_tokens: int | None
    ) -> Budget | None:
        """A subagent's own budget (``maxBudgetTokens`` / ``maxBudgetUsd``, and the tokens
        its Task call asked for, the smaller), never more than what its parent has left: the
        parent's own budgets up the tree, and the run's."""
        wanted = own_limits(definition)
        if asked_tokens is not None:
            wanted = Limits(asked_tokens, wanted.usd).within(wanted.tokens, None)
        if not wanted:
            return None
        for room in (parent.room(), self.context.room()):
            wanted = wanted.within(room.tokens, room.usd)
        return Budget(wanted)

    def _child_template(
        self, parent: Session, definition: AgentDefinition
    ) -> _ChildTemplate | None:
        """The tools, policy and settings of a subagent running ``definition`` under
        ``parent``, worked out once per run for each pair; ``None`` for an agent whose file
        defines MCP servers of its own, whose tools come and go as those servers start.

        They depend on nothing else the run could change: a parent's registry is its own and
        is never changed once built, its policy is replaced, never changed, when it moves (a
        worktree), and a reload of the inventory (which names the agents the Task tool offers
        and the ancestors' limits on them) is a new generation.
        """
        runtime = self.runtime
        if runtime.toolbox.inline_mcp_tools(definition.name):
            return None
        tools, permissions = parent.tools, parent.permissions
        generation = runtime.inventory.generation
        key = (id(definition), id(parent), id(tools), id(permissions))
        template = self._child_templates.get(key)
        if template is not None and template.generation == generation:
            return template
        template = self._child_templates[key] = _ChildTemplate(
            definition=definition,
            parent=parent,
            parent_tools=tools,
            parent_permissions=permissions,
            generation=generation,
            tools=self._own_tools(definition, parent),
            permissions=self._policy(definition, permissions),
            settings=runtime.model_chooser.settings(definition),
            hooks=None if definition.hooks else runtime.session_hooks(definition, subagent=True),
        )
        return template

    def rebuilt(
        self,
        record: SessionRecord,
        parent: Session | None,
        recorder: Recorder,
        *,
        agent: str | None = None,
    ) -> Session:
        """A session as the store left it: same id, history, model, prompt and limits
        (``agent``: the agent a top-level session runs, when it is not the task's own, as
        for a workflow's agent node).

        What the stored record says about permissions is not taken on trust: the tools are
        the stored ones that a fresh resolution still allows, the depth is counted from the
        parent, and the permission mode comes from the parent (the run, for the main session).
        """
        runtime = self.runtime
        if agent is not None:
            name: str | None = agent
        else:
            name = record.agent_name if parent is not None else recorder.task.assigned_agent
        spec = SessionSpec.from_record(record, definition=name)
        definition = runtime.definition_named(name) if name else None
        workspace = parent.workspace if parent is not None else runtime.workspace
        grants = memory_grants(definition, workspace=workspace)
        stored = set(spec.tool_names)
        tools = self.tools_for(definition, parent, grants)
        tools = tools.subset([n for n in tools.names() if n in stored])
        state = recorder.checkpoint_state(spec.agent_id)
        messages = recorder.load_messages(spec.agent_id)
        counts = state.get("usage") or record.usage
        session = self._session(
            definition,
            parent=parent,
            agent_id=spec.agent_id,
            agent_type=spec.agent_type,
            model=runtime.model_chooser.stored(spec.model_name, spec.agent_type, parent),
            system_prompt=spec.system_prompt,
            tools=tools,
            max_turns=spec.max_turns,
            grants=grants,
            parent_tool_call_id=spec.parent_tool_call_id,
            description=spec.description,
            recorder=recorder,
        )
        session.background = spec.background
        session.messages = messages
        session.persisted_messages = len(messages)
        session.usage = Usage(**{k: int(v) for k, v in counts.items() if k in Usage.__slots__})
        limits = Limits()
        if parent is not None and definition is not None:
            limits = Limits.from_state(state.get("own_budget")) or own_limits(definition)
        if limits:
            session.own_budget = Budget(limits)
            cost = None
            if session.own_budget.priced and self.context is not None:
                cost = self.context.call_cost(session.model.name, session.usage)
            session.own_budget.charge(spec.agent_type, session.usage, cost)
        if parent is not None and definition is not None:  # a fresh allowance once resumed
            session.time_limit = _time_limit(definition)
        schema = state.get("output_schema")
        if isinstance(schema, dict):  # its Task call's outputSchema
            hold_to_schema(session, schema)
        session.turns = int(state.get("turns", record.turns))
        session.run_turns = int(state.get("run_turns", 0))
        session.tool_call_count = int(state.get("tool_calls", record.tool_calls))
        session.todos = todos_from_state(state.get("todos"))
        session.recorded_status = record.status
        session.checkpoints = _checkpoints_written(recorder, spec.agent_id, state)
        # a person's approval of a call whose secret did not survive outlives a restart
        session.approved_again = {
            (str(key[0]), str(key[1]))
            for key in state.get("approved_again") or ()
            if isinstance(key, list) and len(key) == 2
        }
        return session

    # -- the one constructor -----------------------------------------------------------------

    def _session(
        self,
        definition: AgentDefinition | None,
        *,
        parent: Session | None,
        agent_id: str | None,
        model: Model,
        system_prompt: str,
        tools: ToolRegistry,
        max_turns: int,
        grants: tuple[Path, ...],
        agent_type: str | None = None,
        parent_tool_call_id: str | None = None,
        description: str = "",
        recorder: Recorder | None = None,
        template: _ChildTemplate | None = None,
    ) -> Session:
        """``template``: the policy, settings and hooks already worked out for this definition
        and parent (see :meth:`_child_template`); without one they are worked out here."""
        runtime = self.runtime
        subagent = parent is not None
        self._run_policy()  # the run's own, before any agent narrows it
        if agent_type is None:
            agent_type = definition.name if definition is not None else "main"
        if template is not None:
            permissions, settings = template.permissions, template.settings
            hooks = template.hooks
        else:
            permissions = self._policy(definition, parent.permissions if parent else None)
            settings, hooks = runtime.model_chooser.settings(definition), None
        if hooks is None:
            hooks = runtime.session_hooks(definition, subagent=subagent)
        if definition is not None and definition.output_schema is not None:
            reply = json.dumps(definition.output_schema, sort_keys=True)
            settings = replace(settings, reply_schema=reply)
        if agent_id is None:
            agent_id = str(uuid.uuid4())
        toolbox = runtime.toolbox
        return Session(
            model=model,
            system_prompt=system_prompt,
            tools=tools,
            # a subagent works where its parent does (a worktree, for isolation: worktree)
            workspace=parent.workspace if parent is not None else runtime.workspace,
            agent_type=agent_type,
            parent=parent,
            depth=parent.depth + 1 if parent is not None else 0,
            max_turns=max_turns,
            settings=settings,
            permissions=permissions,
            events=parent.events if parent is not None else runtime.events,
            stream=parent.stream if parent is not None else runtime.stream,
            hooks=hooks,
            context=self.context,
            recorder=recorder if recorder is not None or parent is None else parent.recorder,
            parent_tool_call_id=parent_tool_call_id,
            description=description,
            tool_env=parent.tool_env if parent is not None else toolbox.environment(),
            tool_sandbox=parent.tool_sandbox if parent is not None else toolbox.bash_sandbox(),
            file_grants=grants,
            agent_id=agent_id,
            names_its_tools=definition is not None and definition.tools is not None,
            output_schema=definition.output_schema if definition is not None else None,
        )

    # -- what goes into it -------------------------------------------------------------------

    def tools_for(
        self,
        definition: AgentDefinition | None,
        parent: Session | None,
        grants: tuple[Path, ...],
    ) -> ToolRegistry:
        """The tools of a session running ``definition`` under ``parent`` (``None``: the main
        session, whose tools are the run's): what the definition allows of what the parent
        has, the delegation tools while the depth allows, and the memory tools it is owed."""
        return with_memory_tools(
            definition, self._own_tools(definition, parent), self._available(parent), grants
        )

    def _available(self, parent: Session | None) -> ToolRegistry:
        """The tools a session may be given: its parent's, or the run's (less what its rules
        deny outright) for the main session."""
        if parent is not None:
            return parent.tools
        runtime = self.runtime
        rules = self.rules
        available = runtime.toolbox.base_tools()
        return available.subset([n for n in available.names() if rules.bare_denied(n) is None])

    def _own_tools(
        self, definition: AgentDefinition | None, parent: Session | None
    ) -> ToolRegistry:
        from subagents.definitions.validate import effective_tool_names

        runtime = self.runtime
        delegation = self.delegation
        limits = runtime.config.subagents
        available = self._available(parent)
        if parent is not None and definition is not None:
            available = self._with_inline_servers(available, definition, parent)
        if parent is None:
            rules = self.rules
            names = [*available.names(), TASK_TOOL_NAME]
            if definition is not None:
                names = effective_tool_names(definition, names, mcp_servers=available.mcp_servers())
            tools = available.subset(names)
            wants_task = TASK_TOOL_NAME in names and rules.bare_denied(TASK_TOOL_NAME) is None
            if wants_task and limits.enabled and limits.max_depth > 0:
                for tool in delegation.tools():
                    tools.add(tool, replace=True)
            if someone_can_answer(runtime):
                tools.add(ask_human_tool(), replace=True)
        else:
            have = available.names()
            names = have
            if definition is not None:
                names = effective_tool_names(definition, have, mcp_servers=available.mcp_servers())
            if parent.depth + 1 >= limits.max_depth or TASK_TOOL_NAME not in names:
                names = [n for n in names if n not in DELEGATION_TOOL_NAMES]
            else:
                names += [n for n in DELEGATION_TOOL_NAMES if n not in names and n in have]
            tools = available.subset(names)
        if TASK_TOOL_NAME in tools:
            types = delegation.allowed_subagent_types_of(definition, parent)
            if types is not None:
                tools.add(delegation.task_tool_for(types), replace=True)
        if TASK_TOOL_NAME in tools:  # a parent steers its subagents with them
            self._add_message_tools(tools, definition)
        return tools

    def _add_message_tools(self, tools: ToolRegistry, definition: AgentDefinition | None) -> None:
        """SendMessage and ListAgents, unless the agent file's ``disallowedTools`` or the
        run's rules take them away. (A subagent that may start none gets SendMessage alone,
        when it has a parent to answer: see :meth:`Messaging.enable_reply`.)"""
        from subagents.tools.specs import entry_tool_name

        removed: set[str] = set()
        if definition is not None:
            removed = {entry_tool_name(entry) for entry in definition.disallowed_tools}
        for tool in self.delegation.messaging.tools():
            if tool.name not in removed and self.rules.bare_denied(tool.name) is None:
                tools.add(tool, replace=True)

    def _with_inline_servers(
        self, available: ToolRegistry, definition: AgentDefinition, parent: Session
    ) -> ToolRegistry:
        """``available`` and the tools of the servers ``definition`` defines inline, when
        ``parent`` may pass them on: only a parent that has every tool of the run, so that a
        restricted agent never gains tools by starting one that brings its own servers."""
        inline = self.runtime.toolbox.inline_mcp_tools(definition.name)
        if not inline:
            return available
        have = set(available.names())
        if not have.issuperset(self.runtime.toolbox.base_tools().names()):
            return available
        widened = available.subset(available.names())
        for tool in inline:
            widened.add(tool, replace=True)  # the agent's own server over one of that name
        return widened

    def subagent_prompt(self, definition: AgentDefinition, workspace: Path) -> str:
        """A subagent's system prompt, for work in ``workspace``.

        Kept for the run when nothing in it is read from disk at the start (no memory folder,
        no preloaded skills): it then depends only on the definition, the workspace's
        instruction files as the run read them, and the day (the ``<env>`` block).
        """
        instructions = self.runtime.project_instructions(workspace)
        cacheable = definition.memory is None and not definition.skills
        key = (id(definition), workspace, date.today())
        if cacheable:
            kept = self._prompts.get(key)
            if (
                kept is not None
                and kept.definition is definition
                and kept.instructions is instructions
            ):
                return kept.prompt
        prompt = compose_system_prompt(
            definition, workspace=workspace, subagent=True, instructions=instructions
        )
        if cacheable:
            self._prompts[key] = _KeptPrompt(definition, instructions, prompt)
        return prompt

    def _run_policy(self) -> PermissionPolicy:
        """The policy of the run itself, worked out once per run."""
        delegation = self.delegation
        if delegation.run_policy is None:
            pause = delegation.pause_for_approval
            delegation.run_policy = self.runtime.permissions.for_run(pause, self.rules)
        return delegation.run_policy

    def _policy(
        self, definition: AgentDefinition | None, parent: PermissionPolicy | None
    ) -> PermissionPolicy:
        """``parent``'s policy (the run's for the main session: ``None``), narrowed by
        ``definition``."""
        base = parent if parent is not None else self._run_policy()
        return self.runtime.permissions.for_session(definition, base, main=parent is None)

    def _max_turns(self, definition: AgentDefinition | None) -> int:
        own = definition.max_turns if definition is not None else None
        return own or self.runtime.config.subagents.max_turns


def _checkpoints_written(recorder: Recorder, session_id: str, state: dict[str, Any]) -> int:
    """How many checkpoints the session has: its next one's index (a checkpoint written
    before indexes were stored does not say, so the store's are counted)."""
    index = state.get("checkpoint")
    if isinstance(index, int):
        return index + 1
    if not state:
        return 0
    checkpoints = recorder.store.checkpoints(recorder.task_id)
    return sum(1 for checkpoint in checkpoints if checkpoint.session_id == session_id)


def own_limits(definition: AgentDefinition) -> Limits:
    """The budget an agent file gives each of its subagent sessions."""
    return Limits(definition.max_budget_tokens, usd(definition.max_budget_usd))


def hold_to_schema(session: Session, schema: dict[str, Any]) -> None:
    """Hold ``session``'s final answer to ``schema``, given by its Task call (over its agent
    file's ``outputSchema``): checked, and on schema-constrained turns decoded under it."""
    session.output_schema = session.call_schema = schema
    reply = json.dumps(schema, sort_keys=True)
    session.settings = replace(session.settings, reply_schema=reply)


def _time_limit(definition: AgentDefinition) -> tuple[float, int] | None:
    """When a subagent running ``definition`` must stop (``maxDurationSeconds``), from now."""
    seconds = definition.max_duration_seconds
    return (time.monotonic() + seconds, seconds) if seconds else None
