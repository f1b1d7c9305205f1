"""`subagents workflow run NAME`: run a workflow of the project as a durable task."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from subagents.cli.common import stderr_console, user_errors
from subagents.cli.options import (
    CwdOption,
    ExitWhenDoneOption,
    MaxBudgetTokensOption,
    MaxBudgetUsdOption,
    PermissionModeOption,
    QueueOption,
    TrustProjectMcpOption,
    WaitOption,
    YesOption,
    permission_mode_named,
)
from subagents.cli.render import (
    EXIT_ERROR,
    Ending,
    how_to_resume,
    print_ending,
    print_error,
    print_problem,
)

__all__ = ["workflow_run_command"]


def workflow_run_command(
    workflow: Annotated[str, typer.Argument(help="A workflow's name, or the path of its file.")],
    input_text: Annotated[
        str | None,
        typer.Option("--input", "-i", help="The run's input ('-' reads it from stdin)."),
    ] = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE: a field of the initial state (JSON or text)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", help="The model of agents whose file names none this machine runs."
        ),
    ] = None,
    permission_mode: PermissionModeOption = "default",
    yes: YesOption = False,
    no_store: Annotated[
        bool, typer.Option("--no-store", help="Do not record the run (it cannot be resumed).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    trust_project_mcp: TrustProjectMcpOption = False,
    ui: Annotated[
        bool, typer.Option("--ui", help="Show the run live: a block per agent, the path taken.")
    ] = False,
    exit_when_done: ExitWhenDoneOption = False,
    cwd: CwdOption = None,
    max_budget_tokens: MaxBudgetTokensOption = None,
    max_budget_usd: MaxBudgetUsdOption = None,
    remote: Annotated[
        bool,
        typer.Option(
            "--remote",
            help="Queue the run for 'subagents worker' processes on the shared PostgreSQL "
            "store (SUBAGENTS_STORE) instead of running it here.",
        ),
    ] = False,
    wait: WaitOption = False,
    queue: QueueOption = "subagents",
) -> None:
    """Run WORKFLOW from its entry point. Every node execution is checkpointed: a run that
    pauses at a human node or a checkpoint, or stops in a crash, continues with `subagents
    resume TASK [--approve | --reject REASON | --set KEY=VALUE]`."""
    from subagents.cli.answer import quote_markup
    from subagents.cli.mcp import project_server_policy
    from subagents.cli.resume import _key_value
    from subagents.cli.run import _open_store
    from subagents.cli.ui.progress import ProgressPrinter, progress_printer
    from subagents.cli.workflow_checks import (
        base_folder,
        check_workflow_file,
        echo_problems,
        shown_path,
        workflow_context,
    )
    from subagents.errors import SubagentsError
    from subagents.redaction import Redactor
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.workflows.files import find_workflow

    err = stderr_console()
    redactor = Redactor()
    with user_errors():
        mode = permission_mode_named(permission_mode)
    if ui and as_json:
        print_problem("--ui and --json do not go together", "drop one of them")
        raise typer.Exit(EXIT_ERROR)
    if (wait and not remote) or (remote and (ui or no_store)):
        print_problem(
            "--wait goes with --remote, and --remote not with --ui or --no-store",
            "a queued run is carried out by a worker; follow it with 'subagents tasks show'",
        )
        raise typer.Exit(EXIT_ERROR)
    printer: ProgressPrinter | None = None
    database = None
    try:
        path = find_workflow(workflow, cwd)
        checked = check_workflow_file(path, workflow_context(cwd))
        if checked.workflow is None or checked.errors:
            echo_problems(checked, shown_path(path, base_folder(cwd)), err=True)
            err.print(
                f"[red]Not run:[/] fix the problems above (check with 'subagents workflow "
                f"validate {workflow}')."
            )
            raise typer.Exit(1)
        text = sys.stdin.read() if input_text == "-" else (input_text or "")
        initial: dict[str, Any] = {"input": text}
        for item in set_values or []:
            key, value = _key_value(item)
            try:
                initial[key] = json.loads(value)
            except ValueError:
                initial[key] = value
        if not no_store:
            database = _open_store(cwd)
        events = EventBus()
        runtime = Runtime(
            cwd=cwd,
            model=model,
            permission_mode=mode,
            headless="allow" if yes else "pause" if database is not None else "deny",
            events=events,
            store=database,
            project_mcp=project_server_policy(
                interactive=sys.stdin.isatty() and not yes and not ui,
                trust_all=trust_project_mcp,
            ),
            max_budget_tokens=max_budget_tokens,
            max_budget_usd=max_budget_usd,
        )
        redactor = Redactor(runtime.credentials())
        if remote:
            from subagents.cli.remote import report_queued
            from subagents.workers.submit import queue_workflow

            queued = queue_workflow(runtime, checked.workflow, initial, queue=queue)
            assert database is not None
            report_queued(
                err, database, queued, queue=queue, wait=wait, as_json=as_json, redactor=redactor
            )
            return
        if ui:
            from subagents.cli.ui.live import run_in_ui

            shown = run_in_ui(
                runtime,
                text,
                exit_when_done=exit_when_done,
                ask_approval=sys.stdin.isatty() and not yes,
                workflow=checked.workflow,
                workflow_input=initial,
            )
            if shown is None:
                err.print("[yellow]Cancelled from the UI.[/] Every agent was stopped.")
                raise typer.Exit(130)
            result = shown
        else:
            if not as_json:
                from subagents.cli.servers import session_describer

                printer = progress_printer(err, redactor, describe=session_describer(runtime))
                events.subscribe(printer)
            result = runtime_run(runtime, checked.workflow, initial)
    except SubagentsError as error:
        print_error(error, redactor)
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted.[/] Continue it with 'subagents resume' and the task id.")
        raise typer.Exit(130) from None
    finally:
        if printer is not None:
            printer.close()
        if database is not None:
            database.close()
    outcome = result.workflow
    taken = [visit.node for visit in outcome.path] if outcome is not None else []
    payload = {
        "task_id": result.task_id,
        "status": result.status,
        "output": result.output,
        "error": result.error,
        "question": result.question.to_dict() if result.question is not None else None,
        "path": taken,
        "state": outcome.state.as_dict() if outcome is not None else None,
    }
    if not as_json:
        err.print(f"[dim]path:[/] {quote_markup(' -> '.join(taken) or '(no node ran)')}")
    print_ending(
        Ending.of(result),
        err,
        redactor,
        as_json=as_json,
        payload=payload,
        how_to_resume=how_to_resume(result.task_id, "[--set KEY=VALUE]"),
    )


def runtime_run(runtime: Any, workflow: Any, initial: dict[str, Any]) -> Any:
    """Run the workflow to its end or its first pause, closing the runtime after."""
    import asyncio

    async def run_and_close() -> Any:
        try:
            return await runtime.run_workflow(workflow, initial)
        finally:
            await runtime.aclose()

    return asyncio.run(run_and_close())
