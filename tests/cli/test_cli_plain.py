"""Plain-text listings (cli/plain.py) and the two commands that use them, `agents list` and
`tasks list`: one line per row, cut to the width (COLUMNS, else the terminal's, else 160 for
output that is not a terminal), colour only at a terminal, control characters never printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from store_records import make_task
from subagents.cli import plain
from subagents.cli.app import build_app
from subagents.store.sqlite import SQLiteStore

ANSI = re.compile(r"\x1b\[[0-9;]*m")
runner = CliRunner()


def cli(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str]:
    result = runner.invoke(build_app(args[0]), list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


# -- the module ------------------------------------------------------------------------------


def test_cut_keeps_the_start_or_the_end_and_counts_wide_characters() -> None:
    assert plain.cut("Read, Grep, Glob", 10) == "Read, Gre…"
    assert plain.cut(".claude/agents/code-reviewer.md", 12, keep="end") == "…reviewer.md"
    assert plain.cut("short", 10) == "short"
    assert plain.text_width("日本語") == 6 and plain.text_width("e\u0301") == 1
    assert plain.text_width("a → b") == 5
    assert plain.cut("日本語テキスト", 7) == "日本語…"
    assert plain.text_width(plain.cut("日本語テキスト", 6)) <= 6


def test_cut_at_the_edges_and_in_mixed_text() -> None:
    assert plain.cut("abcdef", 1) == "…" and plain.cut("abcdef", 1, keep="end") == "…"
    assert plain.cut("abcdef", 4, keep="end") == "…def"
    assert plain.cut("abcdef", 0) == ""
    assert plain.cut("a → bcdefgh", 5) == "a → …"
    assert plain.cut("sonnet → 日本語", 11, keep="end") == "…t → 日本語"
    assert plain.text_width("日\u0301x") == 3 and plain.text_width("\u02ff") == 1


def test_a_row_too_wide_cuts_flexible_columns_first() -> None:
    columns = [
        plain.Column("Name", flexible=False),
        plain.Column("Tools"),
        plain.Column("Source", keep="end"),
    ]
    rows = [("code-reviewer", "Read, Grep, Glob, Bash, Edit, Write", "agents/code-reviewer.md")]
    lines = plain.table_lines(columns, rows, 40, colour=False)
    assert all(plain.text_width(line) <= 40 for line in lines)
    assert lines[2].startswith("code-reviewer  Read, ")  # the name is whole
    assert "…" in lines[2] and lines[2].endswith(".md")  # the source keeps its file name
    assert set(lines[1]) == {"─"}


def test_an_optional_column_nobody_fills_is_left_out() -> None:
    columns = [plain.Column("Name"), plain.Column("Overrides", optional=True)]
    assert plain.table_lines(columns, [("a", "")], 80, colour=False)[0] == "Name"
    shown = plain.table_lines(columns, [("a", ""), ("b", "user")], 80, colour=False)
    assert shown[0] == "Name  Overrides" and shown[3] == "b     user"


def test_control_characters_never_reach_the_terminal() -> None:
    lines = plain.table_lines([plain.Column("Name")], [("evil\x1b[31m\nname",)], 80, colour=False)
    assert "\x1b" not in lines[2] and "\n" not in lines[2]
    assert plain.wrap("a\rb", 80) == ["a b"]


def test_colour_only_where_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert plain.paint("active", "green", colour=False) == "active"
    assert plain.paint("active", "green") == "\x1b[32mactive\x1b[0m"
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain.use_colour()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not plain.use_colour()


def test_the_width_is_columns_else_wide_for_output_that_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    assert plain.output_width() == 72
    monkeypatch.delenv("COLUMNS")
    assert plain.output_width() == plain.WIDE_OUTPUT  # pytest captures stdout: not a terminal


# -- agents list -----------------------------------------------------------------------------


def write_agent(repo: Path, name: str, tools: str, model: str = "inherit") -> None:
    path = repo / ".claude" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {name}\ndescription: Does {name}.\ntools: {tools}\nmodel: {model}\n---\n"
        f"You are {name}.\n",
        encoding="utf-8",
    )


def test_agents_list_is_one_line_per_agent_within_the_width(repo: Path) -> None:
    many_tools = "Read, Write, Edit, MultiEdit, Glob, Grep, LS, Bash, WebFetch, WebSearch"
    for index in range(12):
        write_agent(repo, f"specialist-with-a-long-name-{index:02}", many_tools)
    code, out = cli("agents", "list", "--cwd", str(repo), env={"COLUMNS": "90"})
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Agents: 15 active of 15"
    assert lines[1].split() == ["Name", "Scope", "Model", "Tools", "Status", "Source"]
    rows = lines[3:18]
    assert [row.split()[0] for row in rows][:3] == ["explore", "general-purpose", "plan"]
    assert all(len(line) <= 90 for line in lines)
    specialist = rows[3]
    assert specialist.startswith("specialist-with-a-long-name-00  project  inherit")
    assert "Read, Write" in specialist and "…" in specialist and specialist.endswith(".md")
    assert ANSI.search(out) is None  # not a terminal


def test_agents_list_shows_overrides_when_there_are_some(repo: Path, isolated_home: Path) -> None:
    write_agent(isolated_home, "reviewer", "Read")
    write_agent(repo, "reviewer", "Read, Grep")
    code, out = cli("agents", "list", "--cwd", str(repo))
    assert code == 0
    header, *_ = out.splitlines()[1:]
    assert "Overrides" in header
    (row,) = [line for line in out.splitlines() if line.startswith("reviewer ")]
    assert "user" in row and "project" in row


def test_agents_list_colours_the_status_when_asked(repo: Path) -> None:
    write_agent(repo, "reviewer", "Read")
    (repo / ".claude" / "agents" / "broken.md").write_text("no frontmatter\n", "utf-8")
    code, out = cli(
        "agents", "list", "--cwd", str(repo), env={"FORCE_COLOR": "1", "NO_COLOR": None}
    )
    assert code == 0
    assert "\x1b[32mactive\x1b[0m" in out and "\x1b[31minvalid\x1b[0m" in out
    assert "\x1b[31minvalid\x1b[0m: broken:" in out  # the note under the table


# -- tasks list ------------------------------------------------------------------------------


def test_tasks_list_is_one_line_per_task_and_redacts_what_it_shows(repo: Path) -> None:
    token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with SQLiteStore(repo / ".subagents" / "state.db") as store:
        store.create_task(make_task(description=f"Deploy\nwith {token} now " + "x" * 200))
        store.create_task(make_task(description="Second", assigned_agent="code-reviewer"))
    code, out = cli("tasks", "list", "--cwd", str(repo), env={"COLUMNS": "200"})
    assert code == 0
    rows = out.splitlines()[-2:]
    assert rows[0].split()[2:4] == ["code-reviewer", "20" + rows[0].split()[3][2:]]
    assert rows[0].endswith("Second")  # newest first
    assert "Deploy with ghp_[REDACTED] now xxx" in rows[1] and rows[1].endswith("…")
    assert token not in out
    code, narrow = cli("tasks", "list", "--cwd", str(repo), env={"COLUMNS": "70"})
    assert code == 0 and narrow.splitlines()[-2].split()[0] == rows[0].split()[0]
    assert all(len(line) <= 70 for line in narrow.splitlines())
