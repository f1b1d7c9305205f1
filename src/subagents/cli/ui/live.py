"""The live terminal UI of `subagents run --ui`: one block per agent, expandable, updated live.

The run executes inside the Textual app's event loop; a :class:`~subagents.cli.ui.blocks.BlockTree`
subscribed to the run's events keeps the model up to date, and a timer redraws only the blocks
that changed, at most every ``refresh_interval`` seconds, so a busy run pays for one dict
update per event, not for a redraw.

While the app runs it is the run's approver: a tool call that needs approval opens an
:class:`ApprovalScreen` (approve, reject with a reason, or modify the arguments); requests of
parallel subagents queue and are shown one after another.

Textual is imported with this module: import it only when the UI starts.
"""

from __future__ import annotations

import asyncio
import json
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static, TextArea

from subagents.cli.ui.blocks import (
    WAITING_FOR_YOU,
    AgentBlock,
    BlockMessage,
    BlockTree,
    format_duration,
    format_tokens,
    short_id,
)
from subagents.cli.ui.progress import TODO_MARKS
from subagents.cli.usage import runtime_prices
from subagents.redaction import Redactor
from subagents.tools.permissions import ApprovalDecision

if TYPE_CHECKING:
    from textual.widget import AwaitMount

    from subagents.runtime.result import RunResult
    from subagents.runtime.runtime import Runtime
    from subagents.tools.permissions import ApprovalRequest, Approver
    from subagents.workflows.graph import Workflow

__all__ = [
    "DECLINED_REASON",
    "QUIT_REASON",
    "ApprovalQueue",
    "ApprovalScreen",
    "BlockView",
    "RunApp",
    "render_block",
    "run_in_ui",
]

STATUS_STYLES = {
    "initializing": "yellow",
    "active": "bold cyan",
    "completed": "bold green",
    "error": "bold red",
    "cancelled": "magenta",
    "paused": "bold yellow",
    WAITING_FOR_YOU: "bold black on yellow",
}
DECLINED_REASON = "the user declined"
QUIT_REASON = "the user quit"
_RUN_ENDED_REASON = "the run ended before the user answered"
# the app's keys that must not fire while a screen (approval, command palette) is on top
_MAIN_SCREEN_ACTIONS = frozenset({"move", "toggle_block", "toggle_all", "quit_run"})
_KIND_MARKS = {"user": ("› ", "bold"), "assistant": ("◆ ", "white"), "tool": ("⚙ ", "cyan")}
_OUTCOME_STYLES = {"ok": "green", None: "yellow"}
_EXPANDED_LINES = 4  # lines of each message an expanded block shows
_TICK_REDRAW_SECONDS = 0.5  # running blocks' clocks move even without events


def render_block(
    tree: BlockTree, block: AgentBlock, *, selected: bool = False, width: int = 100
) -> Text:
    """The block as text: a header line, then its message window and any streamed text."""
    width = max(width, 30)
    text = _header(tree, block, selected, width)
    if block.todos:
        _append_todos(text, block, width)
    lines_each = _EXPANDED_LINES if block.expanded else 1
    for message in block.window():
        _append_message(text, message, lines_each, width)
    if block.streaming:
        tail = block.streaming.strip().splitlines()[-lines_each:] or [""]
        for line in tail:
            text.append("\n")
            text.append(_cut("… " + line, width), style="italic dim")
    if block.retrying and not block.finished:
        text.append("\n")
        text.append(_cut(f"↻ {block.retrying}", width), style="yellow")
    if block.error and block.finished:
        text.append("\n")
        text.append(_cut(f"✗ {block.error}", width), style="red")
    return text


# Header fields a narrow terminal drops first, in this order, before cutting the line.
_DROPPED_FIRST = ("id", "model", "cost", "tokens", "calls")


