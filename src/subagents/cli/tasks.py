"""`subagents tasks ...` (list, show, check) and the store's top-level commands (cleanup,
export, import), registered by cli/app.py.

Only typer is imported at module level; the store, Rich and JSON come in inside each command
so that ``subagents --help`` stays fast. Every store or config error is printed as a message
and a hint, exit code 2, never a traceback. What is printed or exported passes through the
redactor once more: the store holds redacted records, but an imported task may not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from subagents.cli import plain
from subagents.cli.common import make_console, store_path, user_errors
from subagents.cli.options import CwdOption, JsonOption, StoreOption, TaskArgument

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.tree import Tree

    from subagents.cli.common import StoreTarget
    from subagents.cli.usage import UsageReport
    from subagents.models.prices import ModelPrice
    from subagents.redaction import Redactor
    from subagents.store.base import Store, UnreadableTask
    from subagents.store.records import CheckpointRecord, SessionRecord, TaskRecord
    from subagents.workflows.map_items import MapStatus

    RecordT = TypeVar("RecordT", bound=BaseModel)

__all__ = ["cleanup_command", "export_command", "import_command", "tasks_app"]

tasks_app = typer.Typer(
    help="Inspect stored tasks (runs): list, show, check.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help keeps `--help` fast (see cli/app.py)
)

EXIT_PROBLEMS = 1
_STATUS_STYLES = {
    "pending": "dim",
    "running": "cyan",
    "completed": "green",
    "failed": "red",
    "awaiting_human": "yellow",
    "cancelled": "magenta",
    "initializing": "dim",
    "active": "cyan",
    "error": "red",
}


@contextlib.contextmanager
def _opened(path: StoreTarget) -> Iterator[Store]:
    from subagents.store.open import open_store

    store = open_store(path.location)
    try:
        yield store
    finally:
        store.close()


def _print_json(data: object) -> None:
    import json

    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _redacted(records: list[RecordT], redactor: Redactor) -> list[RecordT]:
    """The records with every string redacted."""
    return [
        type(record).model_validate(redactor.value(record.model_dump(mode="json")))
        for record in records
    ]


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment is not None else "-"


def _styled(status: str) -> str:
    return f"[{_STATUS_STYLES.get(status, 'white')}]{status}[/]"


def _short(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


@tasks_app.command("list")
def list_command(
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="Only tasks with this status: pending, running, completed, failed, "
            "awaiting_human, cancelled.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")] = 50,
    as_json: JsonOption = False,
    cwd: CwdOption = None,
    store: StoreOption = None,
) -> None:
    """List stored tasks, newest first. Tasks whose record cannot be read are named on stderr
    (with the command that inspects them) after the ones that can."""
    with user_errors():
        path = store_path(cwd, store)
        if not path.exists():
            tasks: list[TaskRecord] = []
            unreadable: list[UnreadableTask] = []
            if status is not None:
                _check_status(status)
        else:
            with _opened(path) as opened:
                scan = opened.scan_tasks(status=status, limit=limit)
            tasks, unreadable = scan.tasks, scan.unreadable
    redactor: Redactor | None = None
    if tasks:
        from subagents.secrets import workspace_redactor

        redactor = workspace_redactor(cwd)
    if as_json:
        shown = _redacted(tasks, redactor) if redactor is not None else []
        _print_json([task.model_dump(mode="json") for task in shown])
    elif redactor is not None:
        _print_task_table(path, tasks, redactor)
    elif not unreadable:
        _print_no_tasks(path, status)
    _report_unreadable(path, unreadable, "not listed")


_TASK_COLUMNS = (
    plain.Column("ID", flexible=False),
    plain.Column("Status", flexible=False, colours=_STATUS_STYLES),
    plain.Column("Agent"),
    plain.Column("Created", flexible=False),
    plain.Column("Description"),
)


def _print_task_table(path: StoreTarget, tasks: list[TaskRecord], redactor: Redactor) -> None:
    """The tasks as plain text, one line each (see :mod:`subagents.cli.plain`); only the
    values shown pass through ``redactor`` (the table shows no more of a task)."""
    rows = [
        (
            task.id[:8],
            task.status,
            redactor.text(_agent_of(task)),
            _when(task.created_at),
            _short(redactor.text(task.description or task.prompt)),
        )
        for task in tasks
    ]
    width, colour = plain.output_width(), plain.use_colour()
    lines = plain.wrap(f"Tasks in {path} (newest first):", width)
    lines.extend(plain.table_lines(_TASK_COLUMNS, rows, width, colour=colour))
    typer.echo("\n".join(lines), color=colour)


def _print_no_tasks(path: StoreTarget, status: str | None) -> None:
    where = str(path) if path.exists() else f"{path} (no store yet)"
    which = f" with status {status}" if status else ""
    typer.echo("\n".join(plain.wrap(f"No tasks{which} in {where}.", plain.output_width())))


def _report_unreadable(path: StoreTarget, unreadable: list[UnreadableTask], outcome: str) -> None:
    """Name the tasks that could not be read, on stderr, with the command to inspect them."""
    if not unreadable:
        return
    typer.echo(f"warning: could not read {len(unreadable)} task(s) in {path}; {outcome}:", err=True)
    for item in unreadable:
        typer.echo(f"  {item.task_id}  {item.reason}", err=True)
    typer.echo(f"hint: inspect them with: subagents tasks check --store {path}", err=True)


def _check_status(status: str) -> None:
    from typing import get_args

    from subagents.errors import StoreError
    from subagents.store.records import TaskStatus

    statuses = get_args(TaskStatus)
    if status not in statuses:
        raise StoreError(
            f"unknown task status {status!r}", hint=f"use one of: {', '.join(statuses)}"
        )


@tasks_app.command("show")
def show_command(
    task: TaskArgument,
    as_json: JsonOption = False,
    cwd: CwdOption = None,
    store: StoreOption = None,
) -> None:
    """Show one task: its record, the tree of its sessions, the last checkpoint, and what it
    asks when it awaits a person."""
    with user_errors():
        path = store_path(cwd, store)
        _require_store(path)
        with _opened(path) as opened:
            record = opened.get_task(task)
            sessions = opened.sessions(record.id)
            last = opened.latest_checkpoint(record.id)
            waiting = _waiting_checkpoints(opened, record.id, sessions)
            maps = _map_statuses(opened, record)
    from subagents.secrets import workspace_redactor

    redactor = workspace_redactor(cwd)
    [record] = _redacted([record], redactor)
    sessions = _redacted(sessions, redactor)
    waiting = _redacted(waiting, redactor)
    last = _redacted([last], redactor)[0] if last is not None else None
    usage = _usage(sessions, cwd)
    if as_json:
        shown_sessions = [session.model_dump(mode="json") for session in sessions]
        for shown in shown_sessions:
            shown["usage"] = usage.sessions[shown["session_id"]]
        _print_json(
            {
                "task": record.model_dump(mode="json"),
                "usage": usage.total,
                "sessions": shown_sessions,
                "last_checkpoint": last.model_dump(mode="json") if last else None,
                "awaiting_human": bool(waiting) or record.status == "awaiting_human",
                "questions": [checkpoint.model_dump(mode="json") for checkpoint in waiting],
                "maps": [redactor.value(status.to_dict()) for status in maps],
            }
        )
        return
    _print_task(record, sessions, last, waiting, usage)
    _print_maps(maps, redactor)


def _map_statuses(store: Store, record: TaskRecord) -> list[MapStatus]:
    """A workflow task's map nodes and their items (none for another task)."""
    if "workflow" not in record.settings:
        return []
    from subagents.workflows.map_items import map_statuses

    return map_statuses(store, record)


