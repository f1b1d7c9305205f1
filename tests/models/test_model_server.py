"""Where the server is, as the SDKs say it (issue 30): ``OPENAI_BASE_URL`` and
``ANTHROPIC_BASE_URL`` count as the provider's ``base_url`` when config leaves it unset, the
server's kind (hosted, local, remote, in-process) decides the key rule, the ``tool_calls``
default, the token-limit parameter and the tool description profile, and ``subagents run``,
``agents show`` and ``models check`` say which server is used and why.

Servers are real local HTTP servers spoken to through the real openai SDK."""

from __future__ import annotations

import io
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr
from rich.console import Console
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer, chunk, usage
from fakes.schema_server import CapabilityServer
from subagents.cli.app import app
from subagents.cli.servers import model_server
from subagents.cli.ui.progress import ProgressPrinter
from subagents.errors import ModelConfigurationError
from subagents.messages import AssistantMessage, ToolCall, UserMessage
from subagents.models.base import ModelRequest, ModelSettings
from subagents.models.openai import OpenAIChatModel
from subagents.models.registry import ApiKey, missing_key_variable, register_provider
from subagents.models.resolve import build_model, tool_call_mode
from subagents.models.server import (
    default_description_profile,
    endpoint_kind,
    find_server,
    is_local_host,
)
from subagents.models.settings import ProviderSettings, ToolCallMode
from subagents.models.text_tools import TextToolCallModel
from subagents.redaction import Redactor
from subagents.runtime import events as ev
from subagents.testing import FunctionModel

KINDS = {"hosted", "local", "remote", "in-process"}
PASSWORD = "pw-0f9e8d7c6b5a"

# -- the kind of a server, from its URL ---------------------------------------------------------

LOCAL_NETWORKS = [
    "127.0.0.0/8",  # loopback
    "::1/128",
    "10.0.0.0/8",  # RFC 1918
    "172.16.0.0/12",
    "192.168.0.0/16",
    "fc00::/7",  # IPv6 unique local addresses
    "169.254.0.0/16",  # link-local
    "fe80::/10",
]
local_addresses = st.one_of(*(st.ip_addresses(network=network) for network in LOCAL_NETWORKS))
ports = st.one_of(st.none(), st.integers(min_value=1, max_value=65535))
labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,15}[a-z0-9])?", fullmatch=True)


def url_of(host: str, port: int | None, *, userinfo: str = "", path: str = "/v1") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{userinfo}{shown}{'' if port is None else f':{port}'}{path}"


@given(
    address=local_addresses,
    port=ports,
    provider=st.sampled_from(["openai", "anthropic", "vllm"]),
    userinfo=st.sampled_from(["", "user@", f"user:{PASSWORD}@"]),
)
def test_every_loopback_private_and_link_local_address_is_local(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
    port: int | None,
    provider: str,
    userinfo: str,
) -> None:
    url = url_of(str(address), port, userinfo=userinfo)
    assert is_local_host(str(address))
    assert endpoint_kind(provider, url) == "local", url


@given(address=st.ip_addresses(v=4, network="10.0.0.0/8") | st.ip_addresses(v=4), port=ports)
def test_an_ipv4_address_written_as_ipv6_is_judged_as_itself(
    address: ipaddress.IPv4Address, port: int | None
) -> None:
    mapped = f"::ffff:{address}"
    assert endpoint_kind("openai", url_of(mapped, port)) == endpoint_kind(
        "openai", url_of(str(address), port)
    )


@given(address=st.ip_addresses().filter(lambda address: address.is_global), port=ports)
def test_public_addresses_are_remote(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int | None
) -> None:
    assert endpoint_kind("openai", url_of(str(address), port)) == "remote"


@given(
    name=st.lists(labels, min_size=1, max_size=3).map(".".join),
    suffix=st.sampled_from([".local", ".internal", ".localhost", ".LOCAL", ".internal."]),
    port=ports,
)
def test_names_of_this_machine_and_private_networks_are_local(
    name: str, suffix: str, port: int | None
) -> None:
    assert endpoint_kind("openai", url_of(name + suffix, port)) == "local"


