"""The command line on a PostgreSQL store: `run` records into the store SUBAGENTS_STORE names,
and `tasks list`, `tasks show`, `trace` and `tasks check` read it with --store, never printing
the URL's password. A real server on 127.0.0.1 (skipped, saying why, where none answers)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer
from postgres_support import postgres_url
from subagents.cli.app import app

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_url() as named:
        yield named.replace("postgres@", "postgres:not-a-real-password@")  # trust auth ignores it


def test_a_run_recorded_in_postgres_is_listed_traced_and_checked(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    with FakeOpenAIServer() as server:
        config = root / ".subagents" / "config.toml"
        config.parent.mkdir()
        config.write_text(
            f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
            'tool_calls = "auto"\n'
        )
        server.reply_text("hello from the model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
        monkeypatch.setenv("SUBAGENTS_STORE", url)
        ran = CliRunner().invoke(
            app, ["run", "hi", "--cwd", str(root), "--model", "openai:gpt-test", "--json"]
        )
        assert ran.exit_code == 0, ran.output
    task_id = json.loads(ran.stdout)["task_id"]
    assert not (root / ".subagents" / "state.db").exists()  # nothing went to a file
    monkeypatch.delenv("SUBAGENTS_STORE")
    runner = CliRunner()
    listed = runner.invoke(app, ["tasks", "list", "--json", "--store", url])
    assert listed.exit_code == 0, listed.output
    assert [row["id"] for row in json.loads(listed.stdout)] == [task_id]
    table = runner.invoke(app, ["tasks", "list", "--store", url])
    assert "not-a-real-password" not in table.output and "***" in table.output
    shown = runner.invoke(app, ["tasks", "show", task_id[:8], "--store", url])
    assert shown.exit_code == 0 and "completed" in shown.stdout
    traced = runner.invoke(app, ["trace", task_id, "--json", "--store", url])
    assert traced.exit_code == 0
    assert json.loads(traced.stdout)["task"]["id"] == task_id
    checked = runner.invoke(app, ["tasks", "check", "--store", url])
    assert checked.exit_code == 0, checked.output


def test_store_copy_moves_every_task_to_postgres_and_back(url: str, tmp_path: Path) -> None:
    import sqlite3

    from store_records import make_ledger, make_session, make_task, write_steps
    from subagents.store import StepWrite
    from subagents.store.sqlite import SQLiteStore

    source = tmp_path / "source.db"
    with SQLiteStore(source) as store:
        tasks = [make_task(description=f"task {i}") for i in range(3)]
        for index, task in enumerate(tasks):
            store.create_task(task)
            write_steps(store, make_session(task.id, f"s{index}"), index + 1)
            store.commit(
                StepWrite(task_id=task.id, ledger=[make_ledger(task.id, f"s{index}", "c")])
            )
        bundles = {task.id: store.load_bundle(task.id) for task in tasks}
        broken = make_task(description="damaged")
        store.create_task(broken)
    raw = sqlite3.connect(source)
    raw.execute("UPDATE tasks SET data = '{' WHERE id = ?", (broken.id,))
    raw.commit()
    raw.close()

    runner = CliRunner()
    migrated = runner.invoke(app, ["store", "migrate", "--store", url])
    assert migrated.exit_code == 0 and "schema 1" in migrated.stdout
    assert "not-a-real-password" not in migrated.stdout
    there = runner.invoke(app, ["store", "copy", str(source), url])
    assert there.exit_code == 1  # the damaged task is named and left behind
    assert "copied 3 task(s); 0 already there" in there.stdout
    assert f"not copied: task {broken.id}" in there.stderr
    again = runner.invoke(app, ["store", "copy", str(source), url])
    assert "copied 0 task(s); 3 already there" in again.stdout
    back = tmp_path / "back.db"
    returned = runner.invoke(app, ["store", "copy", url, str(back)])
    assert returned.exit_code == 0, returned.output
    with SQLiteStore(back) as store:
        assert {task.id: store.load_bundle(task.id) for task in tasks} == bundles
        assert store.integrity_check() == []
    replaced = runner.invoke(app, ["store", "copy", str(back), url, "--replace"])
    assert "copied 3 task(s)" in replaced.stdout