_MAP_LINES = 20  # items listed by the text view of a map (all of them with --json)


def _print_maps(maps: list[MapStatus], redactor: Redactor) -> None:
    """Each map node's counts, and the items that are not done (the first 20)."""
    for status in maps:
        typer.echo(f"\nMap {status.key}: {len(status.items)} items: {status.counts()}")
        open_items = [item for item in status.items if item.status != "done"]
        for item in open_items[:_MAP_LINES]:
            shown = plain.clean(redactor.text(f"{item.item}"))[:60]
            preview = plain.clean(redactor.text(item.preview))
            typer.echo(f"  [{item.index}] {item.status:<7} {shown}  {preview}".rstrip())
        if len(open_items) > _MAP_LINES:
            typer.echo(f"  ... and {len(open_items) - _MAP_LINES} more (--json lists every item)")


def _usage(sessions: list[SessionRecord], cwd: Path | None) -> UsageReport:
    """The sessions' usage, priced by the table and this project's ``[prices]``."""
    from subagents.cli.usage import usage_report

    return usage_report(sessions, _prices(cwd))


def _prices(cwd: Path | None) -> dict[str, ModelPrice]:
    from subagents.cli.usage import project_prices

    with user_errors():
        return project_prices(cwd)


def _require_store(path: StoreTarget) -> None:
    from subagents.errors import StoreError

    if not path.exists():
        raise StoreError(
            f"no store at {path}",
            hint="run a task first ('subagents run'), or name the store with --store",
        )


