"""open_store(): paths and URLs choose the store; other kinds of store are refused clearly;
the CLI's --store takes the same; a schema 1 store is upgraded, and read as it is when
read-only."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from store_records import empty_store_of_schema, make_session, make_task, write_steps
from subagents.cli.tasks import tasks_app
from subagents.errors import StoreError
from subagents.store import SQLiteStore, TaskOwner, open_store
from subagents.store.open import store_file
from subagents.store.postgres.store import shown_url
from subagents.store.sqlite.schema import STORE_SCHEMA_VERSION


def test_a_path_and_every_sqlite_url_form_open_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "a dir" / "state.db"
    with open_store(target) as store:
        task = make_task()
        store.create_task(task)
    monkeypatch.chdir(tmp_path)
    forms = [
        str(target),
        f"sqlite://{target}",
        f"sqlite:///{str(target).lstrip('/')}".replace(" ", "%20"),
        "sqlite://localhost" + str(target),
        "sqlite:a%20dir/state.db",
        "SQLite:a dir/state.db",
    ]
    for form in forms:
        with open_store(form) as store:
            assert isinstance(store, SQLiteStore)
            assert store.path == target, form
            assert store.get_task(task.id).id == task.id


def test_an_unreachable_postgresql_store_is_a_clear_error_without_its_password(
    tmp_path: Path,
) -> None:
    for url in ("postgresql://app:s3cret@127.0.0.1:9/tasks", "postgres://app:s3cret@127.0.0.1:9/x"):
        with pytest.raises(StoreError) as refused:
            open_store(url)
        assert "cannot connect to the PostgreSQL store" in refused.value.message
        assert shown_url(url) in refused.value.message  # the URL, its password starred
        assert "s3cret" not in str(refused.value)
        assert refused.value.hint is not None and "SUBAGENTS_STORE" in refused.value.hint
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://db/tasks", "unknown kind of store 'mysql'"),
        ("sqlite://fileserver/share/state.db", "names the host 'fileserver'"),
        ("sqlite:///tmp/state.db?mode=ro", "query or fragment"),
        ("sqlite::memory:", "names no file"),
        ("sqlite:///", "names no file"),
    ],
)
def test_urls_that_name_no_sqlite_file_are_refused(url: str, said: str) -> None:
    with pytest.raises(StoreError) as refused:
        store_file(url)
    assert said in refused.value.message
    if said.startswith("unknown"):
        assert refused.value.hint is not None and "sqlite" in refused.value.hint


def test_a_directory_is_refused_as_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(tasks_app, name="tasks")
    return app


def test_the_cli_store_option_takes_a_url(tmp_path: Path) -> None:
    target = tmp_path / "state.db"
    with SQLiteStore(target) as store:
        task = make_task(description="Reachable by URL")
        store.create_task(task)
    listed = CliRunner().invoke(
        _app(), ["tasks", "list", "--json", "--store", f"sqlite://{target}"]
    )
    assert listed.exit_code == 0, listed.output
    assert [row["id"] for row in json.loads(listed.stdout)] == [task.id]

    refused = CliRunner().invoke(
        _app(), ["tasks", "check", "--store", "postgresql://u:pw@127.0.0.1:9/tasks"]
    )
    assert refused.exit_code == 2
    assert "cannot connect to the PostgreSQL store" in refused.output
    assert "pw@" not in refused.output


def _schema_1_store(path: Path, owner: TaskOwner) -> str:
    """A store as subagents wrote it before leases: schema 1, the owner in meta."""
    empty_store_of_schema(path, 1).close()
    task = make_task()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute(
        "INSERT INTO tasks VALUES (?, ?, NULL, ?, ?)",
        (task.id, task.status, task.created_at.timestamp(), task.model_dump_json()),
    )
    claim = {"host": owner.host, "pid": owner.pid, "token": owner.token}
    raw.execute("INSERT INTO meta VALUES (?, ?)", (f"owner.{task.id}", json.dumps(claim)))
    raw.close()
    return task.id


def test_a_schema_1_store_is_upgraded_and_its_pid_claim_still_holds(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    running = TaskOwner.this_process()  # alive: this very process
    task_id = _schema_1_store(path, running)
    with SQLiteStore(path) as store:
        lease = store.task_lease(task_id)
        assert lease is not None and lease.owner == running and lease.expires_at is None
        holder = store.claim_task(task_id, TaskOwner(running.host, 1, "newcomer"))
        assert holder == lease  # its process runs: it keeps the task, as before
        write_steps(store, make_session(task_id, "s"), 1)
        assert store.integrity_check() == []
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(STORE_SCHEMA_VERSION),
    )
    assert raw.execute("SELECT count(*) FROM meta WHERE key LIKE 'owner.%'").fetchone() == (0,)
    raw.close()


def test_a_read_only_schema_1_store_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    owner = TaskOwner.this_process()
    task_id = _schema_1_store(path, owner)
    with SQLiteStore(path, read_only=True) as store:  # read from a copy upgraded in memory
        assert store.get_task(task_id).id == task_id
        assert store.messages("no-such-session") == [] and store.checkpoints(task_id) == []
        lease = store.task_lease(task_id)
        assert lease is not None and lease.owner == owner
        with pytest.raises(StoreError, match="read-only"):
            store.claim_task(task_id, owner)
    raw = sqlite3.connect(path)  # not upgraded behind the reader's back
    assert raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    raw.close()
