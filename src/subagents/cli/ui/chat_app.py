"""The Textual app of `subagents chat`: a scrolling conversation over a prompt input.

Each turn is a :class:`TurnView`: the prompt and the main agent's words and tool calls (a
:class:`~subagents.cli.ui.chat_view.Transcript`), its subagents as
:class:`~subagents.cli.ui.live.BlockView` blocks of the turn's own
:class:`~subagents.cli.ui.blocks.BlockTree`, then the answer. A timer redraws what changed, as in
the run UI. While a turn runs the app is its approver (the run UI's
:class:`~subagents.cli.ui.live.ApprovalScreen`). A side panel shows the background agents and the
todo list when there are any; the status line the model, the task and the tokens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Static

from subagents.cli.chat_session import ChatSession, decision_of, how_to_go_on, request_of
from subagents.cli.ui.blocks import BlockTree, format_tokens
from subagents.cli.ui.chat_view import Transcript, render_transcript
from subagents.cli.ui.live import QUIT_REASON, ApprovalQueue, BlockView
from subagents.cli.ui.progress import TODO_MARKS
from subagents.cli.usage import runtime_prices
from subagents.redaction import Redactor
from subagents.tools.permissions import ApprovalDecision

if TYPE_CHECKING:
    from subagents.cli.ui.blocks import AgentBlock
    from subagents.models.prices import ModelPrice
    from subagents.runtime.pause import HumanQuestion
    from subagents.runtime.result import RunResult
    from subagents.todos import TodoItem
    from subagents.tools.permissions import ApprovalRequest

__all__ = ["SIDE_PANEL_MIN_WIDTH", "ChatApp", "ChatBlockView", "TurnView", "rich_color"]

_TICK_SECONDS = 0.5  # how often running blocks' clocks are redrawn without events
SIDE_PANEL_MIN_WIDTH = 110  # narrower, the side panel would squeeze the conversation


_COLOR_NAMES = {"orange": "dark_orange", "pink": "hot_pink"}  # Claude Code's, in Rich's terms


def rich_color(color: str | None) -> str | None:
    """An agent file's ``color`` as a Rich colour, ``None`` when Rich does not know it."""
    from rich.color import Color, ColorParseError

    if not color:
        return None
    name = _COLOR_NAMES.get(color.strip().lower(), color.strip().lower())
    try:
        Color.parse(name)
    except ColorParseError:
        return None
    return name


class ChatBlockView(BlockView):
    """A subagent's block, its name in the agent's ``color`` (from its file)."""

    def __init__(self, tree: BlockTree, block: AgentBlock, color: str | None) -> None:
        super().__init__(tree, block)
        self.color = color

    def redraw(self, *, selected: bool, width: int) -> None:
        super().redraw(selected=selected, width=width)
        if self.color:
            start = 2  # after the arrow
            self.text.stylize(f"bold {self.color}", start, start + len(self.block.agent_type))
            self.update(self.text)