def _waiting_checkpoints(
    store: Store, task_id: str, sessions: list[SessionRecord]
) -> list[CheckpointRecord]:
    """The sessions whose latest checkpoint awaits a person (several when subagents run in
    parallel)."""
    waiting = []
    for session in sessions:
        checkpoint = store.latest_checkpoint(task_id, session.session_id)
        if checkpoint is not None and checkpoint.awaiting_human:
            waiting.append(checkpoint)
    return waiting


def _print_task(
    task: TaskRecord,
    sessions: list[SessionRecord],
    last: CheckpointRecord | None,
    waiting: list[CheckpointRecord],
    usage: UsageReport,
) -> None:
    import json

    from subagents.cli.answer import markup_safe, markup_text, shown_text

    console = make_console()
    console.print(f"[bold]Task {task.id}[/]  {_styled(task.status)}")
    fields = [
        ("Description", task.description),
        ("Prompt", _short(task.prompt, 200)),
        ("Agent", _agent_of(task)),
        ("Model", task.model or "-"),
        ("Workspace", task.workspace),
        ("Created", _when(task.created_at)),
        ("Started", _when(task.started_at)),
        ("Completed", _when(task.completed_at)),
        ("Tags", ", ".join(task.tags) or "-"),
        ("Retention", f"{task.retention_days} days" if task.retention_days is not None else "-"),
        ("Parent task", task.parent_task_id or "-"),
        ("Usage", _usage_line(usage)),
    ]
    if task.result is not None:
        fields.append(("Result", _short(task.result, 400)))
    if task.error is not None:
        fields.append(("Error", task.error))
    # a model wrote the result and maybe more: no emoji codes read, no control codes run
    at_terminal = console.is_terminal
    for label, value in fields:
        console.print(
            f"  [bold]{label}:[/] {markup_text(value, terminal=at_terminal)}", emoji=False
        )
    console.print()
    if sessions:
        console.print(_sessions_tree(sessions, usage, terminal=at_terminal))
    else:
        console.print("No sessions stored.")
    if last is not None:
        line = (
            f"Last checkpoint: #{last.sequence} {last.position} at {_when(last.created_at)} "
            f"(session {last.session_id})"
        )  # a store's words (an imported one's too): no control code runs
        console.print(shown_text(line, terminal=at_terminal), highlight=False, markup=False)
    for checkpoint in waiting:
        # JSON escapes C0 controls, not DEL and the C1 ones (a C1 CSI drives some terminals)
        question = json.dumps(checkpoint.question or {}, indent=2, ensure_ascii=False)
        console.print(
            f"[yellow]Awaiting a person[/] in session {markup_safe(checkpoint.session_id, console)}"
            f":\n{markup_safe(question, console)}"
        )
    at_budget = any((c.question or {}).get("kind") == "budget" for c in waiting)
    if at_budget:
        from subagents.runtime.budget import Budget, budget_hint

        asked = next(c.question for c in waiting if (c.question or {}).get("kind") == "budget")
        budget = Budget.asked((asked or {}).get("arguments") or {})
        console.print(
            f"Go on with: {budget_hint(task.id[:8], budget)}", highlight=False, markup=False
        )
    elif waiting or task.status == "awaiting_human":
        console.print(
            f"Answer with: subagents resume {task.id[:8]} --approve | --reject 'reason' | "
            "--modify '{\"args\": {...}}'",
            highlight=False,
            markup=False,
        )


def _usage_line(usage: UsageReport) -> str:
    total = usage.total
    kinds = f"{total['input_tokens']:,} in, {total['output_tokens']:,} out"
    if total["cache_read_tokens"] or total["cache_write_tokens"]:
        kinds += f", {total['cache_read_tokens']:,} read from the cache"
    line = f"{usage.line()} ({kinds})"
    rate = usage.cache_hit_rate
    if rate is not None:
        line += f", cache hit rate {rate:.0%}"
    if usage.unpriced:
        line += f"; no price for {', '.join(usage.unpriced)} (set [prices] in config)"
    return line


