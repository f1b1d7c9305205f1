"""Live progress of a run, one line per step, for the terminal.

Everything printed passes through a redactor first: tool arguments, errors, questions and the
main agent's streamed text (a secret split across two streamed pieces is caught whole, see
:class:`~subagents.tracing.redact.StreamRedactor`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.runtime.events import Event, TodosUpdated
    from subagents.tracing.redact import Redactor, StreamRedactor

__all__ = ["TODO_MARKS", "ProgressPrinter", "progress_printer"]

_ARGUMENTS_WIDTH = 120
_ERROR_WIDTH = 200
# How each todo status is marked, and in which style, here and in the live UI and the trace.
TODO_MARKS: dict[str, tuple[str, str]] = {
    "completed": ("✓", "green"),
    "in_progress": ("▶", "bold cyan"),
    "pending": ("○", "dim"),
}


class ProgressPrinter:
    """An event handler that prints one line per step; :meth:`close` prints what streamed
    text is still held back."""

    def __init__(self, console: Console, redactor: Redactor) -> None:
        self._console = console
        self._redactor = redactor
        self._names: dict[str, str] = {}
        self._streams: dict[str, StreamRedactor] = {}

    def __call__(self, event: Event) -> None:
        from subagents.runtime import events as ev

        if isinstance(event, ev.SessionStarted):
            self._names[event.agent_id] = event.agent_type
            return
        if isinstance(event, ev.TextDelta):
            self._stream_text(event.agent_id, event.text)
            return
        self._end_stream(getattr(event, "agent_id", ""))
        self._print_step(event)

    def close(self) -> None:
        for agent_id in list(self._streams):
            self._end_stream(agent_id)

    def _label(self, agent_id: str) -> str:
        return self._names.get(agent_id, "main")

    def _stream_text(self, agent_id: str, text: str) -> None:
        if self._names.get(agent_id, "main") != "main":
            return  # subagent text shows up in its summary
        stream = self._streams.get(agent_id)
        if stream is None:
            stream = self._streams[agent_id] = self._redactor.stream()
        self._print_text(stream.feed(text))

    def _end_stream(self, agent_id: str) -> None:
        stream = self._streams.pop(agent_id, None)
        if stream is not None:
            self._print_text(stream.close())
            self._console.print()

    def _print_text(self, text: str) -> None:
        if text:
            self._console.print(text, end="", markup=False, highlight=False, style="dim")

    def _print_step(self, event: Event) -> None:
        from rich.markup import escape

        from subagents.runtime import events as ev

        console, redact = self._console, self._redactor
        if isinstance(event, ev.ToolCallStarted):
            args = json.dumps(redact.value(event.call.arguments), ensure_ascii=False)
            if len(args) > _ARGUMENTS_WIDTH:
                args = args[: _ARGUMENTS_WIDTH - 3] + "..."
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] → {escape(event.call.name)} "
                f"{escape(args)}",
                highlight=False,
            )
        elif isinstance(event, ev.ToolCallFinished) and event.outcome.status != "ok":
            content = redact.text(event.outcome.message.content)
            first_line = (content.splitlines() or [""])[0][:_ERROR_WIDTH]
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] [yellow]{escape(event.call.name)} "
                f"{event.outcome.status}[/]: {escape(first_line)}",
                highlight=False,
            )
        elif isinstance(event, ev.SubagentStarted):
            mode = " (background)" if event.background else ""
            console.print(
                f"[magenta]⮑ {escape(event.subagent_type)}[/] started{mode}: "
                f"{escape(redact.text(event.description))} [dim]({escape(event.resolved_model)})[/]"
            )
        elif isinstance(event, ev.SubagentFinished):
            spawn = event.result
            state = "[green]done[/]" if spawn.success else f"[red]{spawn.status}[/]"
            console.print(
                f"[magenta]⮐ {escape(spawn.subagent_type)}[/] {state} in "
                f"{spawn.duration_ms / 1000:.1f}s, {spawn.tool_use_count} tool calls"
            )
            if spawn.worktree_path:
                console.print(
                    f"  [yellow]its worktree is kept:[/] {escape(spawn.worktree_path)} "
                    f"(branch {escape(spawn.worktree_branch or '?')})",
                    highlight=False,
                )
        elif isinstance(event, ev.ModelFallback):
            console.print(
                f"[yellow]{escape(event.agent_type)} runs on {escape(event.model_name)} (its "
                f"parent's model) instead of {escape(redact.text(event.requested))}:[/] "
                f"{escape(redact.text(event.reason))}; {escape(redact.text(event.hint))}",
                highlight=False,
            )
        elif isinstance(event, ev.MCPServerFailed):
            console.print(
                f"[yellow]MCP server {escape(event.server)} is left out:[/] "
                f"{escape(redact.text(event.error))}"
            )
        elif isinstance(event, ev.InstructionsNotice):
            console.print(f"[yellow]Project instructions:[/] {escape(redact.text(event.message))}")
        elif isinstance(event, ev.SessionPaused):
            console.print(
                f"[yellow]{self._label(event.agent_id)} waits for a person:[/] "
                f"{escape(redact.text(event.question.text))}"
            )
        elif isinstance(event, ev.LoopNoticed):
            verdict = (
                "[red]stopped, it loops:[/]" if event.stopped else "[yellow]repeats itself:[/]"
            )
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] {verdict} "
                f"{escape(redact.text(event.message))}",
                highlight=False,
            )
        elif isinstance(event, ev.TodosUpdated):
            self._print_todos(event)
        elif isinstance(event, ev.WorkflowNodeStarted):
            detail = f" {escape(event.detail)}" if event.detail else ""
            console.print(
                f"[bold blue]◆ {escape(event.node)}[/] [dim]({event.node_type}{detail})[/]",
                highlight=False,
            )
        elif isinstance(event, ev.WorkflowNodeFinished):
            console.print(
                f"[blue]  {escape(event.node)} → {escape(event.next)}[/] "
                f"[dim]{event.duration_ms / 1000:.1f}s[/]",
                highlight=False,
            )

    def _print_todos(self, event: TodosUpdated) -> None:
        from rich.markup import escape

        from subagents.todos import todo_counts

        console, redact = self._console, self._redactor
        console.print(
            f"[cyan]{self._label(event.agent_id)}[/] todos ({todo_counts(event.todos)})",
            highlight=False,
        )
        for item in event.todos:
            mark, style = TODO_MARKS[item.status]
            text = redact.text(item.shown)
            if len(text) > _ARGUMENTS_WIDTH:
                text = text[: _ARGUMENTS_WIDTH - 3] + "..."
            console.print(f"  [{style}]{mark} {escape(text)}[/]", highlight=False)


def progress_printer(console: Console, redactor: Redactor | None = None) -> ProgressPrinter:
    """An event handler that prints one line per step to ``console``, redacted with
    ``redactor`` (default: the environment's secrets and the token formats)."""
    if redactor is None:
        from subagents.tracing.redact import Redactor

        redactor = Redactor()
    return ProgressPrinter(console, redactor)
