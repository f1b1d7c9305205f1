"""`subagents mcp list [--check]` on real servers: one that works, one that cannot start."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paths import TESTS
from subagents.cli.app import app

CALC = TESTS / "mcp_servers" / "calc_server.py"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calc": {"command": sys.executable, "args": [str(CALC), "stdio"]},
                    "ghost": {"command": str(root / "no-such-server")},
                    "later": {"type": "http", "url": "http://127.0.0.1:9/mcp", "enabled": False},
                }
            }
        )
    )
    return root


def test_list_shows_configured_servers_without_starting_them(tmp_path: Path) -> None:
    root = project(tmp_path)
    result = CliRunner().invoke(app, ["mcp", "list", "--cwd", str(root), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["calc"]["transport"] == "stdio" and rows["calc"]["status"] == "configured"
    assert rows["later"]["status"] == "disabled" and rows["later"]["target"].endswith("/mcp")
    assert rows["calc"]["source"].endswith(".mcp.json")


@pytest.mark.slow
def test_check_starts_each_server_and_reports_tools_and_failures(tmp_path: Path) -> None:
    root = project(tmp_path)
    result = CliRunner().invoke(app, ["mcp", "list", "--cwd", str(root), "--check", "--json"])
    assert result.exit_code == 1  # with --json too: a script must see the failure
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["calc"]["status"] == "ok" and {"add", "fail"} <= set(rows["calc"]["tools"])
    assert rows["ghost"]["status"] == "error" and "ghost" in rows["ghost"]["detail"]
    table = CliRunner().invoke(app, ["mcp", "list", "--cwd", str(root), "--check"])
    assert table.exit_code == 1  # a server that does not start is a failure to fix
    assert "ghost:" in table.output and "add" in table.output


def test_no_servers_says_where_to_add_them(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    (root / ".git").mkdir(parents=True)
    result = CliRunner().invoke(app, ["mcp", "list", "--cwd", str(root)])
    assert result.exit_code == 0 and ".mcp.json" in result.output


@pytest.mark.slow
def test_a_server_that_prints_a_banner_first_works_without_noise_on_the_terminal(
    tmp_path: Path,
) -> None:
    """The SDK logs the banner line it cannot parse, with a traceback; the person sees only
    the table (the SDK's records go to our logger at debug level)."""
    import os
    import subprocess

    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    serve = f"echo 'Welcome to calc v1'; exec '{sys.executable}' '{CALC}' stdio"
    (root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"calc": {"command": "sh", "args": ["-c", serve]}}})
    )
    env = {**os.environ, "SUBAGENTS_TRUST_PROJECT_MCP": "1", "HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "mcp", "list", "--check", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert row["status"] == "ok" and "add" in row["tools"]
    assert "Traceback" not in done.stderr and "JSONRPC" not in done.stderr


@pytest.mark.slow
def test_call_runs_one_tool_by_hand_with_exit_codes_a_script_can_use(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    calc = {"command": sys.executable, "args": [str(CALC), "stdio"]}
    calc["tools"] = {"stuck_read": {"timeout_seconds": 0.5}}  # type: ignore[assignment]
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": calc}}))

    def call(*words: str, stdin: str | None = None) -> Any:
        return CliRunner().invoke(app, ["mcp", "call", *words, "--cwd", str(root)], input=stdin)

    added = call("calc", "add", '{"a": 2, "b": 3}')
    assert (added.exit_code, added.stdout.strip()) == (0, "5")
    by_our_name = call("calc", "mcp__calc__add", "-", "--json", stdin='{"a": 1, "b": 1}')
    assert json.loads(by_our_name.stdout) == {
        "server": "calc",
        "tool": "mcp__calc__add",
        "ok": True,
        "text": "2",
    }
    failed = call("calc", "fail", '{"message": "disk full"}')
    assert failed.exit_code == 1 and "disk full" in failed.stderr
    stuck = call("calc", "stuck_read", '{"file_path": "x"}')  # its own timeout: 0.5 s
    assert stuck.exit_code == 1 and "timed out after 0.5 s" in stuck.stderr
    unknown = call("calc", "nope")
    assert unknown.exit_code == 2 and "its tools: add, fail" in unknown.stderr
    assert call("calc", "add", "[1").exit_code == 2
    assert "must be a JSON object" in call("calc", "add", "[1]").stderr
    nowhere = call("zz", "add")
    assert nowhere.exit_code == 2 and "the servers: calc" in nowhere.stderr


def test_agents_show_lists_the_mcp_tools_an_agent_gets(tmp_path: Path) -> None:
    root = project(tmp_path)
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "calculator.md").write_text(
        "---\nname: calculator\ndescription: Adds with calc.\n"
        "tools: mcp__calc, mcp__calc__add, mcp__later__x, mcp__nowhere__search\n---\nAdd.\n"
    )
    shown = CliRunner().invoke(app, ["agents", "show", "calculator", "--cwd", str(root), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["mcp_tools"] == [
        "mcp__calc (every tool of server 'calc')",
        "mcp__calc__add",
        "mcp__later__x (server 'later' is disabled)",
        "mcp__nowhere__search (server 'nowhere' is not configured)",
    ]
    table = CliRunner().invoke(app, ["agents", "show", "calculator", "--cwd", str(root)])
    assert "(none)" not in table.stdout and "mcp__calc__add" in table.stdout