def _header(tree: BlockTree, block: AgentBlock, selected: bool, width: int) -> Text:
    """The block's one header line; fields that do not fit are left out, least useful first."""
    calls = "tool call" if block.tool_calls == 1 else "tool calls"
    status = block.shown_status
    fields: list[tuple[str, str, str]] = [
        ("arrow", ("▼ " if block.expanded else "▶ "), "bold" if selected else "dim"),
        ("name", block.agent_type, "bold magenta" if block.parent_id else "bold"),
        ("id", f"  {block.short_id}", "dim"),
        ("model", f"  {_one_line(block.model)}" if block.model else "", "blue"),
        ("status", "  ● " + status, STATUS_STYLES.get(status, "")),
        ("calls", f"  {block.tool_calls} {calls}", "dim"),
        ("tokens", f"  {format_tokens(block.tokens)}", "dim"),
        ("cost", f"  ${block.cost_usd:.4f}" if block.cost_usd else "", "dim"),
        ("elapsed", f"  {format_duration(tree.elapsed_ms(block))}", "dim"),
        ("background", "  [background]" if block.background else "", "italic dim"),
        ("description", f"  {_one_line(block.description)}" if block.description else "", "italic"),
    ]
    for dropped in _DROPPED_FIRST:
        if sum(len(part) for _, part, _ in fields) <= width:
            break
        fields = [field for field in fields if field[0] != dropped]
    text = Text()
    for _, part, style in fields:
        if part:
            text.append(part, style=style)
    text.truncate(width, overflow="ellipsis")
    return text


def _one_line(text: str) -> str:
    """``text`` with line breaks and control characters (a model wrote it) as spaces."""
    return "".join(" " if _breaks_the_line(char) else char for char in text)


