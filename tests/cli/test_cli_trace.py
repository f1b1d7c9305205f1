"""`subagents trace`: the Rich tree and --json through Typer's CliRunner, clear errors for bad
input, and one run of the installed command in a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from scenarios.recorded_runs import (
    MODEL_CRASH,
    PLANTED_BEARER,
    PLANTED_KEY,
    SECRET,
    RecordedRun,
    plant_leaky_record,
    record_run,
)
from subagents.cli.trace import format_duration, render_tree, trace_command
from subagents.store.sqlite import open_store
from subagents.tracing.view import build_trace

COMMAND = Path(sys.executable).parent / "subagents"


def trace_app() -> typer.Typer:
    """The command on its own (cli/app.py registers it as `subagents trace`)."""
    app = typer.Typer()
    app.command("trace")(trace_command)
    app.command("unused")(lambda: None)  # two commands, so `trace` stays a subcommand
    return app


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(trace_app(), ["trace", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RecordedRun:
    return record_run(tmp_path, monkeypatch)


def indent_of(lines: list[str], needle: str) -> int:
    line = next(line for line in lines if needle in line)
    return line.index(needle)


def test_the_tree_shows_sessions_nested_with_calls_tokens_and_errors(
    recorded: RecordedRun,
) -> None:
    code, out, err = invoke(recorded.task_id[:8], "--store", str(recorded.store_path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"Task {recorded.task_id[:8]} completed")
    assert "950 in / 95 out tokens" in lines[0]  # 110*3+120*3+130*2 / 11*3+12*3+13*2
    assert "traced run" in lines[0]
    # main > Task > level1 > Task > level2, each deeper than the last
    main = indent_of(lines, "main ")
    level1 = indent_of(lines, "level1 ")
    level2 = indent_of(lines, "level2 ")
    assert main < level1 < level2
    assert "scripted:level1 completed  3 turns  360 in / 36 out tokens" in out
    assert "3 model calls" in out and "2 model calls" in out
    assert "Read(file_path='missing.txt')" in out
    assert "error: missing.txt does not exist" in out
    deploy = next(line for line in lines if "Deploy" in line)
    assert deploy.endswith("error: deploy of v2 failed: quota exceeded")  # first line only
    assert "retry tomorrow" not in out
    assert f"error: {MODEL_CRASH}" in out
    assert "Grep(pattern='hello')" in next(line for line in lines if "Grep" in line)
    assert next(line for line in lines if "Grep" in line).endswith("ok")
    assert SECRET not in out


def test_errors_are_red(recorded: RecordedRun) -> None:
    with open_store(recorded.store_path) as store:
        tree = render_tree(build_trace(store, recorded.task_id))
    console = Console(force_terminal=True, color_system="standard", width=200, record=True)
    console.print(tree)
    lines = console.export_text(styles=True).splitlines()
    red = "\x1b[31m"
    assert red in next(line for line in lines if "Deploy" in line)
    assert red in next(line for line in lines if MODEL_CRASH in line)
    assert red not in next(line for line in lines if "Grep" in line)


def test_json_prints_the_seed_format(recorded: RecordedRun) -> None:
    plant_leaky_record(recorded)
    code, out, err = invoke(recorded.task_id, "--json", "--store", str(recorded.store_path))
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"task", "steps", "tool_calls", "subagent_sessions", "totals"}
    assert data["task"]["id"] == recorded.task_id
    assert [s["agent"] for s in data["subagent_sessions"]] == ["main", "level1", "level2"]
    assert data["totals"]["tool_calls"] == 7  # six from the run, one planted
    for secret in (SECRET, PLANTED_KEY, PLANTED_BEARER):
        assert secret not in out
    assert "[REDACTED]" in out


def test_a_broken_config_stops_only_the_tree_which_prices_the_task(
    recorded: RecordedRun, tmp_path: Path
) -> None:
    project = tmp_path / "broken"
    (project / ".subagents").mkdir(parents=True)
    (project / ".subagents" / "config.toml").write_text("[prices\n")
    where = ("--store", str(recorded.store_path), "--cwd", str(project))
    code, out, err = invoke(recorded.task_id, "--json", *where)
    assert code == 0, err
    assert json.loads(out)["task"]["id"] == recorded.task_id
    code, _, err = invoke(recorded.task_id, *where)
    assert code == 2 and "config.toml" in err


def test_the_store_is_found_from_the_project_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".subagents").mkdir(parents=True)
    code, _, err = invoke("abcd1234", "--cwd", str(project))
    assert code == 2
    assert f"no store at {project / '.subagents' / 'state.db'}" in err
    assert "hint: run a task first" in err


def test_an_unknown_task_is_a_clear_error(recorded: RecordedRun) -> None:
    code, out, err = invoke("ffffffff-0000", "--store", str(recorded.store_path))
    assert (code, out) == (2, "")
    assert "error: no task 'ffffffff-0000'" in err
    assert "hint: run 'subagents tasks list'" in err
    assert "Traceback" not in err


def test_a_broken_store_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "state.db"
    broken.write_bytes(b"this is not a database at all" * 10)
    code, out, err = invoke("abcd1234", "--store", str(broken))
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and "Traceback" not in err
    assert "hint:" in err


@pytest.mark.parametrize(
    ("milliseconds", "text"),
    [(None, "-"), (0.04, "0.0 ms"), (12.34, "12.3 ms"), (1500, "1.50 s"), (123_000, "2m 03s")],
)
def test_durations_read_naturally(milliseconds: float | None, text: str) -> None:
    assert format_duration(milliseconds) == text


def test_the_installed_command_in_a_real_process(recorded: RecordedRun) -> None:
    done = subprocess.run(
        [str(COMMAND), "trace", recorded.task_id[:8], "--store", str(recorded.store_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "No such command 'trace'" not in done.stderr, (
        "register the command in cli/app.py: app.command('trace')(trace_command)"
    )
    assert done.returncode == 0, done.stderr
    assert f"Task {recorded.task_id[:8]} completed" in done.stdout
    assert "level2" in done.stdout and "deploy of v2 failed" in done.stdout
    assert SECRET not in done.stdout
