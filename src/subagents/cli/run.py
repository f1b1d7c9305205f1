"""`subagents run PROMPT`: run one agent to completion and print its answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.definitions.model import AgentDefinition
    from subagents.runtime.runtime import Runtime
    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest
    from subagents.tracing.redact import Redactor

__all__ = ["run_command"]


def run_command(
    prompt: Annotated[
        str | None,
        typer.Argument(
            help="What the agent should do (default: the initialPrompt of the --agent).",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Run this agent instead of the main agent.")
    ] = None,
    agents_json: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Extra agents for this run as JSON, as in Claude Code: "
            '\'{"name": {"description": "...", "prompt": "..."}}\' (highest precedence).',
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Model as PROVIDER:MODEL or an alias (sonnet, haiku)."),
    ] = None,
    cwd: Annotated[
        Path | None,
        typer.Option(
            "--cwd",
            help="Workspace directory (default: current).",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    permission_mode: Annotated[
        str,
        typer.Option(
            "--permission-mode",
            help="default | acceptEdits | plan | dontAsk | bypassPermissions",
        ),
    ] = "default",
    allowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--allowedTools",
            "--allowed-tools",
            help="Rules that run without asking, e.g. 'Bash(npm run test:*)' 'Edit(src/**)' "
            "(repeatable; comma or space separated).",
        ),
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--disallowedTools",
            "--disallowed-tools",
            help="Rules that are refused, e.g. 'Bash(git push *)' 'Read(./.env)', or a bare "
            "tool name to take the tool away (repeatable; comma or space separated).",
        ),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Approve every tool call that would ask (headless)."),
    ] = False,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store", help="Do not record the run as a task (it cannot be resumed then)."
        ),
    ] = False,
    tags: Annotated[
        list[str] | None, typer.Option("--tag", help="Tag the task (retention by tag).")
    ] = None,
    ui: Annotated[
        bool,
        typer.Option("--ui", help="Show the run live in a terminal UI, one block per agent."),
    ] = False,
    exit_when_done: Annotated[
        bool,
        typer.Option("--exit-when-done", help="With --ui: close the UI when the run ends."),
    ] = False,
) -> None:
    """Run an agent on PROMPT, streaming its progress, and print the final answer.

    Without PROMPT, the agent named by --agent starts from the initialPrompt of its file.

    The run is recorded as a task in the project's store (.subagents/state.db): a tool that
    needs approval in a run nobody watches pauses it, and `subagents resume TASK` continues it,
    after a decision or a crash. Secrets are redacted from everything printed.
    """
    from rich.console import Console
    from rich.markup import escape

    from subagents.cli.progress import ProgressPrinter, progress_printer
    from subagents.errors import SubagentsError
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.tools.permissions import PERMISSION_MODES
    from subagents.tracing.redact import Redactor

    err = Console(stderr=True)
    redactor = Redactor()  # the environment's secrets, until the project's config is read
    if permission_mode not in PERMISSION_MODES:
        err.print(
            f"[red]Unknown permission mode {permission_mode!r}[/] - use one of: "
            + ", ".join(PERMISSION_MODES)
        )
        raise typer.Exit(2)
    if ui and as_json:
        err.print("[red]--ui and --json do not go together[/] - drop one of them")
        raise typer.Exit(2)
    # with --ui the UI owns the terminal and asks the person itself (see run_in_ui)
    interactive = sys.stdin.isatty() and not yes and not as_json and not ui
    events = EventBus()
    printer: ProgressPrinter | None = None
    database = None
    try:
        explicit = _session_agents(agents_json, err, redactor)
        if not no_store:
            database = _open_store(cwd)
        headless = "allow" if yes else "pause" if database is not None else "deny"
        runtime = Runtime(
            cwd=cwd,
            model=model,
            permission_mode=permission_mode,  # type: ignore[arg-type]
            headless=headless,
            events=events,
            stream=not as_json,
            store=database,
            allowed_tools=allowed_tools or (),
            disallowed_tools=disallowed_tools or (),
            agents=explicit,
        )
        runtime.permission_rules()  # read now, to say what cannot be used before the run
        for warning in runtime.permission_warnings:
            err.print(f"[yellow]Warning:[/] {escape(warning)}")
        redactor = Redactor(runtime.credentials())
        prompt = _prompt_for(runtime, prompt, agent)
        if interactive:
            runtime.approver = _ask_person(err, redactor)
        if not (as_json or ui):
            printer = progress_printer(err, redactor)
            events.subscribe(printer)
        if ui:
            from subagents.cli.ui import run_in_ui

            ui_result = run_in_ui(
                runtime,
                prompt,
                agent=agent,
                tags=tags or (),
                exit_when_done=exit_when_done,
                ask_approval=sys.stdin.isatty() and not yes,
            )
            if ui_result is None:
                again = (
                    "continue it with 'subagents resume' and the task id"
                    if database is not None
                    else "start it again with 'subagents run'"
                )
                err.print(f"[yellow]Cancelled from the UI.[/] Every agent was stopped; {again}.")
                raise typer.Exit(130)
            result = ui_result
        else:
            result = runtime.run_sync(prompt, agent=agent, tags=tags or ())
    except SubagentsError as error:
        err.print(f"[red]Error:[/] {escape(redactor.text(str(error)))}")
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted.[/] Continue it with 'subagents resume' and the task id.")
        raise typer.Exit(130) from None
    finally:
        if printer is not None:
            printer.close()
        if database is not None:
            database.close()
    if as_json:
        spawns = result.subagents
        question = result.question.to_dict() if result.question is not None else None
        payload: dict[str, Any] = {
            "task_id": result.task_id,
            "question": question,
            "status": result.status,
            "output": result.output,
            "error": result.error,
            "agent_id": result.agent_id,
            "model": result.model_name,
            "turns": result.turns,
            "tool_calls": result.tool_calls,
            "usage": {
                "input_tokens": result.usage.input_tokens,
                "output_tokens": result.usage.output_tokens,
            },
            "duration_ms": round(result.duration_ms, 1),
            "subagents": [spawn.to_dict() for spawn in spawns],
        }
        typer.echo(json.dumps(redactor.value(payload), indent=2))
    else:
        out = Console()
        out.print()
        out.print(redactor.text(result.output), markup=False, highlight=False)
        if result.question is not None:
            err.print(
                f"[yellow]Waiting for a person:[/] {escape(redactor.text(result.question.text))}\n"
                f"resume with: subagents resume {result.task_id} --approve | --reject REASON"
            )
        elif not result.success:
            err.print(f"[red]Run {result.status}:[/] {escape(redactor.text(result.error or ''))}")
        if result.task_id is not None:
            err.print(f"[dim]task {result.task_id}[/]")
    if result.status not in ("completed", "awaiting_human"):
        raise typer.Exit(1)


def _session_agents(
    agents_json: str | None, err: Console, redactor: Redactor
) -> list[AgentDefinition]:
    """The agents given with --agents, their problems printed (redacted) as ``agents
    validate`` does."""
    if agents_json is None:
        return []
    from rich.markup import escape

    from subagents.inventory import explicit_agents_from_json

    definitions = explicit_agents_from_json(agents_json)
    for definition in definitions:
        name = escape(redactor.text(definition.name))
        for reason in definition.validation_errors:
            err.print(
                f"[red]--agents: {name} is invalid:[/] {escape(redactor.text(reason))}",
                highlight=False,
            )
        for reason in definition.warnings:
            err.print(
                f"[yellow]--agents: {name}:[/] {escape(redactor.text(reason))}", highlight=False
            )
    return definitions


def _prompt_for(runtime: Runtime, prompt: str | None, agent: str | None) -> str:
    """``prompt``, else the ``initialPrompt`` of ``agent``; a clear error without either."""
    from subagents.errors import SubagentsError

    if prompt is not None and prompt.strip():
        return prompt
    if agent is None:
        raise SubagentsError(
            "No prompt given.",
            hint="pass one (subagents run 'fix the failing test'), or run an agent whose file "
            "sets initialPrompt with --agent NAME",
        )
    definition = runtime.inventory.get(agent).definition
    if definition.initial_prompt is None or not definition.initial_prompt.strip():
        raise SubagentsError(
            f"No prompt given, and agent {definition.name!r} has no initialPrompt.",
            hint=f"pass a prompt (subagents run 'PROMPT' --agent {definition.name}), or set "
            f"initialPrompt in {definition.location}",
        )
    return definition.initial_prompt


def _open_store(cwd: Path | None) -> Any:
    """The project's store, after the daily retention clean-up."""
    from subagents.store.open import open_store
    from subagents.store.retention import load_retention_policy, maybe_cleanup_daily

    database = open_store(cwd=cwd)
    try:
        maybe_cleanup_daily(database, load_retention_policy(cwd))
    except BaseException:
        database.close()
        raise
    return database


def _ask_person(console: Console, redactor: Redactor) -> Any:
    from rich.markup import escape

    from subagents.tools.permissions import ApprovalDecision

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        import asyncio

        args = json.dumps(redactor.value(request.arguments), indent=2, ensure_ascii=False)
        console.print(
            f"\n[bold]{request.agent_type}[/] wants to run [bold]{request.tool_name}[/]:\n"
            f"{escape(args)}"
        )
        answer = await asyncio.to_thread(input, "Allow? [y/N/reason to deny] ")
        if answer.strip().lower() in {"y", "yes"}:
            return ApprovalDecision(approved=True)
        reason = answer.strip() if answer.strip().lower() not in {"", "n", "no"} else None
        return ApprovalDecision(approved=False, reason=reason or "the user declined")

    return approve