def _breaks_the_line(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


def _append_todos(text: Text, block: AgentBlock, width: int) -> None:
    """The block's todo list: every item when expanded; collapsed, the count and the item in
    progress."""
    todos = block.todos
    done = sum(1 for item in todos if item.status == "completed")
    text.append("\n")
    if not block.expanded:
        current = next((item for item in todos if item.status == "in_progress"), None)
        line = f"☰ todos {done}/{len(todos)} done" + (f" · ▶ {current.shown}" if current else "")
        text.append(_cut(line, width), style="dim")
        return
    text.append(_cut(f"☰ todos {done}/{len(todos)} done", width), style="dim")
    for item in todos:
        mark, style = TODO_MARKS[item.status]
        text.append("\n")
        text.append(_cut(f"  {mark} {item.shown}", width), style=style)


def _append_message(text: Text, message: BlockMessage, lines: int, width: int) -> None:
    mark, style = _KIND_MARKS[message.kind]
    body = message.text.strip().splitlines() or [""]
    for index, line in enumerate(body[:lines]):
        text.append("\n")
        text.append(_cut((mark if index == 0 else "  ") + line, width), style=style)
    if message.kind != "tool":
        return
    outcome = message.outcome
    result_lines = message.result.strip().splitlines() or [""]
    text.append("\n")
    label = "running…" if outcome is None else f"{outcome}: {result_lines[0]}"
    text.append(_cut("  ↳ " + label, width), style=_OUTCOME_STYLES.get(outcome, "red"))
    for line in result_lines[1 : lines - 1] if outcome is not None else ():
        text.append("\n")
        text.append(_cut("    " + line, width), style="dim")


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


class BlockView(Static):
    """The widget of one :class:`AgentBlock`; redrawn only when the block changed."""

    DEFAULT_CSS = """
    BlockView {
        padding: 0 1;
        margin-bottom: 1;
        border-left: outer $primary-darken-2;
    }
    BlockView.selected {
        background: $boost;
        border-left: outer $accent;
    }
    """

    class Clicked(Message):
        """The person clicked the block: select it and expand or collapse it."""

        def __init__(self, agent_id: str) -> None:
            super().__init__()
            self.agent_id = agent_id

    def __init__(self, tree: BlockTree, block: AgentBlock) -> None:
        super().__init__("", markup=False)
        self.block_tree = tree
        self.block = block
        self.drawn_version = -1
        self.text = Text()

    def on_click(self) -> None:
        self.post_message(self.Clicked(self.block.agent_id))

    def redraw(self, *, selected: bool, width: int) -> None:
        depth = self.block_tree.depth(self.block)
        self.styles.margin = (0, 0, 1, 2 * depth)
        self.text = render_block(
            self.block_tree, self.block, selected=selected, width=width - 2 * depth - 4
        )
        self.drawn_version = self.block.version
        self.set_class(selected, "selected")
        self.update(self.text)


ApprovalMode = Literal["choose", "reject", "modify"]


class ApprovalScreen(ModalScreen[None]):
    """Asks the person about one tool call: ``y`` approve, ``n`` reject, ``e`` modify.

    Rejecting asks for a one-line reason (Enter confirms; empty means "the user declined");
    modifying opens the arguments as JSON (ctrl+s applies; invalid JSON is shown, the screen
    stays open). ``escape`` goes back to the choice. The answer goes to ``on_answer``; the
    app closes the screen.
    """

    AUTO_FOCUS = "#approval-arguments"
    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    #approval-dialog {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 90%;
        border: thick $warning;
        background: $surface;
        padding: 0 1;
    }
    #approval-title { margin-bottom: 1; }
    #approval-arguments { height: auto; max-height: 20; background: $panel; }
    #approval-reason, #approval-edit, #approval-error { display: none; }
    #approval-edit { height: 14; }
    #approval-error { color: $error; height: auto; }
    #approval-hint { color: $text-muted; margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "approve", "Approve"),
        Binding("n", "reject", "Reject"),
        Binding("e", "modify", "Modify"),
        Binding("l", "later", "Later"),
        Binding("q", "app.quit", "Quit"),
        Binding("ctrl+s", "apply", "Apply", show=False),
        Binding("escape", "back", "Back", show=False),
    ]
    _HINTS: ClassVar[dict[ApprovalMode, str]] = {
        "choose": "y approve · n reject · e modify the arguments · l later (the next one "
        "first, when more wait) · q quit the run",
        "reject": "Type why, then Enter to reject (empty: the user declined) · escape back",
        "modify": "Edit the arguments (JSON), then ctrl+s to approve with them · escape back",
    }

    def __init__(
        self,
        request: ApprovalRequest,
        on_answer: Callable[[ApprovalDecision], None],
        *,
        waiting: int = 0,
        redactor: Redactor | None = None,
        on_later: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.on_answer = on_answer
        self.on_later = on_later
        self.mode: ApprovalMode = "choose"
        self.waiting = waiting
        self.redactor = redactor if redactor is not None else Redactor()
        # What the screen shows, secrets redacted; editing starts from it, and a value left
        # as shown keeps its real, unredacted content (see action_apply).
        self.arguments_json = json.dumps(
            self.redactor.value(request.arguments), indent=2, ensure_ascii=False
        )

    def compose(self) -> ComposeResult:
        with Vertical(id="approval-dialog"):
            yield Static(self._title(), id="approval-title", markup=False)
            with VerticalScroll(id="approval-arguments"):
                yield Static(Text(self.arguments_json), markup=False)
            yield Input(placeholder="reason (optional)", id="approval-reason")
            yield TextArea(self.arguments_json, id="approval-edit")
            yield Static("", id="approval-error", markup=False)
            yield Static(self._HINTS["choose"], id="approval-hint", markup=False)

    def _title(self) -> Text:
        request = self.request
        text = Text()
        text.append(request.agent_type, style="bold magenta")
        text.append(f" {short_id(request.agent_id)}", style="dim")
        text.append(" wants to run ")
        text.append(request.tool_name, style="bold")
        if request.reason:
            text.append(f"\n{self.redactor.text(request.reason)}", style="bold yellow")
        if self.waiting:
            more = "request" if self.waiting == 1 else "requests"
            text.append(f"   ({self.waiting} more {more} waiting)", style="italic yellow")
        return text

    def set_waiting(self, waiting: int) -> None:
        """Show how many requests wait behind this one."""
        self.waiting = waiting
        if self.is_mounted:
            self.query_one("#approval-title", Static).update(self._title())
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "reject", "modify"):
            return self.mode == "choose"
        if action == "later":
            return self.mode == "choose" and self.waiting > 0 and self.on_later is not None
        if action == "apply":
            return self.mode == "modify"
        if action == "back":
            return self.mode != "choose"
        return True

    def action_approve(self) -> None:
        self.on_answer(ApprovalDecision(approved=True))

    def action_later(self) -> None:
        """Answer the next request first: this one waits behind the others."""
        if self.on_later is not None:
            self.on_later()

    def action_reject(self) -> None:
        self._switch("reject")

    def action_modify(self) -> None:
        self._switch("modify")

    def action_back(self) -> None:
        self._switch("choose")

    def action_apply(self) -> None:
        source = self.query_one("#approval-edit", TextArea).text
        try:
            arguments = json.loads(source)
        except json.JSONDecodeError as error:
            self._show_error(
                f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno}). "
                "Fix it and press ctrl+s, or escape to go back."
            )
            return
        except RecursionError:
            self._show_error("The JSON is nested too deeply. Flatten it, or escape to go back.")
            return
        if not isinstance(arguments, dict):
            self._show_error(
                'The arguments must be a JSON object ({"name": value, …}). Fix it and press '
                "ctrl+s, or escape to go back."
            )
            return
        restored = restore_unedited(arguments, self.request.arguments, self.redactor)
        assert isinstance(restored, dict)  # an object in, an object out
        self.on_answer(ApprovalDecision(approved=True, arguments=restored))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        reason = event.value.strip() or DECLINED_REASON
        self.on_answer(ApprovalDecision(approved=False, reason=reason))

    def _switch(self, mode: ApprovalMode) -> None:
        self.mode = mode
        reason = self.query_one("#approval-reason", Input)
        editor = self.query_one("#approval-edit", TextArea)
        reason.display = mode == "reject"
        editor.display = mode == "modify"
        self._show_error("")
        self.query_one("#approval-hint", Static).update(self._HINTS[mode])
        focus = {"reject": reason, "modify": editor}.get(mode)
        if focus is not None:
            focus.focus()
        else:
            self.query_one("#approval-arguments", VerticalScroll).focus()
        self.refresh_bindings()

    def _show_error(self, message: str) -> None:
        error = self.query_one("#approval-error", Static)
        error.update(message)
        error.display = bool(message)


