"""Providers by name: built-in ones, ones registered in Python, and ones another package
installs under the ``subagents.providers`` entry-point group (a real ``.dist-info`` on
``sys.path``, found by importlib.metadata), with the one set of key rules for all of them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from fakes.openai_server import FakeOpenAIServer
from subagents.errors import ModelConfigurationError, ModelError
from subagents.messages import UserMessage
from subagents.models.base import ModelRequest, close_model
from subagents.models.choice import choose_model
from subagents.models.openai import OpenAIChatModel
from subagents.models.registry import ApiKey, Provider, find_provider, register_provider
from subagents.models.resolve import build_model, missing_key_variable, tool_call_mode
from subagents.models.settings import ProviderSettings, ToolCallMode
from subagents.testing import FunctionModel

ECHO_PROVIDER = """
from dataclasses import dataclass

from subagents.testing import FunctionModel


@dataclass(frozen=True)
class EchoProvider:
    key_variable: str | None = "ECHO_API_KEY"

    def needs_key(self, settings):
        return settings.base_url is None

    def default_tool_calls(self, settings):
        return "text"

    def build(self, provider, model_name, settings, key):
        where = settings.base_url or "echo-cloud"
        return FunctionModel(
            lambda request: f"{model_name} at {where} with key {key.value}",
            name=f"{provider}:{model_name}",
        )


provider = EchoProvider()
"""


def install(site: Path, package: str, module: str, source: str, entry_points: str) -> None:
    """A package ``package`` installed in ``site``: its module and its dist-info."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    dist_info = site / f"{package.replace('-', '_')}-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        "[subagents.providers]\n" + textwrap.dedent(entry_points)
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))
    return directory


def _ask(text: str = "hi") -> ModelRequest:
    return ModelRequest(system="", messages=[UserMessage(text)])


async def test_an_installed_provider_builds_its_models_with_the_key_rules(site: Path) -> None:
    install(
        site,
        "subagents-echo",
        "subagents_echo_a",
        ECHO_PROVIDER,
        "echo = subagents_echo_a:provider",
    )

    model = build_model("echo:small", env={"ECHO_API_KEY": "echo-key-1"})

    assert model.name == "echo:small"
    answer = await model.request(_ask())
    assert answer.text == "small at echo-cloud with key echo-key-1"
    await close_model(model)
    assert tool_call_mode("echo", None) == "text"
    assert missing_key_variable("echo", None, {}) == "ECHO_API_KEY"
    assert missing_key_variable("echo", None, {"ECHO_API_KEY": "k"}) is None


def test_an_installed_provider_without_its_key_names_the_variable_and_the_setting(
    site: Path,
) -> None:
    install(
        site,
        "subagents-echo",
        "subagents_echo_b",
        ECHO_PROVIDER,
        "echo = subagents_echo_b:provider",
    )

    with pytest.raises(ModelConfigurationError) as caught:
        build_model("echo:small", env={"OPENAI_API_KEY": "sk-other"})

    assert "No API key for the model 'echo:small'" in caught.value.message
    assert caught.value.hint is not None
    assert "ECHO_API_KEY" in caught.value.hint
    assert "[providers.echo] api_key_env" in caught.value.hint
    choice = choose_model("echo:small", env={})
    assert choice.inherits and choice.fallback is not None and "ECHO_API_KEY" in choice.fallback


async def test_an_installed_provider_keeps_its_name_when_a_base_url_is_set(site: Path) -> None:
    """A ``base_url`` makes an unknown name OpenAI-compatible, not an installed provider."""
    install(
        site,
        "subagents-echo",
        "subagents_echo_c",
        ECHO_PROVIDER,
        "echo = subagents_echo_c:provider",
    )
    providers = {"echo": ProviderSettings(base_url="http://127.0.0.1:1/v1", api_key_env="MINE")}

    model = build_model("echo:small", providers=providers, env={"MINE": "mine-2"})

    assert not isinstance(model, OpenAIChatModel)
    assert (await model.request(_ask())).text == ("small at http://127.0.0.1:1/v1 with key mine-2")


def test_the_unknown_provider_error_lists_installed_providers(site: Path) -> None:
    install(
        site,
        "subagents-echo",
        "subagents_echo_d",
        ECHO_PROVIDER,
        "echo = subagents_echo_d:provider",
    )

    with pytest.raises(ModelConfigurationError) as caught:
        build_model("nowhere:m", env={})

    assert "Unknown provider 'nowhere'" in caught.value.message
    assert caught.value.hint is not None and "echo" in caught.value.hint


