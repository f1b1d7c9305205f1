"""What a command imports (issue 14): `subagents NAME` builds and loads only the command NAME,
and each of the paths users take most (`run`, `agents list`, `tasks list`) leaves out what it
does not use - the terminal UIs (textual), the MCP SDK, the other commands, Rich for listings.

Each case runs the console script's ``main()`` in a fresh interpreter and reads its
``sys.modules`` after; nothing here measures time (that is bench/bench_cli_paths.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer.core import TyperGroup
from typer.testing import CliRunner

from cli_project import MODEL, Project, ScriptedServer
from store_records import make_task
from subagents.store.sqlite import SQLiteStore

# never needed by run, agents list or tasks list
NEVER = (
    "textual",
    "mcp",
    "anthropic",
    "subagents.cli.chat",
    "subagents.cli.ui.live",
    "subagents.cli.workflow",
    "subagents.workflows",
)

_PROBE = """
import json, sys
args, report = json.loads(sys.argv[1]), sys.argv[2]
sys.argv = ["subagents", *args]
from subagents.cli.app import main
try:
    main()
    code = 0
except SystemExit as stop:
    code = stop.code or 0
with open(report, "w", encoding="utf-8") as file:
    json.dump({"code": code, "modules": sorted(sys.modules)}, file)
"""


def command_imports(
    tmp_path: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> set[str]:
    """The modules loaded by ``subagents ARGS`` run in ``cwd`` (it must exit 0)."""
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args), str(report)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert report.exists(), done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["code"] == 0, done.stdout + done.stderr
    return set(data["modules"])


def loaded(modules: set[str], *names: str) -> list[str]:
    """Those of ``names`` that are loaded, as packages or as modules inside them."""
    return [n for n in names if n in modules or any(m.startswith(f"{n}.") for m in modules)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


def test_importing_the_app_loads_no_command(tmp_path: Path) -> None:
    code = "import sys, json; import subagents.cli.app; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    modules = set(json.loads(done.stdout))
    assert sorted(m for m in modules if m.startswith("subagents")) == [
        "subagents",
        "subagents._lazy",
        "subagents.cli",
        "subagents.cli.app",
    ]
    assert loaded(modules, "pydantic", "rich", "textual", "asyncio", "yaml") == []


def test_agents_list_loads_no_rich_runtime_store_or_other_command(
    tmp_path: Path, repo: Path
) -> None:
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\ntools: Read\n---\nReview.\n", "utf-8"
    )
    modules = command_imports(tmp_path, repo, "agents", "list")
    assert "subagents.inventory" in modules  # it did list
    assert loaded(modules, *NEVER, "rich", "asyncio", "subagents.runtime", "subagents.store") == []
    assert loaded(modules, "subagents.cli.run", "subagents.cli.tasks", "subagents.cli.mcp") == []


def test_tasks_list_loads_no_rich_inventory_or_other_command(tmp_path: Path, repo: Path) -> None:
    with SQLiteStore(repo / ".subagents" / "state.db") as store:
        store.create_task(make_task(description="Listed"))
    modules = command_imports(tmp_path, repo, "tasks", "list")
    assert "subagents.store.sqlite" in modules  # it did read the store
    assert loaded(modules, *NEVER, "rich", "subagents.runtime", "subagents.inventory") == []
    assert loaded(modules, "subagents.cli.agents", "subagents.cli.run") == []
    # no MCP server is configured: the redactor needs neither the config models nor asyncio
    assert loaded(modules, "subagents.mcp.config", "subagents.mcp.connection", "asyncio") == []


@pytest.mark.slow
def test_run_loads_no_ui_mcp_sdk_or_other_command(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        home = tmp_path / "home"
        home.mkdir()
        project = Project(tmp_path / "project", server, home)
        server.say("Hello.")
        modules = command_imports(
            tmp_path, project.root, "run", "hi", "--yes", "--model", MODEL, env=project.env
        )
    assert "subagents.runtime.runtime" in modules and "openai" in modules  # it did run
    assert loaded(modules, *NEVER) == []
    assert loaded(modules, "subagents.cli.agents", "subagents.cli.tasks") == []
    # the built-in agents' frontmatter is read without PyYAML; writing agent files is elsewhere
    assert loaded(modules, "yaml", "subagents._yaml", "subagents.definitions.render") == []
    # git worktrees load only for an agent with isolation: worktree
    assert "subagents.runtime.worktree" not in modules
    # a built-in tool's module (and a search tool's engine) loads when the tool is first used
    assert "subagents.tools.builtin.catalogue" in modules
    tool_modules = "read write edit glob grep ls bash multiedit todowrite webfetch websearch"
    assert loaded(modules, *(f"subagents.tools.builtin.{m}" for m in tool_modules.split())) == []
    assert loaded(modules, "subagents.tools.decorator", "regex", "pathspec") == []


def test_the_help_still_lists_every_command(tmp_path: Path) -> None:
    from subagents.cli.app import COMMANDS

    script = Path(sys.executable).with_name("subagents")
    done = subprocess.run(
        [str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert set(COMMANDS) <= listed
    workflow = subprocess.run(
        [str(script), "workflow", "--help"], capture_output=True, text=True, timeout=60
    )
    assert {"list", "validate", "show", "run"} <= {
        line.split()[0] for line in workflow.stdout.splitlines() if line.startswith("  ")
    }


def _subcommands(app: typer.Typer, group: str) -> set[str]:
    built = typer.main.get_command(app)
    assert isinstance(built, TyperGroup)
    found = built.commands[group]
    assert isinstance(found, TyperGroup)
    return set(found.commands)


def test_a_group_is_built_with_only_the_subcommand_named() -> None:
    from subagents.cli.app import build_app

    assert _subcommands(build_app("agents", "list"), "agents") == {"list"}
    assert _subcommands(build_app("tasks", "list"), "tasks") == {"list"}
    # a name the group does not have, an option, or none: the whole group (help, errors)
    for other in ("lst", "--help", None):
        assert {"list", "show", "validate"} <= _subcommands(build_app("agents", other), "agents")
    # the group module's own app is left whole
    assert {"list", "show", "validate"} <= _subcommands(build_app("agents"), "agents")


def test_a_narrowed_group_answers_as_the_whole_one(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("subagents")
    done = subprocess.run(
        [str(script), "tasks", "list", "--bogus"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Usage: subagents tasks list [OPTIONS]" in done.stderr
    assert "No such option: --bogus" in done.stderr


def test_an_unknown_command_is_refused_by_the_whole_app(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("subagents")
    done = subprocess.run(
        [str(script), "agnets", "list"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "No such command 'agnets'" in done.stderr


def test_the_app_attribute_is_the_whole_app() -> None:
    import subagents.cli.app as cli_app

    result = CliRunner().invoke(cli_app.app, ["--help"])
    assert result.exit_code == 0
    for name in cli_app.COMMANDS:
        assert name in result.stdout
    with pytest.raises(AttributeError):
        _ = cli_app.no_such_name
