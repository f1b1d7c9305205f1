"""The API key of a provider, in one place: where it is read from, when its absence is an
error, and what that error says. The rules per provider come from its registry entry
(:class:`~subagents.models.registry.Provider`: ``key_variable`` and ``needs_key``), which
the registry hands in: this module sits below the registry and the model classes alike.

The key is, in order: ``[providers.NAME] api_key`` (discouraged: it sits in a file), the
variable named by ``[providers.NAME] api_key_env`` (an error when it is unset, whatever the
provider), then the provider's usual variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``).
Whether one is needed depends on the server (:mod:`subagents.models.server`): a provider's
own API needs it, a server at ``base_url`` or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``
gets the key if one is set, and works without.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from subagents.errors import ModelConfigurationError
from subagents.models.server import endpoint_kind, with_base_url

if TYPE_CHECKING:
    from subagents.models.registry import Provider
    from subagents.models.settings import ProviderSettings

__all__ = [
    "ApiKey",
    "api_key",
    "default_key",
    "key_source",
    "missing_key_error",
]

# A model class built directly reads its SDK's own variable, for its own provider only.
_SDK_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A provider's key as :func:`api_key` found it: ``value`` (``None`` when the provider
    needs none and none is set) and ``source``, where it is looked up, for messages
    (``OPENAI_API_KEY (or the variable named by [providers.openai] api_key_env)``)."""

    value: str | None
    source: str

    def __repr__(self) -> str:
        return f"ApiKey(value={'***' if self.value else None}, source={self.source!r})"


def key_source(name: str, settings: ProviderSettings | None, variable: str | None) -> str:
    """Where the key of provider ``name`` is looked up (``variable``: its usual one), for
    messages."""
    if settings is not None and settings.api_key is not None:
        return f"[providers.{name}] api_key in config.toml"
    if settings is not None and settings.api_key_env:
        return f"{settings.api_key_env} (named by [providers.{name}] api_key_env)"
    if variable is None:
        return f"the variable named by [providers.{name}] api_key_env"
    return f"{variable} (or the variable named by [providers.{name}] api_key_env)"


def missing_key_error(spec: str, source: str) -> ModelConfigurationError:
    return ModelConfigurationError(
        f"No API key for the model {spec!r}.", hint=f"set {source} in the environment"
    )


def api_key(
    spec: str,
    provider: Provider,
    settings: ProviderSettings,
    env: Mapping[str, str],
) -> ApiKey:
    """The key for ``spec`` (``NAME:MODEL``) served by ``provider``; raises
    ModelConfigurationError when ``api_key_env`` names an unset variable, or when the provider
    needs a key and none is set."""
    name = spec.partition(":")[0]
    settings = with_base_url(name, settings, env)
    variable = provider.key_variable
    source = key_source(name, settings, variable)
    if settings.api_key is not None:
        value = settings.api_key.get_secret_value() or None
    elif settings.api_key_env:
        value = env.get(settings.api_key_env) or None
        if value is None:
            raise ModelConfigurationError(
                f"[providers.{name}] api_key_env names {settings.api_key_env}, which is not set.",
                hint=f"set {settings.api_key_env} in the environment, or change api_key_env "
                "in config.toml",
            )
    else:
        value = (env.get(variable) or None) if variable else None
    if value is None and provider.needs_key(settings):
        if settings.api_key is not None:
            raise ModelConfigurationError(
                f"No API key for the model {spec!r}: [providers.{name}] api_key is empty.",
                hint=f"give [providers.{name}] api_key a value in config.toml, or remove it "
                f"to read the key from {key_source(name, None, variable)}",
            )
        raise missing_key_error(spec, source)
    return ApiKey(value, source)


def default_key(name: str, base_url: str | None, model_name: str, value: str | None) -> ApiKey:
    """The key of a model class built directly (no ``[providers.NAME]`` table applies):
    ``value`` if given; else, for the SDK's own provider (``openai``, ``anthropic``), its
    usual variable when the SDK chooses the server (no ``base_url``: its own API, or the one
    its ``*_BASE_URL`` variable names, which comes with the SDK's key variable) or when the
    server is the provider's own API, which needs it; else none - one provider's key is never
    sent to a server the caller named."""
    from subagents.models.settings import ProviderSettings

    variable = _SDK_KEY_VARIABLES.get(name.lower())
    source = key_source(name, None, variable)
    if value is not None or variable is None:
        return ApiKey(value, source)
    settings = with_base_url(name, ProviderSettings(base_url=base_url), os.environ)
    hosted = endpoint_kind(name.lower(), settings.base_url) == "hosted"
    if base_url is not None and not hosted:
        return ApiKey(None, source)
    found = os.environ.get(variable) or None
    if found is None and hosted:
        raise missing_key_error(f"{name}:{model_name}", source)
    return ApiKey(found, source)
