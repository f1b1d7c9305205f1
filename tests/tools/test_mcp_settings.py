"""MCP settings that reach the tools: per-tool timeouts and fallback chains on a real server,
every ignored key reported with its file, Claude Code's per-project servers in
``~/.claude.json``. Real stdio servers, real files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcp_servers.harness import CALC_SERVER, stdio_calc
from subagents.cli.app import app
from subagents.mcp.config import MCPToolSettings, load_mcp_servers, parse_mcp_servers
from subagents.mcp.connection import MCPManager
from subagents.mcp.consent import project_servers
from subagents.messages import ToolResultMessage
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import ScriptedModel, tool_call_response


def _calc_entry(**settings: object) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(CALC_SERVER), "stdio"], **settings}


@pytest.mark.slow
async def test_a_hanging_mcp_tool_times_out_and_its_builtin_fallback_answers(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("the notes, read by the built-in Read\n")
    settings = {"stuck_read": {"timeout_seconds": 0.5, "fallback_tools": ["Read"]}}
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"calc": _calc_entry(tools=settings)}})
    )
    model = ScriptedModel(
        [tool_call_response("mcp__calc__stuck_read", {"file_path": "notes.txt"}), "done"]
    )
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path, model=model, permission_mode="bypassPermissions", store=store
        )
        try:
            result = await runtime.run("read the notes")
            assert runtime.toolbox.mcp is not None
            tools = {tool.name: tool for tool in runtime.toolbox.mcp.tools()}
        finally:
            await runtime.aclose()
        assert result.status == "completed", result.error
        traces = [t for t in store.traces(result.task_id or "") if t.kind == "tool_call"]

    stuck, add = tools["mcp__calc__stuck_read"], tools["mcp__calc__add"]
    assert (stuck.timeout_seconds, stuck.fallback_tools) == (0.5, ("Read",))
    assert (add.timeout_seconds, add.fallback_tools) == (300.0, ())  # the defaults
    (answer,) = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert not answer.is_error
    assert "mcp__calc__stuck_read timed out; answered by fallback tool Read" in answer.content
    assert "the notes, read by the built-in Read" in answer.content
    (traced,) = traces  # the call, under the tool the model named, answered by the fallback
    assert traced.step_name == "mcp__calc__stuck_read" and traced.data["tool"] == "Read"


@pytest.mark.slow
async def test_per_tool_settings_override_the_servers() -> None:
    config = stdio_calc(
        timeout_seconds=20,
        fallback_tools=["mcp__other__add"],
        tools={
            "fail": MCPToolSettings(timeout_seconds=3),
            "slow": MCPToolSettings(fallback_tools=[]),
        },
    )
    async with MCPManager([config]) as manager:
        tools = {tool.name: tool for tool in manager.tools()}
    assert (tools["mcp__calc__fail"].timeout_seconds, tools["mcp__calc__fail"].fallback_tools) == (
        3,
        ("mcp__other__add",),
    )
    assert (tools["mcp__calc__slow"].timeout_seconds, tools["mcp__calc__slow"].fallback_tools) == (
        20,
        (),
    )


def test_every_ignored_key_is_reported_with_its_file() -> None:
    source = Path("/p/.mcp.json")
    raw = {
        "mcpServers": {
            "calc": _calc_entry(
                autoApprove=["add"],
                tools={"add": {"timeout_seconds": 5, "retries": 2}},
            ),
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "command": "x"},
        },
        "version": 2,
    }
    config = parse_mcp_servers(raw, source, environ={})
    assert config.servers["calc"].tool_timeout("add") == 5
    found = sorted(warning.split(": '")[1].split("'")[0] for warning in config.warnings)
    assert found == [
        "mcpServers.calc.autoApprove",
        "mcpServers.calc.tools.add.retries",
        "mcpServers.web.command",  # a stdio key on an HTTP server
        "version",
    ]
    assert all(warning.startswith(f"{source}: ") for warning in config.warnings)
    assert all("is not a setting subagents reads" in warning for warning in config.warnings)
    # ~/.claude.json keeps much else at its top level: not reported
    claude = parse_mcp_servers({"mcpServers": {}, "projects": {}}, Path("/h/.claude.json"))
    assert claude.warnings == []


@pytest.mark.slow
async def test_ignored_keys_are_warned_when_servers_start(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"calc": _calc_entry(alwaysAllow=["add"])}})
    )
    warned: list[str] = []
    config = load_mcp_servers(tmp_path, home=tmp_path / "home")
    async with MCPManager(config, on_warning=warned.append) as manager:
        assert "mcp__calc__add" in [tool.name for tool in manager.tools()]
    assert len(warned) == 1 and "'mcpServers.calc.alwaysAllow'" in warned[0]


def test_mcp_list_prints_the_ignored_keys_on_stderr(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"calc": _calc_entry(disabled=True)}})
    )
    result = CliRunner().invoke(app, ["mcp", "list", "--cwd", str(tmp_path), "--json"])
    assert result.exit_code == 0
    assert "warning: " in result.stderr and "'mcpServers.calc.disabled'" in result.stderr
    assert [row["name"] for row in json.loads(result.stdout)] == ["calc"]


def test_claude_json_project_servers_are_read_over_the_projects_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"shared": {"command": "from-mcp-json"}, "team": _calc_entry()}})
    )
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {"mine": {"command": "user-server"}},
                "projects": {
                    str(project.resolve()): {
                        "mcpServers": {"shared": {"command": "private-${WHO}"}},
                        "allowedTools": [],
                    },
                    str(tmp_path / "elsewhere"): {"mcpServers": {"other": {"command": "x"}}},
                },
                "numStartups": 12,
            }
        )
    )
    monkeypatch.setenv("WHO", "me")
    config = load_mcp_servers(project, home=home)
    assert set(config.servers) == {"mine", "shared", "team"}  # not another project's
    shared = config.servers["shared"]
    assert getattr(shared, "command", None) == "private-me"  # the private entry wins
    assert config.sources["shared"] == home / ".claude.json"
    assert config.warnings == []
    # the person's own servers start without the project's consent; the project's need it
    assert [server.name for server in project_servers(config, home=home)] == ["team"]


# -- servers an agent file defines inline (Claude Code's mcpServers in a subagent) -----------


def _inline_agent(root: Path, tools: str = "mcp__pocket") -> None:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    server = json.dumps(_calc_entry())  # JSON is YAML: the server's settings inline
    (agents / "pocket.md").write_text(
        "---\nname: pocket\ndescription: Adds with its own calculator.\n"
        f"tools: {tools}\nmcpServers:\n  - pocket: {server}\n---\nAdd.\n"
    )


def _delegating(subagent: str = "pocket") -> ScriptedModel:
    task = {"description": "add", "prompt": "add 2 and 3", "subagent_type": subagent}
    return ScriptedModel([tool_call_response("Task", task), "Done"])


@pytest.mark.slow
async def test_an_agents_inline_server_starts_and_only_that_agent_gets_its_tools(
    tmp_path: Path,
) -> None:
    _inline_agent(tmp_path)
    child = ScriptedModel([tool_call_response("mcp__pocket__add", {"a": 2, "b": 3}), "5"])
    main = _delegating()
    runtime = Runtime(
        cwd=tmp_path,
        model=main,
        agent_models={"pocket": child},
        permission_mode="bypassPermissions",
        mcp_servers={},
    )
    try:
        result = await runtime.run("add 2 and 3")
    finally:
        await runtime.aclose()
    assert result.status == "completed", result.error
    assert [spec.name for spec in child.requests[0].tools] == [
        f"mcp__pocket__{tool}"
        for tool in ("add", "fail", "slow", "stuck_read", "crash", "pid", "env", "picture")
    ] + ["mcp__pocket__shout_loud"]
    (added,) = [m for m in child.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert (added.content, added.is_error) == ("5", False)
    # the main session never had them: they are the agent's own
    assert not any(spec.name.startswith("mcp__pocket") for spec in main.requests[0].tools)


@pytest.mark.slow
async def test_a_restricted_parent_cannot_pass_on_an_inline_servers_tools(tmp_path: Path) -> None:
    _inline_agent(tmp_path)
    agents = tmp_path / ".claude" / "agents"
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads and may start pocket.\n"
        "tools: Read, Task\n---\nRead.\n"
    )
    reader = _delegating()
    main = _delegating("reader")
    runtime = Runtime(
        cwd=tmp_path,
        model=main,
        agent_models={"reader": reader, "pocket": ScriptedModel(["never"])},
        permission_mode="bypassPermissions",
        mcp_servers={},
    )
    try:
        await runtime.run("go")
    finally:
        await runtime.aclose()
    refused = [m for m in reader.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert refused[0].is_error and "has no usable tools here" in refused[0].content


async def test_a_project_agents_inline_server_needs_the_persons_consent(tmp_path: Path) -> None:
    from subagents.mcp.consent import ProjectServerPolicy

    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    _inline_agent(project)
    asked: list[list[str]] = []

    def ask(servers: object) -> set[str]:
        asked.append([server.name for server in servers])  # type: ignore[attr-defined]
        return set()  # declined

    runtime = Runtime(
        cwd=project,
        model=_delegating(),
        agent_models={"pocket": ScriptedModel(["never"])},
        permission_mode="bypassPermissions",
        mcp_servers={},
        project_mcp=ProjectServerPolicy(home=home, ask=ask),
    )
    try:
        await runtime.run("go")
        assert runtime.toolbox.inline_mcp_tools("pocket") == []
    finally:
        await runtime.aclose()
    assert asked == [["pocket"]]
    assert "pocket" in runtime.toolbox.project_mcp.refused  # type: ignore[union-attr]


def test_mcp_trust_approves_an_agents_inline_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    _inline_agent(project)
    monkeypatch.setenv("HOME", str(home))
    listed = CliRunner().invoke(app, ["mcp", "trust", "--cwd", str(project)])
    assert "pocket: not asked yet" in listed.stdout
    approved = CliRunner().invoke(app, ["mcp", "trust", "pocket", "--cwd", str(project)])
    assert approved.exit_code == 0, approved.output
    listed = CliRunner().invoke(app, ["mcp", "trust", "--cwd", str(project)])
    assert "pocket: approved" in listed.stdout