@dataclass(slots=True)
class _PendingApproval:
    request: ApprovalRequest
    answer: asyncio.Future[ApprovalDecision]


class ApprovalQueue:
    """The approval requests of a run's agents, shown one at a time on an
    :class:`ApprovalScreen` over ``app``; the run UI and the chat both ask through one.

    ``changed`` is called whenever the number of open requests changes (to redraw a status
    line); while ``showing()`` is false (the app is quitting, the run is over) no screen is
    pushed.
    """

    def __init__(
        self,
        app: App[None],
        redactor: Redactor,
        *,
        changed: Callable[[], None],
        showing: Callable[[], bool] = lambda: True,
    ) -> None:
        self._app = app
        self._redactor = redactor
        self._changed = changed
        self._showing = showing
        self._open: deque[_PendingApproval] = deque()  # the first one is on screen
        self._screen: ApprovalScreen | None = None

    def __len__(self) -> int:
        return len(self._open)

    async def ask(self, request: ApprovalRequest, blocks: BlockTree | None) -> ApprovalDecision:
        """Queue ``request`` and wait for the person's answer; the asking agent's block in
        ``blocks`` shows "waiting for you" meanwhile."""
        pending = _PendingApproval(request, asyncio.get_running_loop().create_future())
        self._open.append(pending)
        if blocks is not None:
            blocks.approval_asked(request.agent_id)
        if self._showing():
            self._app.bell()  # the person may be looking elsewhere: an agent needs them
        self._show_next()
        try:
            return await pending.answer
        finally:  # answered, or withdrawn because the asking session was cancelled
            if blocks is not None:
                blocks.approval_settled(request.agent_id)
            if pending in self._open:
                self._settle(pending, None)

    def reject_all(self, reason: str) -> None:
        """Answer every open request with a refusal for ``reason`` and close the screen."""
        while self._open:
            pending = self._open.popleft()
            if not pending.answer.done():
                pending.answer.set_result(ApprovalDecision(approved=False, reason=reason))
        self.close_screen()

    def close_screen(self) -> None:
        screen, self._screen = self._screen, None
        app = self._app
        if screen is not None and screen in app.screen_stack:
            if app.screen is not screen:
                screen.pop_until_active()
            app.pop_screen()

    def _show_next(self) -> None:
        self._changed()
        screen = self._screen
        if not self._showing():
            return
        if screen is not None:
            screen.set_waiting(len(self._open) - 1)
        elif self._open:
            pending = self._open[0]
            screen = ApprovalScreen(
                pending.request,
                lambda decision: self._settle(pending, decision),
                waiting=len(self._open) - 1,
                redactor=self._redactor,
                on_later=lambda: self._later(pending),
            )
            self._screen = screen
            self._app.push_screen(screen)

    def _later(self, pending: _PendingApproval) -> None:
        """``pending`` goes behind the others; the next one is shown (any order: the agents
        that asked wait each alone, the others go on)."""
        if pending not in self._open or len(self._open) < 2:
            return
        self._open.remove(pending)
        self._open.append(pending)
        self.close_screen()
        self._show_next()

    def _settle(self, pending: _PendingApproval, decision: ApprovalDecision | None) -> None:
        """Give ``pending`` its answer (``None``: it was withdrawn) and show the next one."""
        if decision is not None and not pending.answer.done():
            pending.answer.set_result(decision)
        if pending in self._open:
            self._open.remove(pending)
        screen = self._screen
        if screen is not None and screen.request is pending.request:
            self.close_screen()
        self._show_next()


