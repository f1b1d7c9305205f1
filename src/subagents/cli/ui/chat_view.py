"""What one chat turn shows of its main agent: the prompt, the answers, compact tool lines.

:class:`Transcript` is an event handler like :class:`~subagents.cli.ui.blocks.BlockTree`, but it
keeps the *whole* turn of the main agent (a block keeps only its latest messages), because in a
chat the main agent's words are the conversation. Subagents stay blocks. Plain Rich, no
Textual: the line mode (``--no-tui``) prints the same text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.text import Text

from subagents.runtime import events as ev
from subagents.todos import TodoItem

if TYPE_CHECKING:
    from subagents.messages import ToolCall
    from subagents.redaction import Redactor, StreamRedactor

__all__ = ["DIFF_TOOLS", "Said", "ToolLine", "Transcript", "diff_lines", "render_transcript"]

DIFF_TOOLS = frozenset({"Edit", "Write", "MultiEdit"})
MAX_ITEMS = 500  # a turn longer than this keeps its latest items (the trace has them all)
MAX_DIFF_LINES = 12
_MAX_TEXT = 20_000
_SUMMARY_KEYS = ("file_path", "command", "pattern", "path", "url", "query", "description")


@dataclass(slots=True)
class Said:
    """Something the main agent said."""

    text: str


@dataclass(slots=True)
class ToolLine:
    """A tool call of the main agent; ``outcome`` is ``None`` while it runs."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    outcome: str | None = None
    result: str = ""


