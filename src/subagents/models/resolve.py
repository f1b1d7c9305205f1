"""From a model string (``provider:model``, an alias or a bare model id) to a Model.

``resolve_model_string`` only rewrites text; ``build_model`` also finds the provider
(:mod:`subagents.models.registry`) and its key (:mod:`subagents.models.keys`). ``inherit``
(use the parent agent's model) is the caller's job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from subagents.errors import ModelConfigurationError
from subagents.models.aliases import DEFAULT_ALIASES, split_context_suffix
from subagents.models.keys import api_key
from subagents.models.providers import tool_call_mode as provider_tool_call_mode
from subagents.models.registry import (
    KNOWN_PROVIDERS,
    find_provider,
    missing_key_variable,
    unknown_provider_error,
)
from subagents.models.server import with_base_url

if TYPE_CHECKING:
    from subagents.models.base import Model
    from subagents.models.settings import ProviderSettings, ToolCallMode

__all__ = [
    "DEFAULT_ALIASES",
    "KNOWN_PROVIDERS",
    "build_model",
    "missing_key_variable",
    "resolve_model_string",
    "tool_call_mode",
]

_PROVIDER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_OPENAI_PREFIXES = ("gpt-", "chatgpt-", "o1", "o3", "o4")
_MAX_ALIAS_DEPTH = 8
_ACCEPTED_FORMS = (
    "write PROVIDER:MODEL (e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, ollama:llama3, "
    "llamacpp:PATH.gguf), "
    "a full model id (claude-..., gpt-..., o1/o3/o4...), or an alias (haiku, sonnet, opus, "
    "fable, best, opusplan, optionally with [1m], or one defined under [models] in config.toml)"
)


def _lookup_alias(name: str, aliases: Mapping[str, str]) -> str | None:
    for table in (aliases, DEFAULT_ALIASES):
        target = table.get(name)
        if target is None:
            target = table.get(name.lower())
        if target is not None:
            return target
    return None


def resolve_model_string(spec: str, aliases: Mapping[str, str] | None = None) -> str:
    """``spec`` as ``"provider:model"``; raises ModelConfigurationError when it cannot tell.

    Aliases from config win over the built-in ones and may point at other aliases. A ``[1m]``
    suffix (``sonnet[1m]``) asks for the same model with its long context: it is dropped here,
    unless ``[models]`` maps the suffixed name itself.
    """
    text = spec.strip()
    if _lookup_alias(text, aliases or {}) is None:
        text, _ = split_context_suffix(text)
    seen: list[str] = []
    while (target := _lookup_alias(text, aliases or {})) is not None:
        seen.append(text)
        if len(seen) > _MAX_ALIAS_DEPTH or target.strip() in seen:
            chain = " -> ".join([*seen, target.strip()])
            raise ModelConfigurationError(
                f"Model alias {spec!r} does not resolve: {chain}.",
                hint="make each alias under [models] in config.toml point at PROVIDER:MODEL",
            )
        text = target.strip()
    if ":" in text:
        provider, _, model = text.partition(":")
        provider, model = provider.strip(), model.strip()
        if _PROVIDER_NAME.fullmatch(provider) and model:
            return f"{provider.lower()}:{model}"
    elif text.startswith("claude-"):
        return f"anthropic:{text}"
    elif text.startswith(_OPENAI_PREFIXES):
        return f"openai:{text}"
    raise ModelConfigurationError(f"Cannot tell which model {spec!r} means.", hint=_ACCEPTED_FORMS)


def tool_call_mode(
    provider: str, settings: ProviderSettings | None, env: Mapping[str, str] | None = None
) -> ToolCallMode:
    """``[providers.NAME] tool_calls``, or when unset the provider's default: ``native`` for the
    hosted Anthropic and OpenAI APIs (whose models always call tools natively, and may well
    quote a call's text form in an answer), ``schema`` for in-process ``llamacpp`` models,
    ``auto`` for every other server, ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` included
    (see :mod:`subagents.models.server`). ``env`` defaults to ``os.environ``."""
    from subagents.models.settings import ProviderSettings

    environment = os.environ if env is None else env
    settings = with_base_url(provider, settings or ProviderSettings(), environment)
    found = find_provider(provider, settings)
    if found is None:
        return settings.tool_calls or "auto"
    return provider_tool_call_mode(found, settings)


def build_model(
    spec: str,
    *,
    aliases: Mapping[str, str] | None = None,
    providers: Mapping[str, ProviderSettings] | None = None,
    env: Mapping[str, str] | None = None,
) -> Model:
    """The Model for ``spec``, configured from ``providers`` (``[providers.NAME]`` settings).

    ``env`` defaults to ``os.environ``. A provider name that is neither built in nor installed
    (:mod:`subagents.models.registry`) but has a ``base_url`` under ``[providers.NAME]`` is an
    OpenAI-compatible server. Without one, ``openai`` and ``anthropic`` take their SDK's
    ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` from ``env`` as their ``base_url``.
    """
    from subagents.models.settings import ProviderSettings

    resolved = resolve_model_string(spec, aliases)
    name, _, model_name = resolved.partition(":")
    environment = os.environ if env is None else env
    settings = with_base_url(name, (providers or {}).get(name) or ProviderSettings(), environment)
    provider = find_provider(name, settings)
    if provider is None:
        raise unknown_provider_error(name, spec)
    key = api_key(resolved, provider, settings, environment)
    return provider.build(name, model_name, settings, key)
