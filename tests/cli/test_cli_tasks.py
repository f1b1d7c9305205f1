"""`subagents tasks list|show|check`, `cleanup`, `export`, `import` through Typer's runner,
on real store files. The app is assembled here as cli/app.py registers these commands."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from store_records import make_checkpoint, make_session, make_task, write_steps
from subagents.cli.tasks import cleanup_command, export_command, import_command, tasks_app
from subagents.store import StepWrite
from subagents.store.sqlite import SQLiteStore


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(tasks_app, name="tasks")
    app.command("cleanup")(cleanup_command)
    app.command("export")(export_command)
    app.command("import")(import_command)
    return app


def _run(*args: str) -> Result:
    result = CliRunner().invoke(_app(), list(args))
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def _store_file(project: Path) -> Path:
    return project / ".subagents" / "state.db"


def _seed(project: Path) -> dict[str, str]:
    """A finished task, and one waiting for a person inside a nested subagent."""
    with SQLiteStore(_store_file(project)) as store:
        done = make_task(
            description="Old finished task",
            status="completed",
            result="all good",
            created_at=datetime(2024, 1, 1, tzinfo=UTC),
            completed_at=datetime(2024, 1, 2, tzinfo=UTC),
            updated_at=datetime(2024, 1, 2, tzinfo=UTC),
        )
        store.create_task(done)
        write_steps(store, make_session(done.id, "done-main"), 2)
        waiting = make_task(description="Refactor the parser", status="awaiting_human")
        store.create_task(waiting)
        main = make_session(waiting.id, "w-main", status="active")
        child = make_session(
            waiting.id,
            "w-child",
            agent_name="code-reviewer",
            parent_session_id="w-main",
            depth=1,
            status="active",
            task_description="Review the change",
        )
        grandchild = make_session(
            waiting.id,
            "w-grandchild",
            agent_name="test-writer",
            parent_session_id="w-child",
            depth=2,
            status="awaiting_human",
        )
        for session in (main, child, grandchild):
            write_steps(store, session, 1)
        store.commit(
            StepWrite(
                task_id=waiting.id,
                checkpoint=make_checkpoint(
                    waiting.id,
                    "w-grandchild",
                    position="awaiting_human",
                    awaiting_human=True,
                    question={"tool": "Bash", "arguments": {"command": "rm -rf build"}},
                ),
            )
        )
    return {"done": done.id, "waiting": waiting.id}


def test_list_without_a_store_says_so_and_creates_nothing(project: Path) -> None:
    result = _run("tasks", "list", "--cwd", str(project))
    assert result.exit_code == 0
    assert "No tasks" in result.output and "no store yet" in result.output
    assert not _store_file(project).exists()
    assert json.loads(_run("tasks", "list", "--json", "--cwd", str(project)).output) == []


def test_list_shows_tasks_newest_first(project: Path) -> None:
    ids = _seed(project)
    result = _run("tasks", "list", "--cwd", str(project))
    assert result.exit_code == 0, result.output
    assert result.output.index(ids["waiting"][:8]) < result.output.index(ids["done"][:8])
    assert "awaiting_human" in result.output and "Refactor the parser" in result.output
    listed = json.loads(_run("tasks", "list", "--json", "--cwd", str(project)).output)
    assert [task["id"] for task in listed] == [ids["waiting"], ids["done"]]
    only = json.loads(
        _run("tasks", "list", "--status", "completed", "--json", "--cwd", str(project)).output
    )
    assert [task["id"] for task in only] == [ids["done"]]


def test_list_with_a_bad_status_exits_2(project: Path) -> None:
    _seed(project)
    result = _run("tasks", "list", "--status", "finished", "--cwd", str(project))
    assert result.exit_code == 2
    assert "unknown task status 'finished'" in result.output
    assert "hint: use one of" in result.output


def test_show_a_waiting_task_by_prefix(project: Path) -> None:
    ids = _seed(project)
    result = _run("tasks", "show", ids["waiting"][:8], "--cwd", str(project))
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"Task {ids['waiting']}" in out
    # the tree nests the sessions: main > code-reviewer > test-writer
    assert out.index("main") < out.index("code-reviewer") < out.index("test-writer")
    assert "Awaiting a person in session w-grandchild" in out
    assert "rm -rf build" in out
    assert f"subagents resume {ids['waiting'][:8]} --approve" in out
    assert "Last checkpoint: #3 awaiting_human" in out


def test_show_json(project: Path) -> None:
    ids = _seed(project)
    result = _run("tasks", "show", ids["waiting"], "--json", "--cwd", str(project))
    data = json.loads(result.output)
    assert data["task"]["id"] == ids["waiting"]
    assert [s["session_id"] for s in data["sessions"]] == ["w-main", "w-child", "w-grandchild"]
    assert data["awaiting_human"] is True
    assert data["questions"][0]["question"]["tool"] == "Bash"
    assert data["last_checkpoint"]["sequence"] == 3
    done = json.loads(_run("tasks", "show", ids["done"], "--json", "--cwd", str(project)).output)
    assert done["awaiting_human"] is False and done["questions"] == []


def test_show_unknown_task_exits_2_with_a_hint(project: Path) -> None:
    _seed(project)
    result = _run("tasks", "show", "ffffffff", "--cwd", str(project))
    assert result.exit_code == 2
    assert "error: no task 'ffffffff'" in result.output
    assert "hint: run 'subagents tasks list'" in result.output
    missing = _run("tasks", "show", "ffffffff", "--store", str(project / "none.db"))
    assert missing.exit_code == 2 and "no store at" in missing.output


def test_check(project: Path) -> None:
    _seed(project)
    result = _run("tasks", "check", "--cwd", str(project))
    assert result.exit_code == 0 and result.output.strip().endswith(": ok")


def test_cleanup_dry_run_then_for_real(project: Path) -> None:
    ids = _seed(project)
    dry = _run("cleanup", "--dry-run", "--cwd", str(project))
    assert dry.exit_code == 0, dry.output
    assert "Would remove 1 task(s)" in dry.output and ids["done"] in dry.output
    with SQLiteStore(_store_file(project)) as store:
        assert len(store.list_tasks()) == 2
    real = _run("cleanup", "--cwd", str(project))
    assert "Removed 1 task(s)" in real.output
    with SQLiteStore(_store_file(project)) as store:
        assert [task.id for task in store.list_tasks()] == [ids["waiting"]]


def test_cleanup_follows_the_project_policy(project: Path) -> None:
    ids = _seed(project)
    (project / ".subagents" / "retention_policy.yaml").write_text("default_days: 100000\n")
    assert "Would remove 0 task(s)" in _run("cleanup", "--dry-run", "--cwd", str(project)).output
    (project / ".subagents" / "retention_policy.yaml").write_text("default_days: many\n")
    bad = _run("cleanup", "--cwd", str(project))
    assert bad.exit_code == 2 and "retention_policy.yaml" in bad.output
    with SQLiteStore(_store_file(project)) as store:
        assert ids["done"] in {task.id for task in store.list_tasks()}


def test_cleanup_without_a_store(project: Path) -> None:
    result = _run("cleanup", "--cwd", str(project))
    assert result.exit_code == 0 and "Nothing to clean" in result.output
    assert not _store_file(project).exists()


def test_export_then_import_elsewhere(project: Path, tmp_path: Path) -> None:
    ids = _seed(project)
    out = tmp_path / "archive"
    exported = _run("export", ids["waiting"][:8], str(out), "--cwd", str(project))
    assert exported.exit_code == 0, exported.output
    assert (out / "tasks" / ids["waiting"] / "checkpoint_000.json").exists()
    other = tmp_path / "other.db"
    imported = _run("import", str(out / "tasks" / ids["waiting"]), "--store", str(other))
    assert imported.exit_code == 0, imported.output
    assert f"Imported task {ids['waiting']}" in imported.output
    again = _run("import", str(out), "--store", str(other))
    assert again.exit_code == 2 and "--replace" in again.output
    assert _run("import", str(out), "--replace", "--store", str(other)).exit_code == 0
    with SQLiteStore(other) as store:
        assert len(store.sessions(ids["waiting"])) == 3


def test_old_tasks_can_be_listed_after_a_day(project: Path) -> None:
    """Timestamps are shown in local time without crashing on naive input."""
    with SQLiteStore(_store_file(project)) as store:
        store.create_task(make_task(created_at=datetime.now() - timedelta(days=1)))
    assert _run("tasks", "list", "--cwd", str(project)).exit_code == 0


def test_show_marks_background_sessions_and_counts_only_tokens(project: Path) -> None:
    with SQLiteStore(_store_file(project)) as store:
        task = make_task(description="Fan out", status="running")
        store.create_task(task)
        write_steps(store, make_session(task.id, "b-main", status="active"), 1)
        watcher = make_session(
            task.id,
            "b-child",
            agent_name="watcher",
            parent_session_id="b-main",
            depth=1,
            background=True,
            usage={"input_tokens": 30, "output_tokens": 12, "requests": 5},
        )
        write_steps(store, watcher, 1)
    out = _run("tasks", "show", task.id, "--cwd", str(project)).output
    watcher_line = next(line for line in out.splitlines() if "watcher" in line)
    assert "(background)" in watcher_line and "42 tokens" in watcher_line
    main_line = next(line for line in out.splitlines() if "main" in line and "b-main" in line)
    assert "(background)" not in main_line
