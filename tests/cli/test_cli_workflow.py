"""`subagents workflow list | validate | show` on real files in a project and a home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from subagents.cli.app import app

runner = CliRunner()

REVIEW_FIX = """\
name: review-fix
description: Review, fix, and check again until the reviewer is happy.
entry_point: review
checkpoints: [fix]
nodes:
  review: {type: agent, agent: reviewer, prompt: "Review {{ input }}", output: review}
  ok: {type: condition, expression: "'LGTM' in upper(review)"}
  fix: {type: agent, agent: fixer, prompt: "Fix:\\n{{ review }}"}
edges:
  - {from: review, to: ok}
  - {from: ok, to: {true: end, false: fix}}
  - {from: fix, to: review, loop: true}
"""

BROKEN_AGENTS = """\
name: broken
entry_point: review
nodes:
  review: {type: agent, agent: reviewr}
  run: {type: tool, tool: mcp__ghost__go}
  calc: {type: tool, tool: mcp__calc__add}
  lost: {type: agent, agent: fixer}
edges:
  - {from: review, to: run}
  - {from: run, to: calc}
"""


def agent_md(name: str) -> str:
    return f"---\nname: {name}\ndescription: Does {name} work.\n---\n\nYou are {name}.\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for name in ("reviewer", "fixer"):
        write(root / ".subagents" / "agents" / f"{name}.md", agent_md(name))
    write(root / ".subagents" / "workflows" / "review-fix.yaml", REVIEW_FIX)
    write(root / ".mcp.json", json.dumps({"mcpServers": {"calc": {"command": "calc-server"}}}))
    return root


@pytest.fixture
def home(isolated_home: Path) -> Path:
    return isolated_home


def invoke(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["workflow", *(str(a) for a in args)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is a failure: commands must not crash
    return result.exit_code, result.stdout, result.stderr


def flat(text: str) -> str:
    """Wrapped output as one line, for matching messages across line breaks."""
    return " ".join(text.split())


def assert_fits(text: str) -> None:
    assert all(len(line) <= 80 for line in text.splitlines()), text


# -- list --------------------------------------------------------------------------------------


def test_list_shows_name_scope_nodes_status_and_path(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "workflows" / "broken.yaml", BROKEN_AGENTS)
    code, out, _ = invoke("list", "--cwd", repo)
    assert code == 0
    assert_fits(out)
    assert out.splitlines()[0] == "Workflows: 2 (1 valid)"
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line[:1] != " "}
    assert rows["review-fix"][:4] == ["review-fix", "project", "3", "valid"]
    assert rows["broken"][:5] == ["broken", "project", "4", "3", "errors"]
    assert ".subagents/workflows/review-fix.yaml" in out
    assert "subagents workflow validate NAME" in out


def test_list_project_overrides_user(repo: Path, home: Path) -> None:
    write(home / ".subagents" / "workflows" / "review-fix.yaml", "not: [valid")
    write(home / ".subagents" / "workflows" / "mine.json", json.dumps(_json_workflow()))
    code, out, _ = invoke("list", "--cwd", repo)
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line[:1] != " "}
    assert rows["review-fix"][1:4] == ["project", "3", "valid"]
    assert rows["mine"][1:4] == ["user", "1", "valid"]
    assert "review-fix: overrides ~/.subagents/workflows/review-fix.yaml" in out


def test_list_without_workflows(tmp_path: Path, home: Path) -> None:
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    code, out, _ = invoke("list", "--cwd", empty)
    assert code == 0 and "No workflows found" in out and ".subagents/workflows" in out


def _json_workflow() -> dict[str, object]:
    return {
        "name": "mine",
        "entry_point": "only",
        "nodes": {"only": {"type": "agent", "agent": "general-purpose"}},
    }


# -- validate ----------------------------------------------------------------------------------


def test_validate_a_good_workflow_by_name(repo: Path, home: Path) -> None:
    code, out, err = invoke("validate", "review-fix", "--cwd", repo)
    assert (code, out) == (0, "")
    assert "1 workflow checked: 0 with errors (0 errors, 0 warnings)" in err


def test_validate_reports_every_problem_with_its_location(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "workflows" / "broken.yaml", BROKEN_AGENTS)
    code, out, err = invoke("validate", "broken", "--cwd", repo)
    assert code == 1
    assert_fits(out)
    text = flat(out)
    where = ".subagents/workflows/broken.yaml"
    assert f"{where}: nodes.review.agent: no agent called 'reviewr' (did you mean" in text
    assert f"{where}: nodes.run.tool: MCP server 'ghost' is not configured" in text
    assert "nodes.calc.tool" not in text  # calc is in .mcp.json (and not started)
    assert f"{where}: nodes.lost: node 'lost' cannot be reached" in text
    assert "3 errors" in err


def test_validate_every_workflow_and_a_file_path(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "workflows" / "broken.yaml", BROKEN_AGENTS)
    code, _, err = invoke("validate", "--cwd", repo)
    assert code == 1 and "2 workflows checked: 1 with errors" in err
    outside = write(repo / "elsewhere" / "review-fix.yaml", REVIEW_FIX)
    code, out, _ = invoke("validate", outside, "--cwd", repo)
    assert (code, out) == (0, "")
    code, out, _ = invoke("validate", "elsewhere/review-fix.yaml", "--cwd", repo)
    assert (code, out) == (0, "")


def test_validate_strict_fails_on_warnings(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "workflows" / "named.yaml", REVIEW_FIX)  # name: review-fix
    code, out, _ = invoke("validate", "named", "--cwd", repo)
    assert code == 0 and "name: warning: the file calls the workflow 'review-fix'" in flat(out)
    code, _, _ = invoke("validate", "named", "--strict", "--cwd", repo)
    assert code == 1


def test_malformed_yaml_gives_a_located_error_and_no_traceback(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "workflows" / "bad.yaml", "name: bad\nnodes:\n  a: {type: [\n")
    code, out, _ = invoke("validate", "bad", "--cwd", repo)
    assert code == 1
    assert ".subagents/workflows/bad.yaml: line " in out and "not valid YAML" in out
    assert "Traceback" not in out
    code, out, err = invoke("show", "bad", "--cwd", repo)
    assert code == 1 and "not valid YAML" in out and "cannot be read" in err


def test_model_errors_are_located(repo: Path, home: Path) -> None:
    write(
        repo / ".subagents" / "workflows" / "typo.yaml",
        "name: typo\nentry_point: a\nnodes:\n  a: {type: agnet, agent: reviewer}\n",
    )
    code, out, _ = invoke("validate", "typo", "--cwd", repo)
    assert code == 1
    assert "typo.yaml: nodes.a.type: unknown node type 'agnet' (did you mean 'agent'?)" in flat(out)


def test_an_unknown_workflow_says_what_there_is(repo: Path, home: Path) -> None:
    code, _, err = invoke("validate", "reviewfix", "--cwd", repo)
    assert code == 2
    assert "no workflow called 'reviewfix' (available: review-fix)" in err
    assert "hint: put it in .subagents/workflows/reviewfix.yaml" in err


# -- show --------------------------------------------------------------------------------------


def test_show_lists_the_graph(repo: Path, home: Path) -> None:
    code, out, _ = invoke("show", "review-fix", "--cwd", repo)
    assert code == 0
    assert_fits(out)
    lines = out.splitlines()
    assert lines[0] == ".subagents/workflows/review-fix.yaml"
    assert lines[1] == "workflow review-fix"
    assert "review  (agent: reviewer)" in lines
    assert "ok  (condition: 'LGTM' in upper(review))" in lines
    assert "    false -> fix" in lines
    assert "  -> review  [loop]" in lines
    assert "confirm before: fix" in out


def test_show_mermaid(repo: Path, home: Path) -> None:
    code, out, _ = invoke("show", "review-fix", "--mermaid", "--cwd", repo)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n0["review<br/>agent: reviewer"]' in lines
    assert "    n1{\"ok<br/>condition: 'LGTM' in upper(review)\"}" in lines
    assert '    n1 -->|"true"| stop' in lines
    assert '    n2 -.->|"loop"| n0' in lines
    assert "    class n2 checkpoint" in lines


def test_show_an_invalid_graph_with_its_problems(repo: Path, home: Path) -> None:
    write(repo / ".subagents" / "workflows" / "broken.yaml", BROKEN_AGENTS)
    code, out, _ = invoke("show", "broken", "--cwd", repo)
    assert code == 0
    assert_fits(out)
    assert "3 errors, 0 warnings:" in out and "nodes.review.agent" in out
    code, out, err = invoke("show", "broken", "--mermaid", "--cwd", repo)
    assert code == 0 and out.startswith("flowchart TD") and "3 errors" in err


def test_workflow_help_is_registered(home: Path) -> None:
    result = runner.invoke(app, ["workflow", "--help"])
    assert result.exit_code == 0
    assert all(word in result.stdout for word in ("list", "validate", "show"))
