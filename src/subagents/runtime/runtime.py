"""Runtime: the entry point that turns a prompt into a finished run.

It owns what every session of a run shares: the workspace, config, inventory of agents, the
models (built once per spec), the tool set, permissions, hooks and the event bus.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.errors import ModelConfigurationError
from subagents.models.base import Model, ModelSettings
from subagents.runtime.delegation import Delegation
from subagents.runtime.events import EventBus
from subagents.runtime.hooks import Hooks
from subagents.runtime.result import RunResult
from subagents.runtime.session import Session
from subagents.tools.base import Tool, ToolRegistry

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.definitions.model import AgentDefinition
    from subagents.inventory import Inventory
    from subagents.tools.permissions import Approver, PermissionMode, PermissionPolicy

__all__ = ["MAIN_AGENT_PROMPT", "Runtime"]

MAIN_AGENT_PROMPT = """\
You are the main agent of a team. Work on the user's request with your tools. When a part of \
the work fits one of the specialist agents listed in the Task tool, delegate it with a Task \
call that gives the agent everything it needs to know; start independent delegations in the \
same turn so that they run in parallel. When you have what you need, answer the user directly \
and completely."""


class Runtime:
    """Runs agents in a workspace.

    ``model`` is the main agent's model (a :class:`Model` or a ``provider:model`` string).
    ``models`` maps resolved model strings (``"anthropic:claude-haiku-4-5"``) to ready model
    objects, and ``agent_models`` maps agent names to models; both take precedence over
    building a provider model, which is what tests and scripted demos use.
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
        headless: str = "deny",
        hooks: Hooks | None = None,
        events: EventBus | None = None,
        stream: bool = False,
    ) -> None:
        self.workspace = Path(cwd or Path.cwd()).resolve()
        self._config = config
        self._inventory = inventory
        self._explicit_agents = tuple(agents)
        self._main_model = model
        self._models: dict[str, Model] = dict(models or {})
        self._built_models: list[str] = []  # the ones we made, and so must close
        self._agent_models: dict[str, Model] = dict(agent_models or {})
        self._extra_tools = tuple(tools)
        self._builtin_tools = builtin_tools
        self.permission_mode: PermissionMode = permission_mode
        self.approver = approver
        self.headless = headless
        self.hooks = hooks if hooks is not None else Hooks()
        self.events = events if events is not None else EventBus()
        self.stream = stream
        self.last_delegation: Delegation | None = None

    # -- shared state ------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            from subagents.config import load_config

            self._config = load_config(self.workspace)
        return self._config

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            from subagents.inventory import Inventory

            self._inventory = Inventory.discover(
                self.workspace,
                config=self.config,
                explicit=self._explicit_agents,
                tool_names=[tool.name for tool in self._extra_tools],
            )
        return self._inventory

    def base_tools(self) -> ToolRegistry:
        registry = ToolRegistry()
        if self._builtin_tools:
            from subagents.tools.builtin import builtin_tools

            for tool in builtin_tools():
                registry.add(tool)
        for tool in self._extra_tools:
            registry.add(tool, replace=True)
        return registry

    # -- models ------------------------------------------------------------------------------

    def model_for(self, spec: str, *, agent_name: str | None = None) -> tuple[Model, str]:
        """The model for ``spec`` (alias or provider:model) and the resolved string."""
        from subagents.models.resolve import build_model, resolve_model_string

        if agent_name is not None and agent_name in self._agent_models:
            model = self._agent_models[agent_name]
            return model, model.name
        resolved = resolve_model_string(spec, self.config.models)
        cached = self._models.get(resolved)
        if cached is not None:
            return cached, resolved
        model = build_model(resolved, aliases=self.config.models, providers=self.config.providers)
        self._models[resolved] = model
        self._built_models.append(resolved)
        return model, resolved

    def model_for_agent(self, agent_name: str, inherited: Model) -> tuple[Model, str]:
        """``inherited`` unless a model is pinned for ``agent_name``."""
        model = self._agent_models.get(agent_name, inherited)
        return model, model.name

    def main_model(self, definition: AgentDefinition | None) -> Model:
        main = self._main_model
        if isinstance(main, str):
            return self.model_for(main)[0]
        if main is not None:
            return main
        if definition is not None:
            if definition.name in self._agent_models:
                return self._agent_models[definition.name]
            if definition.model and definition.model != "inherit":
                return self.model_for(definition.model)[0]
        default = self.config.subagents.default_model
        if default:
            return self.model_for(default)[0]
        raise ModelConfigurationError(
            "No model is configured for the main agent.",
            hint="pass --model PROVIDER:MODEL (e.g. openai:gpt-4o-mini or ollama:llama3.2), "
            "or set `default_model` under [subagents] in .subagents/config.toml",
        )

    def model_settings(self, definition: AgentDefinition | None) -> ModelSettings:
        if definition is not None and definition.temperature is not None:
            return ModelSettings(temperature=definition.temperature)
        return ModelSettings()

    def permissions_for(
        self, definition: AgentDefinition | None, parent: Session | None = None
    ) -> PermissionPolicy:
        from subagents.tools.permissions import PermissionPolicy

        mode: PermissionMode = self.permission_mode
        if definition is not None and definition.permission_mode is not None:
            # a subagent may be stricter than the run, never looser than a bypass-free run
            mode = definition.permission_mode
            if mode == "bypassPermissions" and self.permission_mode != "bypassPermissions":
                mode = self.permission_mode
        return PermissionPolicy(mode, approver=self.approver, headless=self.headless)  # type: ignore[arg-type]

    # -- running -----------------------------------------------------------------------------

    def main_session(self, delegation: Delegation, agent: str | None = None) -> Session:
        definition = self.inventory.get(agent).definition if agent else None
        tools = self.base_tools()
        if definition is not None:
            from subagents.definitions.validate import effective_tool_names

            tools = tools.subset(effective_tool_names(definition, [*tools.names(), "Task"]))
            wants_task = definition.tools is None or "Task" in (definition.tools or [])
        else:
            wants_task = True
        if wants_task and self.config.subagents.enabled and self.config.subagents.max_depth > 0:
            for tool in delegation.tools():
                tools.add(tool, replace=True)
        prompt = definition.system_prompt.strip() if definition is not None else MAIN_AGENT_PROMPT
        return Session(
            model=self.main_model(definition),
            system_prompt=prompt,
            tools=tools,
            workspace=self.workspace,
            agent_type=definition.name if definition is not None else "main",
            max_turns=(definition.max_turns if definition is not None else None)
            or self.config.subagents.max_turns,
            settings=self.model_settings(definition),
            permissions=self.permissions_for(definition),
            events=self.events,
            stream=self.stream,
            hooks=self.hooks,
            delegation=delegation,
        )

    async def run(self, prompt: str, *, agent: str | None = None) -> RunResult:
        """Run ``prompt`` with the main agent (or the agent named ``agent``) to completion."""
        delegation = Delegation(self)
        self.last_delegation = delegation
        session = self.main_session(delegation, agent)
        try:
            return await session.run(prompt)
        finally:
            await delegation.close()

    def run_sync(self, prompt: str, *, agent: str | None = None) -> RunResult:
        """:meth:`run` for code that is not async. Provider connections are closed at the end,
        since they belong to the event loop this call creates."""

        async def run_and_close() -> RunResult:
            try:
                return await self.run(prompt, agent=agent)
            finally:
                await self.aclose()

        return asyncio.run(run_and_close())

    async def aclose(self) -> None:
        """Close the provider connections of the models this runtime built."""
        while self._built_models:
            model = self._models.pop(self._built_models.pop())
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()
