"""`subagents agents ...` through Typer's CliRunner and through the real console script."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paths import REPO
from subagents.cli.agents import agents_app
from subagents.definitions.parse import parse_agent_file

ROOT = REPO
DEMO = ROOT / "examples" / "demo-project"
SCRIPT = Path(sys.executable).with_name("subagents")

runner = CliRunner()


def agent_md(name: str, *, tools: str | None = None, extra: str = "") -> str:
    lines = ["---", f"name: {name}", "description: Does one thing."]
    if tools is not None:
        lines.append(f"tools: {tools}")
    if extra:
        lines.append(extra)
    return "\n".join([*lines, "---", "", f"You are {name}.", ""])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


@pytest.fixture
def home(isolated_home: Path) -> Path:
    return isolated_home


def invoke(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(agents_app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# -- list --------------------------------------------------------------------------------------


def test_list_table_shows_scopes_overrides_and_status(repo: Path, home: Path) -> None:
    write(home / ".claude" / "agents" / "reviewer.md", agent_md("reviewer"))
    write(repo / ".claude" / "agents" / "reviewer.md", agent_md("reviewer", tools="Read, Grep"))
    write(repo / ".claude" / "agents" / "plan.md", agent_md("plan"))
    write(repo / ".claude" / "agents" / "broken.md", "no frontmatter here\n")
    code, out, _ = invoke("list", "--cwd", repo)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.strip()}
    assert "project" in rows["reviewer"] and "Read, Grep" in rows["reviewer"]
    assert "user" in rows["reviewer"]  # the overrides column
    assert ".claude/agents/reviewer.md" in rows["reviewer"]
    assert "builtin" in rows["plan"]  # overrides the built-in plan
    assert "invalid" in rows["broken"]
    assert "<builtin>" in rows["explore"] and "active" in rows["explore"]
    _, shown, _ = invoke("show", "general-purpose", "--json", "--cwd", repo)
    every_tool = json.loads(shown)["effective_tools"]
    assert f"all ({len(every_tool)})" in rows["general-purpose"]
    assert {"Read", "Bash", "Task"} <= set(every_tool)
    assert "invalid: broken:" in out
    assert out.startswith("Agents: 4 active of 5")


def test_list_json_is_machine_readable(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "agents" / "dup.md", agent_md("dup"))
    write(repo / ".claude" / "agents" / "dup.md", agent_md("dup"))
    write(repo / ".claude" / "agents" / "README.md", "# agents\n")
    code, out, _ = invoke("list", "--json", "--cwd", repo)
    assert code == 0
    data = json.loads(out)
    agents = {a["name"]: a for a in data["agents"]}
    assert set(agents) == {"dup", "explore", "general-purpose", "plan"}
    assert agents["dup"]["source"] == ".subagents/agents/dup.md"
    assert agents["explore"]["effective_tools"] == ["Read", "Glob", "Grep", "LS"]
    assert agents["explore"]["source"] == "<builtin>"
    assert data["conflicts"] == [
        {
            "name": "dup",
            "scope": "project",
            "winner": ".subagents/agents/dup.md",
            "losers": [".claude/agents/dup.md"],
        }
    ]
    assert {e["kind"] for e in data["events"]} == {"found", "conflict", "skipped"}


def test_list_with_explicit_agents_json(repo: Path, home: Path) -> None:
    agents = json.dumps({"Explore": {"description": "Mine", "prompt": "Go.", "tools": ["Read"]}})
    code, out, _ = invoke("list", "--json", "--cwd", repo, "--agents", agents)
    assert code == 0
    explore = next(a for a in json.loads(out)["agents"] if a["name"] == "explore")
    assert explore["scope"] == "explicit"
    assert explore["effective_tools"] == ["Read"]
    assert [o["scope"] for o in explore["overrides"]] == ["builtin"]
    code, _, err = invoke("list", "--cwd", repo, "--agents", "[1, 2]")
    assert code == 2
    assert "--agents must be a JSON object" in err


def test_bad_config_exits_2_without_traceback(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "config.toml", "[subagents]\nmax_depth = -1\n")
    for command in (["list"], ["show", "plan"], ["validate"]):
        code, out, err = invoke(*command, "--cwd", repo)
        assert code == 2, command
        assert "config.toml:2: key 'subagents.max_depth'" in err
        assert err.startswith("error: ")
        assert "hint: correct or remove" in err
        assert "Traceback" not in err + out


# -- show --------------------------------------------------------------------------------------


def test_show_prints_everything(repo: Path, home: Path) -> None:
    write(home / ".claude" / "agents" / "web.md", agent_md("web"))
    write(
        repo / ".claude" / "agents" / "web.md",
        agent_md("Web", tools="Read, NotebookEdit", extra="maxTurns: 7\nfavourite: blue"),
    )
    code, out, _ = invoke("show", "web", "--cwd", repo)
    assert code == 0
    assert "declared as 'Web'" in out
    assert re.search(r"effective tools\s+Read\s*$", out, re.M)
    assert re.search(r"unavailable tools\s+NotebookEdit", out)
    assert re.search(r"max turns\s+7", out)
    assert re.search(r"extra keys\s+favourite", out)
    assert "warnings" in out and "'NotebookEdit' is not available here" in out
    assert "overrides" in out and "user:" in out
    assert "You are Web." in out  # the prompt

    code, out, _ = invoke("show", "WEB", "--json", "--cwd", repo)
    data = json.loads(out)
    assert data["name"] == "web"
    assert data["system_prompt"] == "You are Web."
    assert data["unavailable_tools"] == ["NotebookEdit"]
    assert data["max_turns"] == 7
    assert data["overrides"][0]["scope"] == "user"


def test_show_invalid_agent_lists_errors(repo: Path, home: Path) -> None:
    write(repo / ".claude" / "agents" / "bad.md", "---\nname: bad\n---\nbody\n")
    code, out, _ = invoke("show", "bad", "--cwd", repo)
    assert code == 0
    assert "invalid" in out and "errors" in out and "description" in out


def test_show_unknown_agent_suggests_closest(repo: Path, home: Path) -> None:
    code, out, err = invoke("show", "explor", "--cwd", repo)
    assert code == 2
    assert out == ""
    assert "No agent named 'explor'. Did you mean 'explore'?" in err
    assert "subagents agents list" in err


# -- validate ----------------------------------------------------------------------------------


def test_validate_whole_project(repo: Path, home: Path) -> None:
    folder = repo / ".claude" / "agents"
    write(folder / "good.md", agent_md("good"))
    write(folder / "web.md", agent_md("web", tools="Read, NotebookRead"))
    code, out, err = invoke("validate", "--cwd", repo)
    assert code == 0
    assert out.splitlines() == [
        ".claude/agents/web.md: web: warning: tool 'NotebookRead' is not available here; "
        "it is left out"
    ]
    assert "2 agent file(s) checked: 0 invalid, 1 with warnings" in err

    code, _, _ = invoke("validate", "--strict", "--cwd", repo)
    assert code == 1

    write(folder / "empty.md", "---\nname: empty\ndescription: x\n---\n")
    write(folder / "Odd Name.md", "---\nname: 9lives\ndescription: x\n---\nbody\n")
    code, out, err = invoke("validate", "--cwd", repo)
    assert code == 1
    problems = [line for line in out.splitlines() if ": warning: " not in line]
    assert len(problems) == 2
    assert any(
        line.startswith(".claude/agents/empty.md: empty: the system prompt is empty")
        for line in problems
    )
    assert any(
        line.startswith(".claude/agents/Odd Name.md: 9lives: name '9lives'") for line in problems
    )
    assert "2 invalid" in err


def test_validate_reports_conflicts_and_strict_fails_on_them(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "agents" / "dup.md", agent_md("dup"))
    write(repo / ".claude" / "agents" / "dup.md", agent_md("dup"))
    code, out, err = invoke("validate", "--cwd", repo)
    assert code == 0
    assert ".claude/agents/dup.md: dup: conflict: also defined at .subagents/agents/dup.md" in out
    assert "1 conflict(s)" in err
    code, _, _ = invoke("validate", "--strict", "--cwd", repo)
    assert code == 1


def test_validate_given_paths(tmp_path: Path, repo: Path, home: Path) -> None:
    folder = tmp_path / "loose"
    good = write(folder / "good.md", agent_md("good"))
    write(folder / "nested" / "codex.toml", 'name = "codex"\ndescription = "x"\n')
    bad_json = write(tmp_path / "bad.json", "{not json")
    code, out, err = invoke("validate", folder, bad_json, "--cwd", repo)
    assert code == 1
    assert "3 agent file(s) checked: 2 invalid" in err
    assert any("codex.toml: codex: the system prompt is empty" in line for line in out.splitlines())
    assert any("bad.json: bad:" in line and "not valid JSON" in line for line in out.splitlines())
    code, out, err = invoke("validate", good, "--cwd", repo)
    assert (code, out) == (0, "")
    code, _, err = invoke("validate", tmp_path / "absent.md", "--cwd", repo)
    assert code == 2
    assert "no such file or directory" in err


def test_validate_corpus_passes_but_strict_does_not(corpus_dir: Path, home: Path) -> None:
    code, _, err = invoke("validate", corpus_dir, "--cwd", corpus_dir)
    assert code == 0
    assert "158 agent file(s) checked: 0 invalid" in err
    code, _, _ = invoke("validate", "--strict", corpus_dir, "--cwd", corpus_dir)
    assert code == 1  # the corpus names tools we lack (computer-use, ...): warnings


# -- schema and new ----------------------------------------------------------------------------


def test_schema_is_json_schema() -> None:
    code, out, _ = invoke("schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["type"] == "object"
    assert {"name", "description", "tools", "model"} <= set(schema["properties"])


def test_new_writes_a_valid_template_and_refuses_to_overwrite(repo: Path, home: Path) -> None:
    nested = repo / "src" / "pkg"
    nested.mkdir(parents=True)
    code, out, _ = invoke("new", "Security_Auditor", "--cwd", nested)
    assert code == 0
    target = repo.resolve() / ".claude" / "agents" / "security-auditor.md"
    assert f"wrote {target}" in out
    definition = parse_agent_file(target, scope="project")
    assert definition.status == "active", definition.validation_errors
    assert definition.name == "security-auditor"
    assert "#" in target.read_text(encoding="utf-8")  # commented

    before = target.read_text(encoding="utf-8")
    code, _, err = invoke("new", "security-auditor", "--cwd", nested)
    assert code == 2
    assert "already exists; not overwriting it" in err
    assert target.read_text(encoding="utf-8") == before

    code, _, _ = invoke("new", "helper", "--scope", "user")
    assert code == 0
    assert (home / ".claude" / "agents" / "helper.md").is_file()

    code, _, _ = invoke("new", "custom", "--dir", "agents-here", "--cwd", repo)
    assert code == 0
    assert (repo / "agents-here" / "custom.md").is_file()

    code, _, err = invoke("new", "9-lives", "--cwd", repo)
    assert code == 2 and "not a valid agent name" in err
    code, _, err = invoke("new", "x", "--scope", "global", "--cwd", repo)
    assert code == 2 and "unknown scope" in err


# -- the real console script -------------------------------------------------------------------


def run_script(
    *args: str, cwd: Path, home: Path, keys: bool = True
) -> subprocess.CompletedProcess[str]:
    """The console script; ``keys``: with provider keys in the environment (else none)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(SUBAGENTS_HOME=str(home), COLUMNS="200")
    if keys:
        env.update(ANTHROPIC_API_KEY="test-key", OPENAI_API_KEY="test-key")
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
def test_console_script_on_the_demo_project(tmp_path: Path, home: Path) -> None:
    assert SCRIPT.exists(), f"{SCRIPT} missing: run 'make test' to install the project"
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo)
    (demo / ".git").mkdir()

    result = run_script("agents", "list", cwd=demo, home=home)
    assert result.returncode == 0, result.stderr
    for name in ("code-reviewer", "docs-writer", "test-runner", "explore"):
        assert name in result.stdout
    assert "anthropic:claude-sonnet-4-5" in result.stdout  # the project's [models] alias

    result = run_script("agents", "list", "--json", cwd=demo, home=home)
    agents = {a["name"]: a for a in json.loads(result.stdout)["agents"]}
    assert agents["code-reviewer"]["effective_tools"] == ["Read", "Glob", "Grep"]
    assert agents["docs-writer"]["effective_model"] == "openai:gpt-4o-mini"
    assert all(a["status"] == "active" for a in agents.values())

    result = run_script("agents", "validate", "--strict", cwd=demo, home=home)
    assert result.returncode == 0, result.stdout + result.stderr

    write(demo / ".claude" / "agents" / "broken.md", "---\nname: broken\n")
    result = run_script("agents", "validate", cwd=demo, home=home)
    assert result.returncode == 1
    assert result.stdout.startswith(".claude/agents/broken.md: broken:")

    write(demo / ".subagents" / "config.toml", "[subagents\n")
    result = run_script("agents", "list", cwd=demo, home=home)
    assert result.returncode == 2
    assert "config.toml:1" in result.stderr and "TOML syntax error" in result.stderr
    assert "Traceback" not in result.stderr


def test_console_script_help(tmp_path: Path, home: Path) -> None:
    result = run_script("--help", cwd=tmp_path, home=home)
    assert result.returncode == 0
    assert "agents" in result.stdout
    result = run_script("agents", "--help", cwd=tmp_path, home=home)
    assert result.returncode == 0
    for command in ("list", "show", "validate", "schema", "new"):
        assert command in result.stdout