@pytest.mark.parametrize(
    ("provider", "url", "kind"),
    [
        ("openai", None, "hosted"),
        ("openai", "https://api.openai.com/v1", "hosted"),
        ("openai", "https://API.OpenAI.com./v1", "hosted"),
        ("openai", "https://eu.api.openai.com/v1", "hosted"),  # data residency
        ("anthropic", None, "hosted"),
        ("anthropic", "https://api.anthropic.com", "hosted"),
        ("vllm", "https://api.openai.com/v1", "remote"),  # not its own API
        ("openai", "https://api.anthropic.com", "remote"),
        ("openai", "https://openrouter.ai/api/v1", "remote"),
        ("openai", "https://api.openai.com.evil.example/v1", "remote"),
        ("openai", "http://localhost:8080/v1", "local"),
        ("openai", "localhost:8080/v1", "local"),  # no scheme: read as the host it names
        ("openai", "http://host.docker.internal:1234/v1", "local"),
        ("openai", "http://0.0.0.0:8080/v1", "local"),  # what a server's log says it binds
        ("openai", "http://[fe80::1%25eth0]:8080/v1", "local"),
        ("ollama", None, "local"),  # its default URL
        ("llamacpp", None, "in-process"),
        ("llamacpp", "http://127.0.0.1:8080/v1", "local"),
        ("openai", "", "remote"),
        ("openai", "http://[::1", "remote"),  # unreadable: nothing says it is local
    ],
)
def test_kinds(provider: str, url: str | None, kind: str) -> None:
    assert endpoint_kind(provider, url) == kind


garbage_urls = st.one_of(
    st.text(),
    st.builds(lambda a, b: f"http://{a}{b}", st.text(), st.text()),
    st.builds(lambda a: f"https://[{a}]:99999/v1", st.text()),
    st.sampled_from(["http://[zz]/", "http://a:b@[", "//", "http://%", "http://\uff03x", "[::1]"]),
)


@given(provider=st.text(), url=st.none() | garbage_urls)
def test_classifying_never_raises_on_any_text(provider: str, url: str | None) -> None:
    assert endpoint_kind(provider, url) in KINDS
    assert isinstance(is_local_host(url or provider), bool)
    server = find_server(provider, url, {"OPENAI_BASE_URL": url or ""})
    assert server.kind in KINDS
    shown = server.shown_url
    assert shown is None or isinstance(shown, str)


# -- which base URL, from where -----------------------------------------------------------------


def test_the_variable_counts_only_where_config_leaves_base_url_unset() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}
    from_env = find_server("openai", None, env)
    assert (from_env.url, from_env.source, from_env.kind) == (
        "http://127.0.0.1:8080/v1",
        "OPENAI_BASE_URL",
        "local",
    )
    configured = find_server("openai", "https://openrouter.ai/api/v1", env)
    assert (configured.source, configured.kind) == ("[providers.openai] base_url", "remote")
    # another provider's SDK variable is not its own
    assert find_server("anthropic", None, env).kind == "hosted"
    assert find_server("vllm", None, env).source is None
    blank = find_server("openai", None, {"OPENAI_BASE_URL": "  "})
    assert (blank.url, blank.kind) == (None, "hosted")


@pytest.mark.parametrize(
    ("env", "settings", "mode", "needs"),
    [
        ({}, None, "native", "OPENAI_API_KEY"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, None, "schema", None),
        ({"OPENAI_BASE_URL": "https://openrouter.ai/api/v1"}, None, "auto", None),
        ({"OPENAI_BASE_URL": "https://api.openai.com/v1"}, None, "native", "OPENAI_API_KEY"),
        # config wins over the variable, both ways
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"},
            ProviderSettings(base_url="https://api.openai.com/v1"),
            "native",
            "OPENAI_API_KEY",
        ),
        (
            {"OPENAI_BASE_URL": "https://api.openai.com/v1"},
            ProviderSettings(base_url="http://10.1.2.3:8000/v1"),
            "schema",
            None,
        ),
        # [providers.openai] tool_calls still chooses
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"},
            ProviderSettings(tool_calls="text"),
            "text",
            None,
        ),
    ],
)
def test_the_kind_decides_the_key_and_the_tool_calls_default(
    env: dict[str, str], settings: ProviderSettings | None, mode: str, needs: str | None
) -> None:
    assert tool_call_mode("openai", settings, env) == mode
    assert missing_key_variable("openai", settings, env) == needs


def test_anthropic_base_url_is_a_server_of_its_own_too() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://localhost:1234"}
    assert missing_key_variable("anthropic", None, env) is None
    assert tool_call_mode("anthropic", None, env) == "auto"
    model = build_model("anthropic:qwen", env=env)
    assert isinstance(model, TextToolCallModel) and model.mode == "auto"
    assert model.inner.base_url == "http://localhost:1234"  # type: ignore[attr-defined]
    with pytest.raises(ModelConfigurationError, match="ANTHROPIC_API_KEY"):
        build_model("anthropic:claude-sonnet-4-5", env={"ANTHROPIC_BASE_URL": ""})


