"""`subagents resume TASK`: continue a stored task after a crash, or with a person's decision."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from subagents.cli.common import CwdOption, StoreOption, TaskArgument, store_path, user_errors

if TYPE_CHECKING:
    from subagents.runtime.pause import HumanDecision
    from subagents.store.records import TaskRecord
    from subagents.tools.permissions import PermissionMode
    from subagents.tracing.redact import Redactor

__all__ = ["parse_decision", "resume_command"]


def resume_command(
    task: TaskArgument,
    approve: Annotated[
        bool, typer.Option("--approve", help="Approve what the task is waiting for.")
    ] = False,
    reject: Annotated[
        str | None, typer.Option("--reject", help="Reject it, with the reason the agent sees.")
    ] = None,
    modify: Annotated[
        str | None,
        typer.Option(
            "--modify", help="Run the call with other arguments: '{\"args\": {...}}' (JSON)."
        ),
    ] = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE for the decision (e.g. answer=8080)."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Take the task over from a process that is gone for good."),
    ] = False,
    permission_mode: Annotated[
        str | None,
        typer.Option(
            "--permission-mode",
            help="Continue in this mode (default: the task's own; 'default' for an imported task).",
        ),
    ] = None,
    cwd: CwdOption = None,
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    agents_json: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="The session agents the run was started with (--agents JSON of 'run').",
        ),
    ] = None,
) -> None:
    """Continue TASK where it stopped: after a crash, or with a decision when it waits for one.
    Secrets are redacted from everything printed."""
    from rich.console import Console
    from rich.markup import escape

    from subagents.cli.progress import ProgressPrinter, progress_printer
    from subagents.errors import StoreError
    from subagents.inventory import explicit_agents_from_json
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.store.open import open_store
    from subagents.tracing.redact import Redactor

    err = Console(stderr=True)
    redactor = Redactor()  # the environment's secrets, until the task's config is read
    printer: ProgressPrinter | None = None
    with user_errors(), _redacted_errors(lambda: redactor):
        decision = parse_decision(approve, reject, modify, set_values or [])
        _check_mode(permission_mode)
        session_agents = explicit_agents_from_json(agents_json) if agents_json else []
        path = store_path(cwd, store)
        if not path.exists():  # opening it would create an empty store as a side effect
            raise StoreError(
                f"no store at {path}, so no task to resume",
                hint="run 'subagents resume' in the project of the task, or name its store "
                "with --store",
            )
        with contextlib.closing(open_store(path)) as database:
            record = database.get_task(task)
            workspace, mode, headless = _how_to_continue(record, cwd, permission_mode)
            if workspace != Path(record.workspace):
                err.print(
                    f"[yellow]Task {record.id[:8]} was imported[/]: it continues in "
                    f"{escape(str(workspace))} in permission mode {mode}; the tool calls it "
                    "left pending ask before they run."
                )
            events = EventBus()
            runtime = Runtime(
                cwd=workspace,
                model=record.model,
                permission_mode=mode,
                headless=headless,
                events=events,
                store=database,
                agents=session_agents,
            )
            redactor = Redactor(runtime.credentials())
            if not as_json:
                printer = progress_printer(err, redactor)
                events.subscribe(printer)
            try:
                result = runtime.resume_sync(record.id, decision, force=force)
            finally:
                if printer is not None:
                    printer.close()
    if as_json:
        question = result.question.to_dict() if result.question is not None else None
        payload: dict[str, Any] = {
            "task_id": result.task_id,
            "status": result.status,
            "output": result.output,
            "error": result.error,
            "question": question,
        }
        typer.echo(json.dumps(redactor.value(payload), indent=2))
    else:
        Console().print(redactor.text(result.output), markup=False, highlight=False)
        if result.question is not None:
            err.print(
                f"[yellow]Waiting for a person:[/] {escape(redactor.text(result.question.text))}\n"
                f"resume with: subagents resume {result.task_id} --approve | --reject REASON"
            )
        elif not result.success:
            err.print(f"[red]Run {result.status}:[/] {escape(redactor.text(result.error or ''))}")
    if result.status not in ("completed", "awaiting_human"):
        raise typer.Exit(1)


def _check_mode(mode: str | None) -> None:
    from subagents.errors import SubagentsError
    from subagents.tools.permissions import PERMISSION_MODES

    if mode is not None and mode not in PERMISSION_MODES:
        raise SubagentsError(
            f"Unknown permission mode {mode!r}.",
            hint=f"use one of: {', '.join(PERMISSION_MODES)}",
        )


def _how_to_continue(
    record: TaskRecord, cwd: Path | None, mode: str | None
) -> tuple[Path, PermissionMode, str]:
    """Workspace, permission mode and headless policy for resuming ``record``.

    A task's own settings are used, unless it was imported and not resumed here yet: an
    archive does not choose the directory its tools work in, nor how freely they run.
    """
    from subagents.tools.permissions import PERMISSION_MODES

    settings = record.settings
    imported = settings.get("imported")
    if isinstance(imported, dict) and not imported.get("adopted_at"):
        return (cwd or Path.cwd()).resolve(), cast("PermissionMode", mode or "default"), "pause"
    stored = settings.get("permission_mode")
    chosen = mode or (stored if stored in PERMISSION_MODES else "default")
    headless = settings.get("headless")
    if headless not in ("allow", "deny", "pause"):
        headless = "pause"
    return Path(record.workspace), cast("PermissionMode", chosen), str(headless)


@contextlib.contextmanager
def _redacted_errors(redactor: Callable[[], Redactor]) -> Iterator[None]:
    """Redact the message and hint of a SubagentsError on its way out (``redactor`` returns
    the redactor, which changes once the task's config is read)."""
    from subagents.errors import SubagentsError

    try:
        yield
    except SubagentsError as error:
        current = redactor()
        error.message = current.text(error.message)
        if error.hint:
            error.hint = current.text(error.hint)
        raise


def parse_decision(
    approve: bool, reject: str | None, modify: str | None, set_values: list[str]
) -> HumanDecision | None:
    """The decision the flags describe; None when none was given (crash resume)."""
    from subagents.errors import SubagentsError
    from subagents.runtime.pause import HumanDecision

    flags = (("--approve", approve), ("--reject", reject is not None), ("--modify", modify))
    chosen = [flag for flag, given in flags if given]
    if len(chosen) > 1:
        raise SubagentsError(
            f"{' and '.join(chosen)} cannot be combined.", hint="give one decision per resume"
        )
    values = dict(_key_value(item) for item in set_values)
    if reject is not None:
        return HumanDecision("reject", reason=reject, values=values)
    if modify is not None:
        return HumanDecision("modify", arguments=_modified_arguments(modify), values=values)
    if approve or values:
        return HumanDecision("approve", values=values)
    return None


def _key_value(item: str) -> tuple[str, str]:
    from subagents.errors import SubagentsError

    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise SubagentsError(
            f"--set {item!r} is not KEY=VALUE.", hint="write it like --set answer=8080"
        )
    return key.strip(), value


def _modified_arguments(text: str) -> dict[str, Any]:
    from subagents.errors import SubagentsError

    hint = 'give a JSON object, e.g. --modify \'{"args": {"command": "ls"}}\''
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise SubagentsError(f"--modify is not valid JSON: {error}.", hint=hint) from None
    except RecursionError:
        raise SubagentsError("--modify is nested too deeply to read.", hint=hint) from None
    if not isinstance(data, dict):
        raise SubagentsError("--modify must be a JSON object.", hint=hint)
    arguments = data.get("args", data)
    if not isinstance(arguments, dict):
        raise SubagentsError('"args" in --modify must be a JSON object.', hint=hint)
    return arguments
