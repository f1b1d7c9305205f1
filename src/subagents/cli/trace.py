"""`subagents trace TASK`: the run as a tree (sessions nested under the Task calls that started
them, with durations, tokens, tool calls and errors), or ``--json`` for the seed format.

Only typer is imported at module level; the store, the trace view and Rich come in inside the
command so that ``subagents --help`` stays fast. Every value shown has been redacted: when it
was stored, and again here with the project's credentials (an imported task may hold some).
What a model, a tool or an agent file wrote is quoted as text, never read as Rich markup, and
at a terminal its control characters are shown escaped (see :mod:`subagents.cli.answer`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from subagents.cli.answer import markup_line, markup_text
from subagents.cli.common import store_path, user_errors
from subagents.cli.options import CwdOption, JsonOption, StoreOption, TaskArgument
from subagents.cli.usage import project_prices

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from rich.tree import Tree

    from subagents.cli.common import StoreTarget
    from subagents.models.prices import ModelPrice
    from subagents.tracing.view import SessionTrace, TaskTrace, ToolCallTrace

__all__ = ["format_duration", "render_tree", "trace_command", "workflow_path_text"]

_STATUS_STYLES = {
    "completed": "green",
    "failed": "red",
    "error": "red",
    "running": "cyan",
    "active": "cyan",
    "awaiting_human": "yellow",
    "cancelled": "magenta",
}
_ARGUMENTS_WIDTH = 60
_ERROR_WIDTH = 120


def trace_command(
    task: TaskArgument,
    as_json: JsonOption = False,
    cwd: CwdOption = None,
    store: StoreOption = None,
    otel: Annotated[
        bool,
        typer.Option(
            "--otel",
            help="Send the task's spans to an OpenTelemetry collector (OTLP; "
            "OTEL_EXPORTER_OTLP_ENDPOINT, default localhost:4318) instead of printing it.",
        ),
    ] = False,
    otel_content: Annotated[
        bool,
        typer.Option("--otel-content", help="With --otel: include tool arguments and results."),
    ] = False,
) -> None:
    """Show what a task did: its sessions (subagents nested under the Task calls that started
    them), model calls, tool calls, durations, tokens and errors."""
    with user_errors():
        trace = _load(store_path(cwd, store), task, cwd)
        if otel:
            _export(trace, include_content=otel_content)
            return
    if as_json:
        import json

        from subagents.tracing.view import trace_to_json

        typer.echo(json.dumps(trace_to_json(trace), indent=2, ensure_ascii=False, default=str))
        return
    from subagents.cli.common import make_console

    with user_errors():  # only the tree shows a cost: --json and --otel need no config
        prices = project_prices(cwd)
    # the terminal's width; logs and CI get a wide page instead of wrapped lines (or COLUMNS)
    console = make_console()
    console.print(render_tree(trace, terminal=console.is_terminal, prices=prices), highlight=False)


def _export(trace: TaskTrace, *, include_content: bool) -> None:
    from subagents.tracing.otel import export_trace
    from subagents.tracing.otlp import capture_content, otlp_provider

    otlp = otlp_provider(force=True)
    if otlp is None:  # OTEL_SDK_DISABLED
        typer.echo("OTEL_SDK_DISABLED is set: nothing was sent.", err=True)
        return
    try:
        export_trace(
            trace,
            tracer_provider=otlp.provider,
            include_content=include_content or capture_content(),
        )
    finally:
        otlp.shutdown()
    problem = otlp.problem()
    if problem is not None:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(1)
    typer.echo(f"sent {otlp.sent} spans of task {trace.task.id} to {otlp.endpoint}")


def _load(path: StoreTarget, task_id: str, cwd: Path | None) -> TaskTrace:
    from subagents.errors import StoreError
    from subagents.secrets import workspace_redactor
    from subagents.store.open import open_store
    from subagents.tracing.view import build_trace

    if not path.exists():
        raise StoreError(
            f"no store at {path}",
            hint="run a task first ('subagents run'), or name the store with --store",
        )
    opened = open_store(path.location)
    try:
        return build_trace(opened, task_id, redactor=workspace_redactor(cwd))
    finally:
        opened.close()


def render_tree(
    trace: TaskTrace, *, terminal: bool = True, prices: Mapping[str, ModelPrice] | None = None
) -> Tree:
    """The Rich tree ``subagents trace`` prints; for a ``terminal``, the control characters of
    what models, tools and files wrote are shown escaped (``\\x1b``), else kept as they are.
    With ``prices`` (a config's ``[prices]``), the task's cost when its models have one."""
    from rich.tree import Tree

    task = trace.task
    label = (
        f"[bold]Task {task.id[:8]}[/] {_status(task.status)}  {format_duration(trace.duration_ms)}"
        f"  {_tokens(trace.input_tokens, trace.output_tokens, trace.usage_estimated)}"
    )
    if trace.cache_hit_rate is not None:
        label += f"  cache hit rate {trace.cache_hit_rate:.0%}"
    if prices is not None:
        cost = trace.cost(prices)
        label += f"  ${cost.usd:.4f}" if cost.known and cost.usd else ""
    if task.description:
        label += f"  [dim]{markup_line(task.description, 80, terminal=terminal)}[/]"
    if task.error:
        label += f"\n[red]error: {markup_line(task.error, _ERROR_WIDTH, terminal=terminal)}[/]"
    if trace.workflow_path:
        path = markup_text(workflow_path_text(trace.workflow_path), terminal=terminal)
        label += f"\n[blue]path:[/] {path}"
    tree = Tree(label)
    if not trace.roots:
        tree.add("[dim]no sessions recorded[/]")
    nodes = {
        str(step["session_id"]): str(step["node"])
        for step in trace.workflow_path
        if step.get("session_id")
    }
    for root in trace.roots:
        _add_session(tree, root, terminal, nodes.get(root.session_id))
    return tree


def workflow_path_text(path: list[dict[str, Any]]) -> str:
    """``review -> [approve] -> fix -> verify``: the nodes a workflow ran, and decisions."""
    parts = []
    for step in path:
        if "decision" in step:
            parts.append(f"[{str(step['decision']).split(' at ')[0]}]")
        else:
            parts.append(str(step.get("node", "?")))
    return " -> ".join(parts)


def _add_session(
    parent: Tree, session: SessionTrace, terminal: bool, workflow_node: str | None = None
) -> None:
    def quoted(text: str) -> str:
        return markup_text(text, terminal=terminal)

    def line(text: str, width: int) -> str:
        return markup_line(text, width, terminal=terminal)

    at_node = f"[blue]node {quoted(workflow_node)}:[/] " if workflow_node else ""
    label = (
        f"{at_node}[bold]{quoted(session.agent)}[/] [dim]{session.session_id[:8]}[/] "
        f"{quoted(session.model)} {_status(session.status)}  "
        f"{session.turns} turns  "
        f"{_tokens(session.input_tokens, session.output_tokens, session.usage_estimated)}"
        f"{_cached(session.cache_read_tokens)}  {format_duration(session.duration_ms)}"
    )
    if session.description:
        label += f"  [dim]{line(session.description, 60)}[/]"
    if session.error:
        label += f"\n[red]error: {line(session.error, _ERROR_WIDTH)}[/]"
    node = parent.add(label)
    for event in session.events:
        if event.status == "warning":
            node.add(f"[yellow]{quoted(event.name)}: {line(event.message, 200)}[/]")
        if event.name == "worktree_kept":
            where = quoted(str(event.data.get("worktree_path", "?")))
            branch = quoted(str(event.data.get("worktree_branch", "?")))
            node.add(f"[yellow]worktree kept:[/] {where} (branch {branch})")
    if session.todos:
        _add_todos(node, session, terminal)
    if session.model_calls:
        calls = session.model_calls
        spent = sum(call.duration_ms or 0.0 for call in calls)
        node.add(
            f"[dim]{len(calls)} model call{'s' if len(calls) != 1 else ''}  "
            f"{format_duration(spent)}  "
            + _tokens(
                sum(c.input_tokens for c in calls),
                sum(c.output_tokens for c in calls),
                session.usage_estimated,
            )
            + "[/]"
        )
    waiting = {child.session_id: child for child in session.children}
    for call in session.tool_calls:
        call_node = node.add(_tool_label(call, terminal))
        child = waiting.pop(call.child_session_id or "", None)
        if child is not None:
            _add_session(call_node, child, terminal)
    for child in session.children:
        if child.session_id in waiting:
            _add_session(node, child, terminal)


def _add_todos(node: Tree, session: SessionTrace, terminal: bool) -> None:
    from subagents.cli.ui.progress import TODO_MARKS
    from subagents.todos import todo_counts

    todos = node.add(f"[dim]todos ({todo_counts(session.todos)})[/]")
    for item in session.todos:
        mark, style = TODO_MARKS[item.status]
        content = markup_line(item.content, _ERROR_WIDTH, terminal=terminal)
        todos.add(f"[{style}]{mark} {content}[/]")


def _tool_label(call: ToolCallTrace, terminal: bool) -> str:
    arguments = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    text = (
        f"{markup_text(call.name, terminal=terminal)}"
        f"[dim]({markup_line(arguments, _ARGUMENTS_WIDTH, terminal=terminal)})[/]  "
        f"{format_duration(call.duration_ms)}  "
    )
    if call.repairs:
        repairs = markup_line("; ".join(call.repairs), 200, terminal=terminal)
        text += f"[yellow]repaired: {repairs}[/]  "
    if not call.failed:
        return text + "[green]ok[/]"
    reason = markup_line(_first_line(call.error or ""), _ERROR_WIDTH, terminal=terminal)
    outcome = markup_text(
        call.outcome if call.outcome not in ("", "ok") else "error", terminal=terminal
    )
    return text + f"[red]{outcome}" + (f": {reason}" if reason else "") + "[/]"


def format_duration(milliseconds: float | None) -> str:
    """``0.4 ms``, ``12.3 ms``, ``1.50 s``, ``2m 03s``; ``-`` when unknown."""
    if milliseconds is None:
        return "-"
    if milliseconds < 1000:
        return f"{milliseconds:.1f} ms"
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _tokens(input_tokens: int, output_tokens: int, estimated: bool = False) -> str:
    """``12 in / 3 out tokens``; ``~12 in / ~3 out tokens (estimated)`` where a server
    reported no counts and they were estimated from lengths."""
    if estimated:
        return f"~{input_tokens} in / ~{output_tokens} out tokens (estimated)"
    return f"{input_tokens} in / {output_tokens} out tokens"


def _cached(read: int) -> str:
    return f" ({read:,} from the cache)" if read else ""


def _status(status: str) -> str:
    return f"[{_STATUS_STYLES.get(status, 'white')}]{status}[/]"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""
