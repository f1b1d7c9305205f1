"""Retention: which tasks expire when, cleanup (and its dry run), the daily guard, and where
the policy is read from."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from store_records import make_session, make_task, write_steps
from subagents.config import load_config
from subagents.errors import ConfigError
from subagents.store.retention import (
    RetentionPolicy,
    cleanup,
    expired_tasks,
    load_retention_policy,
    maybe_cleanup_daily,
)
from subagents.store.sqlite import SQLiteStore

NOW = datetime(2025, 6, 30, 12, 0, tzinfo=UTC)


def _days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def _finished(days_ago: float, **overrides: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "status": "completed",
        "created_at": _days_ago(days_ago + 1),
        "completed_at": _days_ago(days_ago),
        "updated_at": _days_ago(days_ago),
    }
    fields.update(overrides)
    return fields


POLICY = RetentionPolicy(
    default_days=7, by_task={"critical": 30, "debug": 3}, by_status={"failed": 14}
)


@pytest.mark.parametrize(
    ("fields", "days"),
    [
        ({}, 7),  # completed: default_days
        ({"status": "failed"}, 14),  # by_status
        ({"status": "cancelled"}, 7),
        ({"tags": ["debug"]}, 3),  # a tag beats the status
        ({"tags": ["debug"], "status": "failed"}, 3),
        ({"tags": ["debug", "critical"]}, 30),  # the longest of its tags
        ({"tags": ["unknown-tag"], "status": "failed"}, 14),
        ({"tags": ["critical"], "retention_days": 1}, 1),  # the task's own days win
        ({"retention_days": 0}, 0),
    ],
)
def test_days_follow_the_documented_precedence(fields: dict[str, object], days: int) -> None:
    assert POLICY.days_for(make_task(**fields)) == days


def test_defaults() -> None:
    policy = RetentionPolicy()
    assert policy.default_days == 7
    assert policy.days_for(make_task(status="completed")) == 7
    assert policy.days_for(make_task(status="failed")) == 14
    assert RetentionPolicy(default_days=2).days_for(make_task(status="completed")) == 2


def test_age_counts_from_completion_else_last_update() -> None:
    finished = make_task(**_finished(8, updated_at=_days_ago(1)))
    assert POLICY.is_expired(finished, NOW)
    pending = make_task(status="pending", created_at=_days_ago(30), updated_at=_days_ago(8))
    assert POLICY.is_expired(pending, NOW)
    fresh = make_task(status="pending", created_at=_days_ago(30), updated_at=_days_ago(6))
    assert not POLICY.is_expired(fresh, NOW)


@pytest.mark.parametrize("status", ["running", "awaiting_human"])
def test_running_and_waiting_tasks_never_expire(status: str) -> None:
    task = make_task(status=status, retention_days=0, updated_at=_days_ago(400))
    assert POLICY.expires_at(task) is None
    assert not POLICY.is_expired(task, NOW)


def _populate(store: SQLiteStore) -> dict[str, str]:
    tasks = {
        "old_completed": make_task(**_finished(8)),
        "young_completed": make_task(**_finished(6)),
        "old_failed": make_task(**_finished(15, status="failed")),
        "young_failed": make_task(**_finished(10, status="failed")),
        "old_critical": make_task(**_finished(20, tags=["critical"])),
        "old_debug": make_task(**_finished(4, tags=["debug"])),
        "stuck_running": make_task(status="running", updated_at=_days_ago(100)),
        "waiting": make_task(status="awaiting_human", updated_at=_days_ago(100)),
    }
    for name, task in tasks.items():
        store.create_task(task)
        write_steps(store, make_session(task.id, f"{name}-session"), 2)
    return {name: task.id for name, task in tasks.items()}


EXPIRED = {"old_completed", "old_failed", "old_debug"}


def test_dry_run_lists_without_removing(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        ids = _populate(store)
        expected = {ids[name] for name in EXPIRED}
        assert {task.id for task in expired_tasks(store, POLICY, NOW)} == expected
        listed = cleanup(store, POLICY, now=NOW, dry_run=True)
        assert {task.id for task in listed.removed} == expected
        assert len(store.list_tasks(limit=None)) == len(ids)


def test_cleanup_removes_expired_tasks_with_everything_of_them(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        ids = _populate(store)
        removed = cleanup(store, POLICY, now=NOW).removed
        assert {task.id for task in removed} == {ids[name] for name in EXPIRED}
        remaining = {task.id for task in store.list_tasks(limit=None)}
        assert remaining == {ids[name] for name in ids if name not in EXPIRED}
        for name in EXPIRED:
            assert store.messages(f"{name}-session") == []
            assert store.checkpoints(ids[name]) == []
            assert store.traces(ids[name]) == []
        assert store.messages("young_completed-session") != []
        assert store.integrity_check() == []
        assert cleanup(store, POLICY, now=NOW).removed == []
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT count(*) FROM sessions").fetchone() == (len(ids) - len(EXPIRED),)
    raw.close()


def test_a_task_resumed_meanwhile_is_kept(tmp_path: Path) -> None:
    """cleanup re-reads each task in its delete transaction (another process may resume it)."""
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store, SQLiteStore(path) as other:
        task = make_task(**_finished(30))
        store.create_task(task)
        assert [t.id for t in expired_tasks(store, POLICY, NOW)] == [task.id]
        resumed = other.get_task(task.id)
        resumed.status = "running"
        other.update_task(resumed)
        assert cleanup(store, POLICY, now=NOW).removed == []
        assert store.get_task(task.id).status == "running"


def test_daily_guard_runs_at_most_once_a_day(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store, SQLiteStore(path) as other_process:
        ids = _populate(store)
        first = maybe_cleanup_daily(store, POLICY, now=NOW)
        assert first is not None and {t.id for t in first.removed} == {ids[n] for n in EXPIRED}
        late = make_task(**_finished(30))
        store.create_task(late)
        assert maybe_cleanup_daily(store, POLICY, now=NOW + timedelta(hours=1)) is None
        assert maybe_cleanup_daily(other_process, POLICY, now=NOW + timedelta(hours=23)) is None
        assert store.get_task(late.id).id == late.id
        later = maybe_cleanup_daily(other_process, POLICY, now=NOW + timedelta(days=1))
        assert later is not None and late.id in {t.id for t in later.removed}


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".subagents").mkdir()
    return project


def test_policy_defaults_without_files(tmp_path: Path) -> None:
    assert load_retention_policy(_project(tmp_path)) == RetentionPolicy()


def test_policy_sources_override_key_by_key(tmp_path: Path, isolated_home: Path) -> None:
    project = _project(tmp_path)
    user_dir = isolated_home / ".subagents"
    user_dir.mkdir()
    (user_dir / "config.toml").write_text(
        "[retention]\ndefault_days = 10\n[retention.by_task]\nkeep = 100\n"
    )
    (user_dir / "retention_policy.yaml").write_text("by_task:\n  scratch: 1\n")
    (project / ".subagents" / "config.toml").write_text(
        "[retention]\ndefault_days = 5\n[retention.by_status]\nfailed = 20\n"
    )
    (project / ".subagents" / "retention_policy.yaml").write_text(
        "by_task:\n  critical: 30\n  debug: 3\nby_status:\n  cancelled: 2\n"
    )
    policy = load_retention_policy(project)
    assert policy.default_days == 5
    assert policy.by_task == {"keep": 100, "scratch": 1, "critical": 30, "debug": 3}
    assert policy.by_status == {"failed": 20, "cancelled": 2}
    # config.toml with a [retention] table still loads as configuration
    assert load_config(project).sources[-1] == project / ".subagents" / "config.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("default_days: -1\n", "key 'default_days'"),
        ("by_status:\n  complete: 3\n", "by_status.complete"),
        ("keep_for: 3\n", "unknown key 'keep_for'"),
        ("- 1\n- 2\n", "must be a mapping"),
        ("by_task: [\n", "YAML syntax error"),
    ],
)
def test_bad_policy_files_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    project = _project(tmp_path)
    path = project / ".subagents" / "retention_policy.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        load_retention_policy(project)
    assert str(path) in str(error.value)


def test_bad_retention_table_in_config_toml(tmp_path: Path) -> None:
    project = _project(tmp_path)
    path = project / ".subagents" / "config.toml"
    path.write_text('[retention]\ndefault_days = "week"\n')
    with pytest.raises(ConfigError, match="default_days") as error:
        load_retention_policy(project)
    assert str(path) in str(error.value)