def _sessions_tree(sessions: list[SessionRecord], usage: UsageReport, *, terminal: bool) -> Tree:
    """The sessions nested under the ones that started them; at a ``terminal`` the control
    characters of what models and agent files wrote (a task's description) shown escaped."""
    from rich.tree import Tree

    from subagents.cli.answer import markup_line, markup_text

    def quoted(text: str) -> str:
        return markup_text(text, terminal=terminal)

    def label(session: SessionRecord) -> str:
        tokens = session.usage.get("input_tokens", 0) + session.usage.get("output_tokens", 0)
        text = (
            f"[bold]{quoted(session.agent_name)}[/] {_styled(session.status)} "
            f"{quoted(session.model)}, {session.turns} turns, {session.tool_calls} tool calls"
        )
        if session.background:
            text += " [magenta](background)[/]"
        if tokens:
            text += f", {usage.line(session.session_id)}"
        if session.task_description:
            text += f" - {markup_line(session.task_description, 60, terminal=terminal)}"
        return text + f" [dim]{quoted(session.session_id)}[/]"

    known = {session.session_id for session in sessions}
    children: dict[str | None, list[SessionRecord]] = {}
    for session in sessions:
        parent = session.parent_session_id if session.parent_session_id in known else None
        children.setdefault(parent, []).append(session)
    tree = Tree("Sessions")

    def add(node: Tree, parent: str | None, seen: set[str]) -> None:
        for session in children.get(parent, []):
            if session.session_id in seen:  # a cycle in bad data must not loop forever
                continue
            seen.add(session.session_id)
            add(node.add(label(session)), session.session_id, seen)

    add(tree, None, set())
    return tree


@tasks_app.command("usage")
def usage_command(
    task: TaskArgument,
    as_json: JsonOption = False,
    cwd: CwdOption = None,
    store: StoreOption = None,
) -> None:
    """What TASK used, by agent and model: sessions, model calls, input, output and cache
    tokens, and the cost in USD (from the price table, or [prices] in config; a model with no
    price shows '?'). Tokens are as each provider reports them: Anthropic's input leaves out
    what was read from or written to the cache, OpenAI's includes it."""
    from subagents.cli.usage import usage_by_agent, usage_report

    with user_errors():
        path = store_path(cwd, store)
        _require_store(path)
        with _opened(path) as opened:
            record = opened.get_task(task)
            sessions = opened.sessions(record.id)
    prices = _prices(cwd)
    usage = usage_report(sessions, prices)
    rows = usage_by_agent(sessions, prices)
    if as_json:
        _print_json({"task_id": record.id, "by_agent": rows, "total": usage.summary()})
        return
    width, colour = plain.output_width(), plain.use_colour()
    total = {**usage.total, "agent": "total", "model": "", "sessions": len(sessions)}
    total["requests"] = sum(row["requests"] for row in rows)
    cells = [_usage_cells(row) for row in [*rows, total]]
    lines = plain.wrap(f"Usage of task {record.id}:", width)
    lines.extend(plain.table_lines(_USAGE_COLUMNS, cells, width, colour=colour))
    rate = usage.cache_hit_rate
    if rate is not None:
        lines += plain.wrap(f"Cache hit rate: {rate:.0%} of the input tokens", width)
    if usage.unpriced:
        lines += plain.wrap(
            f"? no price for {', '.join(usage.unpriced)}: set [prices] in config", width
        )
    typer.echo("\n".join(lines), color=colour)


_USAGE_COLUMNS = (
    plain.Column("Agent"),
    plain.Column("Model"),
    plain.Column("Sessions", flexible=False),
    plain.Column("Calls", flexible=False),
    plain.Column("Input", flexible=False),
    plain.Column("Output", flexible=False),
    plain.Column("Cache read", flexible=False, optional=True),
    plain.Column("Cache write", flexible=False, optional=True),
    plain.Column("USD", flexible=False),
)


def _usage_cells(row: dict[str, Any]) -> list[str]:
    def count(kind: str, *, optional: bool = False) -> str:
        value = int(row[kind])
        return "" if optional and not value else f"{value:,}"

    return [
        str(row["agent"]),
        str(row["model"]),
        str(row["sessions"]),
        f"{row['requests']:,}",
        count("input_tokens"),
        count("output_tokens"),
        count("cache_read_tokens", optional=True),
        count("cache_write_tokens", optional=True),
        f"{row['cost_usd']:.4f}" if row["cost_known"] else "?",
    ]


@tasks_app.command("cancel")
def cancel_command(task: TaskArgument, cwd: CwdOption = None, store: StoreOption = None) -> None:
    """Cancel a task queued for the workers ('run --remote'): a queued one never starts, a
    running one stops at the step it is in, within about a second."""
    with user_errors():
        path = store_path(cwd, store)
        _require_store(path)
        with _opened(path) as opened:
            record = opened.get_task(task)
            if "remote" not in record.settings:
                from subagents.errors import SubagentsError

                raise SubagentsError(
                    f"Task {record.id} runs in the process that started it, not on a worker.",
                    hint="stop it where it runs (Ctrl-C); 'tasks cancel' is for runs queued "
                    "with --remote",
                )
            from subagents.workers.submit import cancel_remote

            cancelled = cancel_remote(opened, record.id)
    if cancelled:
        typer.echo(f"Cancelled task {record.id}.")
    else:
        typer.echo(f"Task {record.id} has nothing queued or running (status {record.status}).")


