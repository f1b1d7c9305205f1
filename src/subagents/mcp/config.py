"""MCP server configs: Claude Code's ``.mcp.json`` and our ``mcp_servers.yaml``.

Both files have one shape::

    {"mcpServers": {"calc": {"command": "python", "args": ["calc.py"], "env": {"K": "${K}"}},
                    "docs": {"type": "http", "url": "https://example.com/mcp",
                             "headers": {"Authorization": "Bearer ${TOKEN}"}}}}

``type`` is ``stdio`` (the default when ``command`` is given), ``sse`` or ``http`` (streamable
HTTP; the default when only ``url`` is given). Beyond what Claude Code reads, every server may
set ``timeout_seconds`` (one tool call, default 300), ``startup_timeout_seconds`` (connect and
list tools, default 30), ``fallback_tools`` (tools tried in order, with the same arguments, when
a call fails or times out: any tool the agent has, by the name the model sees, e.g.
``mcp__other__search`` or ``WebFetch``), ``tools`` (per tool, by its own name:
``timeout_seconds`` and ``fallback_tools`` over the server's), ``enabled`` (default true) and
``trusted`` (default false: ``true``, or a list of tool names, makes us believe the tools'
``readOnlyHint`` and ``idempotentHint`` annotations, which the MCP specification calls
untrusted hints; an untrusted tool counts as side-effecting, so it asks before it runs and is
refused in plan mode). A key none of these is ignored, as Claude Code ignores keys it does not
know, but never silently: :attr:`MCPServersConfig.warnings` names it with its file.

Strings in ``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers`` may use ``${VAR}`` and
``${VAR:-default}``, expanded from the environment when the file is read. A server whose
variable is unset (and has no default) is not started; the reason is in
:attr:`MCPServersConfig.problems`.

Files, lowest precedence first (a later file replaces a whole server entry of the same name):

1. ``<home>/.claude.json`` (its top-level ``mcpServers``, where Claude Code keeps user servers);
2. ``<home>/.subagents/mcp_servers.yaml``;
3. for each project directory from the farthest to the nearest (see :mod:`subagents.config`):
   ``.mcp.json``, then ``.subagents/mcp_servers.yaml``, then that directory's private servers in
   ``<home>/.claude.json`` (``projects.DIR.mcpServers``, Claude Code's "local" scope; they
   are the user's own, so they start without the project consent).

Env values and headers are :class:`~pydantic.SecretStr`, so printing a config never shows them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from subagents._preview import preview, shorten
from subagents._read_capped import FileTooLargeError, NotARegularFileError, read_capped
from subagents.errors import ConfigError
from subagents.mcp.paths import mcp_config_paths

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_CLAUDE_JSON_BYTES",
    "MAX_MCP_FILE_BYTES",
    "MCPServerConfig",
    "MCPServersConfig",
    "MCPToolSettings",
    "SSEServerConfig",
    "StdioServerConfig",
    "StreamableHTTPServerConfig",
    "as_servers_config",
    "expand_variables",
    "inline_servers",
    "load_mcp_servers",
    "mcp_config_paths",
    "parse_mcp_servers",
    "read_mcp_file",
]

DEFAULT_TIMEOUT_SECONDS = 300.0
MAX_MCP_FILE_BYTES = 1 << 20
"""``.mcp.json`` and ``mcp_servers.yaml`` files larger than this are refused."""
MAX_CLAUDE_JSON_BYTES = 64 << 20
"""The cap for ``~/.claude.json``, where Claude Code also keeps its (growing) history."""
DEFAULT_STARTUP_TIMEOUT_SECONDS = 30.0
_MAX_JSON_DEPTH = 100  # as for YAML (subagents._yaml.MAX_YAML_DEPTH)
_SHOWN_CHARS = 80  # of a name quoted in an error message
_MAX_DESCRIBED = 20  # problems of one server described one by one
_HTTP_TYPE_NAMES = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})


# The models below validate the entries of MCP config files: most runs have none, so each one
# builds its validator when first used (defer_build), not when a run imports this module.


class MCPToolSettings(BaseModel):
    """What one tool of a server sets over the server's own settings."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    timeout_seconds: float | None = Field(None, gt=0)
    fallback_tools: list[str] | None = None


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True, defer_build=True)

    name: str = ""
    timeout_seconds: float = Field(DEFAULT_TIMEOUT_SECONDS, gt=0)
    startup_timeout_seconds: float = Field(DEFAULT_STARTUP_TIMEOUT_SECONDS, gt=0)
    fallback_tools: list[str] = []
    tools: dict[str, MCPToolSettings] = {}
    enabled: bool = True
    trusted: bool | list[str] = False

    def trusts(self, tool: str) -> bool:
        """Whether this server's annotations of ``tool`` (its own, unprefixed name) count."""
        if isinstance(self.trusted, bool):
            return self.trusted
        return tool in self.trusted

    def tool_timeout(self, tool: str) -> float:
        """How long one call of ``tool`` (its own name) may take."""
        settings = self.tools.get(tool)
        if settings is not None and settings.timeout_seconds is not None:
            return settings.timeout_seconds
        return self.timeout_seconds

    def tool_fallbacks(self, tool: str) -> tuple[str, ...]:
        """The tools tried, in order, when a call of ``tool`` fails or times out."""
        settings = self.tools.get(tool)
        if settings is not None and settings.fallback_tools is not None:
            return tuple(settings.fallback_tools)
        return tuple(self.fallback_tools)


