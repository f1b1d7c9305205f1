"""The model of an agent that names its own server: ``llm_config.endpoint`` (an
OpenAI-compatible base URL) and ``llm_config.api_key_env`` (the variable holding its key).

The key is read from the environment when the model is built and lives only in the model
object: the definition holds the variable's name, and the runtime adds the value to the secrets
it redacts and removes the variable from the environment of the commands tools run. Without
``api_key_env`` no key is sent, not even ``OPENAI_API_KEY``: that key belongs to OpenAI, not to
whatever server the agent names. Its ``tool_calls`` mode follows the server's kind, as a
provider's does (:mod:`subagents.models.server`): native on OpenAI's API, else ``auto``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from subagents.errors import ModelConfigurationError

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition
    from subagents.models.base import Model

__all__ = [
    "build_endpoint_model",
    "drop_keys",
    "endpoint_keys",
    "endpoint_model_key",
    "uses_endpoint",
]


def uses_endpoint(definition: AgentDefinition | None) -> bool:
    """Whether ``definition`` runs on a server of its own (an endpoint and a model name)."""
    return (
        definition is not None
        and definition.endpoint is not None
        and definition.model is not None
        and definition.model != "inherit"
    )


def endpoint_model_key(definition: AgentDefinition) -> str:
    """What tells two endpoint models apart (for a cache of built models)."""
    return f"{definition.model}@{definition.endpoint}#{definition.api_key_env or ''}"


def endpoint_keys(
    definitions: Iterable[AgentDefinition], env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The keys the definitions' ``api_key_env`` variables hold (set ones only), by variable."""
    environment = os.environ if env is None else env
    names = dict.fromkeys(d.api_key_env for d in definitions if d.api_key_env)
    return {name: environment[name] for name in names if environment.get(name)}


def drop_keys(
    environment: dict[str, str], keys: Mapping[str, str], *, keep: Collection[str]
) -> None:
    """Remove from ``environment`` the variables named in ``keys`` and any other variable
    holding one of their values, except those in ``keep`` (``[tools] pass_env``)."""
    values = set(keys.values())
    for name, value in list(environment.items()):
        if name not in keep and (name in keys or value in values):
            del environment[name]


def build_endpoint_model(
    definition: AgentDefinition, *, env: Mapping[str, str] | None = None
) -> Model:
    """The OpenAI-compatible model ``definition.model`` at ``definition.endpoint``.

    Raises ModelConfigurationError when ``api_key_env`` names a variable that is not set.
    """
    if not uses_endpoint(definition):
        raise ValueError(f"agent {definition.name!r} names no endpoint and model")
    assert definition.model is not None  # uses_endpoint checked it
    environment = os.environ if env is None else env
    key: str | None = None
    source = None
    if definition.api_key_env:
        variable = definition.api_key_env
        source = f"{variable} (llm_config.api_key_env of {definition.location})"
        key = environment.get(variable) or None
        if key is None:
            raise ModelConfigurationError(
                f"Agent {definition.name!r} reads the key of {definition.endpoint} from "
                f"{variable}, which is not set.",
                hint=f"set {variable} in the environment, or change llm_config.api_key_env in "
                f"{definition.location}",
            )
    from subagents.models.openai import OpenAIChatModel
    from subagents.models.server import find_server

    server = find_server("openai", definition.endpoint, environment)
    return OpenAIChatModel(
        definition.model,
        base_url=definition.endpoint,
        api_key=key,
        provider="openai",
        api_key_source=source,
        tool_calls=server.default_tool_calls,
    )
