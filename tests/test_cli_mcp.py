"""`subagents mcp list [--check]` on real servers: one that works, one that cannot start."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from subagents.cli.app import app

CALC = Path(__file__).parent / "mcp_servers" / "calc_server.py"


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
