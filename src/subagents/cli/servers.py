"""Which server a model talks to and the modes that follow from it, said the same way by
``subagents agents show``, ``subagents models check`` and the run's progress: one line for
people, the same facts as fields for ``--json``.

A line reads ``openai:qwen at http://127.0.0.1:8080/v1 (from OPENAI_BASE_URL): a local
server, so no key needed, tool calls auto (calls written as text are read), compact tool
descriptions``: where requests go and what set it, the server's kind
(:mod:`subagents.models.server`), then the key, the ``tool_calls`` mode and the tool
description profile, each with the setting that chose it when one did. URLs are shown without
user, password, query or fragment; callers still pass lines and fields through their
redactor, as everything they print.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from subagents.errors import SubagentsError

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition
    from subagents.models.server import DescriptionProfile, Server
    from subagents.models.settings import ProviderSettings, ToolCallMode
    from subagents.runtime.runtime import Runtime

__all__ = ["ModelServer", "endpoint_server", "model_server", "session_describer"]

_API_NAMES = {"openai": "OpenAI's API", "anthropic": "Anthropic's API"}
_KIND_PHRASES = {"local": "a local server", "remote": "a remote server", "in-process": "no server"}
_MODE_EFFECTS = {
    "auto": "calls written as text are read",
    "text": "no tools sent, calls read from the text",
    "schema": "each turn constrained to one call or a reply",
}


@dataclass(frozen=True, slots=True)
class ModelServer:
    """What a model's requests meet: its server, and the key, ``tool_calls`` mode and tool
    description profile in force, with the setting behind each (``None``: the default for
    the server's kind or the provider)."""

    model: str
    server: Server
    key_needed: bool
    key_from: str | None
    """The setting or variable the key is read from (``None``: there is none)."""
    key_set: bool
    tool_calls: ToolCallMode
    tool_calls_from: str | None
    tool_descriptions: DescriptionProfile
    tool_descriptions_from: str | None

    def line(self) -> str:
        """The one line for people (see the module docstring)."""
        server, url = self.server, self.server.shown_url
        if server.kind == "in-process":
            where = f"{self.model} in this process"
        elif url is None:  # a plug-in provider's own API, whose address its package knows
            where = self.model
        else:
            source = f"from {server.source}" if server.source else "the default"
            where = f"{self.model} at {url} ({source})"
        kind = _KIND_PHRASES.get(server.kind) or _API_NAMES.get(
            server.provider, f"the {server.provider} provider's own API"
        )
        return (
            f"{where}: {kind}, so {self._key_phrase()}, tool calls {self._mode_phrase()}, "
            f"{self._profile_phrase()}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The same facts as fields (``--json``)."""
        return {
            "model": self.model,
            "base_url": self.server.shown_url,
            "base_url_from": self.server.source,
            "kind": self.server.kind,
            "key_needed": self.key_needed,
            "key_from": self.key_from,
            "key_set": self.key_set,
            "tool_calls": self.tool_calls,
            "tool_calls_from": self.tool_calls_from,
            "tool_descriptions": self.tool_descriptions,
            "tool_descriptions_from": self.tool_descriptions_from,
            "summary": self.line(),
        }

    def _key_phrase(self) -> str:
        if self.key_needed:
            missing = "" if self.key_set else ", not set"
            where = self.key_from or f"[providers.{self.server.provider}] api_key_env"
            return f"a key is needed ({where}{missing})"
        if self.key_set:
            return f"no key needed ({self.key_from} is sent)"
        return "no key needed"

    def _mode_phrase(self) -> str:
        notes = [_MODE_EFFECTS[self.tool_calls]] if self.tool_calls in _MODE_EFFECTS else []
        if self.tool_calls_from:
            notes.append(f"set by {self.tool_calls_from}")
        return self.tool_calls + (f" ({'; '.join(notes)})" if notes else "")

    def _profile_phrase(self) -> str:
        chosen = f" (set by {self.tool_descriptions_from})" if self.tool_descriptions_from else ""
        return f"{self.tool_descriptions} tool descriptions{chosen}"


def model_server(
    spec: str, providers: Mapping[str, ProviderSettings], env: Mapping[str, str] | None = None
) -> ModelServer | None:
    """The server of the model ``spec`` (``provider:model``, resolved) as ``providers``
    (``[providers.NAME]`` tables) and ``env`` (default ``os.environ``) configure it; ``None``
    for a provider not known here or that cannot be loaded (a test model, a broken plug-in)."""
    from subagents.models.registry import find_provider
    from subagents.models.server import find_server, with_base_url
    from subagents.models.settings import ProviderSettings

    environment = os.environ if env is None else env
    name = spec.partition(":")[0].strip().lower()
    configured = providers.get(name) or ProviderSettings()
    settings = with_base_url(name, configured, environment)
    try:
        provider = find_provider(name, settings)
        if provider is None:
            return None
        key_needed = provider.needs_key(settings)
        mode = settings.tool_calls or provider.default_tool_calls(settings)
        key_variable = provider.key_variable
    except SubagentsError:
        return None
    key_from, key_set = _key(name, configured, key_variable, environment)
    profile, profile_from = _profile(spec, name, providers)
    return ModelServer(
        model=spec,
        server=find_server(name, configured.base_url, environment),
        key_needed=key_needed,
        key_from=key_from,
        key_set=key_set,
        tool_calls=mode,
        tool_calls_from=f"[providers.{name}] tool_calls" if configured.tool_calls else None,
        tool_descriptions=profile,
        tool_descriptions_from=profile_from,
    )


def endpoint_server(
    definition: AgentDefinition,
    providers: Mapping[str, ProviderSettings],
    env: Mapping[str, str] | None = None,
) -> ModelServer:
    """The server of an agent that names its own (``llm_config.endpoint``; see
    :mod:`subagents.models.endpoint`): its key comes from ``llm_config.api_key_env`` only."""
    from dataclasses import replace

    from subagents.models.server import find_server

    assert definition.endpoint is not None  # the caller checked uses_endpoint
    environment = os.environ if env is None else env
    found = find_server("openai", definition.endpoint, environment)
    server = replace(found, source=f"llm_config.endpoint of {definition.location}")
    variable = definition.api_key_env
    spec = f"openai:{definition.model}"
    profile, profile_from = _profile(spec, "openai", providers)
    return ModelServer(
        model=spec,
        server=server,
        key_needed=bool(variable),
        key_from=variable,
        key_set=bool(variable and environment.get(variable)),
        tool_calls=server.default_tool_calls,
        tool_calls_from=None,
        tool_descriptions=profile,
        tool_descriptions_from=profile_from,
    )


def session_describer(runtime: Runtime) -> Callable[[str, str], str | None]:
    """For the progress output: the line of the model ``model_name`` a session of the agent
    ``agent_type`` runs on in ``runtime`` (``None`` for a model no provider here explains)."""
    from subagents.models.endpoint import uses_endpoint

    def describe(agent_type: str, model_name: str) -> str | None:
        try:
            definition = runtime.definition_named(agent_type)
            providers = runtime.config.providers
        except SubagentsError:
            return None
        if (
            definition is not None
            and uses_endpoint(definition)
            and model_name == f"openai:{definition.model}"
        ):
            return endpoint_server(definition, providers).line()
        found = model_server(model_name, providers)
        return found.line() if found is not None else None

    return describe


def _key(
    name: str, settings: ProviderSettings, variable: str | None, env: Mapping[str, str]
) -> tuple[str | None, bool]:
    """Where the key of provider ``name`` is read from, and whether one is there (the order of
    :func:`subagents.models.keys.api_key`)."""
    if settings.api_key is not None:
        return f"[providers.{name}] api_key", bool(settings.api_key.get_secret_value())
    if settings.api_key_env:
        return settings.api_key_env, bool(env.get(settings.api_key_env))
    return variable, bool(variable and env.get(variable))


def _profile(
    spec: str, name: str, providers: Mapping[str, ProviderSettings]
) -> tuple[DescriptionProfile, str | None]:
    """The tool description profile a session of ``spec`` gets, as the run decides it, and
    the setting that chose it (``None``: the default)."""
    from subagents.runtime.tool_menu import description_profile

    settings = providers.get(name)
    chosen = settings is not None and settings.tool_descriptions is not None
    return description_profile(spec, providers), (
        f"[providers.{name}] tool_descriptions" if chosen else None
    )
