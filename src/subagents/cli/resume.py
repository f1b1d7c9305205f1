"""`subagents resume TASK`: continue a stored task after a crash, or with a person's decision."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from subagents.cli.common import AnswerWatch, stderr_console, store_path, user_errors
from subagents.cli.options import (
    CwdOption,
    MaxBudgetTokensOption,
    MaxBudgetUsdOption,
    QueueOption,
    StoreOption,
    TaskArgument,
    TrustProjectMcpOption,
    WaitOption,
    permission_mode_named,
)
from subagents.cli.render import EXIT_PAUSED, Ending, how_to_resume, print_ending

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.redaction import Redactor
    from subagents.runtime.pause import HumanDecision, HumanQuestion
    from subagents.runtime.permissions import Headless
    from subagents.runtime.result import RunResult
    from subagents.runtime.runtime import Runtime
    from subagents.store.records import TaskRecord
    from subagents.tools.permissions import PermissionMode

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
    max_budget_tokens: MaxBudgetTokensOption = None,
    max_budget_usd: MaxBudgetUsdOption = None,
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
    trust_project_mcp: TrustProjectMcpOption = False,
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
    remote: Annotated[
        bool,
        typer.Option(
            "--remote",
            help="Queue the resumption (and its decision) for 'subagents worker' processes on "
            "the shared PostgreSQL store instead of continuing here.",
        ),
    ] = False,
    wait: WaitOption = False,
    queue: QueueOption = "subagents",
) -> None:
    """Continue TASK where it stopped: after a crash, or with a decision when it waits for one.

    At a terminal without a decision flag, what the task waits for is asked there, and so is
    every later approval; elsewhere (or with --approve / --reject / --modify / --set) a tool
    that needs approval pauses the task again. Secrets are redacted from everything printed.

    Exit codes: 0 completed; 1 failed, out of turns or cancelled; 2 usage or configuration
    error; 3 paused, waiting for a person; 4 paused at the token budget.
    """
    from subagents.cli.answer import quote_markup
    from subagents.cli.mcp import project_server_policy
    from subagents.cli.ui.progress import ProgressPrinter, progress_printer
    from subagents.cli.usage import task_usage
    from subagents.errors import StoreError
    from subagents.inventory import explicit_agents_from_json
    from subagents.redaction import Redactor
    from subagents.runtime.events import EventBus
    from subagents.runtime.resumption import not_adopted, pending_question
    from subagents.runtime.runtime import Runtime
    from subagents.store.open import open_store

    err = stderr_console()
    redactor = Redactor()  # the environment's secrets, until the task's config is read
    printer: ProgressPrinter | None = None
    watch = AnswerWatch()
    with user_errors(), _redacted_errors(lambda: redactor):
        decision = parse_decision(approve, reject, modify, set_values or [])
        # a person at the terminal: later approvals are asked there, whatever the decision;
        # with no decision given, the pending question is asked there too
        at_terminal = not as_json and sys.stdin.isatty()
        ask_here = decision is None and at_terminal
        if permission_mode is not None:
            permission_mode_named(permission_mode)
        session_agents = explicit_agents_from_json(agents_json) if agents_json else []
        path = store_path(cwd, store)
        from subagents.workers.engine import WorkerError

        if wait and not remote:
            raise WorkerError("--wait goes with --remote", hint="add --remote, or drop --wait")
        if remote:
            _queue_remotely(err, path.location, task, decision, queue, wait=wait, as_json=as_json)
            return
        if not path.exists():  # opening it would create an empty store as a side effect
            raise StoreError(
                f"no store at {path}, so no task to resume",
                hint="run 'subagents resume' in the project of the task, or name its store "
                "with --store",
            )
        with contextlib.closing(open_store(path.location)) as database:
            record = database.get_task(task)
            workspace, mode, headless = _how_to_continue(record, cwd, permission_mode)
            if workspace != Path(record.workspace):
                err.print(
                    f"[yellow]Task {record.id[:8]} was imported[/]: it continues in "
                    f"{quote_markup(str(workspace))} in permission mode {mode}; the tool calls it "
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
                project_mcp=project_server_policy(
                    interactive=at_terminal, trust_all=trust_project_mcp
                ),
                max_budget_tokens=max_budget_tokens,
                max_budget_usd=max_budget_usd,
            )
            redactor = Redactor(runtime.credentials())
            if not as_json:
                from subagents.cli.servers import session_describer

                printer = progress_printer(err, redactor, describe=session_describer(runtime))
                events.subscribe(printer)
                events.subscribe(watch)
            try:
                if at_terminal and headless != "allow":  # a --yes run approves by itself
                    from subagents.cli.run import ask_person

                    runtime.permissions.approver = ask_person(err, redactor, printer)
                if ask_here and not not_adopted(record):
                    pending = pending_question(database, record)
                    if pending is not None and pending.kind != "budget":  # no one to ask
                        decision = _ask_decision(err, redactor, pending)
                        if decision is None:
                            err.print(f"[yellow]No decision given;[/] task {record.id} waits.")
                            raise typer.Exit(EXIT_PAUSED)
                result = _resume_asking(
                    runtime,
                    record.id,
                    decision,
                    force=force,
                    ask=_asker(err, redactor, at_terminal),
                )
                used = task_usage(database, record.id, runtime.config, priced=as_json)
            except KeyboardInterrupt:
                err.print(f"[yellow]Interrupted.[/] Continue with: subagents resume {record.id}")
                raise typer.Exit(130) from None
            finally:
                if printer is not None:
                    printer.close()
    question = result.question.to_dict() if result.question is not None else None
    payload: dict[str, Any] = {
        "task_id": result.task_id,
        "status": result.status,
        "output": result.output,
        "error": result.error,
        "question": question,
    }
    if used is not None:
        payload["task_usage"] = used.summary()
    print_ending(
        replace(Ending.of(result), usage=used.line(cost=False) if used is not None else None),
        err,
        redactor,
        as_json=as_json,
        payload=payload,
        how_to_resume=how_to_resume(result.task_id),
        on_screen=watch.on_screen,
    )


Asker = Callable[["HumanQuestion"], "HumanDecision | None"]


def _asker(console: Console, redactor: Redactor, ask_here: bool) -> Asker | None:
    """What asks a person for a decision at the terminal (None: nobody is asked)."""
    if not ask_here:
        return None

    def ask(question: HumanQuestion) -> HumanDecision | None:
        return _ask_decision(console, redactor, question)

    return ask


def _resume_asking(
    runtime: Runtime,
    task_id: str,
    decision: HumanDecision | None,
    *,
    force: bool,
    ask: Asker | None,
) -> RunResult:
    """Resume ``task_id`` with ``decision``; while it pauses again and ``ask`` is given, ask
    the person for the next decision and go on (stop when they give none)."""
    import asyncio

    async def resume_and_close() -> RunResult:
        try:
            result = await runtime.resume(task_id, decision, force=force)
            while ask is not None and result.question and result.question.kind != "budget":
                following = await asyncio.to_thread(ask, result.question)
                if following is None:
                    break
                result = await runtime.resume(task_id, following)
            return result
        finally:
            await runtime.aclose()

    return asyncio.run(resume_and_close())


def _ask_decision(
    console: Console, redactor: Redactor, question: HumanQuestion
) -> HumanDecision | None:
    """Show ``question`` and ask the person at the terminal for a decision, in the style of
    ``run``'s approval prompt; None at the end of input (the task keeps waiting)."""
    from subagents.cli.answer import markup_safe, quote_markup
    from subagents.errors import SubagentsError
    from subagents.runtime.pause import HumanDecision

    text = markup_safe(redactor.text(question.text), console)
    agent = markup_safe(question.agent_type, console)  # from the store: maybe imported
    console.print(f"\n[bold]{agent}[/] waits for a person: {text}")
    if question.kind == "ask_human":
        answer = _read_line("Answer: ")
        if answer is None:
            return None
        if not answer.strip():
            return HumanDecision("reject", reason="the user gave no answer")
        return HumanDecision("approve", values={"answer": answer})
    if question.kind == "workflow":
        going_on = _read_line("Go on? [y/N/reason to stop] ")
        return None if going_on is None else _approve_or_reject(going_on)
    args = json.dumps(redactor.value(question.arguments), indent=2, ensure_ascii=False)
    tool = markup_safe(question.tool_name, console)
    console.print(f"[bold]{tool}[/] with:\n{markup_safe(args, console)}")
    while True:
        reply = _read_line("Allow? [y/N/m to modify/reason to deny] ")
        if reply is None:
            return None
        if reply.strip().lower() not in {"m", "modify"}:
            return _approve_or_reject(reply)
        given = _read_line("Arguments to run it with (JSON): ")
        if given is None:
            return None
        try:
            arguments = _modified_arguments(given)
        except SubagentsError as error:
            console.print(f"[red]{quote_markup(error.message)}[/]")
            continue
        return HumanDecision("modify", arguments=arguments)