def test_hosted_openai_named_by_the_variable_still_needs_its_key() -> None:
    env = {"OPENAI_BASE_URL": "https://api.openai.com/v1"}
    with pytest.raises(ModelConfigurationError) as caught:
        build_model("openai:gpt-4o", env=env)
    assert "OPENAI_API_KEY" in str(caught.value)
    model = build_model("openai:gpt-4o", env={**env, "OPENAI_API_KEY": "sk-test-hosted-0123"})
    assert isinstance(model, OpenAIChatModel)
    assert model.tool_calls == "native" and model.server.kind == "hosted"
    request = ModelRequest("s", [UserMessage("hi")], settings=ModelSettings(max_tokens=64))
    params = model._params(request)
    assert params["max_completion_tokens"] == 64 and "max_tokens" not in params


@pytest.mark.parametrize(
    ("provider", "env", "settings", "profile"),
    [
        ("openai", {}, None, "full"),
        ("openai", {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, None, "compact"),
        ("openai", {"OPENAI_BASE_URL": "https://openrouter.ai/api/v1"}, None, "full"),
        ("anthropic", {"ANTHROPIC_BASE_URL": "http://192.168.1.20:1234"}, None, "compact"),
        ("ollama", {}, None, "compact"),
        ("llamacpp", {}, None, "compact"),
        ("llamacpp", {}, ProviderSettings(base_url="https://gguf.example.com/v1"), "compact"),
        ("local", {}, ProviderSettings(base_url="http://gpu-box.internal:8000/v1"), "compact"),
        ("vllm", {}, ProviderSettings(base_url="https://vllm.example.com/v1"), "full"),
    ],
)
def test_the_default_description_profile_follows_the_kind(
    provider: str, env: dict[str, str], settings: ProviderSettings | None, profile: str
) -> None:
    assert default_description_profile(provider, settings, env) == profile


# -- through the real SDK -----------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.mark.parametrize("key", [None, "sk-local-usual-key-0123"])
async def test_a_server_named_by_the_variable_gets_max_tokens_and_the_usual_key_if_set(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    auto = {"openai": ProviderSettings(tool_calls="auto")}  # the default here is schema
    for model in (build_model("openai:qwen", providers=auto), OpenAIChatModel("qwen")):
        assert isinstance(model, OpenAIChatModel)
        server.reply_text("local answer")
        request = ModelRequest("s", [UserMessage("hi")], settings=ModelSettings(max_tokens=64))
        assert (await model.request(request)).text == "local answer"
        await model.aclose()
    for sent in server.requests:
        body = sent.json()
        assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
        assert sent.headers["authorization"] == f"Bearer {key or 'not-needed'}"


async def test_a_local_server_gets_a_low_temperature_unless_one_is_set(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama-cpp-python's server samples at 0.8 when told nothing; a 1.5B model at 0.8 wrote
    its calls in formats of its own making (make eval, server path)."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    model = build_model("openai:qwen")
    for settings in (ModelSettings(), ModelSettings(temperature=0.9)):
        server.reply_text("ok")
        await model.request(ModelRequest("s", [UserMessage("hi")], settings=settings))
    await model.aclose()
    assert [sent.json()["temperature"] for sent in server.requests] == [0.2, 0.9]
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-hosted-0123")
    hosted = build_model("openai:gpt-4o")
    assert isinstance(hosted, OpenAIChatModel)
    assert "temperature" not in hosted._params(ModelRequest("s", [UserMessage("hi")]))


def test_a_call_without_text_has_null_content_for_openai_and_empty_text_for_other_servers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """llama-cpp-python's server refuses an assistant turn with null content (HTTP 500)."""
    call = AssistantMessage("", tool_calls=(ToolCall("c1", "Read", {"file_path": "a"}),))
    request = ModelRequest("s", [UserMessage("hi"), call])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-hosted-0123")
    contents = []
    native = {"openai": ProviderSettings(tool_calls="auto")}  # a local default is schema
    for url in ("https://api.openai.com/v1", "http://127.0.0.1:8080/v1"):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        model = build_model("openai:qwen", providers=native)
        assert isinstance(model, OpenAIChatModel | TextToolCallModel)
        inner = model.inner if isinstance(model, TextToolCallModel) else model
        assert isinstance(inner, OpenAIChatModel)
        contents.append(inner._params(request)["messages"][-1]["content"])
    assert contents == [None, ""]


# -- through the command line -------------------------------------------------------------------


def project(tmp_path: Path, config: str = "") -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    if config:
        (root / ".subagents").mkdir(exist_ok=True)
        (root / ".subagents" / "config.toml").write_text(config, encoding="utf-8")
    return root


def streamed(answer: str) -> list[dict[str, Any]]:
    half = len(answer) // 2
    return [
        chunk({"content": answer[:half]}),
        chunk({"content": answer[half:]}),
        chunk(finish_reason="stop"),
        chunk(usage_body=usage()),
    ]


def flat(text: str) -> str:
    return " ".join(text.split())


def with_password(url: str) -> str:
    return url.replace("http://", f"http://someone:{PASSWORD}@")


def test_run_against_the_server_of_openai_base_url_runs_a_call_written_as_text(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's user: a local server set up as its guide says, no config, no key; turns
    are constrained to a call or a reply, and a server that did not hold the model to that
    gets a Hermes ``<tool_call>`` written as text, which is run."""
    root = project(tmp_path)
    (root / "notes.txt").write_text("the secret word is PINEAPPLE\n", encoding="utf-8")
    monkeypatch.setenv("OPENAI_BASE_URL", with_password(server.base_url))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    call = {"name": "Read", "arguments": {"file_path": "notes.txt"}}
    server.reply_text(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
    server.reply_text(json.dumps({"reply": "The secret word is PINEAPPLE."}))

    prompt = "Find the secret word in notes.txt."
    result = CliRunner().invoke(
        app, ["run", prompt, "--cwd", str(root), "--model", "openai:qwen", "--no-store"]
    )

    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "The secret word is PINEAPPLE."
    first, second = (sent.json() for sent in server.requests)
    assert "tools" not in first and first["response_format"]["type"] == "json_schema"
    tool_result = second["messages"][-1]
    assert tool_result["role"] == "user" and "PINEAPPLE" in tool_result["content"]  # it ran
    for body in (first, second):
        assert "max_completion_tokens" not in body
    progress = result.stderr
    assert server.base_url in progress  # whole, at 80 columns
    assert (
        f"main runs on openai:qwen at {server.base_url} (from OPENAI_BASE_URL): a local server, "
        "so no key needed, tool calls schema (each turn constrained to one call or a reply)"
    ) in flat(progress)
    assert PASSWORD not in result.stdout + progress


def test_run_on_openai_base_url_of_openais_api_still_asks_for_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(
        app, ["run", "hi", "--cwd", str(project(tmp_path)), "--model", "openai:gpt-4o"]
    )
    assert result.exit_code == 2
    assert "No API key" in result.stderr and "OPENAI_API_KEY" in result.stderr


def agent_file(root: Path, model: str) -> None:
    folder = root / ".claude" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helper.md").write_text(
        f"---\nname: helper\ndescription: Helps.\nmodel: {model}\n---\nHelp.\n", encoding="utf-8"
    )


def show(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["agents", "show", "helper", "--cwd", str(root), *args])
    return result.exit_code, result.stdout + result.stderr


def test_agents_show_names_the_server_its_source_and_the_modes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    agent_file(root, "openai:qwen")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://someone:{PASSWORD}@127.0.0.1:8080/v1?k=v")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    code, out = show(root)
    assert code == 0
    assert (
        "openai:qwen at http://127.0.0.1:8080/v1 (from OPENAI_BASE_URL): a local server, so no "
        "key needed, tool calls schema"
    ) in flat(out)
    assert PASSWORD not in out

    code, out = show(root, "--json")
    server = json.loads(out)["server"]
    assert PASSWORD not in out
    assert server["base_url"] == "http://127.0.0.1:8080/v1"
    assert server["base_url_from"] == "OPENAI_BASE_URL"
    assert (server["kind"], server["key_needed"], server["tool_calls"]) == (
        "local",
        False,
        "schema",
    )
    assert server["tool_calls_from"] is None and server["summary"].startswith("openai:qwen at")


def test_agents_show_says_config_wins_and_which_setting_chose_a_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = (
        '[providers.openai]\nbase_url = "https://openrouter.ai/api/v1"\ntool_calls = "text"\n'
        'tool_descriptions = "compact"\n'
    )
    root = project(tmp_path, config)
    agent_file(root, "openai:qwen")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-router-key-0123456789")

    code, out = show(root)
    assert code == 0
    assert (
        "openai:qwen at https://openrouter.ai/api/v1 (from [providers.openai] base_url): a remote "
        "server, so no key needed (OPENAI_API_KEY is sent), tool calls text (no tools sent, calls "
        "read from the text; set by [providers.openai] tool_calls), compact tool descriptions "
        "(set by [providers.openai] tool_descriptions)"
    ) in flat(out)
    assert "sk-router-key" not in out


def test_agents_show_of_the_hosted_api_and_of_an_agent_that_inherits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    agent_file(root, "openai:gpt-4o")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-hosted-key-0123456789")
    code, out = show(root)
    assert code == 0
    assert (
        "openai:gpt-4o at https://api.openai.com/v1 (the default): OpenAI's API, so a key is "
        "needed (OPENAI_API_KEY), tool calls native, full tool descriptions"
    ) in flat(out)

    agent_file(root, "inherit")
    code, out = show(root, "--json")
    assert json.loads(out)["server"] is None


def test_models_check_names_the_server_of_openai_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with CapabilityServer(native_tools=True, json_schema=True) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", with_password(server.base_url))
        text = CliRunner().invoke(app, ["models", "check", "openai:tiny", "--cwd", str(root)])
        data = CliRunner().invoke(
            app, ["models", "check", "openai:tiny", "--cwd", str(root), "--json"]
        )

    assert text.exit_code == 0, text.stdout
    assert (
        f"openai:tiny at {server.base_url} (from OPENAI_BASE_URL): a local server, so no key "
        "needed, tool calls schema"
    ) in flat(text.stdout)
    assert 'tool_calls = "native"' in text.stdout  # what this server's probe found
    parsed = json.loads(data.stdout)
    assert parsed["server"]["base_url"] == server.base_url
    assert parsed["server"]["base_url_from"] == "OPENAI_BASE_URL"
    assert parsed["server"]["kind"] == "local" and parsed["configured"] == "schema"
    assert PASSWORD not in text.stdout + data.stdout


def test_the_progress_says_each_models_server_once_and_redacted() -> None:
    out = Console(file=io.StringIO(), width=80, color_system=None)
    url = "http://127.0.0.1:8080/v1"
    said: list[tuple[str, str]] = []

    def describe(agent_type: str, model_name: str) -> str:
        said.append((agent_type, model_name))
        return f"{model_name} at {url} (from OPENAI_BASE_URL), key {PASSWORD}"

    printer = ProgressPrinter(out, Redactor([PASSWORD]), ticker=False, describe=describe)
    printer(ev.SessionStarted("a1", "main", None, "openai:qwen", 0))
    printer(ev.SessionStarted("a2", "explore", "a1", "openai:qwen", 1))  # the same model
    printer(ev.SessionStarted("a3", "plan", "a1", "local:tiny", 1))
    printed = out.file.getvalue()  # type: ignore[attr-defined]

    assert said == [("main", "openai:qwen"), ("plan", "local:tiny")]
    assert url in printed and PASSWORD not in printed
    assert flat(printed).startswith("main runs on openai:qwen at http://127.0.0.1:8080/v1")
    assert "plan runs on local:tiny" in flat(printed)


def test_the_line_of_a_model_no_provider_explains_is_none() -> None:
    assert model_server("scripted", {}) is None
    assert model_server("nowhere:model", {}) is None
    key = ProviderSettings(base_url="http://127.0.0.1:1/v1", api_key=SecretStr("sk-x-0123456789"))
    found = model_server("local:m", {"local": key})
    assert found is not None
    assert "[providers.local] api_key is sent" in found.line()
    assert "sk-x" not in json.dumps(found.to_dict())


def test_a_plug_in_providers_own_api_is_said_without_an_address() -> None:
    class Hosted:
        key_variable = "HOSTED_TEST_KEY"

        def needs_key(self, settings: ProviderSettings) -> bool:
            return settings.base_url is None

        def default_tool_calls(self, settings: ProviderSettings) -> ToolCallMode:
            return "native"

        def build(
            self, provider: str, model_name: str, settings: ProviderSettings, key: ApiKey
        ) -> FunctionModel:
            return FunctionModel(lambda request: "hosted", name=f"{provider}:{model_name}")

    register_provider("server-line-test", Hosted())
    found = model_server("server-line-test:m", {}, env={})
    assert found is not None
    assert found.line() == (
        "server-line-test:m: the server-line-test provider's own API, so a key is needed "
        "(HOSTED_TEST_KEY, not set), tool calls native, full tool descriptions"
    )
