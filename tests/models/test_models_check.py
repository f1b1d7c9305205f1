"""`subagents models check PROVIDER:MODEL` against local OpenAI-compatible servers of different
abilities, through the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer
from fakes.schema_server import CapabilityServer
from subagents.cli.app import app

runner = CliRunner()
KEY = "sk-local-0123456789abcdefSECRET"


def project(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    config = root / ".subagents" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[providers.local]\nbase_url = "{base_url}"\n{extra}', encoding="utf-8")
    return root


def check(root: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(
        app, ["models", "check", "local:tiny", "--cwd", str(root), *args], catch_exceptions=False
    )
    return result.exit_code, result.stdout + result.stderr


def check_json(root: Path, *args: str) -> dict[str, Any]:
    code, out = check(root, "--json", *args)
    data: dict[str, Any] = json.loads(out)
    data["exit_code"] = code
    return data


def statuses(data: dict[str, Any]) -> dict[str, str]:
    return {result["check"]: result["status"] for result in data["results"]}


@pytest.fixture
def native() -> Iterator[CapabilityServer]:
    with CapabilityServer(native_tools=True, parallel=True, json_schema=True) as server:
        yield server


def test_a_local_server_that_can_do_both_keeps_schema_turns(
    tmp_path: Path, native: CapabilityServer
) -> None:
    """Native calls work here, but a local server's small model keeps to its tools better in
    schema turns (make eval: 0 of 12 tasks through its own tool-call template): the check
    agrees with the default instead of talking the user out of it."""
    code, out = check(project(tmp_path, native.base_url))

    assert code == 0
    assert 'tool_calls = "schema", in force now, is the one to use' in out
    assert 'native calls work too, if its model is a strong one: tool_calls = "native"' in out
    assert "called get_weather" in out and "2 calls in one answer" in out


def test_one_call_at_a_time_is_no_parallel_calls(tmp_path: Path) -> None:
    with CapabilityServer(native_tools=True) as server:
        data = check_json(project(tmp_path, server.base_url))

    assert data["recommendation"] == "native"
    assert statuses(data)["parallel tool calls"] == "no"


def test_a_server_without_tools_but_with_json_schema_gets_schema(tmp_path: Path) -> None:
    with CapabilityServer(native_tools=False, json_schema=True) as server:
        data = check_json(project(tmp_path, server.base_url))
        bodies = [request.json() for request in server.requests]

    assert data["exit_code"] == 0
    assert data["recommendation"] == "schema"
    assert data["config"] == '[providers.local]\ntool_calls = "schema"'
    assert statuses(data) == {
        "reachable": "yes",
        "native tool calls": "no",
        "parallel tool calls": "skipped",
        "JSON schema": "yes",
        "schema tool call": "yes",
    }
    native_result = next(r for r in data["results"] if r["check"] == "native tool calls")
    assert "tools are not supported by this server" in native_result["detail"]
    schema_turn = bodies[-1]
    assert "tools" not in schema_turn and schema_turn["response_format"]["type"] == "json_schema"


def test_a_server_that_ignores_json_schema_and_has_no_tools_gets_text(tmp_path: Path) -> None:
    with CapabilityServer(native_tools=False, json_schema=False) as server:
        code, out = check(project(tmp_path, server.base_url))

    assert code == 0
    assert 'tool_calls = "text"' in out
    assert "accepted but not obeyed" in out


def test_an_unreachable_endpoint_says_so_and_exits_1(tmp_path: Path) -> None:
    with FakeOpenAIServer() as closed:
        url = closed.base_url
    code, out = check(project(tmp_path, url, "connect_timeout_seconds = 2\n"))

    assert code == 1
    assert "did not answer the first probe" in out and "tool_calls =" not in out
    assert "[providers.local] base_url" in out
    assert "skipped" in out


@pytest.mark.slow
def test_a_silent_endpoint_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.hang()
        data = check_json(project(tmp_path, server.base_url), "--timeout", "0.5")

    assert data["exit_code"] == 1 and data["recommendation"] is None
    reachable = data["results"][0]
    assert reachable["status"] == "no" and "0.5 s" in reachable["detail"]


def test_the_key_is_never_printed(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.reply_error(401, f"Incorrect API key provided: {KEY}")
        root = project(tmp_path, server.base_url, f'api_key = "{KEY}"\n')
        code, out = check(root)
        sent = server.requests[0].headers["authorization"]

    assert sent == f"Bearer {KEY}"  # the key was used ...
    assert code == 1 and "Incorrect API key provided" in out
    assert KEY not in out  # ... and never shown


def test_an_unknown_provider_is_a_clear_error(tmp_path: Path) -> None:
    root = project(tmp_path, "http://127.0.0.1:9/v1")
    result = runner.invoke(app, ["models", "check", "nowhere:x", "--cwd", str(root)])

    assert result.exit_code == 2
    assert "Unknown provider 'nowhere'" in result.stderr
    assert "[providers.nowhere]" in result.stderr


def test_a_setting_that_is_already_right_is_said_to_be(tmp_path: Path) -> None:
    with CapabilityServer(native_tools=False, json_schema=True) as server:
        root = project(tmp_path, server.base_url, 'tool_calls = "schema"\n')
        code, out = check(root)
        data = check_json(root)

    assert code == 0
    assert 'tool_calls = "schema", in force now, is the one to use' in out
    assert "Recommended" not in out
    assert data["configured"] == "schema" and data["recommendation"] == "schema"
