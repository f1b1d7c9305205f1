"""`subagents run PROMPT`: run one agent to completion and print its answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.tools.permissions import ApprovalDecision, ApprovalRequest

__all__ = ["run_command"]


def run_command(
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Run this agent instead of the main agent.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Model as PROVIDER:MODEL or an alias (sonnet, haiku)."),
    ] = None,
    cwd: Annotated[
        Path | None, typer.Option("--cwd", help="Workspace directory (default: current).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    permission_mode: Annotated[
        str,
        typer.Option(
            "--permission-mode",
            help="default | acceptEdits | plan | bypassPermissions",
        ),
    ] = "default",
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Approve every tool call that would ask (headless)."),
    ] = False,
) -> None:
    """Run an agent on PROMPT, streaming its progress, and print the final answer."""
    from rich.console import Console
    from rich.markup import escape

    from subagents.cli.progress import progress_printer
    from subagents.errors import SubagentsError
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.tools.permissions import PERMISSION_MODES

    err = Console(stderr=True)
    if permission_mode not in PERMISSION_MODES:
        err.print(
            f"[red]Unknown permission mode {permission_mode!r}[/] - use one of: "
            + ", ".join(PERMISSION_MODES)
        )
        raise typer.Exit(2)
    interactive = sys.stdin.isatty() and not yes and not as_json
    events = EventBus([] if as_json else [progress_printer(err)])
    runtime = Runtime(
        cwd=cwd,
        model=model,
        permission_mode=permission_mode,  # type: ignore[arg-type]
        approver=_ask_person(err) if interactive else None,
        headless="allow" if yes else "deny",
        events=events,
        stream=not as_json,
    )
    try:
        result = runtime.run_sync(prompt, agent=agent)
    except SubagentsError as error:
        err.print(f"[red]Error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted.[/]")
        raise typer.Exit(130) from None
    if as_json:
        spawns = runtime.last_delegation.spawn_results if runtime.last_delegation else []
        payload: dict[str, Any] = {
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
        typer.echo(json.dumps(payload, indent=2))
    else:
        out = Console()
        out.print()
        out.print(result.output, markup=False, highlight=False)
        if not result.success:
            err.print(f"[red]Run {result.status}:[/] {escape(result.error or '')}")
    if not result.success:
        raise typer.Exit(1)


def _ask_person(console: Console) -> Any:
    from subagents.tools.permissions import ApprovalDecision

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        import asyncio

        args = json.dumps(request.arguments, indent=2, ensure_ascii=False)
        console.print(
            f"\n[bold]{request.agent_type}[/] wants to run [bold]{request.tool_name}[/]:\n{args}"
        )
        answer = await asyncio.to_thread(input, "Allow? [y/N/reason to deny] ")
        if answer.strip().lower() in {"y", "yes"}:
            return ApprovalDecision(approved=True)
        reason = answer.strip() if answer.strip().lower() not in {"", "n", "no"} else None
        return ApprovalDecision(approved=False, reason=reason or "the user declined")

    return approve
