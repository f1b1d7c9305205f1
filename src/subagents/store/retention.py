"""Retention: how long finished tasks are kept, and removing the expired ones.

How many days a task is kept, first rule that applies:

1. the task's own ``retention_days``;
2. its tags: the longest ``by_task`` entry among the task's tags (a task tagged both
   ``debug`` (3) and ``critical`` (30) is kept 30 days: keeping too long is the safe mistake);
3. its status: ``by_status`` (by default only ``failed``: 14);
4. ``default_days`` (7; so completed tasks are kept 7 days by default).

Age counts from ``completed_at``, or ``updated_at`` for a task that never finished (a
``pending`` one nobody started). ``running`` and ``awaiting_human`` tasks are never removed,
and neither is a task whose record cannot be read: its age is unknown, so :func:`cleanup` keeps
it and reports it (:class:`CleanupReport`) for a person to inspect with ``subagents tasks
check``.

Where the policy comes from, later sources overriding earlier ones key by key: the
``[retention]`` table of the user's ``config.toml``, the user's
``.subagents/retention_policy.yaml``, the project's ``config.toml`` ``[retention]`` table, the
project's ``.subagents/retention_policy.yaml``. Both formats hold the same keys::

    default_days = 7
    [retention.by_task]      # by tag
    critical = 30
    debug = 3
    [retention.by_status]
    completed = 7
    failed = 14
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from subagents.config import (
    CONFIG_DIR_NAME,
    CONFIG_FILE_NAME,
    project_config_path,
    project_directories,
    resolve_home,
)
from subagents.errors import ConfigError, StoreCorruptError, StoreError
from subagents.store.base import Store, UnreadableTask
from subagents.store.records import TaskRecord, TaskStatus, utc_now

__all__ = [
    "CLEANUP_JOB",
    "PROTECTED_STATUSES",
    "RETENTION_FILE_NAME",
    "CleanupReport",
    "RetentionPolicy",
    "cleanup",
    "expired_tasks",
    "load_retention_policy",
    "maybe_cleanup_daily",
]

RETENTION_FILE_NAME = "retention_policy.yaml"
CLEANUP_JOB = "retention.cleanup"
PROTECTED_STATUSES: frozenset[str] = frozenset({"running", "awaiting_human"})

Days = Annotated[int, Field(ge=0, le=1_000_000)]


def _default_by_status() -> dict[TaskStatus, int]:
    return {"failed": 14}


class RetentionPolicy(BaseModel):
    """How long tasks are kept (see the module docstring for the order of the rules)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default_days: Days = 7
    by_task: dict[str, Days] = Field(default_factory=dict)
    """Days by tag."""
    by_status: dict[TaskStatus, Days] = Field(default_factory=_default_by_status)
    """Days by status. Completed tasks follow ``default_days`` (7) unless listed here, so that
    changing ``default_days`` alone changes how long ordinary tasks are kept."""

    def days_for(self, task: TaskRecord) -> int:
        if task.retention_days is not None:
            return task.retention_days
        tagged = [self.by_task[tag] for tag in task.tags if tag in self.by_task]
        if tagged:
            return max(tagged)
        return self.by_status.get(task.status, self.default_days)

    def expires_at(self, task: TaskRecord) -> datetime | None:
        """When the task may be removed; None for a task that is still running or waiting."""
        if task.status in PROTECTED_STATUSES:
            return None
        since = task.completed_at or task.updated_at
        return since + timedelta(days=self.days_for(task))

    def is_expired(self, task: TaskRecord, now: datetime) -> bool:
        expires = self.expires_at(task)
        return expires is not None and expires <= now


@dataclass(slots=True)
class CleanupReport:
    """What :func:`cleanup` did."""

    removed: list[TaskRecord] = field(default_factory=list)
    """The tasks removed (in a dry run: the ones that would be), newest first."""
    unreadable: list[UnreadableTask] = field(default_factory=list)
    """Tasks whose record could not be read: they could not be judged and were kept."""


def expired_tasks(
    store: Store, policy: RetentionPolicy, now: datetime | None = None
) -> list[TaskRecord]:
    """The readable tasks ``cleanup`` would remove at ``now``, newest first."""
    return _expired(store, policy, _aware(now)).removed


def _expired(store: Store, policy: RetentionPolicy, moment: datetime) -> CleanupReport:
    scan = store.scan_tasks(limit=None)
    expired = [task for task in scan.tasks if policy.is_expired(task, moment)]
    return CleanupReport(removed=expired, unreadable=list(scan.unreadable))