class RunApp(App[None]):
    """Runs one prompt and shows every agent of the run as a live block.

    After the run the final answer is shown and the app waits for ``q``, or exits at once
    with ``exit_when_done``. Quitting while the run goes on cancels it cleanly (every
    session ends ``cancelled``); :attr:`result` is then ``None`` and :attr:`cancelled` true.

    With ``ask_approval`` (the default) the app is the runtime's approver while it runs
    (:meth:`approve`); the runtime's own approver is put back when the run ends.
    """

    TITLE = "subagents"
    CSS = """
    #blocks { height: 1fr; }
    #final { border: round $success; padding: 0 1; margin: 0 0 1 0; }
    #final.failed { border: round $error; }
    #status { height: 1; background: $panel; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Previous", priority=True),
        Binding("down,j", "move(1)", "Next", priority=True),
        Binding("enter,space", "toggle_block", "Expand/collapse", priority=True),
        Binding("a", "toggle_all", "All", priority=True),
        Binding("q", "quit_run", "Quit", priority=True),
    ]

    def __init__(
        self,
        runtime: Runtime,
        prompt: str,
        *,
        agent: str | None = None,
        tags: Sequence[str] = (),
        exit_when_done: bool = False,
        refresh_interval: float = 0.05,
        ask_approval: bool = True,
        workflow: Workflow | None = None,
        workflow_input: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.prompt = prompt
        self.workflow = workflow  # run this workflow on workflow_input instead of the prompt
        self.workflow_input = dict(workflow_input or {})
        self.agent = agent
        self.tags = tuple(tags)
        self.exit_when_done = exit_when_done
        self.refresh_interval = refresh_interval
        self.redactor = _redactor_for(runtime)
        self.blocks = BlockTree(
            prompt=prompt, redactor=self.redactor, prices=runtime_prices(runtime)
        )
        self.result: RunResult | None = None
        self.run_error: BaseException | None = None
        self.cancelled = False
        self.done = False
        self.selected_id: str | None = None  # by id: new blocks must not move the selection
        self.views: dict[str, BlockView] = {}
        self._quitting = False
        self._drawn_version = -1
        self._drawn_structure = -1
        self._last_clock_redraw = 0.0
        self._run_task: asyncio.Task[None] | None = None
        self._unsubscribe = runtime.events.subscribe(self.blocks)
        self.ask_approval = ask_approval
        self._runtime_approver: Approver | None = None
        self._approvals = ApprovalQueue(
            self,
            self.redactor,
            changed=self._draw_status,
            showing=lambda: not (self._quitting or self.done),
        )
        # kept: while a modal screen is on top, app.query_one() would search that screen
        self._container = VerticalScroll(id="blocks")
        self._status = Static("", id="status", markup=False)
        self._mounting: list[AwaitMount] = []  # mounts not yet known to be done

    def compose(self) -> ComposeResult:
        yield self._container
        yield self._status
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(self.refresh_interval, self.sync)
        if self.ask_approval:  # read when each session starts, so set before the run
            self._runtime_approver = self.runtime.permissions.approver
            self.runtime.permissions.approver = self.approve
        self._run_task = asyncio.create_task(self._drive())

    async def _drive(self) -> None:
        try:
            if self.workflow is not None:
                self.result = await self.runtime.run_workflow(self.workflow, self.workflow_input)
            else:
                self.result = await self.runtime.run(self.prompt, agent=self.agent, tags=self.tags)
        except asyncio.CancelledError:
            self.cancelled = True
        except Exception as error:  # shown in the UI, raised again by run_in_ui
            self.run_error = error
        finally:
            if self.ask_approval:
                self.runtime.permissions.approver = self._runtime_approver
            self._approvals.reject_all(QUIT_REASON if self._quitting else _RUN_ENDED_REASON)
            try:
                await self.runtime.aclose()
            finally:
                self._unsubscribe()
                self.blocks.finish_run(self.result, cancelled=self.cancelled)
                self.done = True
                self.sync()
                self._show_final()
                if self._quitting:
                    self.exit()
                elif self.exit_when_done:
                    # after the screen shows the final state, not before: whoever watches
                    # (or records) the terminal sees how the run ended
                    await self._mounted()
                    # a widget's new size is laid out on one refresh and painted on the next
                    self.call_after_refresh(self.call_after_refresh, self.exit)

    # -- drawing -----------------------------------------------------------------------------

    def sync(self) -> None:
        """Bring the widgets up to date with the tree (called by the refresh timer)."""
        tree = self.blocks
        now = time.monotonic()
        clocks_due = not self.done and now - self._last_clock_redraw >= _TICK_REDRAW_SECONDS
        if tree.version == self._drawn_version and not clocks_due:
            return
        if tree.structure_version != self._drawn_structure:
            self._mount_new_blocks()
        width = self.size.width or 100
        selected = self.selected_block()
        for block in tree.ordered():
            view = self.views[block.agent_id]
            running = clocks_due and not block.finished
            if view.drawn_version != block.version or running:
                view.redraw(selected=block is selected, width=width)
        if clocks_due:
            self._last_clock_redraw = now
        self._drawn_version = tree.version
        self._draw_status()

    def _mount_new_blocks(self) -> None:
        container = self._container
        previous: BlockView | None = None
        for block in self.blocks.ordered():
            view = self.views.get(block.agent_id)
            if view is None:
                view = self.views[block.agent_id] = BlockView(self.blocks, block)
                if previous is not None:
                    mounting = container.mount(view, after=previous)
                elif container.children:
                    mounting = container.mount(view, before=0)
                else:
                    mounting = container.mount(view)
                self._mounting.append(mounting)
            elif previous is not None and not _follows(container, view, previous):
                container.move_child(view, after=previous)  # re-parented after a late start
            previous = view
        self._drawn_structure = self.blocks.structure_version

    def _draw_status(self) -> None:
        tree = self.blocks
        counts = ", ".join(f"{n} {status}" for status, n in tree.counts().items())
        if self._quitting and not self.done:
            state = "Cancelling the run…"
        elif self._approvals:
            asks = "request" if len(self._approvals) == 1 else "requests"
            state = f"Waiting for you ({len(self._approvals)} approval {asks})"
        elif not self.done:
            state = "Running"
        elif self.cancelled:
            state = "Run cancelled" if self._quitting else "Run cancelled - press q to quit"
        elif self.run_error is not None:
            state = "Run failed - press q to quit"
        else:
            status = self.result.status if self.result is not None else "ended"
            state = f"Run {status} - press q to quit"
        line = f"{state} · {len(tree)} agents ({counts})"
        if tree.workflow_path:
            line += f" · path: {' → '.join(tree.workflow_path)}"
        items = tree.map_counts
        if items is not None:
            line += (
                f" · {items.node}: {items.done}/{items.total} done, {items.running} running, "
                f"{items.queued} queued, {items.failed} failed"
            )
        if tree.errors:
            line += f" · ⚠ {len(tree.errors)} UI errors, last: {tree.errors[-1]}"
        self._status.update(Text(line, no_wrap=True, overflow="ellipsis"))

    def _show_final(self) -> None:
        if self.result is not None:
            result = self.result
            title = "Final answer" if result.success else f"Run {result.status}"
            body = result.output or "(no output)"
            if result.error:
                body += f"\n\n{result.error}"
            if result.question is not None:
                body += f"\n\nWaiting for a person: {result.question.text}"
                if result.task_id:
                    body += f"\nresume with: subagents resume {result.task_id} --approve"
            failed = not result.success
        elif self.run_error is not None:
            title, body, failed = "Run failed", str(self.run_error), True
        else:
            title, body, failed = "Run cancelled", "The run was cancelled before it ended.", True
        final = Static(Text(f"{title}\n\n{body}"), id="final", markup=False)
        final.set_class(failed, "failed")
        container = self._container
        self._mounting.append(container.mount(final))
        container.scroll_end(animate=False)

    async def _mounted(self) -> None:
        """Wait until every widget mounted so far is in place (mounting is asynchronous)."""
        while self._mounting:
            await self._mounting.pop(0)

    # -- keys --------------------------------------------------------------------------------

    def action_move(self, step: int) -> None:
        order = self.blocks.ordered()
        if not order:
            return
        current = self.selected_block()
        index = order.index(current) if current is not None else 0
        target = order[max(0, min(len(order) - 1, index + step))]
        self.selected_id = target.agent_id
        self._redraw_all()
        view = self.views.get(target.agent_id)
        if view is not None:
            view.scroll_visible(animate=False)

    def action_toggle_block(self) -> None:
        selected = self.selected_block()
        if selected is not None:
            self.blocks.toggle(selected.agent_id)
            self.sync()

    def on_block_view_clicked(self, event: BlockView.Clicked) -> None:
        self.selected_id = event.agent_id
        self.action_toggle_block()
        self._redraw_all()

    def action_toggle_all(self) -> None:
        blocks = self.blocks.ordered()
        self.blocks.set_all_expanded(not all(block.expanded for block in blocks))
        self.sync()

    async def action_quit_run(self) -> None:
        task = self._run_task
        if self.done or task is None or self._quitting:
            self.exit()  # a second q while cancelling does not wait any longer
            return
        self._quitting = True
        # the run's sessions are cancelled while they wait; a request the cancellation does
        # not reach is rejected with "the user quit" once the run has stopped (see _drive)
        self._approvals.close_screen()
        self._draw_status()
        task.cancel()

    async def action_quit(self) -> None:
        await self.action_quit_run()  # ctrl+q too cancels the run cleanly first

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # while another screen is on top its keys are its own (the approval screen quits on q)
        return action not in _MAIN_SCREEN_ACTIONS or len(self.screen_stack) == 1

    # -- approvals ---------------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The run's :data:`~subagents.tools.permissions.Approver`: ask the person.

        Requests queue and are shown one at a time; the asking agent's block shows
        "waiting for you" meanwhile. Quitting cancels the run, sessions waiting here included;
        a request still open once the run has stopped is rejected with "the user quit".
        """
        if self._quitting or self.done:
            return ApprovalDecision(approved=False, reason=QUIT_REASON)
        return await self._approvals.ask(request, self.blocks)

    def selected_block(self) -> AgentBlock | None:
        """The block the cursor is on (the main agent until the user moves)."""
        if self.selected_id is not None and self.selected_id in self.blocks:
            return self.blocks[self.selected_id]
        return self.blocks.main

    def _redraw_all(self) -> None:
        for view in self.views.values():
            view.drawn_version = -1
        self._drawn_version = -1
        self.sync()