@dataclass(slots=True)
class Transcript:
    """The main agent's side of one turn, kept from the run's events (redacted).

    The main session is the first session started without a parent; events of other sessions
    (subagents) are left to the block tree. Never raises into the event bus.
    """

    redact: Callable[[str], str] = str
    stream_redactor: Callable[[], StreamRedactor] | None = None
    root: str | None = None
    items: list[Said | ToolLine] = field(default_factory=list)
    streaming: str = ""
    todos: tuple[TodoItem, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    version: int = 0
    errors: list[str] = field(default_factory=list)
    _children: set[str] = field(default_factory=set)
    _open: dict[str, ToolLine] = field(default_factory=dict)
    _stream: StreamRedactor | None = None

    @classmethod
    def redacted_by(cls, redactor: Redactor) -> Transcript:
        return cls(redact=redactor.text, stream_redactor=redactor.stream)

    def __call__(self, event: ev.Event) -> None:
        try:
            self._apply(event)
        except Exception as error:  # the run goes on whatever the view does
            if len(self.errors) < 20:
                self.errors.append(f"{type(event).__name__}: {type(error).__name__}: {error}")

    def _mine(self, agent_id: str) -> bool:
        if self.root is None and agent_id not in self._children:
            self.root = agent_id  # events of a main session whose start we did not see
        return agent_id == self.root

    def _apply(self, event: ev.Event) -> None:
        if isinstance(event, ev.SubagentStarted):
            self._children.add(event.agent_id)
            return
        if isinstance(event, ev.SessionStarted):
            if event.parent_id is not None:
                self._children.add(event.agent_id)
            elif self.root is None:
                self.root = event.agent_id
            return
        agent_id = getattr(event, "agent_id", None)
        if not isinstance(agent_id, str) or not self._mine(agent_id):
            return
        if isinstance(event, ev.TextDelta):
            self.streaming += self._streamed(event.text)
            self.streaming = self.streaming[-_MAX_TEXT:]
        elif isinstance(event, ev.TurnStarted):
            self.streaming, self._stream = "", None
        elif isinstance(event, ev.ModelResponded):
            self.streaming, self._stream = "", None
            if event.response.text.strip():
                self._add(Said(self._shown(event.response.text)))
            self.input_tokens += event.response.usage.input_tokens
            self.output_tokens += event.response.usage.output_tokens
        elif isinstance(event, ev.ToolCallStarted):
            self._started(event.call)
        elif isinstance(event, ev.ToolCallFinished):
            line = self._open.pop(event.call.id, None) or self._started(event.call)
            line.outcome = event.outcome.status
            line.result = self._shown(event.outcome.message.content)
        elif isinstance(event, ev.TodosUpdated):
            self.todos = tuple(
                TodoItem(self.redact(t.content), t.status, self.redact(t.active_form))
                for t in event.todos
            )
        else:
            return
        self.version += 1

    def _started(self, call: ToolCall) -> ToolLine:
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        shown = json.loads(self.redact(json.dumps(arguments, ensure_ascii=False, default=str)))
        line = ToolLine(call.id, call.name, shown if isinstance(shown, dict) else {})
        self._open[call.id] = line
        self._add(line)
        return line

    def _add(self, item: Said | ToolLine) -> None:
        self.items.append(item)
        if len(self.items) > MAX_ITEMS:
            del self.items[0]

    def _shown(self, text: str) -> str:
        text = self.redact(text)
        return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"

    def _streamed(self, text: str) -> str:
        if self.stream_redactor is None:
            return text
        if self._stream is None:
            self._stream = self.stream_redactor()
        return self._stream.feed(text)


def render_transcript(
    prompt: str, transcript: Transcript, *, width: int = 80, final: str | None = None
) -> Text:
    """The turn as text: ``› prompt``, then what the main agent said and did. ``final`` (the
    answer, shown on its own below the subagents) is left out of the items."""
    width = max(width, 20)
    text = Text()
    text.append(f"› {prompt}", style="bold")
    items = list(transcript.items)
    last = items[-1] if items else None
    if final is not None and isinstance(last, Said) and last.text.strip() == final.strip():
        items.pop()
    for item in items:
        text.append("\n")
        if isinstance(item, Said):
            text.append(f"◆ {item.text.strip()}")
        else:
            _append_tool(text, item, width)
    if transcript.streaming.strip():
        text.append("\n")
        text.append(f"◆ {transcript.streaming.strip()}", style="italic")
    return text


def _append_tool(text: Text, line: ToolLine, width: int) -> None:
    text.append(_cut(f"⚙ {line.name} {summarize(line.name, line.arguments)}", width), style="cyan")
    if line.name in DIFF_TOOLS:
        for sign, body in diff_lines(line.name, line.arguments):
            text.append("\n")
            style = {"+": "green", "-": "red"}.get(sign, "dim")
            text.append(_cut(f"  {sign} {body}" if sign in "+-" else f"  {body}", width), style)
    if line.outcome is None:
        text.append("\n")
        text.append("  ↳ running…", style="yellow")
        return
    first = (line.result.strip().splitlines() or [""])[0]
    text.append("\n")
    style = "green" if line.outcome == "ok" else "red"
    text.append(_cut(f"  ↳ {line.outcome}: {first}", width), style=style)


def summarize(name: str, arguments: dict[str, Any]) -> str:
    """A tool call in a few words: its main argument, else its arguments as JSON."""
    for key in _SUMMARY_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value.replace("\n", " ")
    return json.dumps(arguments, ensure_ascii=False, default=str)


def diff_lines(name: str, arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """The change an Edit / Write / MultiEdit makes, as ``(sign, line)``: ``-`` removed,
    ``+`` added, ``…`` for what is left out; at most :data:`MAX_DIFF_LINES` lines."""
    pairs: list[tuple[str, str]] = []
    if name == "Write":
        pairs.append(("", str(arguments.get("content", ""))))
    elif name == "Edit":
        pairs.append((str(arguments.get("old_string", "")), str(arguments.get("new_string", ""))))
    elif name == "MultiEdit":
        for edit in arguments.get("edits") or []:
            if isinstance(edit, dict):
                pairs.append((str(edit.get("old_string", "")), str(edit.get("new_string", ""))))
    lines: list[tuple[str, str]] = []
    for old, new in pairs:
        lines += [("-", line) for line in old.splitlines()]
        lines += [("+", line) for line in new.splitlines()]
    if len(lines) > MAX_DIFF_LINES:
        left = len(lines) - MAX_DIFF_LINES + 1
        lines = [*lines[: MAX_DIFF_LINES - 1], ("…", f"… {left} more lines")]
    return lines


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"