@tasks_app.command("check")
def check_command(cwd: CwdOption = None, store: StoreOption = None) -> None:
    """Check the store: SQLite's integrity check plus the store's own invariants."""
    with user_errors():
        path = store_path(cwd, store)
        _require_store(path)
        with _opened(path) as opened:
            problems = opened.integrity_check()
    if not problems:
        typer.echo(f"{path}: ok")
        return
    for problem in problems:
        typer.echo(f"{path}: {problem}")
    typer.echo(
        f"hint: export the tasks you need ('subagents export TASK DIR'), then move {path} "
        "aside and run again",
        err=True,
    )
    raise typer.Exit(EXIT_PROBLEMS)


def cleanup_command(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list what would be removed.")
    ] = False,
    cwd: CwdOption = None,
    store: StoreOption = None,
) -> None:
    """Remove tasks older than the retention policy allows, with their sessions, messages,
    checkpoints, ledger and traces. Tasks whose record cannot be read are kept and named (exit
    code 1)."""
    with user_errors():
        from subagents.store.retention import cleanup, load_retention_policy

        policy = load_retention_policy(cwd)
        path = store_path(cwd, store)
        if not path.exists():
            typer.echo(f"Nothing to clean: no store at {path}.")
            return
        with _opened(path) as opened:
            report = cleanup(opened, policy, dry_run=dry_run)
    verb = "Would remove" if dry_run else "Removed"
    typer.echo(f"{verb} {len(report.removed)} task(s) from {path}.")
    for task in report.removed:
        finished = _when(task.completed_at or task.updated_at)
        shown = plain.clean(_short(task.description, 60))  # no control characters run
        typer.echo(f"  {task.id}  {task.status:<10}  {finished}  {shown}")
    _report_unreadable(path, report.unreadable, "kept, since their age cannot be judged")
    if report.unreadable:
        raise typer.Exit(EXIT_PROBLEMS)


def export_command(
    task: TaskArgument,
    directory: Annotated[
        Path, typer.Argument(help="Where to write tasks/TASK_ID/ (created when missing).")
    ],
    cwd: CwdOption = None,
    store: StoreOption = None,
) -> None:
    """Export a task to readable JSON files: task.json, sessions.json, messages/,
    checkpoint_000.json..., ledger.json, trace.json."""
    with user_errors():
        from subagents.store.export import export_task

        path = store_path(cwd, store)
        _require_store(path)
        with _opened(path) as opened:
            target = export_task(opened, task, directory)
        _redact_files(target, cwd)
    typer.echo(f"Exported to {target}")


def _redact_files(folder: Path, cwd: Path | None) -> None:
    """Rewrite the exported JSON files that hold a secret, redacted."""
    import json

    from subagents.errors import StoreError
    from subagents.secrets import workspace_redactor

    redactor = workspace_redactor(cwd)
    for path in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(path.read_bytes())
            redacted = redactor.value(data)
            if redacted != data:
                try:
                    encoded = json.dumps(redacted, indent=2, ensure_ascii=False).encode()
                except UnicodeEncodeError:  # lone surrogates: JSON's escapes keep them exact
                    encoded = json.dumps(redacted, indent=2).encode("ascii")
                path.write_bytes(encoded + b"\n")
        except (OSError, ValueError, RecursionError) as error:
            raise StoreError(
                f"cannot redact the exported file {path} ({error})",
                hint="check that the export directory is writable, then export again",
            ) from None


def import_command(
    directory: Annotated[
        Path, typer.Argument(help="A folder written by 'subagents export' (DIR or DIR/tasks/ID).")
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a task with the same id.")
    ] = False,
    cwd: CwdOption = None,
    store: StoreOption = None,
) -> None:
    """Import a task written by 'subagents export'."""
    with user_errors():
        from subagents.store.export import import_task

        path = store_path(cwd, store)
        with _opened(path) as opened:
            task_id = import_task(opened, directory, replace=replace)
    typer.echo(f"Imported task {task_id} into {path}")


def _agent_of(task: TaskRecord) -> str:
    """Who runs the task: its agent, ``main``, or ``workflow:NAME`` for a workflow."""
    workflow = task.settings.get("workflow")
    if isinstance(workflow, dict) and workflow.get("name"):
        return f"workflow:{workflow['name']}"
    return task.assigned_agent or "main"
