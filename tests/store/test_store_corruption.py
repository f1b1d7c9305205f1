"""Damaged store files: a clear StoreCorruptError naming the file and the way out, never a
traceback from the CLI. Every case starts from a real database written by the store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from store_records import make_session, make_task, write_steps
from subagents.cli.tasks import export_command, tasks_app
from subagents.errors import StoreCorruptError
from subagents.store.sqlite import SQLiteStore


def _real_database(path: Path, tasks: int = 150) -> list[str]:
    """A store of a few hundred KB: tasks with long prompts, sessions, messages."""
    ids = []
    with SQLiteStore(path) as store:
        for index in range(tasks):
            task = make_task(prompt=f"task {index} " + "p" * 3000)
            store.create_task(task)
            write_steps(store, make_session(task.id, f"s{index}"), 2)
            ids.append(task.id)
    assert not Path(f"{path}-wal").exists()  # closed cleanly: everything is in the main file
    return ids


def _assert_clear(error: StoreCorruptError, path: Path) -> None:
    text = str(error)
    assert str(path) in text
    assert f"mv {path} {path}.corrupt" in text
    assert "'subagents export' cannot read it" in text


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(tasks_app, name="tasks")
    app.command("export")(export_command)
    return app


def _assert_cli_refuses(path: Path, *args: str) -> None:
    result = CliRunner().invoke(_app(), [*args, "--store", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "error:" in result.output and "not a readable subagents database" in result.output
    assert f"mv {path} {path}.corrupt" in result.output


def test_a_database_truncated_half_way(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _real_database(path)
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(size // 2)
    with pytest.raises(StoreCorruptError, match="truncated") as error:
        SQLiteStore(path)
    _assert_clear(error.value, path)
    _assert_cli_refuses(path, "tasks", "list")
    _assert_cli_refuses(path, "tasks", "check")


def test_a_header_overwritten_with_garbage(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _real_database(path, tasks=5)
    with path.open("r+b") as handle:
        handle.write(os.urandom(100))
    with pytest.raises(StoreCorruptError, match="not an SQLite database") as error:
        SQLiteStore(path)
    _assert_clear(error.value, path)
    _assert_cli_refuses(path, "tasks", "show", "abcd")


def test_a_text_file_named_state_db(tmp_path: Path) -> None:
    path = tmp_path / ".subagents" / "state.db"
    path.parent.mkdir()
    path.write_text("these are my notes, not a database\n" * 20)
    with pytest.raises(StoreCorruptError) as error:
        SQLiteStore(path)
    _assert_clear(error.value, path)
    _assert_cli_refuses(path, "export", "abcd", str(tmp_path / "out"))


def test_a_file_shorter_than_a_header(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"SQLite format 3\x00\x10\x00")
    with pytest.raises(StoreCorruptError, match="truncated"):
        SQLiteStore(path)


def test_damaged_pages_inside_an_intact_file(tmp_path: Path) -> None:
    """The header is fine, so the store opens; the first read of a damaged page fails."""
    path = tmp_path / "state.db"
    ids = _real_database(path)
    page_size = int.from_bytes(path.read_bytes()[16:18], "big")
    pages = path.stat().st_size // page_size
    with path.open("r+b") as handle:
        # Keep the first pages (header, schema, the meta table and the tables' roots) and
        # wreck the rest, where the rows live.
        for page in range(pages // 4, pages):
            handle.seek((page - 1) * page_size)
            handle.write(bytes([0xA5]) * page_size)
    store = SQLiteStore(path)
    try:
        with pytest.raises(StoreCorruptError, match="malformed") as error:
            store.list_tasks(limit=None)
        _assert_clear(error.value, path)
        with pytest.raises(StoreCorruptError):
            store.get_task(ids[0])
        problems = store.integrity_check()
        assert problems and all(problem.startswith("sqlite:") for problem in problems)
    finally:
        store.close()
    _assert_cli_refuses(path, "tasks", "list")
    _assert_cli_refuses(path, "tasks", "show", ids[0])


def test_the_hint_names_the_wal_companions_when_they_exist(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_text("garbage")
    Path(f"{path}-wal").write_bytes(b"")
    with pytest.raises(StoreCorruptError) as error:
        SQLiteStore(path)
    assert f"mv {path}-wal {path}.corrupt-wal" in str(error.value)


def test_a_damaged_record_is_reported_as_corrupt(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    task = make_task()
    store.create_task(task)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE tasks SET data = '{\"id\": 3' WHERE id = ?", (task.id,))
    raw.commit()
    raw.close()
    with pytest.raises(StoreCorruptError, match=f"task {task.id} in {path} is unreadable"):
        store.get_task(task.id)
    store.close()
