"""No secret stored, printed or handed to a tool's subprocess.

Through the public API: which values are credentials, the environment Bash, shell hooks and
subagents get, stdio MCP servers, the store, OpenTelemetry spans and nested tool arguments.
Through the CLI (real subprocesses against a fake OpenAI server): a hostile model that reads
secrets from a file, runs `env` and repeats what it saw everywhere it can.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from cli_project import Project, ScriptedServer, Turn
from fakes.http_server import PlannedReply, sse_frame
from fakes.openai_server import chunk, usage
from mcp_servers.harness import CALC_SERVER, stdio_calc
from subagents.config import Config, HookCommand, ToolsSettings, load_config
from subagents.definitions.model import AgentDefinition
from subagents.errors import ConfigError
from subagents.mcp.config import MCPServersConfig, StdioServerConfig, StreamableHTTPServerConfig
from subagents.messages import ToolResultMessage
from subagents.models.settings import ProviderSettings
from subagents.runtime.hooks import CommandHook, HookPayload
from subagents.runtime.runtime import Runtime
from subagents.secrets import known_credentials, looks_like_token, tool_environment
from subagents.store.sqlite import open_store
from subagents.testing import ScriptedModel, tool_call_response
from subagents.tools.decorator import tool
from subagents.tracing.otel import export_task

PROVIDER_KEY = "llm-cred-7Hq2Kx9Lm4Np6Rs8"  # named by api_key_env, so no name says "key"
OPENAI_KEY = "sk-openai-usual-variable-0123456789"
MCP_TOKEN = "mcpsrv0tok3nQ8w7e6r5t4y3u2i1"  # a literal in .mcp.json
GITHUB_ENV_TOKEN = "gh-cli-token-value-4815162342"
FILE_GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
FILE_AWS = "AKIAIOSFODNN7EXAMPLE"
FILE_GITHUB_FINE = "github_pat_11ABCDEFG0123456789abc_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCd"
FILE_SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
PEM_LINES = [
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END RSA PRIVATE KEY-----"
DATABASE_URL = "postgres://u:pw@h/db"
SECRETS_FILE = (
    f"github: {FILE_GITHUB}\nfine-grained: {FILE_GITHUB_FINE}\nslack: {FILE_SLACK}\n"
    f"aws: {FILE_AWS}\n{PEM}\ndatabase: {DATABASE_URL}\n"
)
# what must never show: every value above, and the password of the URL in its place
NEVER_SHOWN = [
    PROVIDER_KEY,
    OPENAI_KEY,
    MCP_TOKEN,
    GITHUB_ENV_TOKEN,
    FILE_GITHUB,
    FILE_GITHUB_FINE,
    FILE_SLACK,
    FILE_AWS,
    *PEM_LINES,
    ":pw@",
]


def leaked(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        return [secret for secret in NEVER_SHOWN if secret.encode() in text]
    return [secret for secret in NEVER_SHOWN if secret in text]


def stored_bytes(folder: Path) -> bytes:
    """The raw bytes of the SQLite store in ``folder``, its WAL included."""
    return b"".join(path.read_bytes() for path in folder.glob("state.db*"))


def llm_config(**tools: Any) -> Config:
    return Config(
        providers={"openai": ProviderSettings(api_key_env="MY_LLM_CRED")},
        tools=ToolsSettings(**tools),
    )


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_CRED", PROVIDER_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_ENV_TOKEN)


def tool_results(model: ScriptedModel, request: int) -> list[ToolResultMessage]:
    return [m for m in model.requests[request].messages if isinstance(m, ToolResultMessage)]


# -- which values are credentials --------------------------------------------------------------


def test_known_credentials_are_every_key_we_were_given() -> None:
    config = Config(
        providers={
            "openai": ProviderSettings(api_key_env="MY_LLM_CRED"),
            "local": ProviderSettings(base_url="http://127.0.0.1:1/v1", api_key="literal-key-0001"),
        }
    )
    servers = MCPServersConfig(
        servers={
            "calc": StdioServerConfig(
                name="calc",
                command="calc",
                env={
                    "SERVICE_TOKEN": "short-but-named-token",
                    "UPSTREAM": "a1B2c3D4e5F6g7H8i9J0",  # no telling name, but a token's shape
                    "MODE": "production",
                    "BIN": "/usr/bin",
                    "LEVEL": "1",
                    "DEBUG": "true",
                },
            ),
            "docs": StreamableHTTPServerConfig(
                name="docs",
                url="https://docs.example/mcp",
                headers={"Authorization": "Bearer hdr-token-0123456789", "Accept": "text/plain"},
            ),
        }
    )
    environ = {
        "MY_LLM_CRED": PROVIDER_KEY,
        "ANTHROPIC_API_KEY": "anthropic-usual-0001",
        "DEPLOY_PASSWORD": "deploy-pw-0001",
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/someone",
    }

    found = known_credentials(config, servers, environ)

    for value in (
        PROVIDER_KEY,
        "literal-key-0001",
        "anthropic-usual-0001",
        "short-but-named-token",
        "a1B2c3D4e5F6g7H8i9J0",
        "Bearer hdr-token-0123456789",
        "hdr-token-0123456789",
        "deploy-pw-0001",
    ):
        assert value in found
    for value in ("production", "/usr/bin", "1", "true", "text/plain", "/usr/bin:/bin"):
        assert value not in found
    assert len(found) == len(set(found))


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("a1B2c3D4e5F6g7H8i9J0", True),
        ("0123456789abcdef0123", True),
        ("production", False),
        ("/usr/bin", False),
        ("1", False),
        ("true", False),
        ("https://example.com/v1/abc123def456", False),
        ("./node_modules/bin/x1", False),
        ("two words 1234567890abcdef", False),
        ("abcdefghijklmnopqrstuvwxyz", False),
    ],
)
def test_looks_like_token(value: str, token: bool) -> None:
    assert looks_like_token(value) is token


def test_tool_environment_drops_the_providers_keys_only() -> None:
    environ = {
        "MY_LLM_CRED": PROVIDER_KEY,
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_API_KEY": "anthropic-usual-0001",
        "COPY_OF_THE_KEY": PROVIDER_KEY,  # a variable holding one of the keys
        "GITHUB_TOKEN": GITHUB_ENV_TOKEN,
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
    }

    env = tool_environment(llm_config(), environ)

    assert env == {"GITHUB_TOKEN": GITHUB_ENV_TOKEN, "PATH": "/usr/bin", "LANG": "C.UTF-8"}
    assert tool_environment(llm_config(pass_env=["OPENAI_API_KEY"]), environ) == {
        **env,
        "OPENAI_API_KEY": OPENAI_KEY,
    }
    # without config only the usual variables are known
    assert set(tool_environment(None, environ)) == {
        "MY_LLM_CRED",
        "COPY_OF_THE_KEY",
        "GITHUB_TOKEN",
        "PATH",
        "LANG",
    }


def test_a_literal_api_key_in_config_is_dropped_wherever_it_is() -> None:
    config = Config(providers={"local": ProviderSettings(api_key="literal-key-0001")})
    env = tool_environment(config, {"SOME_VAR": "literal-key-0001", "ONE": "1"})
    assert env == {"ONE": "1"}


def test_pass_env_is_read_from_config_toml(tmp_path: Path, isolated_home: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".subagents").mkdir()
    (tmp_path / ".subagents" / "config.toml").write_text(
        '[tools]\npass_env = ["OPENAI_API_KEY", "MY_LLM_CRED"]\n'
    )
    assert load_config(tmp_path).tools.pass_env == ["OPENAI_API_KEY", "MY_LLM_CRED"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[tools]\npass_env = ["A=B"]\n', "key 'tools.pass_env'"),
        ("[tools]\npass_env = 3\n", "key 'tools.pass_env'"),
        ("[tools]\npas_env = []\n", "unknown key 'tools.pas_env' (did you mean 'tools.pass_env'?)"),
    ],
)
def test_a_bad_tools_table_is_a_clear_error(
    tmp_path: Path, isolated_home: Path, text: str, message: str
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".subagents").mkdir()
    path = tmp_path / ".subagents" / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert f"{path}:2: {message}" in caught.value.message
    assert caught.value.hint is not None and str(path) in caught.value.hint


# -- what subprocesses get ---------------------------------------------------------------------


def env_lines(output: str) -> dict[str, str]:
    pairs = (line.partition("=") for line in output.splitlines())
    return {name: value for name, sep, value in pairs if sep}


@pytest.mark.usefixtures("credentials")
async def test_bash_runs_without_the_provider_keys(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call_response("Bash", {"command": "env"}), "done"])
    runtime = Runtime(
        cwd=tmp_path, config=llm_config(), model=model, permission_mode="bypassPermissions"
    )

    result = await runtime.run("show the environment")

    assert result.status == "completed"
    [output] = tool_results(model, 1)
    seen = env_lines(output.content)
    assert "MY_LLM_CRED" not in seen and "OPENAI_API_KEY" not in seen
    assert PROVIDER_KEY not in output.content and OPENAI_KEY not in output.content
    assert seen["GITHUB_TOKEN"] == GITHUB_ENV_TOKEN  # other tokens stay: gh needs them
    assert seen["PATH"] == os.environ["PATH"]


@pytest.mark.usefixtures("credentials")
async def test_pass_env_hands_a_key_to_bash(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call_response("Bash", {"command": "env"}), "done"])
    runtime = Runtime(
        cwd=tmp_path,
        config=llm_config(pass_env=["OPENAI_API_KEY"]),
        model=model,
        permission_mode="bypassPermissions",
    )
    await runtime.run("show the environment")
    seen = env_lines(tool_results(model, 1)[0].content)
    assert seen["OPENAI_API_KEY"] == OPENAI_KEY
    assert "MY_LLM_CRED" not in seen


@pytest.mark.usefixtures("credentials")
async def test_a_subagents_bash_runs_without_the_provider_keys(tmp_path: Path) -> None:
    child = ScriptedModel([tool_call_response("Bash", {"command": "env"}), "child done"])
    main = ScriptedModel(
        [
            tool_call_response(
                "Task", {"description": "look", "prompt": "run env", "subagent_type": "shell"}
            ),
            "main done",
        ]
    )
    shell = AgentDefinition(
        name="shell",
        description="Runs commands.",
        system_prompt="You run commands.",
        tools=["Bash"],
    )
    runtime = Runtime(
        cwd=tmp_path,
        config=llm_config(),
        agents=[shell],
        model=main,
        agent_models={"shell": child},
        permission_mode="bypassPermissions",
    )

    result = await runtime.run("delegate")

    assert result.status == "completed"
    seen = env_lines(tool_results(child, 1)[0].content)
    assert seen["GITHUB_TOKEN"] == GITHUB_ENV_TOKEN
    assert "MY_LLM_CRED" not in seen and "OPENAI_API_KEY" not in seen


@pytest.mark.usefixtures("credentials")
async def test_shell_hooks_from_config_run_without_the_provider_keys(tmp_path: Path) -> None:
    dump = tmp_path / "hook-env.txt"
    config = Config(
        providers={"openai": ProviderSettings(api_key_env="MY_LLM_CRED")},
        hooks={"PreToolUse": [HookCommand(command=f"env > '{dump}'")]},
    )
    (tmp_path / "notes.txt").write_text("hello\n")
    model = ScriptedModel([tool_call_response("Read", {"file_path": "notes.txt"}), "done"])
    runtime = Runtime(cwd=tmp_path, config=config, model=model)

    result = await runtime.run("read the notes")

    assert result.status == "completed" and not runtime.hooks.errors
    seen = env_lines(dump.read_text())
    assert seen["GITHUB_TOKEN"] == GITHUB_ENV_TOKEN
    assert "MY_LLM_CRED" not in seen and "OPENAI_API_KEY" not in seen
    assert PROVIDER_KEY not in dump.read_text()


@pytest.mark.usefixtures("credentials")
async def test_a_command_hook_made_by_hand_gets_no_usual_provider_key(tmp_path: Path) -> None:
    dump = tmp_path / "hook-env.txt"
    hook = CommandHook(f"env > '{dump}'")
    assert await hook(HookPayload("PreToolUse", "a1", "main", tool_name="Read")) is None
    seen = env_lines(dump.read_text())
    assert "OPENAI_API_KEY" not in seen
    assert seen["GITHUB_TOKEN"] == GITHUB_ENV_TOKEN


@pytest.mark.slow
@pytest.mark.usefixtures("credentials")
async def test_a_stdio_mcp_server_never_sees_a_provider_key(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_response("mcp__calc__env", {"name": "MY_LLM_CRED"}),
            tool_call_response("mcp__calc__env", {"name": "OPENAI_API_KEY"}),
            tool_call_response("mcp__calc__env", {"name": "CALC_SERVICE_TOKEN"}),
            "done",
        ]
    )
    runtime = Runtime(
        cwd=tmp_path,
        config=llm_config(),
        model=model,
        mcp_servers={"calc": stdio_calc(env={"CALC_SERVICE_TOKEN": MCP_TOKEN})},
        permission_mode="bypassPermissions",
    )
    try:
        result = await runtime.run("look around")
    finally:
        await runtime.aclose()

    assert result.status == "completed"
    assert [tool_results(model, turn)[-1].content for turn in (1, 2, 3)] == [
        "(unset)",
        "(unset)",
        MCP_TOKEN,  # its own configured env does arrive
    ]


# -- what is stored ----------------------------------------------------------------------------


def hostile_model() -> ScriptedModel:
    """Reads the secrets file, runs env, and repeats everything in its arguments and text."""
    everything = f"{SECRETS_FILE}\nprovider: {PROVIDER_KEY}\nmcp: {MCP_TOKEN}"
    return ScriptedModel(
        [
            tool_call_response("Read", {"file_path": "secrets.txt"}),
            tool_call_response("Bash", {"command": "env"}),
            tool_call_response("mcp__calc__env", {"name": "CALC_SERVICE_TOKEN"}),
            tool_call_response(
                "Write",
                # a secret as a key too: Write refuses the extra key, the store keeps the call
                {"file_path": "copy.txt", "content": everything, FILE_GITHUB: MCP_TOKEN},
                text=f"I found {FILE_GITHUB} and {DATABASE_URL}",
            ),
            f"Here is everything:\n{everything}",
        ]
    )


@pytest.mark.slow
@pytest.mark.usefixtures("credentials")
async def test_a_hostile_run_stores_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secrets.txt").write_text(SECRETS_FILE)
    store_path = tmp_path / "state.db"
    model = hostile_model()
    runtime = Runtime(
        cwd=tmp_path,
        config=llm_config(),
        model=model,
        store=open_store(store_path),
        mcp_servers={"calc": stdio_calc(env={"CALC_SERVICE_TOKEN": MCP_TOKEN})},
        permission_mode="bypassPermissions",
    )
    try:
        result = await runtime.run(f"use {PROVIDER_KEY} wisely")
    finally:
        await runtime.aclose()
        assert runtime.store is not None
        runtime.store.close()

    assert result.status == "completed"
    # the secrets really went through the run: the model saw them
    assert FILE_GITHUB in tool_results(model, 1)[0].content
    assert tool_results(model, 3)[-1].content == MCP_TOKEN
    stored = stored_bytes(tmp_path)
    assert leaked(stored) == []
    assert b"[REDACTED]" in stored

    # OpenTelemetry spans, content included, exported with nothing left to redact them here
    for name in ("MY_LLM_CRED", "OPENAI_API_KEY", "GITHUB_TOKEN"):
        monkeypatch.delenv(name)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with open_store(store_path) as store:
        assert result.task_id is not None
        count = export_task(store, result.task_id, tracer_provider=provider, include_content=True)
    spans = exporter.get_finished_spans()
    provider.shutdown()
    assert count == len(spans) > 0
    exported = json.dumps([dict(span.attributes or {}) for span in spans])
    assert "[REDACTED]" in exported
    assert leaked(exported) == []


@tool(read_only=True)
def sink(data: dict[str, Any]) -> str:
    """Take any data."""
    return "taken"


@pytest.mark.slow
@pytest.mark.parametrize("depth", [800, 100_000])
async def test_deeply_nested_tool_arguments_do_not_take_a_run_down(
    tmp_path: Path, depth: int
) -> None:
    value: Any = FILE_GITHUB
    for _ in range(depth):
        value = {"k": value}
    model = ScriptedModel([tool_call_response("sink", {"data": value}), "done"])
    runtime = Runtime(
        cwd=tmp_path,
        model=model,
        tools=[sink],
        builtin_tools=False,
        store=open_store(tmp_path / "state.db"),
    )
    try:
        result = await runtime.run("take this")
    finally:
        assert runtime.store is not None
        runtime.store.close()

    assert result.status == "completed" and result.output == "done"
    # the harness refuses arguments this deep (a tool error the model can act on) ...
    (refused,) = tool_results(model, 1)
    assert refused.is_error and "nested" in refused.content
    # ... and what is stored of them (the raw text) still holds no secret
    stored = stored_bytes(tmp_path)
    assert leaked(stored) == []


# -- the CLI -----------------------------------------------------------------------------------


@dataclass(slots=True)
class StreamedTurn(Turn):
    """A final answer streamed in pieces of a few characters, so that secrets are split."""

    piece: int = 5

    def reply(self, *, streaming: bool) -> PlannedReply:
        if not streaming:
            return Turn.reply(self, streaming=False)
        text = self.text or ""
        pieces = [text[i : i + self.piece] for i in range(0, len(text), self.piece)]
        chunks = [chunk({"role": "assistant", "content": piece}) for piece in pieces]
        chunks += [chunk(finish_reason="stop"), chunk(usage_body=usage())]
        return PlannedReply(sse_frames=[sse_frame(c) for c in chunks] + [sse_frame("[DONE]")])


class HostileProject(Project):
    """A project whose provider key comes from ``api_key_env = "MY_LLM_CRED"``, with an MCP
    server holding a literal token and a file full of secrets."""

    def __init__(self, root: Path, server: ScriptedServer, home: Path) -> None:
        super().__init__(root, server, home)
        (root / ".subagents" / "config.toml").write_text(
            f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
            'tool_calls = "auto"\n'
            'api_key_env = "MY_LLM_CRED"\n',
            encoding="utf-8",
        )
        server_entry = {
            "command": sys.executable,
            "args": [str(CALC_SERVER), "stdio"],
            "env": {"CALC_SERVICE_TOKEN": MCP_TOKEN},
        }
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": server_entry}}))
        (root / "secrets.txt").write_text(SECRETS_FILE)
        self.env.pop("OPENAI_API_KEY")
        self.env.update(
            MY_LLM_CRED=PROVIDER_KEY, OPENAI_API_KEY=OPENAI_KEY, GITHUB_TOKEN=GITHUB_ENV_TOKEN
        )

    def stored_bytes(self) -> bytes:
        return b"".join(path.read_bytes() for path in self.store_file.parent.glob("state.db*"))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def hostile(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> HostileProject:
    return HostileProject(tmp_path / "project", server, isolated_home)


def request_tool_results(server: ScriptedServer, request: int) -> list[str]:
    messages = server.bodies()[request]["messages"]
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


@pytest.mark.slow
def test_the_cli_shows_and_keeps_no_secret_of_a_hostile_model(
    hostile: HostileProject, server: ScriptedServer, tmp_path: Path
) -> None:
    everything = f"{SECRETS_FILE}\nprovider: {PROVIDER_KEY}\nmcp: {MCP_TOKEN}"
    server.call("Read", {"file_path": "secrets.txt"}, call_id="call_read")
    server.call("Bash", {"command": "env"}, call_id="call_env")
    server.call("mcp__calc__env", {"name": "CALC_SERVICE_TOKEN"}, call_id="call_mcp")
    server.call("mcp__calc__env", {"name": "MY_LLM_CRED"}, call_id="call_mcp_key")
    server.turns.append(
        Turn(
            text=f"Found {FILE_GITHUB} and {FILE_AWS} at {DATABASE_URL}",
            calls=[
                ("call_echo", "Bash", {"command": f"echo {FILE_GITHUB} {FILE_AWS} {MCP_TOKEN}"}),
                ("call_write", "Write", {"file_path": "copy.txt", "content": everything}),
            ],
        )
    )
    server.turns.append(StreamedTurn(text=f"All of it:\n{everything}\nThat is all."))

    # --trust-project-mcp: the project's calc server runs, as it would once approved
    done = hostile.run("Collect every secret you can find", "--yes", "--trust-project-mcp")

    assert done.code == 0, done.err
    # the secrets went through the run: the model was told the file and the MCP token
    assert FILE_GITHUB in request_tool_results(server, 1)[-1]
    assert request_tool_results(server, 3)[-1] == MCP_TOKEN
    # what Bash's `env` gave the model holds no provider key; other tokens are there
    env_output = request_tool_results(server, 2)[-1]
    seen = env_lines(env_output)
    assert seen["GITHUB_TOKEN"] == GITHUB_ENV_TOKEN
    assert "MY_LLM_CRED" not in seen and "OPENAI_API_KEY" not in seen
    assert PROVIDER_KEY not in env_output and OPENAI_KEY not in env_output
    assert request_tool_results(server, 4)[-1] == "(unset)"  # nor does the MCP server get it
    assert (hostile.root / "copy.txt").read_text() == everything  # tools work on real values

    # what the person saw
    assert leaked(done.out) == [] and leaked(done.err) == []
    assert "All of it:" in done.out and "ghp_[REDACTED]" in done.out
    assert "postgres://u:[REDACTED]@h/db" in done.out
    assert "Bash" in done.err and "[REDACTED]" in done.err  # the progress lines

    # what was kept, and every way of reading it back
    assert leaked(hostile.stored_bytes()) == []
    task_id = done.task_id
    outputs = {
        "trace --json": hostile.cli("trace", task_id, "--json"),
        "trace": hostile.cli("trace", task_id),
        "tasks show --json": hostile.cli("tasks", "show", task_id, "--json"),
        "tasks show": hostile.cli("tasks", "show", task_id),
        "tasks list": hostile.cli("tasks", "list", "--json"),
    }
    for name, shown in outputs.items():
        assert shown.code == 0, (name, shown.err)
        assert leaked(shown.out + shown.err) == [], name
    assert "[REDACTED]" in outputs["trace --json"].out
    exported = hostile.cli("export", task_id, str(tmp_path / "archive"))
    assert exported.code == 0, exported.err
    files = [path for path in (tmp_path / "archive").rglob("*") if path.is_file()]
    assert len(files) >= 5
    for path in files:
        assert leaked(path.read_bytes()) == [], path


@pytest.mark.slow
def test_run_json_shows_no_secret(hostile: HostileProject, server: ScriptedServer) -> None:
    server.say(f"key {PROVIDER_KEY}, token {MCP_TOKEN}, {FILE_GITHUB}")

    done = hostile.run("Tell me", "--json", "--no-store")

    assert done.code == 0, done.err
    assert done.json()["output"] == "key [REDACTED], token [REDACTED], ghp_[REDACTED]"
    assert leaked(done.out + done.err) == []


class ErrorTurn(Turn):
    """A 400 from the provider whose message repeats secrets."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def reply(self, *, streaming: bool) -> PlannedReply:
        return PlannedReply(
            status=400,
            json_body={"error": {"message": self.message, "type": "invalid_request_error"}},
        )


