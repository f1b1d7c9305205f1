"""Toolbox: what the sessions of one runtime may use. The built-in tools and your own, the
Skill tool, the MCP servers (configured, and those agent files define inline), and the
environment and sandbox of the commands tools and hooks start. Each is read or started once,
when first needed, and the MCP servers are stopped with the runtime.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.errors import ConfigError
from subagents.runtime.events import EventBus, MCPServerFailed
from subagents.tools.base import Tool, ToolRegistry

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.inventory import Inventory
    from subagents.mcp.config import MCPServerConfig, MCPServersConfig
    from subagents.mcp.connection import MCPManager
    from subagents.mcp.consent import ProjectServerPolicy
    from subagents.skills import SkillCatalog
    from subagents.tools.sandbox import BashSandbox

__all__ = ["Toolbox"]


class Toolbox:
    """The tools of one runtime (see the module docstring).

    ``config`` and ``inventory`` are the runtime's, read when first needed;
    ``inventory_if_read`` is the inventory once read (its agents' own keys are then kept out
    of the tools' environment); ``store_files`` the store's files, which tools must not write.
    """

    def __init__(
        self,
        *,
        workspace: Path,
        config: Callable[[], Config],
        inventory: Callable[[], Inventory],
        inventory_if_read: Callable[[], Inventory | None],
        store_files: Callable[[], list[Path]],
        events: EventBus,
        tools: Iterable[Tool] = (),
        builtin_tools: bool = True,
        mcp_servers: MCPServersConfig
        | Mapping[str, MCPServerConfig]
        | Iterable[MCPServerConfig]
        | None = None,
        project_mcp: ProjectServerPolicy | None = None,
    ) -> None:
        self.workspace = workspace
        self._config = config
        self._inventory = inventory
        self._inventory_if_read = inventory_if_read
        self._store_files = store_files
        self.events = events
        self.extra_tools = tuple(tools)
        self._builtin_tools = builtin_tools
        # None: the MCP servers of project files start as configured (the library trusts what
        # it is given); the CLI passes a policy that asks the person once per project
        self.project_mcp = project_mcp
        self._base_tools: tuple[Tool, ...] | None = None
        self._skills: SkillCatalog | None = None
        # MCP: None = read .mcp.json / mcp_servers.yaml; servers start before the first session
        self._mcp_servers = mcp_servers
        self._mcp_config: MCPServersConfig | None = None
        self._mcp_configured: MCPServersConfig | None = None
        self.mcp: MCPManager | None = None
        self._inline_mcp: dict[str, MCPManager] = {}  # agent name -> the servers its file defines
        self._mcp_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._mcp_tools: tuple[Tool, ...] = ()
        self._tool_env: dict[str, str] | None = None

    def tool_names(self) -> list[str]:
        """The names of the tools that are neither built in nor skills: MCP and your own."""
        return [tool.name for tool in (*self._mcp_tools, *self.extra_tools)]

    def environment(self) -> dict[str, str]:
        """The environment of the commands tools and hooks start (see
        :func:`subagents.secrets.tool_environment`), computed once."""
        if self._tool_env is None:
            from subagents.secrets import tool_environment

            self._tool_env = tool_environment(self._config())
            self.hide_endpoint_keys()
        return self._tool_env

    def endpoint_keys(self) -> dict[str, str]:
        """The keys the agents' ``llm_config.api_key_env`` name, once the inventory is read
        (until then no agent has been chosen, so no such key is in use)."""
        from subagents.models.endpoint import endpoint_keys

        inventory = self._inventory_if_read()
        if inventory is None:
            return {}
        return endpoint_keys(record.definition for record in inventory.records.values())

    def credentials(self) -> list[str]:
        """Every credential the runtime was given (see
        :func:`subagents.secrets.known_credentials`), with the keys of the agents' own
        endpoints (``llm_config.api_key_env``): what must never be stored or printed."""
        from subagents.secrets import known_credentials

        self._inventory()  # read, so that the agents' endpoint keys are known
        configured = known_credentials(self._config(), self.configured_mcp())
        return [*configured, *self.endpoint_keys().values()]

    def hide_endpoint_keys(self) -> None:
        """Take those keys out of the tools' environment, as the providers' keys are."""
        if self._tool_env is not None:
            from subagents.models.endpoint import drop_keys

            drop_keys(self._tool_env, self.endpoint_keys(), keep=self._config().tools.pass_env)

    def bash_sandbox(self) -> BashSandbox | None:
        """The sandbox Bash runs in when ``[sandbox] enabled`` is set (else ``None``); raises
        ConfigError when it is asked for and this system cannot provide it."""
        settings = self._config().sandbox
        if not settings.enabled:
            return None
        from subagents.tools.sandbox import BashSandbox, sandbox_problem

        problem = sandbox_problem()
        if problem is not None:
            raise ConfigError(
                f"[sandbox] enabled is set, but {problem}.",
                hint="install bubblewrap (e.g. 'apt-get install bubblewrap') or set "
                "[sandbox] enabled = false in .subagents/config.toml",
            )
        return BashSandbox.for_workspace(
            self.workspace, network=settings.network, extra_read_only=self._store_files()
        )

    def mcp_config(self) -> MCPServersConfig:
        """The MCP servers of this runtime: as passed in, else read from the config files."""
        if self._mcp_config is None:
            configured = self.configured_mcp()
            if self._mcp_servers is None and self.project_mcp is not None:
                from subagents.mcp.consent import screen_project_servers

                configured = screen_project_servers(configured, self.project_mcp)
            self._mcp_config = configured
        return self._mcp_config

    def configured_mcp(self) -> MCPServersConfig:
        """Every MCP server configured, approved or not: their secrets are redacted whether
        or not the person let them start."""
        if self._mcp_configured is None:
            from subagents.mcp.config import as_servers_config, load_mcp_servers

            servers = self._mcp_servers
            self._mcp_configured = (
                as_servers_config(servers)
                if servers is not None
                else load_mcp_servers(self.workspace, home=self._config().home)
            )
        return self._mcp_configured

    def known_mcp_servers(self) -> list[str]:
        """The configured servers' names, as agent files may write them."""
        from subagents.mcp.toolset import sanitise_name

        names = self.mcp_config().names()
        return sorted({*names, *(sanitise_name(name) for name in names)})

    async def start_mcp(self) -> None:
        """Start the configured MCP servers once (nothing, not even the SDK import, without
        any); their tools join :meth:`base_tools`. A server that fails is left out with a
        warning (see ``runtime.mcp.failures``). Runs started at once wait for the same start:
        each of them gets the servers' tools.

        The servers an agent file defines inline (``mcpServers: {NAME: {command: ...}}``) start
        with them, their tools kept for that agent's sessions (see :meth:`inline_mcp_tools`)."""
        if self.mcp is not None:
            return
        config = self.mcp_config()
        inline = self._inline_mcp_configs()
        if not config.enabled() and not config.problems and not inline:
            return
        loop = asyncio.get_running_loop()
        if self._mcp_lock is None or self._mcp_lock[0] is not loop:
            self._mcp_lock = (loop, asyncio.Lock())  # a lock belongs to one event loop
        async with self._mcp_lock[1]:
            if self.mcp is None:  # else started by the run this one waited for
                await self._start_mcp(config, inline)

    def _inline_mcp_configs(self) -> dict[str, MCPServersConfig]:
        """The servers each active agent defines inline; a project agent's are screened as
        the project's .mcp.json is (the person's own agents are theirs)."""
        from subagents.mcp.config import inline_servers

        found = inline_servers(record.definition for record in self._inventory().active())
        if self.project_mcp is None or not found:
            return found
        from subagents.mcp.consent import screen_project_servers

        policy = self.project_mcp
        return {agent: screen_project_servers(config, policy) for agent, config in found.items()}

    async def _start_mcp(
        self, config: MCPServersConfig, inline: dict[str, MCPServersConfig]
    ) -> None:
        from subagents.mcp.connection import MCPManager

        manager = MCPManager(config, workspace=self.workspace)
        agents = {
            name: MCPManager(servers, workspace=self.workspace) for name, servers in inline.items()
        }
        managers = [manager, *agents.values()]
        try:
            await asyncio.gather(*(each.start() for each in managers))
        except BaseException:  # cancelled while starting: stop what did start
            await asyncio.shield(asyncio.gather(*(each.aclose() for each in managers)))
            raise
        self.mcp, self._mcp_tools, self._base_tools = manager, tuple(manager.tools()), None
        self._inline_mcp = agents
        if self.events.active:
            configs = [config, *inline.values()]
            for servers, started in zip(configs, managers, strict=True):
                failures = {**servers.problems, **{k: str(v) for k, v in started.failures.items()}}
                for server, error in failures.items():
                    self.events.emit(MCPServerFailed(server, error))

    def inline_mcp_tools(self, agent: str) -> list[Tool]:
        """The tools of the servers agent ``agent``'s file defines inline (once started)."""
        manager = self._inline_mcp.get(agent)
        return manager.tools() if manager is not None else []

    def base_tools(self) -> ToolRegistry:
        """A fresh registry of every tool a main session gets (built-ins and your own)."""
        if self._base_tools is None:
            tools: list[Tool] = []
            if self._builtin_tools:
                from subagents.tools.builtin import builtin_tools

                tools.extend(builtin_tools(self._config().web))
                tools.extend(self._skill_tools())
            by_name = {tool.name: tool for tool in [*tools, *self._mcp_tools, *self.extra_tools]}
            self._base_tools = tuple(by_name.values())
        return ToolRegistry(self._base_tools)

    @property
    def skills(self) -> SkillCatalog:
        """The skills visible from the workspace (see :mod:`subagents.skills`), read once."""
        if self._skills is None:
            from subagents.skills import discover_skills

            self._skills = discover_skills(self.workspace, home=self._config().home)
        return self._skills

    def _skill_tools(self) -> list[Tool]:
        """The Skill tool, when there is a skill to load."""
        if not self.skills.invocable():
            return []
        from subagents.tools.builtin.skill import skill_tool

        return [skill_tool(self.skills)]

    async def aclose(self) -> None:
        """Stop the MCP servers (they start again when next needed)."""
        if self.mcp is not None:
            managers = [self.mcp, *self._inline_mcp.values()]
            self.mcp, self._inline_mcp = None, {}
            self._mcp_tools, self._base_tools = (), None
            await asyncio.gather(*(manager.aclose() for manager in managers))