class TurnView(Vertical):
    """One turn: prompt and main agent, its subagent blocks, its answer."""

    DEFAULT_CSS = """
    TurnView { height: auto; margin-bottom: 1; }
    TurnView > .transcript { height: auto; }
    TurnView > .blocks { height: auto; }
    TurnView > .answer { height: auto; color: $text; }
    TurnView > .answer.failed { color: $error; }
    """

    def __init__(
        self,
        prompt: str,
        redactor: Redactor,
        clock: Callable[[], float],
        color_of: Callable[[str], str | None] = lambda agent_type: None,
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> None:
        super().__init__()
        self.color_of = color_of
        self.prompt = redactor.text(prompt)
        self.blocks = BlockTree(clock=clock, redactor=redactor, prices=prices)
        self.transcript = Transcript.redacted_by(redactor)
        self.transcript_view = Static("", markup=False, classes="transcript")
        self.blocks_view = Vertical(classes="blocks")
        self.answer = Static("", markup=False, classes="answer")
        self.views: dict[str, BlockView] = {}
        self.final: str | None = None
        self.done = False
        self._drawn: tuple[int, int, int] = (-1, -1, -1)

    def compose(self) -> ComposeResult:
        yield self.transcript_view
        yield self.blocks_view
        yield self.answer

    def subagents(self) -> list[BlockView]:
        return [self.views[b.agent_id] for b in self.blocks.ordered() if b.agent_id in self.views]

    def sync(self, width: int, selected: str | None, *, force: bool = False) -> bool:
        """Redraw what changed; whether anything did."""
        state = (self.blocks.version, self.transcript.version, int(self.done))
        if state == self._drawn and not force:
            return False
        self._drawn = state
        self.transcript_view.update(
            render_transcript(self.prompt, self.transcript, width=width - 2, final=self.final)
        )
        main = self.blocks.main
        for block in self.blocks.ordered():
            if main is not None and block.agent_id == main.agent_id:
                continue
            view = self.views.get(block.agent_id)
            if view is None:
                color = self.color_of(block.agent_type)
                view = self.views[block.agent_id] = ChatBlockView(self.blocks, block, color)
                self.blocks_view.mount(view)
                view.drawn_version = -1
            if force or view.drawn_version != block.version or not block.finished:
                view.redraw(selected=block.agent_id == selected, width=width)
        return True

    def finish(self, result: RunResult | None, error: str | None, cancelled: bool) -> None:
        self.blocks.finish_run(result, cancelled=cancelled)
        self.done = True
        if result is not None:
            self.final = result.output
            body = "◆ " + (result.output or "(no output)")
            if result.question is not None:
                go_on = how_to_go_on(result, "/resume answers it")
                body += f"\n⏸ waiting for you: {result.question.text} ({go_on})"
            elif not result.success:
                body += f"\n✗ turn {result.status}: {result.error or ''}"
            self.answer.update(Text(body, style="" if result.success else "yellow"))
        else:
            self.answer.update(Text(error or "Turn stopped.", style="red"))
            self.answer.add_class("failed")


class ChatApp(App[None]):
    """The chat: type a prompt, watch the turn, answer approvals, go on."""

    TITLE = "subagents chat"
    CSS = """
    #body { height: 1fr; }
    #conversation { height: 1fr; padding: 0 1; }
    #side { width: 32; height: 1fr; border-left: solid $primary-darken-2; padding: 0 1;
            display: none; }
    #strip { height: auto; max-height: 3; padding: 0 1; color: $text-muted; display: none; }
    #status { height: 1; background: $boost; padding: 0 1; }
    #prompt { height: 3; }
    .notice { height: auto; color: $text-muted; margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop_turn", "Stop", priority=True),
        Binding("ctrl+n", "move(1)", "Next block", priority=True),
        Binding("ctrl+p", "move(-1)", "Previous block", priority=True),
        Binding("ctrl+o", "toggle_block", "Expand", priority=True),
        Binding("ctrl+t", "toggle_all", "Expand all", priority=True),
        Binding("ctrl+b", "cancel_background", "Cancel background agent", priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]
    _MAIN_ONLY = frozenset({"stop_turn", "move", "toggle_block", "toggle_all"})

    def __init__(
        self,
        session: ChatSession,
        *,
        refresh_interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.session = session
        self.refresh_interval = refresh_interval
        self.clock = clock
        self.redactor = _redactor_for(session)
        self.turns: list[TurnView] = []
        self.running: asyncio.Task[None] | None = None
        self.selected_id: str | None = None
        self.notices = 0
        self._last_tick = 0.0
        self._approvals = ApprovalQueue(self, self.redactor, changed=self._draw_status)
        self._conversation = VerticalScroll(id="conversation")
        self._side = Static("", id="side", markup=False)
        self._strip = Static("", id="strip", markup=False)
        self._status = Static("", id="status", markup=False)
        self._input = Input(placeholder="Ask anything · /help · @agent-name …", id="prompt")

    @property
    def busy(self) -> bool:
        return self.running is not None and not self.running.done()

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield self._conversation
            yield self._side
        yield self._strip
        yield self._status
        yield self._input

    def on_mount(self) -> None:
        self.set_interval(self.refresh_interval, self.sync)
        self._show_history()
        self._input.focus()
        self.sync()

    def _show_history(self) -> None:
        history = self.session.history()
        if history:
            lines = Text()
            for index, (role, text) in enumerate(history):
                if index:
                    lines.append("\n")
                mark, style = ("› ", "bold") if role == "user" else ("◆ ", "")
                lines.append(mark + self.redactor.text(text), style=style)
            self.notice(lines)
        task_id = self.session.task_id
        if task_id is not None and self.session.pending_question() is not None:
            self.notice(f"Task {task_id[:8]} waits for you: /resume answers it.")

    # -- input -------------------------------------------------------------------------------

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is not self._input:
            return
        event.stop()
        text = event.value.strip()
        if not text:
            return
        if self.busy:
            self.notice("A turn is running: wait for it, or press escape to stop it.")
            return
        self._input.value = ""
        if text.startswith("/"):
            await self._command(text)
            return
        from subagents.errors import SubagentsError

        try:
            prompt = self.session.prompt_for(text)
        except SubagentsError as error:
            self.notice(f"error: {error.message}" + (f"\nhint: {error.hint}" if error.hint else ""))
            return
        self._start_turn(text, lambda: self.session.send(prompt))

    async def _command(self, text: str) -> None:
        outcome = await self.session.command(text)
        if outcome.action == "quit":
            self.exit()
            return
        if outcome.action == "clear":
            await self._conversation.remove_children()
            self.turns.clear()
            self.selected_id = None
            if outcome.output is not None:
                self.notice(outcome.output)
            self._show_history()
            return
        if outcome.output is not None:
            self.notice(outcome.output)
        if outcome.action == "resume":
            question = outcome.question
            self._start_turn(
                f"/resume {self.session.task_id or ''}".strip(), self._resumer(question)
            )

    def _resumer(self, question: HumanQuestion | None) -> Callable[[], Any]:
        async def resume() -> RunResult:
            decision = None
            if question is not None:
                answer = await self.approve(request_of(question))
                decision = decision_of(answer)
            return await self.session.resume(decision)

        return resume

    def _color_of(self, agent_type: str) -> str | None:
        try:
            definition = self.session.runtime.inventory.get(agent_type).definition
        except Exception:  # an agent that is gone: no colour
            return None
        return rich_color(definition.color)

    def notice(self, content: Any) -> None:
        """Something the app (not the agent) says: command output, errors."""
        self.notices += 1
        body = Text(content) if isinstance(content, str) else content
        self._conversation.mount(Static(body, classes="notice", markup=False))
        self._scroll_to_end()

    def _scroll_to_end(self) -> None:
        """To the newest line, once what was just mounted has its size."""
        self.call_after_refresh(self._conversation.scroll_end, animate=False)

    def _follow(self) -> None:
        """To the newest line as the agents write, unless the person scrolled up to read:
        then the view stays where they are (their next prompt brings them back down)."""
        conversation = self._conversation
        if conversation.scroll_y >= conversation.max_scroll_y - 1:
            self._scroll_to_end()

    # -- turns -------------------------------------------------------------------------------

    def _start_turn(self, prompt: str, runner: Callable[[], Any]) -> None:
        prices = runtime_prices(self.session.runtime)
        turn = TurnView(prompt, self.redactor, self.clock, self._color_of, prices)
        self.turns.append(turn)
        self._conversation.mount(turn)
        self._scroll_to_end()
        self.running = asyncio.create_task(self._drive(turn, runner))
        self._draw_status()

    async def _drive(self, turn: TurnView, runner: Callable[[], Any]) -> None:
        runtime = self.session.runtime
        unsubscribe_tree = runtime.events.subscribe(turn.blocks)
        unsubscribe_transcript = runtime.events.subscribe(turn.transcript)
        runtime.permissions.approver = self.approve
        result: RunResult | None = None
        error: str | None = None
        cancelled = False
        try:
            result = await runner()
        except asyncio.CancelledError:
            # the run records its task as cancelled; the next prompt goes on with it
            cancelled, error = True, "Turn stopped. The next prompt goes on with the task."
        except Exception as failure:  # shown in the conversation; the chat goes on
            error = f"error: {self.redactor.text(str(failure))}"
            hint = getattr(failure, "hint", None)
            if hint:
                error += f"\nhint: {self.redactor.text(str(hint))}"
        finally:
            runtime.permissions.approver = None
            self._approvals.reject_all(QUIT_REASON)
            unsubscribe_tree()
            unsubscribe_transcript()
            turn.finish(result, error, cancelled)
            self.sync()
            self._follow()

    # -- drawing -----------------------------------------------------------------------------

    def sync(self) -> None:
        width = max((self._conversation.size.width or self.size.width or 80) - 2, 30)
        now = time.monotonic()
        tick = self.busy and now - self._last_tick >= _TICK_SECONDS  # running clocks move
        if tick:
            self._last_tick = now
        for turn in self.turns[-3:]:  # older turns are done and drawn
            if turn.sync(width, self.selected_id, force=tick and turn is self.turns[-1]):
                self._follow()
        self._draw_side()
        self._draw_status()

    def _draw_status(self) -> None:
        session = self.session
        model = session.shown_model
        task = f"task {session.task_id[:8]}" if session.task_id else "new task"
        if self._approvals:
            state = "waiting for you"
        elif self.busy:
            state = "running · esc stops"
        else:
            state = "ready · /help"
        line = f"{model} · {task} · {format_tokens(session.tokens + self._running_tokens())}"
        if session.cost is not None:
            line += f" · {session.cost}"
        self._status.update(Text(f"{line} · {state}", no_wrap=True, overflow="ellipsis"))

    def _running_tokens(self) -> int:
        if not self.busy or not self.turns:
            return 0
        transcript = self.turns[-1].transcript
        return transcript.input_tokens + transcript.output_tokens

    def _draw_side(self) -> None:
        """The background agents and the todo list: a side panel on a wide screen, a strip of
        one line each above the status line on a narrow one (80 columns)."""
        turn = self.turns[-1] if self.turns else None
        background = [b for b in turn.blocks.ordered() if b.background] if turn else []
        todos = turn.transcript.todos if turn else ()
        wide = self.size.width >= SIDE_PANEL_MIN_WIDTH
        text = Text(no_wrap=True, overflow="ellipsis")
        if wide:
            _side_panel(text, background, todos, self.selected_id)
        else:
            _strip(text, background, todos, self.selected_id)
        shown = bool(text.plain)
        self._side.display = shown and wide
        self._strip.display = shown and not wide
        (self._side if wide else self._strip).update(text)

    # -- blocks ------------------------------------------------------------------------------

    def block_views(self) -> list[BlockView]:
        return [view for turn in self.turns for view in turn.subagents()]

    def action_move(self, step: int) -> None:
        views = self.block_views()
        if not views:
            return
        ids = [view.block.agent_id for view in views]
        if self.selected_id in ids:
            index = max(0, min(len(ids) - 1, ids.index(self.selected_id) + step))
        else:
            index = len(ids) - 1 if step < 0 else 0
        self.selected_id = ids[index]
        self._redraw_all()
        views[index].scroll_visible(animate=False)

    def action_toggle_block(self) -> None:
        selected = self.selected_id
        for turn in self.turns:
            if selected is not None and selected in turn.blocks:
                turn.blocks.toggle(selected)
        self._redraw_all()

    def on_block_view_clicked(self, event: BlockView.Clicked) -> None:
        self.selected_id = event.agent_id
        self.action_toggle_block()

    def action_toggle_all(self) -> None:
        views = self.block_views()
        expand = not all(view.block.expanded for view in views)
        for turn in self.turns:
            turn.blocks.set_all_expanded(expand)
        self._redraw_all()

    def action_cancel_background(self) -> None:
        """Cancel the selected background agent of the running turn."""
        name = self.session.runtime.cancel_background(self.selected_id or "")
        if name is None:
            self.notice("Select a running background agent first (ctrl+n / ctrl+p).")
            return
        self.notice(f"Cancelled background agent {name}.")

    def action_stop_turn(self) -> None:
        if self.busy:
            assert self.running is not None
            self.running.cancel()

    async def action_quit(self) -> None:
        if self.busy:
            assert self.running is not None
            self.running.cancel()
            await asyncio.wait([self.running])
        await self.session.aclose()
        self.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in self._MAIN_ONLY or len(self.screen_stack) == 1

    def _redraw_all(self) -> None:
        width = max((self._conversation.size.width or 80) - 2, 30)
        for turn in self.turns:
            turn.sync(width, self.selected_id, force=True)
        self._draw_side()

    # -- approvals ---------------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The turn's approver: the person answers on the approval screen, one at a time."""
        tree = self.turns[-1].blocks if self.turns else None
        return await self._approvals.ask(request, tree)


def _side_panel(
    text: Text, background: list[AgentBlock], todos: tuple[TodoItem, ...], selected: str | None
) -> None:
    if background:
        text.append("Background agents\n", style="bold")
        for block in background:
            mark = "▶ " if block.agent_id == selected else "  "
            text.append(f"{mark}{block.agent_type} {block.short_id}\n")
            text.append(f"    ● {block.shown_status}\n", style="dim")
        text.append("ctrl+b cancels the selected\n\n", style="dim")
    if todos:
        done = sum(1 for item in todos if item.status == "completed")
        text.append(f"Todos {done}/{len(todos)}\n", style="bold")
        for item in todos:
            mark, style = TODO_MARKS[item.status]
            text.append(f"{mark} {item.shown}\n", style=style)


def _strip(
    text: Text, background: list[AgentBlock], todos: tuple[TodoItem, ...], selected: str | None
) -> None:
    lines = []
    if background:
        agents = ", ".join(
            ("▶" if b.agent_id == selected else "") + f"{b.agent_type} {b.shown_status}"
            for b in background
        )
        lines.append(f"⧗ background: {agents} · ctrl+b cancels the selected")
    if todos:
        done = sum(1 for item in todos if item.status == "completed")
        current = next((item for item in todos if item.status == "in_progress"), None)
        lines.append(f"☰ todos {done}/{len(todos)}" + (f" · ▶ {current.shown}" if current else ""))
    text.append("\n".join(lines))


def _redactor_for(session: ChatSession) -> Redactor:
    try:
        return Redactor(session.runtime.credentials())
    except Exception:  # a bad config is reported when the first turn starts
        return Redactor()