def _follows(container: VerticalScroll, view: BlockView, previous: BlockView) -> bool:
    children = list(container.children)
    return children.index(view) == children.index(previous) + 1


def run_in_ui(
    runtime: Runtime,
    prompt: str,
    *,
    agent: str | None = None,
    tags: Sequence[str] = (),
    exit_when_done: bool = False,
    ask_approval: bool = True,
    workflow: Workflow | None = None,
    workflow_input: Mapping[str, Any] | None = None,
) -> RunResult | None:
    """Run ``prompt`` inside the terminal UI; the result, or ``None`` if the user quit first.

    With ``ask_approval`` the UI asks the person about every tool call that needs approval;
    without it the runtime decides as it would headless (pause, deny or allow).
    An error the run raised (bad config, missing API key, …) is raised again once the UI has
    closed, so that the caller reports it as usual.
    """
    app = RunApp(
        runtime,
        prompt,
        agent=agent,
        tags=tags,
        exit_when_done=exit_when_done,
        ask_approval=ask_approval,
        workflow=workflow,
        workflow_input=workflow_input,
    )
    app.run()
    if exit_when_done:
        print_blocks(app.blocks)
        if app.blocks.workflow_path:
            from rich.console import Console

            path = " -> ".join(app.blocks.workflow_path)
            Console(stderr=True).print(f"path: {path}", markup=False, highlight=False)
    if app.run_error is not None:
        raise app.run_error
    return app.result