class StdioServerConfig(_ServerBase):
    """A server run as a subprocess, speaking MCP on its stdin and stdout.

    The process gets a small safe environment (``PATH``, ``HOME``, ...) plus ``env``.
    """

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = []
    env: dict[str, SecretStr] = {}
    cwd: str | None = None


class SSEServerConfig(_ServerBase):
    """A server reached over HTTP with Server-Sent Events (the older MCP HTTP transport)."""

    type: Literal["sse"] = "sse"
    url: str = Field(min_length=1)
    headers: dict[str, SecretStr] = {}


class StreamableHTTPServerConfig(_ServerBase):
    """A server reached over MCP's streamable HTTP transport."""

    type: Literal["http"] = "http"
    url: str = Field(min_length=1)
    headers: dict[str, SecretStr] = {}


MCPServerConfig = Annotated[
    StdioServerConfig | SSEServerConfig | StreamableHTTPServerConfig, Field(discriminator="type")
]


class _ServerEntry(BaseModel):
    model_config = ConfigDict(defer_build=True)

    server: MCPServerConfig


@dataclass(slots=True)
class MCPServersConfig:
    """Every MCP server configured for a project.

    ``servers`` are the usable ones (enabled or not); ``problems`` maps the names of servers
    that cannot be started as configured (an unset ``${VAR}``) to the reason; ``sources`` says
    which file each name came from.
    """

    servers: dict[str, MCPServerConfig] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    sources: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """Keys that are ignored (unknown here), each with its file: ``FILE: 'KEY' ...``."""

    def enabled(self) -> list[MCPServerConfig]:
        return [server for server in self.servers.values() if server.enabled]

    def names(self) -> list[str]:
        """Every configured server name (for agent validation), disabled ones excluded."""
        disabled = {name for name, server in self.servers.items() if not server.enabled}
        return sorted({*self.servers, *self.problems} - disabled)


def as_servers_config(
    servers: MCPServersConfig | Mapping[str, MCPServerConfig] | Iterable[MCPServerConfig],
) -> MCPServersConfig:
    """``servers`` (a config, a name -> server mapping or servers) as one config."""
    if isinstance(servers, MCPServersConfig):
        return servers
    if isinstance(servers, Mapping):
        named = {
            name: config if config.name == name else config.model_copy(update={"name": name})
            for name, config in servers.items()
        }
        return MCPServersConfig(servers=named)
    return MCPServersConfig(servers={config.name: config for config in servers})


