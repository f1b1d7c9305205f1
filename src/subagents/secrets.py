"""The credentials the harness was given, and the environment of the commands it runs for a
model.

Every credential we were given is a secret, whatever its variable is called:
:func:`known_credentials` lists the provider keys (``[providers.NAME] api_key``, the variable
named by ``api_key_env``, ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, and the web search key of
``[web]``), the MCP servers' ``env``
values and ``headers`` that are credentials, and the environment variables named like secrets;
:class:`~subagents.redaction.Redactor` keeps them out of everything stored or printed.

A model drives the Bash tool and, through its tool calls, the shell hooks: the commands they
start get :func:`tool_environment`, this process's environment without the providers' keys
(the variables above and any variable holding one of those keys), except the variables named
in ``[tools] pass_env``. Other tokens (``GITHUB_TOKEN``, which ``gh`` needs) are passed on.
stdio MCP servers are started by the MCP SDK with its own small environment plus their
configured ``env``, so no provider key reaches them either.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.redaction import Redactor, looks_like_secret_name, secret_env_values

if TYPE_CHECKING:
    from subagents.config import Config
    from subagents.mcp.config import MCPServersConfig

__all__ = [
    "PROVIDER_KEY_VARIABLES",
    "known_credentials",
    "looks_like_token",
    "provider_key_variables",
    "tool_environment",
    "workspace_redactor",
]

PROVIDER_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The variables the providers read their key from when ``api_key_env`` names none."""

# A value shorter than this is no key: "1" or "true" must not make every variable equal to it
# disappear from a tool's environment.
_MIN_KEY_LENGTH = 8
_TOKEN_LIKE = re.compile(r"(?=[^\s]*[A-Za-z])(?=[^\s]*[0-9])[A-Za-z0-9_.+/=~-]{16,}")
_SCHEME_AND_TOKEN = re.compile(r"[A-Za-z]+\s+(\S{8,})")


def looks_like_token(value: str) -> bool:
    """Whether ``value`` reads like a token: one long word of letters and digits (16
    characters or more, both kinds), and no path or URL. ``production``, ``/usr/bin``, ``1``
    and ``true`` do not."""
    if value.startswith(("/", "~", ".")) or "://" in value:
        return False
    return _TOKEN_LIKE.fullmatch(value) is not None


def provider_key_variables(config: Config | None) -> list[str]:
    """The variables the providers' keys come from: ``api_key_env`` of each
    ``[providers.NAME]``, the web search backend's (``[web] search_api_key_env``), then
    :data:`PROVIDER_KEY_VARIABLES`."""
    names: list[str] = []
    if config is not None:
        names += [s.api_key_env for s in config.providers.values() if s.api_key_env]
        search_key = config.web.search_key_variable()  # WebSearch's key: a provider's too
        if search_key is not None:
            names.append(search_key)
    names += PROVIDER_KEY_VARIABLES
    return list(dict.fromkeys(names))


def _provider_keys(config: Config | None, env: Mapping[str, str]) -> list[str]:
    keys = [env[name] for name in provider_key_variables(config) if env.get(name)]
    if config is not None:
        keys += [s.api_key.get_secret_value() for s in config.providers.values() if s.api_key]
    return [key for key in keys if key]


def _mcp_credentials(servers: MCPServersConfig) -> Iterator[str]:
    for server in servers.servers.values():
        values = server.env if server.type == "stdio" else server.headers
        for name, secret in values.items():
            value = secret.get_secret_value()
            if looks_like_secret_name(name) or looks_like_token(value):
                yield value
                scheme = _SCHEME_AND_TOKEN.fullmatch(value)  # "Bearer TOKEN": the token alone
                if scheme is not None:
                    yield scheme.group(1)


def known_credentials(
    config: Config | None,
    mcp_servers: MCPServersConfig | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """Every credential value this process was given (see the module docstring), each once.

    ``environ`` defaults to ``os.environ``.
    """
    env = os.environ if environ is None else environ
    found = _provider_keys(config, env)
    if mcp_servers is not None:
        found += _mcp_credentials(mcp_servers)
    found += secret_env_values(env)
    return list(dict.fromkeys(value for value in found if value))


def tool_environment(
    config: Config | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for commands started for a model (the Bash tool, shell hooks): ``environ``
    (default ``os.environ``) without the providers' keys, except ``[tools] pass_env``."""
    env = os.environ if environ is None else environ
    variables = set(provider_key_variables(config))
    keys = {key for key in _provider_keys(config, env) if len(key) >= _MIN_KEY_LENGTH}
    passed = set(config.tools.pass_env) if config is not None else set()
    return {
        name: value
        for name, value in env.items()
        if name in passed or (name not in variables and value not in keys)
    }


def workspace_redactor(cwd: Path | None = None) -> Redactor:
    """A redactor for what the CLI prints about the project at ``cwd``: its configuration's
    credentials included. A configuration that cannot be read is left out (the command at
    hand reads the store, not the configuration); the environment's secrets still count."""
    from subagents.config import load_config
    from subagents.errors import SubagentsError

    try:
        return Redactor(known_credentials(load_config(cwd), _mcp_servers(cwd)))
    except SubagentsError:
        return Redactor(known_credentials(None))


def _mcp_servers(cwd: Path | None) -> MCPServersConfig | None:
    """The MCP servers configured for ``cwd``; None when no file configures any (the config
    models, ~20 ms to build, are then not needed)."""
    from subagents.mcp.paths import mcp_config_paths

    if not any(path.is_file() for path in mcp_config_paths(cwd)):
        return None
    from subagents.mcp.config import load_mcp_servers

    return load_mcp_servers(cwd)
