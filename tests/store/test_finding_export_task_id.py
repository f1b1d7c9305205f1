"""Finding 2: exporting an imported task whose id was ``../../../X`` deleted and overwrote X.

Task ids are now safe folder names wherever a record is made (import refuses the archive), and
the export itself never removes anything outside ``DIR/tasks`` nor through a symbolic link.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner, Result

from store_records import make_session, make_task, write_steps
from subagents.cli.tasks import export_command, import_command
from subagents.errors import StoreError
from subagents.runtime.runtime import Runtime
from subagents.store.export import export_task, import_task
from subagents.store.records import TaskRecord, is_safe_task_id
from subagents.store.sqlite import SQLiteStore
from subagents.testing import ScriptedModel


def cli(*args: str | Path) -> Result:
    app = typer.Typer()
    app.command("export")(export_command)
    app.command("import")(import_command)
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert "Traceback" not in result.output
    return result


def victim(root: Path) -> Path:
    """A folder an attacker would like gone, holding a file we check for afterwards."""
    folder = root / "victim"
    folder.mkdir(parents=True)
    (folder / "precious.txt").write_text("keep me")
    return folder


def intact(folder: Path) -> bool:
    return (folder / "precious.txt").read_text() == "keep me"


def seeded_store(path: Path) -> str:
    with SQLiteStore(path) as store:
        task = make_task()
        store.create_task(task)
        write_steps(store, make_session(task.id, "main"), 2)
        return task.id


def test_finding_2_an_archive_with_a_traversal_id_is_refused_on_import(tmp_path: Path) -> None:
    target = victim(tmp_path)
    task_id = seeded_store(tmp_path / "a.db")
    with SQLiteStore(tmp_path / "a.db") as store:
        folder = export_task(store, task_id, tmp_path / "archive")
    bad_id = "../../../" + str(target.relative_to(tmp_path))
    _rewrite_task_id(folder, task_id, bad_id)

    result = cli("import", folder, "--store", tmp_path / "b.db")

    assert result.exit_code != 0
    assert "task id" in result.output and "refused" in result.output
    assert "letters, digits" in result.output  # says what an id may be
    with SQLiteStore(tmp_path / "b.db") as store:
        assert store.list_tasks() == []
    assert intact(target)


def test_finding_2_export_of_a_task_whose_stored_id_is_a_path_removes_nothing(
    tmp_path: Path,
) -> None:
    """A crafted store (the row's JSON says ``../victim``): the record does not validate."""
    target = victim(tmp_path)
    out = tmp_path / "out"
    (out / "tasks").mkdir(parents=True)
    task_id = seeded_store(tmp_path / "a.db")
    with sqlite3.connect(tmp_path / "a.db") as connection:
        (data,) = connection.execute("SELECT data FROM tasks WHERE id = ?", (task_id,)).fetchone()
        record = json.loads(data)
        record["id"] = "../../victim"
        connection.execute("UPDATE tasks SET data = ? WHERE id = ?", (json.dumps(record), task_id))

    result = cli("export", task_id, out, "--store", tmp_path / "a.db")

    assert result.exit_code != 0
    assert "unreadable" in result.output
    assert intact(target)
    assert list((out / "tasks").iterdir()) == []


def test_finding_2_a_symlink_where_the_export_goes_is_not_followed(tmp_path: Path) -> None:
    target = victim(tmp_path)
    task_id = seeded_store(tmp_path / "a.db")
    out = tmp_path / "out"
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / task_id).symlink_to(target, target_is_directory=True)

    with SQLiteStore(tmp_path / "a.db") as store, pytest.raises(StoreError) as caught:
        export_task(store, task_id, out)

    assert "symbolic link" in caught.value.message
    assert caught.value.hint
    assert intact(target)
    assert (out / "tasks" / task_id).is_symlink()  # left as it was


def test_a_symlinked_staging_folder_or_tasks_folder_is_not_followed(tmp_path: Path) -> None:
    target = victim(tmp_path)
    task_id = seeded_store(tmp_path / "a.db")
    staged = tmp_path / "staged"
    (staged / "tasks").mkdir(parents=True)
    (staged / "tasks" / f".{task_id}.partial").symlink_to(target, target_is_directory=True)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "tasks").symlink_to(target, target_is_directory=True)
    (target / task_id).mkdir()  # what a followed link would remove
    (target / task_id / "precious.txt").write_text("keep me")

    with SQLiteStore(tmp_path / "a.db") as store:
        for directory in (staged, linked):
            with pytest.raises(StoreError, match="symbolic link"):
                export_task(store, task_id, directory)

    assert intact(target)
    assert intact(target / task_id)


def test_exports_still_replace_a_previous_export_of_the_task(tmp_path: Path) -> None:
    task_id = seeded_store(tmp_path / "a.db")
    with SQLiteStore(tmp_path / "a.db") as store:
        first = export_task(store, task_id, tmp_path / "out")
        (first / "stale.txt").write_text("from before")
        second = export_task(store, task_id, tmp_path / "out")
    assert first == second
    assert not (second / "stale.txt").exists()
    assert (second / "task.json").exists()


@pytest.mark.parametrize(
    "bad", ["", ".", "..", "../x", "a/b", "a\\b", "-x", ".hidden", "x" * 129, "tab\there", "é"]
)
def test_task_records_refuse_unsafe_ids(bad: str) -> None:
    assert not is_safe_task_id(bad)
    with pytest.raises(ValidationError, match="not a valid task id"):
        make_task(id=bad)
    record = make_task()
    with pytest.raises(ValidationError):
        record.id = bad  # assignment is validated too


@pytest.mark.parametrize("good", ["0f8fad5b-d9cb-469f-a165-70867728950e", "run.2026-01-01_a", "x"])
def test_safe_ids_are_accepted(good: str) -> None:
    assert make_task(id=good).id == good
    assert is_safe_task_id(TaskRecord(description="d", prompt="p", workspace="/w").id)


async def test_a_caller_chosen_safe_task_id_still_runs_and_exports(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as store:
        runtime = Runtime(cwd=tmp_path, model=ScriptedModel(["done"]), store=store)
        result = await runtime.run("hello", task_id="nightly.build-7")
        assert result.status == "completed" and result.task_id == "nightly.build-7"
        folder = export_task(store, "nightly.build-7", tmp_path / "out")
    assert folder == tmp_path / "out" / "tasks" / "nightly.build-7"
    with SQLiteStore(tmp_path / "b.db") as other:
        assert import_task(other, folder) == "nightly.build-7"


def _rewrite_task_id(folder: Path, old: str, new: str) -> None:
    """Put ``new`` wherever the export names the task, as an attacker editing it would."""
    for path in folder.rglob("*.json"):
        path.write_text(path.read_text().replace(old, new.replace("\\", "\\\\")))
