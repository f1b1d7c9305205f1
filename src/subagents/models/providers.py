"""The built-in providers (see :mod:`subagents.models.registry`): OpenAI and any server that
speaks its Chat Completions API, Ollama, Anthropic, and GGUF files run in-process by llama.cpp.

Each one only knows its key rules and which model class to build with which settings; the
classes are imported when a model is built, so importing this module loads no SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from subagents.errors import ModelConfigurationError
from subagents.models.server import endpoint_kind, find_server

if TYPE_CHECKING:
    from subagents.models.base import Model
    from subagents.models.registry import ApiKey, Provider
    from subagents.models.settings import ProviderSettings, ToolCallMode

__all__ = [
    "ANTHROPIC",
    "BUILTIN",
    "COMPATIBLE",
    "LLAMACPP",
    "OLLAMA",
    "OPENAI",
    "AnthropicProvider",
    "LlamaCppProvider",
    "OpenAICompatibleProvider",
    "connection_options",
    "tool_call_mode",
    "with_tool_call_mode",
]


def connection_options(settings: ProviderSettings) -> dict[str, Any]:
    """The timeouts and retries of ``settings``, as the SDK-backed model classes take them."""
    return {
        "timeout_seconds": settings.timeout_seconds,
        "connect_timeout_seconds": settings.connect_timeout_seconds,
        "max_retries": settings.max_retries,
    }


def tool_call_mode(provider: Provider, settings: ProviderSettings) -> ToolCallMode:
    """``[providers.NAME] tool_calls``, or the provider's default when it is unset."""
    return settings.tool_calls or provider.default_tool_calls(settings)


def with_tool_call_mode(model: Model, mode: ToolCallMode) -> Model:
    """``model`` reading tool calls from text as ``mode`` asks (for a model class that does
    not do it itself)."""
    if mode not in ("auto", "text"):
        return model
    from subagents.models.text_tools import TextToolCallModel

    return TextToolCallModel(model, "text" if mode == "text" else "auto")


@dataclass(frozen=True, slots=True)
class OpenAICompatibleProvider:
    """A Chat Completions server. ``api`` names the provider whose own server this is unless
    ``base_url`` points elsewhere: ``openai`` (OpenAI's API: it needs a key, and its models
    call tools natively), ``ollama`` (a local server); ``None``: the server ``base_url``
    names. The key and ``tool_calls`` rules follow the server's kind
    (:mod:`subagents.models.server`): only a hosted API needs a key; a local server's
    models answer in turns constrained to a call or a reply; a remote server's may write
    their calls as text, which are read too."""

    key_variable: str | None = None
    api: str | None = None

    def needs_key(self, settings: ProviderSettings) -> bool:
        return self.api is not None and endpoint_kind(self.api, settings.base_url) == "hosted"

    def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
        if self.api is None and settings.base_url is None:
            return "auto"  # no server named: whatever answers may write its calls as text
        return find_server(self.api or "openai", settings.base_url, {}).default_tool_calls

    def build(
        self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
    ) -> Model:
        from subagents.models.openai import OpenAIChatModel

        return OpenAIChatModel(
            model_name,
            base_url=settings.base_url,
            api_key=key.value,
            provider=provider,
            api_key_source=key.source,
            tool_calls=tool_call_mode(self, settings),
            **connection_options(settings),
        )


@dataclass(frozen=True, slots=True)
class AnthropicProvider:
    """Anthropic's Messages API: a key is needed and tools are called natively, unless
    ``base_url`` (or ``ANTHROPIC_BASE_URL``) names another server that speaks it (llama.cpp,
    LM Studio, Ollama, a proxy): then no key is needed and calls written as text are read."""

    key_variable: str | None = "ANTHROPIC_API_KEY"

    def needs_key(self, settings: ProviderSettings) -> bool:
        return endpoint_kind("anthropic", settings.base_url) == "hosted"

    def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
        return "native" if self.needs_key(settings) else "auto"

    def build(
        self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
    ) -> Model:
        from subagents.models.anthropic import AnthropicModel

        model = AnthropicModel(
            model_name,
            base_url=settings.base_url,
            api_key=key.value,
            api_key_source=key.source,
            **connection_options(settings),
        )
        return with_tool_call_mode(model, tool_call_mode(self, settings))


@dataclass(frozen=True, slots=True)
class LlamaCppProvider:
    """A GGUF file run in this process: no key, schema-constrained turns unless
    ``tool_calls`` says ``text`` or ``auto`` (calls read from the text); ``native`` is
    refused. (``[providers.llamacpp] base_url`` means a llama.cpp server instead.)"""

    key_variable: str | None = None

    def needs_key(self, settings: ProviderSettings) -> bool:
        return False

    def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
        return "schema"

    def build(
        self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
    ) -> Model:
        from subagents.models.llamacpp import LlamaCppModel, gguf_path

        mode = settings.tool_calls
        if mode == "native":
            raise ModelConfigurationError(
                "llama.cpp models run in-process have no native tool calls "
                '([providers.llamacpp] tool_calls = "native").',
                hint='set tool_calls = "schema" (the default) or "text" under '
                "[providers.llamacpp] in config.toml",
            )
        model = LlamaCppModel(
            gguf_path(model_name),
            spec=model_name,
            tool_calls="schema" if mode in (None, "schema") else "plain",
            context_tokens=settings.context_tokens,
            timeout_seconds=settings.timeout_seconds,
        )
        return model if mode in (None, "schema") else with_tool_call_mode(model, "text")


OPENAI = OpenAICompatibleProvider(key_variable="OPENAI_API_KEY", api="openai")
OLLAMA = OpenAICompatibleProvider(api="ollama")
COMPATIBLE = OpenAICompatibleProvider()
ANTHROPIC = AnthropicProvider()
LLAMACPP = LlamaCppProvider()

BUILTIN: dict[str, Provider] = {
    "openai": OPENAI,
    "anthropic": ANTHROPIC,
    "ollama": OLLAMA,
    "llamacpp": LLAMACPP,
}
