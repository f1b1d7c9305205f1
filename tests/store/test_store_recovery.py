"""Store failures a person can recover from: one unreadable task must not hide the others from
``tasks list`` or stop ``cleanup``; a store that is not writable here must still be readable.

Every case uses real SQLite files. Rows are damaged with ``sqlite3`` directly. Read-only stores
are made with ``chmod`` on the file and its folder; tests run as root here, for whom ``chmod``
alone stops nothing, so the commands that must meet a read-only store run as a real subprocess
without the capabilities that let root ignore file permissions (``setpriv`` drops
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER): the kernel then enforces the modes as it
would for any user. In-process tests cover the ``mode=ro`` open the store uses.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from store_records import make_session, make_task, write_steps
from subagents.cli.tasks import cleanup_command, export_command, import_command, tasks_app
from subagents.errors import StoreError
from subagents.store.records import utc_now
from subagents.store.retention import RetentionPolicy, cleanup, maybe_cleanup_daily
from subagents.store.sqlite import SQLiteStore

OLD = utc_now() - timedelta(days=90)
_DROPPED_CAPABILITIES = "-dac_override,-dac_read_search,-fowner"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(tasks_app, name="tasks")
    app.command("cleanup")(cleanup_command)
    app.command("export")(export_command)
    app.command("import")(import_command)
    return app


def _cli(*args: str) -> Result:
    return CliRunner().invoke(_app(), list(args))


def _store_with_damage(path: Path) -> dict[str, str]:
    """Five old finished tasks; three of them then damaged in three ways."""
    ids: dict[str, str] = {}
    with SQLiteStore(path) as store:
        for name in ("good_a", "bad_json", "newer", "invalid", "good_b"):
            task = make_task(description=name, status="completed", completed_at=OLD, updated_at=OLD)
            store.create_task(task)
            write_steps(store, make_session(task.id, f"{name}-session"), 2)
            ids[name] = task.id
    raw = sqlite3.connect(path)
    raw.execute('UPDATE tasks SET data = \'{"id": "x", broken\' WHERE id = ?', (ids["bad_json"],))
    newer = json.loads(
        raw.execute("SELECT data FROM tasks WHERE id = ?", (ids["newer"],)).fetchone()[0]
    )
    newer.update(schema_version=99, field_from_the_future=True)
    raw.execute("UPDATE tasks SET data = ? WHERE id = ?", (json.dumps(newer), ids["newer"]))
    raw.execute("UPDATE tasks SET data = '{\"id\": 1}' WHERE id = ?", (ids["invalid"],))
    raw.commit()
    raw.close()
    return ids


DAMAGED = ("bad_json", "newer", "invalid")
READABLE = ("good_a", "good_b")


# -- 5. one unreadable task row -----------------------------------------------------------------


def test_scan_lists_the_readable_tasks_and_names_the_others(tmp_path: Path) -> None:
    ids = _store_with_damage(tmp_path / "state.db")
    with SQLiteStore(tmp_path / "state.db") as store:
        with pytest.raises(StoreError):
            store.list_tasks()  # the strict listing still refuses
        scan = store.scan_tasks(limit=None)
    assert {task.id for task in scan.tasks} == {ids[name] for name in READABLE}
    reasons = {item.task_id: item.reason for item in scan.unreadable}
    assert set(reasons) == {ids[name] for name in DAMAGED}
    assert "unreadable" in reasons[ids["bad_json"]]
    assert "newer subagents (schema 99)" in reasons[ids["newer"]]
    assert "unreadable" in reasons[ids["invalid"]]


def test_tasks_list_shows_every_readable_task_and_names_the_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    ids = _store_with_damage(path)
    result = _cli("tasks", "list", "--store", str(path))
    assert result.exit_code == 0, result.output
    for name in READABLE:
        assert ids[name][:8] in result.stdout
    for name in DAMAGED:
        assert ids[name][:8] not in result.stdout
        assert ids[name] in result.stderr
    assert "Expecting" in result.stderr  # the reason of the bad JSON
    assert f"subagents tasks check --store {path}" in result.stderr
    listed = _cli("tasks", "list", "--json", "--store", str(path))
    assert listed.exit_code == 0
    assert {task["id"] for task in json.loads(listed.stdout)} == {ids[n] for n in READABLE}


def test_tasks_check_names_each_unreadable_record(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    ids = _store_with_damage(path)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE sessions SET data = 'null' WHERE session_id = 'good_a-session'")
    raw.execute(  # its first row of messages holds seqs 0 and 1 (the prompt and the answer)
        "UPDATE steps SET messages = json_set(messages, '$[1]', json('[1]')) "
        "WHERE key = (SELECT min(key) FROM steps WHERE session_id = 'good_b-session' "
        "AND messages IS NOT NULL)"
    )
    raw.commit()
    raw.close()
    result = _cli("tasks", "check", "--store", str(path))
    assert result.exit_code == 1
    for name in DAMAGED:
        assert f"task {ids[name]}:" in result.stdout
    assert "session good_a-session: its record is unreadable" in result.stdout
    assert "message 1 of session good_b-session: it is not a JSON object" in result.stdout


def test_cleanup_removes_the_readable_expired_tasks_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    ids = _store_with_damage(path)
    dry = _cli("cleanup", "--dry-run", "--store", str(path))
    assert dry.exit_code == 1
    assert "Would remove 2 task(s)" in dry.stdout
    result = _cli("cleanup", "--store", str(path))
    assert result.exit_code == 1, result.output
    assert "Removed 2 task(s)" in result.stdout
    for name in DAMAGED:
        assert ids[name] in result.stderr
    assert "kept, since their age cannot be judged" in result.stderr
    assert "subagents tasks check" in result.stderr
    raw = sqlite3.connect(path)
    left = {row[0] for row in raw.execute("SELECT id FROM tasks")}
    raw.close()
    assert left == {ids[name] for name in DAMAGED}


def test_the_daily_cleanup_of_a_run_survives_an_unreadable_task(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    ids = _store_with_damage(path)
    with SQLiteStore(path) as store:
        report = maybe_cleanup_daily(store, RetentionPolicy(), now=utc_now())
        assert report is not None
        assert {task.id for task in report.removed} == {ids[name] for name in READABLE}
        assert {item.task_id for item in report.unreadable} == {ids[name] for name in DAMAGED}
        assert cleanup(store, RetentionPolicy()).removed == []


# -- 6. a store that is not writable here -------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_opened_read_only_reads_everything_and_refuses_every_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    ids = _store_with_damage(path)
    before = _digest(path)
    with SQLiteStore(path, read_only=True) as store:
        assert store.read_only
        assert len(store.scan_tasks().tasks) == 2
        bundle = store.load_bundle(ids["good_a"])
        assert bundle.messages["good_a-session"]
        assert store.integrity_check() != []  # the damaged rows, found without writing
        writes: tuple[Callable[[], object], ...] = (
            lambda: store.create_task(make_task()),
            lambda: store.delete_task(ids["good_a"]),
            lambda: store.set_meta("k", "v"),
        )
        for write in writes:
            with pytest.raises(StoreError) as caught:
                write()
            assert f"{path} is read-only here" in caught.value.message
            assert caught.value.hint is not None and "--store" in caught.value.hint
        result = cleanup(store, RetentionPolicy(), dry_run=True)
        assert len(result.removed) == 2
    assert _digest(path) == before


def test_read_only_open_of_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store at"):
        SQLiteStore(tmp_path / "absent.db", read_only=True)
    assert not (tmp_path / "absent.db").exists()


def _unprivileged(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m subagents ARGS`` in a real process that file permissions bind, root or not."""
    command = [sys.executable, "-m", "subagents", *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "running as root needs setpriv (util-linux) for this test"
        command = [
            setpriv,
            f"--inh-caps={_DROPPED_CAPABILITIES}",
            f"--bounding-set={_DROPPED_CAPABILITIES}",
            *command,
        ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _cannot_write(path: Path) -> bool:
    probe = (
        "import sys\ntry:\n    open(sys.argv[1], 'r+b').close()\nexcept PermissionError:\n"
        "    sys.exit(7)\n"
    )
    base = [sys.executable, "-c", probe, str(path)]
    if os.geteuid() == 0:
        base = [
            "setpriv",
            f"--inh-caps={_DROPPED_CAPABILITIES}",
            f"--bounding-set={_DROPPED_CAPABILITIES}",
            *base,
        ]
    return subprocess.run(base, check=False, timeout=60).returncode == 7


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A folder whose mode is set read-only by the test; writable again afterwards."""
    folder = tmp_path / "colleague"
    folder.mkdir()
    yield folder
    folder.chmod(0o755)
    for child in folder.iterdir():
        child.chmod(0o644)


@pytest.mark.slow
def test_a_read_only_store_and_folder_can_be_listed_shown_traced_and_exported(
    locked: Path, tmp_path: Path
) -> None:
    path = locked / "state.db"
    ids = _store_with_damage(path)
    path.chmod(0o444)
    locked.chmod(0o555)
    assert _cannot_write(path)
    before = _digest(path)
    exports = tmp_path / "exports"
    exports.mkdir()
    task = ids["good_a"]

    listed = _unprivileged("tasks", "list", "--store", str(path))
    assert listed.returncode == 0, listed.stderr
    assert task[:8] in listed.stdout and ids["bad_json"] in listed.stderr
    shown = _unprivileged("tasks", "show", task, "--store", str(path))
    assert shown.returncode == 0, shown.stderr
    assert f"Task {task}" in shown.stdout
    traced = _unprivileged("trace", task, "--json", "--store", str(path))
    assert traced.returncode == 0, traced.stderr
    assert json.loads(traced.stdout)["task"]["id"] == task
    exported = _unprivileged("export", task, str(exports), "--store", str(path))
    assert exported.returncode == 0, exported.stderr
    assert (exports / "tasks" / task / "task.json").is_file()

    for writing in (("cleanup",), ("import", str(exports / "tasks" / task), "--replace")):
        refused = _unprivileged(*writing, "--store", str(path))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "Traceback" not in refused.stderr
        assert f"error: {path} is read-only here (its folder {locked} is not writable)" in (
            refused.stderr
        )
        assert "hint: reading commands" in refused.stderr
    assert _digest(path) == before
    assert sorted(child.name for child in locked.iterdir()) == ["state.db"]


@pytest.mark.slow
def test_a_read_only_file_in_a_writable_folder_is_read_and_writes_are_refused(
    locked: Path,
) -> None:
    path = locked / "state.db"
    ids = _store_with_damage(path)
    path.chmod(0o444)
    assert _cannot_write(path)
    listed = _unprivileged("tasks", "list", "--store", str(path))
    assert listed.returncode == 0, listed.stderr
    assert ids["good_b"][:8] in listed.stdout
    refused = _unprivileged("cleanup", "--store", str(path))
    assert refused.returncode == 2
    assert f"error: {path} is read-only here" in refused.stderr
    assert "Traceback" not in refused.stderr


def _snapshot_of_a_live_store(folder: Path, *, with_index: bool) -> str:
    """The files of a store copied while a process had it open: the newest task is only in the
    write-ahead log (a backup taken mid-run)."""
    live = folder.parent / "live"
    live.mkdir()
    store = SQLiteStore(live / "state.db")
    task = make_task(description="only in the log")
    store.create_task(task)
    suffixes = ("", "-wal", "-shm") if with_index else ("", "-wal")
    for suffix in suffixes:
        shutil.copy(live / f"state.db{suffix}", folder / f"state.db{suffix}")
    store.close()
    assert (folder / "state.db-wal").stat().st_size > 0
    return task.id


def test_a_read_only_snapshot_with_its_log_and_index_shows_the_logged_task(
    locked: Path,
) -> None:
    task_id = _snapshot_of_a_live_store(locked, with_index=True)
    for child in locked.iterdir():
        child.chmod(0o444)
    locked.chmod(0o555)
    listed = _unprivileged("tasks", "list", "--json", "--store", str(locked / "state.db"))
    assert listed.returncode == 0, listed.stderr
    assert [task["id"] for task in json.loads(listed.stdout)] == [task_id]


def test_a_log_that_cannot_be_indexed_is_refused_with_a_way_out(locked: Path) -> None:
    # immutable=1 would ignore the log and show a store without its newest task: refused
    _snapshot_of_a_live_store(locked, with_index=False)
    for child in locked.iterdir():
        child.chmod(0o444)
    locked.chmod(0o555)
    path = locked / "state.db"
    listed = _unprivileged("tasks", "list", "--store", str(path))
    assert listed.returncode == 2
    assert "Traceback" not in listed.stderr
    assert f"its write-ahead log {path}-wal holds changes" in listed.stderr
    assert f"cp {path} {path}-wal DIR/" in listed.stderr