def _approve_or_reject(answer: str) -> HumanDecision:
    from subagents.runtime.pause import HumanDecision

    if answer.strip().lower() in {"y", "yes"}:
        return HumanDecision("approve")
    reason = answer.strip() if answer.strip().lower() not in {"", "n", "no"} else None
    return HumanDecision("reject", reason=reason or "the user declined")


def _read_line(prompt: str) -> str | None:
    """A line from the person; None at the end of input."""
    try:
        return input(prompt)
    except EOFError:
        return None


def _queue_remotely(
    err: Console,
    location: Path | str,
    task: str,
    decision: HumanDecision | None,
    queue: str,
    *,
    wait: bool,
    as_json: bool,
) -> None:
    """``resume --remote``: queue the task's resumption for the workers."""
    from subagents.cli.remote import report_queued
    from subagents.redaction import Redactor
    from subagents.store.open import open_store
    from subagents.workers.engine import WorkerError, require_postgres
    from subagents.workers.submit import queue_decision

    if not isinstance(location, str):
        raise WorkerError(
            "--remote queues the run on a shared PostgreSQL store, and this store is the file "
            f"{location}.",
            hint="pass --store postgresql://USER@HOST:PORT/DB or set SUBAGENTS_STORE to it",
        )
    with contextlib.closing(open_store(require_postgres(location))) as database:
        queued = queue_decision(database, database.get_task(task).id, decision, queue=queue)
        report_queued(
            err, database, queued, queue=queue, wait=wait, as_json=as_json, redactor=Redactor()
        )


def _how_to_continue(
    record: TaskRecord, cwd: Path | None, mode: str | None
) -> tuple[Path, PermissionMode, Headless]:
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
    stored_headless = settings.get("headless")
    headless: Headless = stored_headless if stored_headless in ("allow", "deny") else "pause"
    return Path(record.workspace), cast("PermissionMode", chosen), headless


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