# -- ${VAR} expansion --------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _MissingVariableError(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def expand_variables(text: str, environ: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from ``environ`` (default: the process's).

    Raises ``KeyError`` naming the first variable that is unset and has no default.
    """
    env = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        raise KeyError(name)

    return _VARIABLE.sub(replace, text)


def _expand(value: Any, environ: dict[str, str] | None) -> Any:
    if isinstance(value, str):
        try:
            return expand_variables(value, environ)
        except KeyError as error:
            raise _MissingVariableError(str(error.args[0])) from None
    if isinstance(value, list):
        return [_expand(item, environ) for item in value]
    if isinstance(value, dict):
        return {key: _expand(item, environ) for key, item in value.items()}
    return value


_EXPANDED_KEYS = ("command", "args", "env", "cwd", "url", "headers")


# -- parsing -----------------------------------------------------------------------------------


def parse_mcp_servers(
    raw: Any, source: Path, *, environ: dict[str, str] | None = None
) -> MCPServersConfig:
    """The servers of one file's content (``{"mcpServers": {...}}``); ConfigError when bad."""
    result = MCPServersConfig()
    if raw is None:
        return result
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: expected an object with an 'mcpServers' key, got {type(raw).__name__}.",
            hint=f'write it as {{"mcpServers": {{"NAME": {{...}}}}}} in {source}',
        )
    servers = raw.get("mcpServers", {})
    if servers is None:
        return result
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{source}: 'mcpServers' must map server names to server settings, "
            f"got {type(servers).__name__}.",
            hint=f"write 'mcpServers' as an object of NAME: {{command: ...}} in {source}",
        )
    if source.name != ".claude.json":  # Claude Code keeps much else at its top level
        result.warnings += [
            _ignored(source, _shown(key), _FILE_KEYS) for key in raw if key not in _FILE_KEYS
        ]
    for name, entry in servers.items():
        key = f"mcpServers.{_shown(name)}"
        if not isinstance(entry, dict):
            raise ConfigError(
                f"{source}: '{key}' must be an object of server settings, "
                f"got {type(entry).__name__}.",
                hint=f"give '{key}' a 'command' (stdio) or a 'type' and 'url' in {source}",
            )
        try:
            expanded = {
                k: (_expand(v, environ) if k in _EXPANDED_KEYS else v) for k, v in entry.items()
            }
        except _MissingVariableError as missing:
            result.problems[str(name)] = (
                f"{source}: '{key}' uses ${{{shorten(missing.name, _SHOWN_CHARS)}}}, "
                "which is not set"
            )
            result.sources[str(name)] = source
            continue
        result.warnings += _unknown_keys(entry, source, key)
        result.servers[str(name)] = _server(str(name), expanded, source, key)
        result.sources[str(name)] = source
    return result


_FILE_KEYS = frozenset({"mcpServers"})
_TRANSPORT_KEYS = {
    "stdio": frozenset(StdioServerConfig.model_fields) - {"name"},
    "sse": frozenset(SSEServerConfig.model_fields) - {"name"},
    "http": frozenset(StreamableHTTPServerConfig.model_fields) - {"name"},
}
_TOOL_KEYS = frozenset(MCPToolSettings.model_fields)


def _unknown_keys(entry: dict[Any, Any], source: Path, key: str) -> list[str]:
    """A warning for each key of a server's entry (and of its per-tool settings) that no
    setting of its transport reads."""
    kind = entry.get("type")
    if kind is None:
        kind = "stdio" if "command" in entry or "url" not in entry else "http"
    if not isinstance(kind, str):
        return []  # a bad type is an error of its own
    known = _TRANSPORT_KEYS.get("http" if kind in _HTTP_TYPE_NAMES else kind)
    if known is None:
        return []
    found = [
        _ignored(source, f"{key}.{_shown(name)}", known) for name in entry if name not in known
    ]
    tools = entry.get("tools")
    if isinstance(tools, dict):
        for tool, settings in tools.items():
            if isinstance(settings, dict):
                found += [
                    _ignored(source, f"{key}.tools.{_shown(tool)}.{_shown(name)}", _TOOL_KEYS)
                    for name in settings
                    if name not in _TOOL_KEYS
                ]
    return found


