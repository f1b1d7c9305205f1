"""Model strings, aliases and building provider models from config settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from fakes.openai_server import FakeOpenAIServer
from subagents.errors import ModelConfigurationError
from subagents.messages import UserMessage
from subagents.models.aliases import TIER_ALIASES
from subagents.models.anthropic import AnthropicModel
from subagents.models.base import ModelRequest
from subagents.models.openai import OLLAMA_DEFAULT_BASE_URL, OpenAIChatModel
from subagents.models.resolve import (
    DEFAULT_ALIASES,
    KNOWN_PROVIDERS,
    build_model,
    resolve_model_string,
)
from subagents.models.settings import ProviderSettings
from subagents.models.text_tools import TextToolCallModel

KEY = "sk-resolve-secret-789"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("sonnet", TIER_ALIASES["sonnet"]),
        ("haiku", TIER_ALIASES["haiku"]),
        (" Opus ", TIER_ALIASES["opus"]),
        ("fable", TIER_ALIASES["fable"]),
        ("best", TIER_ALIASES["fable"]),
        ("opusplan", TIER_ALIASES["opus"]),
        ("sonnet[1m]", TIER_ALIASES["sonnet"]),
        ("claude-opus-4-7[1M]", "anthropic:claude-opus-4-7"),
        ("openai:gpt-4o", "openai:gpt-4o"),
        ("OpenAI: gpt-4o-mini ", "openai:gpt-4o-mini"),
        ("ollama:llama3.1:8b", "ollama:llama3.1:8b"),
        ("claude-3-5-haiku-20241022", "anthropic:claude-3-5-haiku-20241022"),
        ("gpt-4.1", "openai:gpt-4.1"),
        ("o3-mini", "openai:o3-mini"),
        ("o1", "openai:o1"),
        ("o4-mini", "openai:o4-mini"),
    ],
)
def test_resolve_accepted_forms(spec: str, expected: str) -> None:
    assert resolve_model_string(spec) == expected


def test_config_aliases_win_and_may_chain() -> None:
    aliases = {"sonnet": "openai:gpt-4o", "fast": "haiku", "local": "ollama:qwen2.5"}
    assert resolve_model_string("sonnet", aliases) == "openai:gpt-4o"
    assert resolve_model_string("fast", aliases) == DEFAULT_ALIASES["haiku"]
    assert resolve_model_string("local", aliases) == "ollama:qwen2.5"


def test_alias_cycle_is_reported() -> None:
    with pytest.raises(ModelConfigurationError, match="a -> b -> a"):
        resolve_model_string("a", {"a": "b", "b": "a"})


@pytest.mark.parametrize("spec", ["", "   ", "inherit", "llama3", ":gpt-4o", "openai:", "9x:y"])
def test_unresolvable_specs_list_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ModelConfigurationError) as caught:
        resolve_model_string(spec)
    message = str(caught.value)
    assert "PROVIDER:MODEL" in message
    assert "[models]" in message


@pytest.mark.slow
@settings(max_examples=300)
@given(spec=st.text(), aliases=st.dictionaries(st.text(max_size=8), st.text(max_size=12)))
def test_resolve_never_raises_anything_else(spec: str, aliases: dict[str, str]) -> None:
    try:
        resolved = resolve_model_string(spec, aliases)
    except ModelConfigurationError:
        return
    provider, _, model = resolved.partition(":")
    assert provider
    assert model


def test_build_openai_with_key_from_env_mapping() -> None:
    model = build_model("openai:gpt-4o", env={"OPENAI_API_KEY": KEY})
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "openai:gpt-4o"
    assert KEY not in repr(model)


def test_build_anthropic_alias_with_configured_settings() -> None:
    providers = {
        "anthropic": ProviderSettings(
            api_key_env="MY_CLAUDE_KEY", base_url="http://127.0.0.1:9", timeout_seconds=30
        )
    }
    built = build_model("sonnet", providers=providers, env={"MY_CLAUDE_KEY": KEY})
    # a local server that speaks Anthropic's API: calls its model writes as text are read too
    assert isinstance(built, TextToolCallModel) and built.mode == "auto"
    model = built.inner
    assert isinstance(model, AnthropicModel)
    assert model.name == TIER_ALIASES["sonnet"]
    assert model.base_url == "http://127.0.0.1:9"
    assert model.timeout_seconds == 30
    assert KEY not in repr(model)


def test_key_in_config_wins_over_environment() -> None:
    providers = {"openai": ProviderSettings(api_key=SecretStr(KEY))}
    model = build_model("gpt-4o", providers=providers, env={})
    assert isinstance(model, OpenAIChatModel)
    assert KEY not in repr(model)
    assert KEY not in repr(providers)


def test_missing_key_names_default_variable_and_setting() -> None:
    with pytest.raises(ModelConfigurationError) as caught:
        build_model("anthropic:claude-opus-4-5", env={"OPENAI_API_KEY": KEY})
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY" in message
    assert "[providers.anthropic] api_key_env" in message
    assert KEY not in message


def test_configured_key_variable_that_is_unset_is_named() -> None:
    providers = {"openai": ProviderSettings(api_key_env="TEAM_OPENAI_KEY")}
    with pytest.raises(ModelConfigurationError) as caught:
        build_model("openai:gpt-4o", providers=providers, env={"OPENAI_API_KEY": KEY})
    assert "TEAM_OPENAI_KEY" in str(caught.value)
    assert KEY not in str(caught.value)


def test_unknown_provider_lists_providers_and_the_setting_to_add() -> None:
    with pytest.raises(ModelConfigurationError) as caught:
        build_model("mistral:large", env={})
    message = str(caught.value)
    for provider in KNOWN_PROVIDERS:
        assert provider in message
    assert "[providers.mistral]" in message
    assert "base_url" in message


def test_ollama_defaults_to_the_local_url_without_a_key() -> None:
    model = build_model("ollama:llama3", env={})
    assert isinstance(model, OpenAIChatModel)
    assert model.base_url == OLLAMA_DEFAULT_BASE_URL
    assert model.name == "ollama:llama3"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


async def test_configured_compatible_provider_talks_to_its_base_url(
    server: FakeOpenAIServer,
) -> None:
    settings = ProviderSettings(base_url=server.base_url, max_retries=0, tool_calls="auto")
    providers = {"vllm": settings}
    model = build_model("vllm:qwen2.5-coder", providers=providers, env={})
    assert isinstance(model, OpenAIChatModel)
    server.reply_text("from vllm")
    response = await model.request(ModelRequest(system="", messages=[UserMessage("hi")]))
    await model.aclose()
    assert response.text == "from vllm"
    assert response.model_name == "vllm:qwen2.5-coder"
    body = server.requests[0].json()
    assert body["model"] == "qwen2.5-coder"
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_ollama_with_configured_base_url(server: FakeOpenAIServer) -> None:
    providers = {"ollama": ProviderSettings(base_url=server.base_url)}
    model = build_model("ollama:llama3", providers=providers, env={})
    server.reply_text('{"reply": "local"}')  # a local server: a schema-constrained turn
    response = await model.request(ModelRequest(system="s", messages=[UserMessage("hi")]))
    assert isinstance(model, OpenAIChatModel)
    await model.aclose()
    assert response.text == "local"
