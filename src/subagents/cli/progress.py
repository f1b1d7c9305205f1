"""Live progress of a run, one line per step, for the terminal."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.runtime.events import Event, EventHandler

__all__ = ["progress_printer"]


def progress_printer(console: Console) -> EventHandler:
    """An event handler that prints one line per step to stderr."""
    from rich.markup import escape

    from subagents.runtime import events as ev

    names: dict[str, str] = {}
    streaming: dict[str, bool] = {}

    def label(agent_id: str) -> str:
        return names.get(agent_id, "main")

    def handle(event: Event) -> None:
        if isinstance(event, ev.SessionStarted):
            names[event.agent_id] = event.agent_type
            return
        if isinstance(event, ev.TextDelta):
            if event.agent_id in names and names[event.agent_id] != "main":
                return  # subagent text shows up in its summary
            streaming[event.agent_id] = True
            console.print(event.text, end="", markup=False, highlight=False, style="dim")
            return
        if streaming.pop(getattr(event, "agent_id", ""), False):
            console.print()
        if isinstance(event, ev.ToolCallStarted):
            args = json.dumps(event.call.arguments, ensure_ascii=False)
            if len(args) > 120:
                args = args[:117] + "..."
            console.print(
                f"[cyan]{label(event.agent_id)}[/] → {event.call.name} {args}",
                markup=True,
                highlight=False,
            )
        elif isinstance(event, ev.ToolCallFinished) and event.outcome.status != "ok":
            first_line = (event.outcome.message.content.splitlines() or [""])[0][:200]
            console.print(
                f"[cyan]{label(event.agent_id)}[/] [yellow]{event.call.name} "
                f"{event.outcome.status}[/]: {escape(first_line)}",
                highlight=False,
            )
        elif isinstance(event, ev.SubagentStarted):
            mode = " (background)" if event.background else ""
            console.print(
                f"[magenta]⮑ {event.subagent_type}[/] started{mode}: {escape(event.description)} "
                f"[dim]({event.resolved_model})[/]"
            )
        elif isinstance(event, ev.SubagentFinished):
            spawn = event.result
            state = "[green]done[/]" if spawn.success else f"[red]{spawn.status}[/]"
            console.print(
                f"[magenta]⮐ {spawn.subagent_type}[/] {state} in {spawn.duration_ms / 1000:.1f}s, "
                f"{spawn.tool_use_count} tool calls"
            )
        elif isinstance(event, ev.MCPServerFailed):
            console.print(
                f"[yellow]MCP server {escape(event.server)} is left out:[/] {escape(event.error)}"
            )
        elif isinstance(event, ev.SessionPaused):
            console.print(
                f"[yellow]{label(event.agent_id)} waits for a person:[/] "
                f"{escape(event.question.text)}"
            )

    return handle