@pytest.mark.slow
def test_a_provider_error_holding_secrets_is_shown_redacted(
    hostile: HostileProject, server: ScriptedServer
) -> None:
    message = f"upstream refused token {FILE_GITHUB} for key {PROVIDER_KEY} and {MCP_TOKEN}"
    server.turns.append(ErrorTurn(message))

    done = hostile.run("Fail", "--no-store")

    assert done.code != 0
    assert "upstream refused token" in done.said
    assert leaked(done.out + done.err) == []


@pytest.mark.slow
def test_resume_shows_no_secret(hostile: HostileProject, server: ScriptedServer) -> None:
    server.call("Write", {"file_path": "out.txt", "content": "plain"})
    paused = hostile.run("Write it")  # nobody watches: the Write waits for a person
    assert paused.code == 3, paused.err
    assert "Waiting for a person" in paused.said
    assert leaked(paused.out + paused.err) == []
    server.turns.append(StreamedTurn(text=f"Wrote {MCP_TOKEN} and {FILE_GITHUB}.", piece=3))

    resumed = hostile.cli("resume", paused.task_id, "--approve")

    assert resumed.code == 0, resumed.err
    assert (hostile.root / "out.txt").read_text() == "plain"
    assert "Wrote [REDACTED] and ghp_[REDACTED]." in resumed.out
    assert leaked(resumed.out + resumed.err) == []


@pytest.mark.slow
def test_resume_json_shows_no_secret(hostile: HostileProject, server: ScriptedServer) -> None:
    server.call("Write", {"file_path": "out.txt", "content": "x"})
    paused = hostile.run("Write it")
    assert paused.code == 3, paused.err
    server.say(f"Done with {PROVIDER_KEY}.")

    resumed = hostile.cli("resume", paused.task_id, "--approve", "--json")

    assert resumed.code == 0, resumed.err
    assert resumed.json()["output"] == "Done with [REDACTED]."
    assert leaked(resumed.out + resumed.err) == []


def test_the_workspace_redactor_knows_the_mcp_servers_secrets(
    tmp_path: Path, isolated_home: Path
) -> None:
    from subagents.secrets import workspace_redactor

    (tmp_path / ".git").mkdir()
    entry = {"command": "calc", "env": {"CALC_SERVICE_TOKEN": MCP_TOKEN}}
    assert MCP_TOKEN in workspace_redactor(tmp_path).text(f"token {MCP_TOKEN}")  # no file yet
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": entry}}))
    assert MCP_TOKEN not in workspace_redactor(tmp_path).text(f"token {MCP_TOKEN}")