def cleanup(
    store: Store,
    policy: RetentionPolicy,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
) -> CleanupReport:
    """Remove the expired tasks with everything of them; report what was (or would be)
    removed, and the tasks that could not be read and were kept. Each task is checked again
    inside its delete transaction, so one that was resumed meanwhile by another process is
    kept."""
    moment = _aware(now)
    found = _expired(store, policy, moment)
    if dry_run:
        return found
    report = CleanupReport(unreadable=found.unreadable)
    for task in found.removed:
        with store.transaction():
            try:
                current = store.get_task(task.id)
            except StoreCorruptError as error:  # damaged meanwhile: not judged, kept
                report.unreadable.append(UnreadableTask(task.id, error.message))
                continue
            except StoreError:
                continue  # removed meanwhile
            if policy.is_expired(current, moment):
                store.delete_task(current.id)
                report.removed.append(current)
    return report


def maybe_cleanup_daily(
    store: Store, policy: RetentionPolicy, *, now: datetime | None = None
) -> CleanupReport | None:
    """Run :func:`cleanup` when it last ran a day or more ago (recorded in the store, so one
    process of many does it); None when it was not due."""
    moment = _aware(now)
    if not store.claim_periodic(CLEANUP_JOB, every=timedelta(days=1), now=moment):
        return None
    return cleanup(store, policy, now=moment)


def load_retention_policy(cwd: Path | None = None, *, home: Path | None = None) -> RetentionPolicy:
    """The effective policy for ``cwd`` (sources in the module docstring); ConfigError names
    the file and key of a bad value."""
    home_dir = resolve_home(home)
    user_dir = home_dir / CONFIG_DIR_NAME
    sources: list[tuple[Path, dict[str, Any]]] = []
    for path in (user_dir / CONFIG_FILE_NAME, user_dir / RETENTION_FILE_NAME):
        _collect(path, sources)
    project_config = project_config_path(cwd, home=home_dir)
    if project_config is not None:
        _collect(project_config, sources)
    project_file = _project_retention_file(cwd, home_dir)
    if project_file is not None:
        _collect(project_file, sources)
    merged: dict[str, Any] = {}
    for path, raw in sources:
        _validate(path, raw)
        merged = _merge(merged, raw)
    return RetentionPolicy.model_validate(merged)


def _project_retention_file(cwd: Path | None, home: Path) -> Path | None:
    for directory in project_directories(cwd, home=home):
        candidate = directory / CONFIG_DIR_NAME / RETENTION_FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def _collect(path: Path, sources: list[tuple[Path, dict[str, Any]]]) -> None:
    if not path.is_file():
        return
    raw = _read_toml_table(path) if path.suffix == ".toml" else _read_yaml(path)
    if raw is not None:
        sources.append((path, raw))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"{path}: cannot read the file ({error})", hint="fix or remove the file"
        ) from None


def _read_toml_table(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"{path}: TOML syntax error: {error}",
            hint="fix the syntax (see https://toml.io for the format)",
        ) from None
    table = data.get("retention")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'retention' must be a table", hint="write it as [retention]")
    return table


def _read_yaml(path: Path) -> dict[str, Any] | None:
    import yaml

    from subagents._yaml import load_yaml

    try:
        data = load_yaml(_read_text(path), what="the retention policy")
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: YAML syntax error: {error}", hint="fix the syntax") from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the retention policy must be a mapping of keys to values",
            hint="write 'default_days: 7' and 'by_task:' / 'by_status:' mappings",
        )
    return data


def _validate(path: Path, raw: Mapping[str, Any]) -> None:
    try:
        RetentionPolicy.model_validate(raw)
    except ValidationError as error:
        problems = []
        for detail in error.errors():
            key = ".".join(str(part) for part in detail.get("loc", ())) or "(top level)"
            if detail.get("type") == "extra_forbidden":
                problems.append(f"{path}: unknown key {key!r}")
            else:
                problems.append(f"{path}: key {key!r}: {detail.get('msg', 'invalid value')}")
        raise ConfigError(
            "\n".join(problems),
            hint="retention keys are default_days, by_task (tag: days) and by_status "
            "(status: days), days being whole numbers >= 0",
        ) from None


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        merged[key] = (
            {**current, **value} if isinstance(current, dict) and isinstance(value, dict) else value
        )
    return merged


def _aware(moment: datetime | None) -> datetime:
    if moment is None:
        return utc_now()
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