def test_a_package_that_fails_to_import_is_named_and_never_crashes(site: Path) -> None:
    install(
        site,
        "subagents-broken",
        "subagents_broken_a",
        "raise RuntimeError('half-installed')\n",
        "broken = subagents_broken_a:provider",
    )

    with pytest.raises(ModelConfigurationError) as caught:
        build_model("broken:m", env={})

    text = str(caught.value)
    assert "'subagents-broken'" in text and "half-installed" in text
    assert "pip uninstall subagents-broken" in text
    # deciding an agent's model does not raise: the provider is not judged
    assert missing_key_variable("broken", None, {}) is None
    assert choose_model("broken:m", env={}).model == "broken:m"


def test_an_entry_point_that_names_no_provider_is_refused(site: Path) -> None:
    install(
        site,
        "subagents-odd",
        "subagents_odd_a",
        "provider = 'not a provider'\n",
        "odd = subagents_odd_a:provider",
    )

    with pytest.raises(ModelConfigurationError) as caught:
        build_model("odd:m", env={})

    assert "'subagents-odd'" in caught.value.message
    assert "is not a provider" in caught.value.message


def test_a_provider_that_fails_while_building_is_named(site: Path) -> None:
    source = ECHO_PROVIDER.replace(
        "        where = settings.base_url",
        "        raise KeyError('no such model')\n        where = 1",
    )
    install(
        site, "subagents-flaky", "subagents_flaky_a", source, "flaky = subagents_flaky_a:provider"
    )

    with pytest.raises(ModelConfigurationError) as caught:
        build_model("flaky:m", env={"ECHO_API_KEY": "k"})

    assert "'subagents-flaky' failed in build" in caught.value.message
    assert "no such model" in caught.value.message


def test_an_entry_point_cannot_replace_a_built_in_provider(site: Path) -> None:
    install(
        site,
        "subagents-evil",
        "subagents_evil_a",
        ECHO_PROVIDER,
        "openai = subagents_evil_a:provider",
    )

    model = build_model("openai:gpt-4o", env={"OPENAI_API_KEY": "sk-test-key-123"})

    assert isinstance(model, OpenAIChatModel)


async def test_a_provider_registered_in_python_is_used() -> None:
    class Scripted:
        key_variable = None

        def needs_key(self, settings: ProviderSettings) -> bool:
            return False

        def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
            return "native"

        def build(
            self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
        ) -> FunctionModel:
            return FunctionModel(lambda request: "scripted", name=f"{provider}:{model_name}")

    provider = Scripted()
    assert isinstance(provider, Provider)
    register_provider("in-python-test", provider)

    model = build_model("in-python-test:m", env={})

    assert (await model.request(_ask())).text == "scripted"
    assert find_provider("IN-PYTHON-TEST", None) is provider


def test_unknown_names_with_a_base_url_are_openai_compatible() -> None:
    providers = {"lmstudio": ProviderSettings(base_url="http://127.0.0.1:1/v1")}

    model = build_model("lmstudio:qwen", providers=providers, env={"OPENAI_API_KEY": "sk-x"})

    assert isinstance(model, OpenAIChatModel)
    assert model.name == "lmstudio:qwen"
    assert model._api_key is None  # OpenAI's key stays with OpenAI


def test_an_empty_key_in_config_is_named_as_such() -> None:
    providers = {"openai": ProviderSettings(api_key=SecretStr(""))}

    with pytest.raises(ModelConfigurationError) as caught:
        build_model("openai:gpt-4o", providers=providers, env={"OPENAI_API_KEY": "sk-env"})

    assert "[providers.openai] api_key is empty" in caught.value.message
    assert caught.value.hint is not None and "OPENAI_API_KEY" in caught.value.hint


async def test_a_refused_key_is_traced_to_where_it_came_from() -> None:
    """The hint of a 401 names the setting the key was read from, not a variable that was
    never read."""
    secret = "sk-config-key-4242"
    with FakeOpenAIServer() as server:
        providers = {
            "local": ProviderSettings(
                base_url=server.base_url, api_key=SecretStr(secret), max_retries=0
            )
        }
        model = build_model("local:m", providers=providers, env={})
        server.reply_error(401, "bad key")
        with pytest.raises(ModelError) as caught:
            await model.request(_ask())
        await close_model(model)

    assert caught.value.hint is not None
    assert "[providers.local] api_key in config.toml" in caught.value.hint
    assert secret not in str(caught.value)
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
