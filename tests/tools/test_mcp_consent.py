"""A project's MCP servers start only once the person agreed (remembered per project and per
what the server runs); the user's own servers and CI's explicit trust are not asked about."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paths import TESTS
from subagents.cli.app import app
from subagents.mcp.config import load_mcp_servers
from subagents.mcp.consent import (
    TRUST_ENV_VAR,
    ConsentStore,
    ProjectServer,
    ProjectServerPolicy,
    project_servers,
    screen_project_servers,
)
from subagents.runtime.events import EventBus, MCPServerFailed
from subagents.runtime.runtime import Runtime

CALC_SERVER = TESTS / "mcp_servers" / "calc_server.py"
runner = CliRunner()


def write_mcp(folder: Path, args: list[str] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    server = {"command": sys.executable, "args": args or [str(CALC_SERVER), "stdio"]}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": server}}))


class Asker:
    def __init__(self, answer: set[str]) -> None:
        self.answer = answer
        self.asked: list[list[str]] = []

    def __call__(self, servers: Sequence[ProjectServer]) -> set[str]:
        self.asked.append([server.name for server in servers])
        return self.answer


def test_a_project_server_is_left_out_until_approved_then_remembered(
    tmp_path: Path, isolated_home: Path
) -> None:
    project = tmp_path / "project"
    write_mcp(project)
    config = load_mcp_servers(project, home=isolated_home)
    screened = screen_project_servers(config, ProjectServerPolicy(isolated_home))
    assert "calc" not in screened.servers
    assert "subagents mcp trust calc" in screened.problems["calc"]
    assert "calc" in config.servers  # the config read is not changed

    asker = Asker({"calc"})
    kept = screen_project_servers(config, ProjectServerPolicy(isolated_home, ask=asker))
    assert "calc" in kept.servers and asker.asked == [["calc"]]
    again = Asker(set())
    kept = screen_project_servers(config, ProjectServerPolicy(isolated_home, ask=again))
    assert "calc" in kept.servers and again.asked == []  # remembered: not asked twice


def test_a_changed_command_asks_again_and_a_refusal_is_remembered(
    tmp_path: Path, isolated_home: Path
) -> None:
    project = tmp_path / "project"
    write_mcp(project)
    policy = ProjectServerPolicy(isolated_home, ask=Asker({"calc"}))
    screen_project_servers(load_mcp_servers(project, home=isolated_home), policy)
    write_mcp(project, args=[str(CALC_SERVER), "stdio", "--and-something-else"])
    changed = load_mcp_servers(project, home=isolated_home)
    refuse = Asker(set())
    screened = screen_project_servers(changed, ProjectServerPolicy(isolated_home, ask=refuse))
    assert refuse.asked == [["calc"]] and "calc" not in screened.servers
    quiet = Asker({"calc"})
    screened = screen_project_servers(changed, ProjectServerPolicy(isolated_home, ask=quiet))
    assert quiet.asked == [] and "declined" in screened.problems["calc"]


def test_user_servers_and_explicit_trust_are_not_asked_about(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_mcp(isolated_home / ".subagents")  # not read: user servers live in mcp_servers.yaml
    (isolated_home / ".subagents" / ".mcp.json").unlink()
    user_file = isolated_home / ".subagents" / "mcp_servers.yaml"
    user_file.write_text(
        json.dumps({"mcpServers": {"mine": {"command": sys.executable, "args": ["-V"]}}})
    )
    project = tmp_path / "project"
    write_mcp(project)
    config = load_mcp_servers(project, home=isolated_home)
    assert [s.name for s in project_servers(config, home=isolated_home)] == ["calc"]
    screened = screen_project_servers(config, ProjectServerPolicy(isolated_home))
    assert "mine" in screened.servers and "calc" not in screened.servers
    monkeypatch.setenv(TRUST_ENV_VAR, "1")
    trusted = screen_project_servers(config, ProjectServerPolicy.from_environment(isolated_home))
    assert set(trusted.servers) == {"mine", "calc"}


def test_an_unreadable_consent_file_agrees_to_nothing(tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "project"
    write_mcp(project)
    config = load_mcp_servers(project, home=isolated_home)
    screen_project_servers(config, ProjectServerPolicy(isolated_home, ask=Asker({"calc"})))
    store = ConsentStore(isolated_home)
    store.path.write_text('{"schema_version": 1, "projects": {"' + "x" * 10)  # cut off
    asker = Asker(set())
    screened = screen_project_servers(config, ProjectServerPolicy(isolated_home, ask=asker))
    assert asker.asked == [["calc"]] and "calc" not in screened.servers


@pytest.mark.slow
async def test_a_run_does_not_start_an_unapproved_project_server(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_mcp(tmp_path)
    failures: list[MCPServerFailed] = []
    events = EventBus([lambda e: failures.append(e) if isinstance(e, MCPServerFailed) else None])
    runtime = Runtime(cwd=tmp_path, events=events, project_mcp=ProjectServerPolicy(isolated_home))
    try:
        await runtime.toolbox.start_mcp()
        assert "mcp__calc__add" not in runtime.toolbox.base_tools().names()
        assert [f.server for f in failures] == ["calc"]
        assert "not approved" in failures[0].error
        assert "${VAR" not in failures[0].error  # not told to set a variable
    finally:
        await runtime.aclose()
    code = runner.invoke(app, ["mcp", "trust", "calc", "--cwd", str(tmp_path)]).exit_code
    assert code == 0
    approved = Runtime(cwd=tmp_path, project_mcp=ProjectServerPolicy(isolated_home))
    try:
        await approved.toolbox.start_mcp()
        assert "mcp__calc__add" in approved.toolbox.base_tools().names()
    finally:
        await approved.aclose()


def test_the_trust_commands_list_approve_and_forget(tmp_path: Path) -> None:
    write_mcp(tmp_path)
    listed = runner.invoke(app, ["mcp", "trust", "--cwd", str(tmp_path)])
    assert listed.exit_code == 0 and "calc: not asked yet" in listed.stdout
    unknown = runner.invoke(app, ["mcp", "trust", "calculator", "--cwd", str(tmp_path)])
    assert unknown.exit_code == 2 and "calc" in unknown.stderr
    assert runner.invoke(app, ["mcp", "trust", "--all", "--cwd", str(tmp_path)]).exit_code == 0
    listed = runner.invoke(app, ["mcp", "trust", "--cwd", str(tmp_path)])
    assert "calc: approved" in listed.stdout
    forgot = runner.invoke(app, ["mcp", "untrust", "calc", "--cwd", str(tmp_path)])
    assert forgot.exit_code == 0 and "calc: forgotten" in forgot.stdout
    listed = runner.invoke(app, ["mcp", "trust", "--cwd", str(tmp_path)])
    assert "calc: not asked yet" in listed.stdout
