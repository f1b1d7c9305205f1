"""Live progress of a run, one line per step, for the terminal.

Everything printed passes through a redactor first: tool arguments, errors, questions and the
main agent's streamed text (a secret split across two streamed pieces is caught whole, see
:class:`~subagents.redaction.StreamRedactor`).

Each model in use is named once, when the first session on it starts, with the server it
talks to and the modes that follow (``main runs on openai:qwen at http://127.0.0.1:8080/v1
(from OPENAI_BASE_URL): a local server, ...``; see :mod:`subagents.cli.servers`), given a
``describe`` function that knows the run's configuration.

Nothing stays silent for long: a provider call that is retried says so (``main: provider error
(HTTP 429), retrying in 2.0 s (attempt 2 of 6)``), and a tool call still running after
``still_running_after`` seconds (5) says so then and every ``still_running_every`` seconds (10)
after, with its duration once it ends. Those reminders come from :meth:`ProgressPrinter.tick`,
which a ticker task calls while a tool runs (started on the event loop that emits the events,
ended when no tool runs any more or at :meth:`ProgressPrinter.close`); tests call ``tick`` with
a clock of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.redaction import Redactor, StreamRedactor
    from subagents.runtime.events import (
        Event,
        SessionStarted,
        TodosUpdated,
        ToolCallFinished,
        WorkflowMapProgress,
    )

__all__ = [
    "STILL_RUNNING_AFTER",
    "STILL_RUNNING_EVERY",
    "TODO_MARKS",
    "DescribeModel",
    "ProgressPrinter",
    "progress_printer",
]

DescribeModel: TypeAlias = Callable[[str, str], "str | None"]
"""The line saying where a model runs, from the agent type of a session and its model's name
(``None``: nothing to say), e.g. :func:`subagents.cli.servers.session_describer`."""

_ARGUMENTS_WIDTH = 120
_ERROR_WIDTH = 200
STILL_RUNNING_AFTER = 5.0
"""Seconds a tool call runs before the progress output says it still runs."""
STILL_RUNNING_EVERY = 10.0
"""Seconds between two such reminders for the same call."""
_TICKER_MAX_NAP = 1.0  # a call started while the ticker naps is never reported late by more
# How each todo status is marked, and in which style, here and in the live UI and the trace.
TODO_MARKS: dict[str, tuple[str, str]] = {
    "completed": ("✓", "green"),
    "in_progress": ("▶", "bold cyan"),
    "pending": ("○", "dim"),
}


@dataclass(slots=True)
class _RunningTool:
    agent_id: str
    name: str
    started: float
    due: float  # when to say it still runs


class ProgressPrinter:
    """An event handler that prints one line per step; :meth:`close` prints what streamed
    text is still held back and stops the ticker.

    ``clock`` (seconds, monotonic) and ``sleep`` are injectable; with ``ticker`` false no task
    is started and only explicit :meth:`tick` calls report long tool calls. ``describe``
    names the server of each model the first time a session runs on it.
    """

    def __init__(
        self,
        console: Console,
        redactor: Redactor,
        *,
        clock: Callable[[], float] = time.monotonic,
        still_running_after: float = STILL_RUNNING_AFTER,
        still_running_every: float = STILL_RUNNING_EVERY,
        ticker: bool = True,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        describe: DescribeModel | None = None,
    ) -> None:
        self._console = console
        self._describe = describe
        self._described: set[str] = set()  # model names whose server was said
        self._redactor = redactor
        self._names: dict[str, str] = {}
        self._streams: dict[str, StreamRedactor] = {}
        self._clock = clock
        self._after = still_running_after
        self._every = still_running_every
        self._use_ticker = ticker
        self._sleep = sleep
        self._roots: set[str] = set()  # sessions without a parent: the run ends with them
        self._running: dict[tuple[str, str], _RunningTool] = {}  # by (agent id, call id)
        self._map_failed: dict[str, int] = {}  # each map node's failed items, as last shown
        self._ticker: asyncio.Task[None] | None = None
        self._held = 0

    def __call__(self, event: Event) -> None:
        from subagents.runtime import events as ev

        if isinstance(event, ev.SessionStarted):
            self._names[event.agent_id] = event.agent_type
            if event.parent_id is None:
                self._roots.add(event.agent_id)
            self._say_server(event)
            return
        if isinstance(event, ev.TextDelta):
            self._stream_text(event.agent_id, event.text)
            return
        self._end_stream(getattr(event, "agent_id", ""))
        self._track(event)
        self._print_step(event)
        if not self._running:
            self._stop_ticker()  # no stray task once the last call ended

    def close(self) -> None:
        self._running.clear()
        self._stop_ticker()
        for agent_id in list(self._streams):
            self._end_stream(agent_id)

    @property
    def ticking(self) -> bool:
        """Whether a ticker task is alive (it ends by itself once no tool call runs)."""
        return self._ticker is not None and not self._ticker.done()

    def tick(self, now: float | None = None) -> None:
        """Say which tool calls still run: each one once it has run ``still_running_after``
        seconds, then every ``still_running_every`` seconds (``now``: default the clock)."""
        if self._held or not self._running:
            return
        now = self._clock() if now is None else now
        due = [tool for tool in self._running.values() if tool.due <= now]
        if not due:
            return
        for agent_id in list(self._streams):
            self._end_stream(agent_id)
        for tool in due:
            self._console.print(
                f"[cyan]{self._label(tool.agent_id)}[/] → {self._shown(tool.name)} "
                f"[dim]still running ({int(now - tool.started)} s)[/]",
                highlight=False,
            )
            while tool.due <= now:
                tool.due += self._every

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """No reminders inside the block (e.g. while a person answers an approval prompt on
        the same terminal); the next one comes ``still_running_every`` seconds after it."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            later = self._clock() + self._every
            for tool in self._running.values():
                tool.due = max(tool.due, later)

    def _track(self, event: Event) -> None:
        """Keep the running tool calls (and start the ticker) as calls start and end."""
        from subagents.runtime import events as ev

        if isinstance(event, ev.ToolCallStarted):
            now = self._clock()
            key = (event.agent_id, event.call.id)
            self._running[key] = _RunningTool(
                event.agent_id, event.call.name, now, now + self._after
            )
            self._start_ticker()
        elif isinstance(event, ev.SubagentStarted):
            # the subagent shows its own progress, and its end with its duration
            self._running.pop((event.parent_id, event.tool_call_id), None)
        elif isinstance(event, ev.SessionPaused | ev.SessionFinished):
            # its calls will not report an end (cancelled, or waiting for a person)
            if isinstance(event, ev.SessionFinished) and event.agent_id in self._roots:
                self._running.clear()
            for key in [key for key in self._running if key[0] == event.agent_id]:
                del self._running[key]

    def _took(self, event: ToolCallFinished) -> str:
        """`` after 6.2 s`` for a call that ran longer than ``still_running_after``."""
        tool = self._running.pop((event.agent_id, event.call.id), None)
        if tool is None:
            return ""
        took = self._clock() - tool.started
        return f" after {took:.1f} s" if took > self._after else ""

    def _start_ticker(self) -> None:
        if not self._use_ticker or self.ticking:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: only explicit tick() calls report
            return
        self._ticker = loop.create_task(self._tick_while_running(), name="progress-ticker")

    async def _tick_while_running(self) -> None:
        while self._running:
            due = min(tool.due for tool in self._running.values())
            await self._sleep(min(max(due - self._clock(), 0.0), _TICKER_MAX_NAP))
            self.tick()

    def _stop_ticker(self) -> None:
        ticker, self._ticker = self._ticker, None
        if ticker is not None and not ticker.done():
            with contextlib.suppress(RuntimeError):  # its loop is closed: it runs no more
                ticker.cancel()

    def _say_server(self, event: SessionStarted) -> None:
        """One line on the server of the session's model, the first time it is used."""
        if self._describe is None or event.model_name in self._described:
            return
        self._described.add(event.model_name)
        line = self._describe(event.agent_type, event.model_name)
        if not line:
            return
        for agent_id in list(self._streams):
            self._end_stream(agent_id)
        self._console.print(
            f"[cyan]{self._shown(event.agent_type)}[/] runs on "
            f"{self._shown(self._redactor.text(line))}",
            highlight=False,
        )

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

    def _shown(self, text: str) -> str:
        """A model's or a tool's ``text`` for a markup line (see :func:`markup_safe`)."""
        from subagents.cli.answer import markup_safe

        return markup_safe(text, self._console)

    def _print_text(self, text: str) -> None:
        """The main agent's streamed text, dimmed; as :mod:`subagents.cli.answer` prints an
        answer (written past Rich, whose wrapping would break each piece at the width as if it
        started a line), since at a terminal it is the answer: it is not printed again."""
        if not text:
            return
        from subagents.cli.answer import shown_text
        from subagents.cli.plain import paint

        console = self._console
        shown = shown_text(text, terminal=console.is_terminal)
        console.file.write(paint(shown, "dim", colour=console.color_system is not None))
        console.file.flush()

    def _print_step(self, event: Event) -> None:
        from subagents.cli.answer import quote_markup
        from subagents.runtime import events as ev

        console, redact, shown = self._console, self._redactor, self._shown
        if isinstance(event, ev.ToolCallStarted):
            args = json.dumps(redact.value(event.call.arguments), ensure_ascii=False)
            if len(args) > _ARGUMENTS_WIDTH:
                args = args[: _ARGUMENTS_WIDTH - 3] + "..."
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] → {shown(event.call.name)} {shown(args)}",
                highlight=False,
            )
        elif isinstance(event, ev.ToolCallFinished):
            took = self._took(event)
            if event.outcome.status == "ok":
                if took:
                    console.print(
                        f"[cyan]{self._label(event.agent_id)}[/] → {shown(event.call.name)} "
                        f"[dim]finished{took}[/]",
                        highlight=False,
                    )
                return
            content = redact.text(event.outcome.message.content)
            first_line = (content.splitlines() or [""])[0][:_ERROR_WIDTH]
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] [yellow]{shown(event.call.name)} "
                f"{event.outcome.status}{took}[/]: {shown(first_line)}",
                highlight=False,
            )
        elif isinstance(event, ev.ModelRetrying):
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/]: [yellow]provider error "
                f"({shown(redact.text(event.reason))})[/], retrying in {event.delay_s:.1f} s "
                f"(attempt {event.attempt} of {event.max_attempts})",
                highlight=False,
            )
        elif isinstance(event, ev.SubagentStarted):
            mode = " (background)" if event.background else ""
            console.print(
                f"[magenta]⮑ {quote_markup(event.subagent_type)}[/] started{mode}: "
                f"{shown(redact.text(event.description))} "
                f"[dim]({quote_markup(event.resolved_model)})[/]"
            )
        elif isinstance(event, ev.SubagentFinished):
            spawn = event.result
            state = "[green]done[/]" if spawn.success else f"[red]{spawn.status}[/]"
            console.print(
                f"[magenta]⮐ {quote_markup(spawn.subagent_type)}[/] {state} in "
                f"{spawn.duration_ms / 1000:.1f}s, {spawn.tool_use_count} tool calls"
            )
            if spawn.worktree_path:
                console.print(
                    f"  [yellow]its worktree is kept:[/] {quote_markup(spawn.worktree_path)} "
                    f"(branch {quote_markup(spawn.worktree_branch or '?')})",
                    highlight=False,
                )
        elif isinstance(event, ev.ModelFallback):
            console.print(
                f"[yellow]{quote_markup(event.agent_type)} runs on "
                f"{quote_markup(event.model_name)} (its parent's model) instead of "
                f"{shown(redact.text(event.requested))}:[/] "
                f"{shown(redact.text(event.reason))}; {shown(redact.text(event.hint))}",
                highlight=False,
            )
        elif isinstance(event, ev.MCPServerFailed):
            console.print(
                f"[yellow]MCP server {quote_markup(event.server)} is left out:[/] "
                f"{shown(redact.text(event.error))}"
            )
        elif isinstance(event, ev.InstructionsNotice):
            console.print(f"[yellow]Project instructions:[/] {shown(redact.text(event.message))}")
        elif isinstance(event, ev.SessionPaused):
            question = event.question
            how = ""
            if event.alone:  # the rest of the run goes on: say how to answer it
                how = (
                    f" (the others go on; answer with: subagents inbox "
                    f"{question.task_id[:8]} {question.tool_call_id} --approve, or --reject REASON)"
                )
            console.print(
                f"[yellow]{self._label(event.agent_id)} waits for a person:[/] "
                f"{shown(redact.text(question.text))}{quote_markup(how)}"
            )
        elif isinstance(event, ev.LoopNoticed):
            verdict = (
                "[red]stopped, it loops:[/]" if event.stopped else "[yellow]repeats itself:[/]"
            )
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] {verdict} "
                f"{shown(redact.text(event.message))}",
                highlight=False,
            )
        elif isinstance(event, ev.AgentStalled):
            verdict = "[red]stalled, stopped:[/]" if event.stopped else "[yellow]stalled:[/]"
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] {verdict} "
                f"{shown(redact.text(event.message))}",
                highlight=False,
            )
        elif isinstance(event, ev.AnswerRejected):
            console.print(
                f"[cyan]{self._label(event.agent_id)}[/] [yellow]answer not taken as it came:[/] "
                f"{shown(redact.text(event.message))}",
                highlight=False,
            )
        elif isinstance(event, ev.TodosUpdated):
            self._print_todos(event)
        elif isinstance(event, ev.WorkflowNodeStarted):
            detail = f" {quote_markup(event.detail)}" if event.detail else ""
            console.print(
                f"[bold blue]◆ {quote_markup(event.node)}[/] [dim]({event.node_type}{detail})[/]",
                highlight=False,
            )
        elif isinstance(event, ev.WorkflowMapProgress):
            self._map_progress(event)
        elif isinstance(event, ev.WorkflowNodeFinished):
            console.print(
                f"[blue]  {quote_markup(event.node)} → {quote_markup(event.next)}[/] "
                f"[dim]{event.duration_ms / 1000:.1f}s[/]",
                highlight=False,
            )

    def _map_progress(self, event: WorkflowMapProgress) -> None:
        """A map's counts: at its start, at each tenth of its items, at a new failure and
        at its end (a map of 1,000 items prints about ten lines, not a thousand)."""
        ended = event.done + event.failed
        step = max(1, event.total // 10)
        new_failure = event.failed != self._map_failed.get(event.node, 0)
        if ended and ended % step and ended != event.total and not new_failure:
            return
        from subagents.cli.answer import quote_markup

        self._map_failed[event.node] = event.failed
        self._console.print(
            f"[blue]  {quote_markup(event.node)}: {event.done}/{event.total} done, "
            f"{event.running} running, {event.queued} queued, {event.failed} failed[/]",
            highlight=False,
        )

    def _print_todos(self, event: TodosUpdated) -> None:
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
            console.print(f"  [{style}]{mark} {self._shown(text)}[/]", highlight=False)


def progress_printer(
    console: Console,
    redactor: Redactor | None = None,
    *,
    still_running_after: float = STILL_RUNNING_AFTER,
    describe: DescribeModel | None = None,
) -> ProgressPrinter:
    """An event handler that prints one line per step to ``console``, redacted with
    ``redactor`` (default: the environment's secrets and the token formats); ``describe``
    says where each model runs (see :class:`ProgressPrinter`)."""
    if redactor is None:
        from subagents.redaction import Redactor

        redactor = Redactor()
    return ProgressPrinter(
        console, redactor, still_running_after=still_running_after, describe=describe
    )