def print_blocks(tree: BlockTree) -> None:
    """The final state of every block, on stderr: the UI's screen is gone once it closes,
    and what each agent did should stay in the terminal (and in logs)."""
    from rich.console import Console

    console = Console(stderr=True)
    width = console.width
    for block in tree.ordered():
        indent = 2 * tree.depth(block)
        text = render_block(tree, block, width=max(width - indent, 40))
        lines = text.split("\n")
        for line in lines:
            console.print(Text(" " * indent).append_text(line), soft_wrap=True)


def _redactor_for(runtime: Runtime) -> Redactor:
    """What the UI redacts: the run's credentials, token formats, secret-named variables."""
    from subagents.secrets import known_credentials

    try:
        return Redactor(known_credentials(runtime.config, runtime.toolbox.configured_mcp()))
    except Exception:  # a bad config is reported when the run starts; redact what we can
        return Redactor()


def restore_unedited(edited: object, original: object, redactor: Redactor) -> object:
    """``edited`` with every value the person left as the screen showed it (redacted) put
    back to its real content, so that editing one argument does not write "[REDACTED]" into
    another."""
    if edited == redactor.value(original):
        return original
    if isinstance(edited, dict) and isinstance(original, dict):
        return {
            key: restore_unedited(value, original[key], redactor) if key in original else value
            for key, value in edited.items()
        }
    if isinstance(edited, list) and isinstance(original, list) and len(edited) == len(original):
        return [restore_unedited(e, o, redactor) for e, o in zip(edited, original, strict=True)]
    return edited