def _ignored(source: Path, key: str, known: Iterable[str]) -> str:
    return (
        f"{source}: '{key}' is not a setting subagents reads, so it is ignored - remove it "
        f"(the settings here: {', '.join(sorted(known))})"
    )


def _shown(name: object) -> str:
    return shorten(name, _SHOWN_CHARS) if isinstance(name, str) else preview(name, _SHOWN_CHARS)


def _server(name: str, entry: dict[str, Any], source: Path, key: str) -> MCPServerConfig:
    data = dict(entry)
    kind = data.get("type")
    if kind is None:
        data["type"] = "stdio" if "command" in data or "url" not in data else "http"
    elif isinstance(kind, str) and kind in _HTTP_TYPE_NAMES:
        data["type"] = "http"
    data["name"] = name
    try:
        return _ServerEntry.model_validate({"server": data}).server
    except ValidationError as error:
        problems = []
        details = error.errors(include_url=False, include_input=False)
        for item in details[:_MAX_DESCRIBED]:
            location = [str(part) for part in item["loc"][1:]]
            if location and location[0] in ("stdio", "sse", "http"):
                location = location[1:]  # the union member's tag, not a key of the file
            where = ".".join([key, *location]) if location else key
            problems.append(f"'{shorten(where, _SHOWN_CHARS * 2)}': {item['msg']}")
        if len(details) > _MAX_DESCRIBED:
            problems.append(f"and {len(details) - _MAX_DESCRIBED} more problems")
        raise ConfigError(
            f"{source}: bad MCP server settings: " + "; ".join(problems) + ".",
            hint=f"fix or remove '{key}' in {source} (stdio servers need 'command'; "
            "'sse' and 'http' servers need 'url')",
        ) from None


# -- files -------------------------------------------------------------------------------------


def read_mcp_file(path: Path, *, environ: dict[str, str] | None = None) -> MCPServersConfig:
    """The servers of one ``.mcp.json``, ``.claude.json`` or ``mcp_servers.yaml`` file."""
    text = _read_text(path)
    raw = _load_yaml(path, text) if path.suffix in (".yaml", ".yml") else _load_json(path, text)
    return parse_mcp_servers(raw, path, environ=environ)


def _read_text(path: Path) -> str:
    # Claude Code keeps its history in ~/.claude.json, which grows with use.
    limit = MAX_CLAUDE_JSON_BYTES if path.name == ".claude.json" else MAX_MCP_FILE_BYTES
    try:
        return read_capped(path, limit).decode("utf-8")
    except FileTooLargeError as error:
        raise ConfigError(
            f"{path}: the MCP server file is too large ({error}).",
            hint="it should hold server settings only: remove what does not belong there",
        ) from None
    except NotARegularFileError:
        raise ConfigError(
            f"{path}: cannot read the MCP server file (it is not a regular file).",
            hint="replace it with a plain file or remove it",
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"{path}: cannot read the MCP server file ({error}).",
            hint="fix its permissions or encoding (UTF-8), or remove it",
        ) from error


def _load_json(path: Path, text: str) -> Any:
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path}:{error.lineno}:{error.colno}: JSON syntax error: {error.msg}.",
            hint="fix the syntax at that line (strings in double quotes, no trailing commas)",
        ) from None
    except RecursionError:
        raise _too_deep(path) from None
    if isinstance(data, dict) and _deeper_than(data.get("mcpServers"), _MAX_JSON_DEPTH):
        raise _too_deep(path)  # reading it would recurse that deep
    return data


def _deeper_than(value: Any, depth: int) -> bool:
    level: list[Any] = [value]
    for _ in range(depth):
        level = [
            item
            for container in level
            if isinstance(container, dict | list)
            for item in (container.values() if isinstance(container, dict) else container)
        ]
        if not level:
            return False
    return True


