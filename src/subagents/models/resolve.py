"""From a model string (``provider:model``, an alias or a bare model id) to a Model.

``resolve_model_string`` only rewrites text; ``build_model`` also picks the provider class,
its settings and its API key. ``inherit`` (use the parent agent's model) is the caller's job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from subagents.errors import ModelConfigurationError
from subagents.models.aliases import DEFAULT_ALIASES, split_context_suffix

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

KNOWN_PROVIDERS = ("openai", "anthropic", "ollama", "llamacpp")

_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
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


def _key_source(provider: str, settings: ProviderSettings | None) -> str:
    if settings is not None and settings.api_key_env:
        return f"{settings.api_key_env} (named by [providers.{provider}] api_key_env)"
    default = _DEFAULT_KEY_ENV.get(provider, f"{provider.upper()}_API_KEY")
    return f"{default} (or the variable named by [providers.{provider}] api_key_env)"


def _api_key(
    provider: str, settings: ProviderSettings | None, env: Mapping[str, str]
) -> str | None:
    """The key from config, then the configured variable, then the provider's usual one."""
    if settings is not None and settings.api_key is not None:
        return settings.api_key.get_secret_value() or None
    if settings is not None and settings.api_key_env:
        value = env.get(settings.api_key_env)
        if not value:
            raise ModelConfigurationError(
                f"[providers.{provider}] api_key_env names {settings.api_key_env}, "
                "which is not set.",
                hint=f"set {settings.api_key_env} in the environment, or change api_key_env "
                "in config.toml",
            )
        return value
    default_env = _DEFAULT_KEY_ENV.get(provider)
    return (env.get(default_env) or None) if default_env else None


def missing_key_variable(
    provider: str, settings: ProviderSettings | None, env: Mapping[str, str]
) -> str | None:
    """The environment variable a model of ``provider`` needs and lacks here, else ``None``.

    The same rules as :func:`build_model`: a key in config or in the configured variable
    counts; ``openai`` needs no key with a ``base_url`` (a local server), ``ollama`` and other
    configured servers need none. Providers :func:`build_model` does not know are not judged.
    """
    if settings is not None and settings.api_key_env and settings.api_key is None:
        # build_model refuses an unset api_key_env for every provider
        return None if env.get(settings.api_key_env) else settings.api_key_env
    variable: str | None
    if settings is not None and settings.api_key is not None:
        variable = f"[providers.{provider}] api_key"
        has_key = bool(settings.api_key.get_secret_value())
    else:
        variable = _DEFAULT_KEY_ENV.get(provider)
        has_key = bool(variable and env.get(variable))
    needs_key = provider == "anthropic" or (
        provider == "openai" and (settings is None or settings.base_url is None)
    )
    return variable if needs_key and not has_key else None


def _missing_key(spec: str, provider: str, settings: ProviderSettings | None) -> Exception:
    return ModelConfigurationError(
        f"No API key for the model {spec!r}.",
        hint=f"set {_key_source(provider, settings)} in the environment",
    )


def _connection_options(settings: ProviderSettings | None) -> dict[str, Any]:
    if settings is None:
        return {}  # the models' defaults are those of ProviderSettings
    return {
        "timeout_seconds": settings.timeout_seconds,
        "connect_timeout_seconds": settings.connect_timeout_seconds,
        "max_retries": settings.max_retries,
    }


def tool_call_mode(provider: str, settings: ProviderSettings | None) -> ToolCallMode:
    """``[providers.NAME] tool_calls``, or when unset: ``native`` for the hosted Anthropic and
    OpenAI APIs (whose models always call tools natively, and may well quote a call's text
    form in an answer), ``schema`` for in-process ``llamacpp`` models, ``auto`` for every
    other server."""
    if settings is not None and settings.tool_calls is not None:
        return settings.tool_calls
    if provider == "llamacpp" and (settings is None or settings.base_url is None):
        return "schema"
    hosted = provider == "anthropic" or (
        provider == "openai" and (settings is None or settings.base_url is None)
    )
    return "native" if hosted else "auto"


def _with_tool_call_mode(model: Model, mode: ToolCallMode) -> Model:
    """``model`` reading tool calls from text as ``mode`` asks (for a provider class that does
    not do it itself)."""
    if mode not in ("auto", "text"):
        return model
    from subagents.models.text_tools import TextToolCallModel

    return TextToolCallModel(model, "text" if mode == "text" else "auto")


def _llamacpp_model(spec: str, settings: ProviderSettings | None) -> Model:
    """An in-process GGUF model: schema-constrained turns unless ``tool_calls`` says ``text``
    or ``auto`` (calls read from the text); ``native`` is refused."""
    from subagents.models.llamacpp import LlamaCppModel, gguf_path

    mode = settings.tool_calls if settings is not None else None
    if mode == "native":
        raise ModelConfigurationError(
            "llama.cpp models run in-process have no native tool calls "
            '([providers.llamacpp] tool_calls = "native").',
            hint='set tool_calls = "schema" (the default) or "text" under [providers.llamacpp] '
            "in config.toml",
        )
    options: dict[str, Any] = {}
    if settings is not None:
        options = {
            "context_tokens": settings.context_tokens,
            "timeout_seconds": settings.timeout_seconds,
        }
    model = LlamaCppModel(
        gguf_path(spec),
        spec=spec,
        tool_calls="schema" if mode in (None, "schema") else "plain",
        **options,
    )
    return model if mode in (None, "schema") else _with_tool_call_mode(model, "text")


def build_model(
    spec: str,
    *,
    aliases: Mapping[str, str] | None = None,
    providers: Mapping[str, ProviderSettings] | None = None,
    env: Mapping[str, str] | None = None,
) -> Model:
    """The Model for ``spec``, configured from ``providers`` (``[providers.NAME]`` settings).

    ``env`` defaults to ``os.environ``. Any provider name with a ``base_url`` under
    ``[providers.NAME]`` is treated as an OpenAI-compatible server.
    """
    resolved = resolve_model_string(spec, aliases)
    provider, _, model_name = resolved.partition(":")
    settings = (providers or {}).get(provider)
    environment = os.environ if env is None else env
    key = _api_key(provider, settings, environment)
    base_url = settings.base_url if settings is not None else None
    options = _connection_options(settings)
    source = _key_source(provider, settings)

    if provider == "anthropic":
        if key is None:
            raise _missing_key(resolved, provider, settings)
        from subagents.models.anthropic import AnthropicModel

        anthropic_model = AnthropicModel(
            model_name,
            base_url=base_url,
            api_key=key,
            api_key_source=source,
            **options,
        )
        return _with_tool_call_mode(anthropic_model, tool_call_mode(provider, settings))
    if provider == "llamacpp" and base_url is None:
        return _llamacpp_model(model_name, settings)
    if provider in ("openai", "ollama") or base_url is not None:
        if key is None and provider == "openai" and base_url is None:
            raise _missing_key(resolved, provider, settings)
        from subagents.models.openai import OpenAIChatModel

        return OpenAIChatModel(
            model_name,
            base_url=base_url,
            api_key=key,
            provider=provider,
            api_key_source=source,
            tool_calls=tool_call_mode(provider, settings),
            **options,
        )
    raise ModelConfigurationError(
        f"Unknown provider {provider!r} in the model {spec!r}.",
        hint=f"use one of {', '.join(KNOWN_PROVIDERS)}, or add [providers.{provider}] with "
        'base_url = "http://HOST:PORT/v1" to config.toml for another OpenAI-compatible server',
    )