def _too_deep(path: Path) -> ConfigError:
    return ConfigError(
        f"{path}: 'mcpServers' nests values more than {_MAX_JSON_DEPTH} levels deep.",
        hint="flatten it: server settings need a few levels only (mcpServers.NAME.args)",
    )


def _load_yaml(path: Path, text: str) -> Any:
    import yaml

    from subagents._yaml import YAMLLimitError, load_yaml, yaml_problem

    try:
        return load_yaml(text, what="the file")
    except yaml.YAMLError as error:
        line, problem = yaml_problem(error)
        where = f"{path}:{line}" if line is not None else str(path)
        if isinstance(error, YAMLLimitError):
            raise ConfigError(
                f"{where}: {problem}.", hint=f"simplify the YAML at that line of {path}"
            ) from None
        raise ConfigError(
            f"{where}: YAML syntax error: {problem}.",
            hint="fix the syntax at that line (indent with spaces; quote values holding ': ')",
        ) from None


def load_mcp_servers(
    cwd: Path | None = None,
    *,
    home: Path | None = None,
    environ: dict[str, str] | None = None,
) -> MCPServersConfig:
    """Every server configured for ``cwd``, project files over user files (see above); a
    project's private servers in ``~/.claude.json`` (``projects.DIR.mcpServers``, Claude
    Code's "local" scope) over that project's own files."""
    from subagents.config import CONFIG_DIR_NAME, project_directories, resolve_home

    home_dir = resolve_home(home)
    merged = MCPServersConfig()
    claude_json = home_dir / ".claude.json"
    claude_raw: Any = None
    if claude_json.is_file():
        claude_raw = _load_json(claude_json, _read_text(claude_json))
        _merge(merged, parse_mcp_servers(claude_raw, claude_json, environ=environ))
    _merge_file(merged, home_dir / CONFIG_DIR_NAME / "mcp_servers.yaml", environ)
    for directory in reversed(project_directories(cwd, home=home_dir)):
        _merge_file(merged, directory / ".mcp.json", environ)
        _merge_file(merged, directory / CONFIG_DIR_NAME / "mcp_servers.yaml", environ)
        local = _local_servers(claude_raw, directory)
        if local is not None:
            _merge(merged, parse_mcp_servers(local, claude_json, environ=environ))
    return merged


def inline_servers(definitions: Iterable[AgentDefinition]) -> dict[str, MCPServersConfig]:
    """The servers each of ``definitions`` defines inline (its ``mcpServers`` entries that
    are whole server settings, in Claude Code's shape), read like a file's, by agent name;
    agents that define none are left out."""
    found = {}
    for definition in definitions:
        if definition.mcp_server_configs:
            source = definition.source_path or Path(definition.location)
            configs = {"mcpServers": dict(definition.mcp_server_configs)}
            found[definition.name] = parse_mcp_servers(configs, source)
    return found


def _merge_file(merged: MCPServersConfig, path: Path, environ: dict[str, str] | None) -> None:
    if path.is_file():
        _merge(merged, read_mcp_file(path, environ=environ))


def _local_servers(claude_raw: Any, directory: Path) -> dict[str, Any] | None:
    """``{"mcpServers": ...}`` of ``directory``'s entry in ``~/.claude.json``, if any."""
    if not isinstance(claude_raw, dict):
        return None
    projects = claude_raw.get("projects")
    entry = projects.get(str(directory)) if isinstance(projects, dict) else None
    if not isinstance(entry, dict) or not entry.get("mcpServers"):
        return None
    return {"mcpServers": entry["mcpServers"]}


def _merge(merged: MCPServersConfig, found: MCPServersConfig) -> None:
    for name in [*found.servers, *found.problems]:
        merged.servers.pop(name, None)
        merged.problems.pop(name, None)
    merged.servers.update(found.servers)
    merged.problems.update(found.problems)
    merged.sources.update(found.sources)
    merged.warnings += found.warnings
