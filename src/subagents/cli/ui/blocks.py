"""The live model behind the terminal UI: one :class:`AgentBlock` per session, in a tree.

:class:`BlockTree` is an event handler: subscribe it to a run's
:class:`~subagents.runtime.events.EventBus` and it keeps, for every session, what the UI shows
(status, counters, the last messages, the text being streamed). It is plain Python so that it
can be tested without a terminal, it does O(1) work per event so that a run with hundreds of
subagents is not slowed down, and it never raises into the bus: a failure is kept in
:attr:`BlockTree.errors` for the UI to show.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from subagents.runtime import events as ev
from subagents.status import BlockStatus, block_status
from subagents.todos import TodoItem
from subagents.tools.names import TASK_TOOL_NAME

if TYPE_CHECKING:
    from subagents.messages import ToolCall, Usage
    from subagents.models.prices import ModelPrice
    from subagents.redaction import Redactor, StreamRedactor
    from subagents.runtime.result import RunResult

__all__ = [
    "COLLAPSED_MESSAGES",
    "EXPANDED_MESSAGES",
    "WAITING_FOR_YOU",
    "AgentBlock",
    "BlockMessage",
    "BlockStatus",
    "BlockTree",
    "MessageKind",
    "block_status",
    "format_duration",
    "format_tokens",
    "short_id",
]

COLLAPSED_MESSAGES = 2
EXPANDED_MESSAGES = 10
MAX_KEPT_ERRORS = 100
_MAX_TEXT = 4000  # a message longer than this is cut: the UI never shows more of it

MessageKind = Literal["user", "assistant", "tool"]

_FINISHED: frozenset[str] = frozenset({"completed", "error", "cancelled"})
WAITING_FOR_YOU = "waiting for you"  # the status shown while a person is asked to approve


def short_id(agent_id: str) -> str:
    return agent_id[:8]


def format_tokens(tokens: int) -> str:
    if tokens < 1000:
        return f"{tokens} tok"
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k tok"
    return f"{tokens / 1_000_000:.1f}M tok"


def format_duration(milliseconds: float) -> str:
    seconds = max(milliseconds, 0.0) / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}m{seconds:02d}s"


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


@dataclass(slots=True)
class BlockMessage:
    """One line of a block's history: a prompt, an answer, or a tool call and its outcome.

    For a tool call, ``text`` is the call (``Name {arguments}``); ``outcome`` is ``None`` while
    the tool runs, then the outcome status (``ok``, ``error``, ``denied``, …) with the start of
    the result in ``result``.
    """

    kind: MessageKind
    text: str
    tool_name: str | None = None
    call_id: str | None = None
    outcome: str | None = None
    result: str = ""


@dataclass(slots=True)
class AgentBlock:
    """What the UI knows about one session."""

    agent_id: str
    parent_id: str | None = None
    agent_type: str = "?"
    description: str = ""
    model: str = ""
    background: bool = False
    status: BlockStatus = "initializing"
    messages: deque[BlockMessage] = field(default_factory=lambda: deque(maxlen=EXPANDED_MESSAGES))
    message_count: int = 0
    streaming: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    turns: int = 0
    started_at: float | None = None
    duration_ms: float | None = None
    output: str | None = None
    error: str | None = None
    children: list[str] = field(default_factory=list)
    expanded: bool = False
    version: int = 0
    open_approvals: int = 0  # requests of this agent waiting for the person's decision
    todos: tuple[TodoItem, ...] = ()  # its todo list (TodoWrite), redacted
    retrying: str | None = None  # while its model call waits to be tried again, why and when
    cost_usd: float | None = None  # once it finished, what its calls cost, when known
    _open_calls: dict[str, BlockMessage] = field(default_factory=dict)
    _task_calls: list[ToolCall] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def finished(self) -> bool:
        return self.status in _FINISHED

    @property
    def short_id(self) -> str:
        return short_id(self.agent_id)

    @property
    def shown_status(self) -> str:
        """The status to show: "waiting for you" while the agent waits for an approval."""
        if self.open_approvals > 0 and not self.finished:
            return WAITING_FOR_YOU
        return self.status

    def window(self, expanded: bool | None = None) -> list[BlockMessage]:
        """The messages the block shows: the last 2 collapsed, the last 10 expanded."""
        wide = self.expanded if expanded is None else expanded
        size = EXPANDED_MESSAGES if wide else COLLAPSED_MESSAGES
        kept = list(self.messages)
        return kept[-size:]

    def add_message(self, message: BlockMessage) -> None:
        self.messages.append(message)
        self.message_count += 1


class BlockTree:
    """The blocks of one run, built from its events.

    ``prompt`` is the run's prompt: the events do not carry it, so the first root session gets
    it as its first message. ``clock`` returns seconds (monotonic) and is there for tests.
    ``redactor`` redacts every piece of text a block keeps, so that no secret reaches the
    screen; streamed text is shown once no secret can be in the making at its end.
    """

    def __init__(
        self,
        *,
        prompt: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        redactor: Redactor | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> None:
        """``prices`` (a config's ``[prices]``): a finished block shows its cost, when its
        model has one; ``None``: no block is priced."""
        self.blocks: dict[str, AgentBlock] = {}
        self._prices = prices
        self.roots: list[str] = []
        self.errors: list[str] = []
        self.workflow_path: list[str] = []
        """A workflow run's nodes, in the order they started."""
        self.map_counts: ev.WorkflowMapProgress | None = None
        """Where the items of the map node running now stand."""
        self.version = 0
        self.structure_version = 0
        self._prompt = prompt
        self._clock = clock
        self._redactor = redactor
        self._redact = redactor.text if redactor is not None else _unchanged
        self._streams: dict[str, StreamRedactor] = {}  # per agent, while it streams
        self._order: list[AgentBlock] = []
        self._order_version = -1

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.blocks)

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self.blocks

    def __getitem__(self, agent_id: str) -> AgentBlock:
        return self.blocks[agent_id]

    @property
    def main(self) -> AgentBlock | None:
        return self.blocks[self.roots[0]] if self.roots else None

    def ordered(self) -> list[AgentBlock]:
        """Every block, depth first: each parent above its children, children in start order."""
        if self._order_version != self.structure_version:
            order: list[AgentBlock] = []
            stack = [self.blocks[root] for root in reversed(self.roots)]
            while stack:
                block = stack.pop()
                order.append(block)
                stack.extend(self.blocks[child] for child in reversed(block.children))
            self._order, self._order_version = order, self.structure_version
        return self._order

    def depth(self, block: AgentBlock) -> int:
        depth = 0
        while block.parent_id is not None and block.parent_id in self.blocks:
            block = self.blocks[block.parent_id]
            depth += 1
        return depth

    def elapsed_ms(self, block: AgentBlock) -> float:
        """The block's duration when it has finished, its running time so far otherwise."""
        if block.duration_ms is not None:
            return block.duration_ms
        if block.started_at is None:
            return 0.0
        return (self._clock() - block.started_at) * 1000

    def counts(self) -> dict[BlockStatus, int]:
        tally: dict[BlockStatus, int] = {}
        for block in self.blocks.values():
            tally[block.status] = tally.get(block.status, 0) + 1
        return tally

    # -- UI state ----------------------------------------------------------------------------

    def toggle(self, agent_id: str) -> None:
        block = self.blocks[agent_id]
        block.expanded = not block.expanded
        self._touch(block)

    def set_all_expanded(self, expanded: bool) -> None:
        for block in self.blocks.values():
            if block.expanded != expanded:
                block.expanded = expanded
                self._touch(block)

    def approval_asked(self, agent_id: str) -> None:
        """``agent_id`` waits for the person to approve a tool call."""
        block = self._block(agent_id)
        block.open_approvals += 1
        self._touch(block)

    def approval_settled(self, agent_id: str) -> None:
        """One of ``agent_id``'s approval requests was answered, or withdrawn."""
        block = self.blocks.get(agent_id)
        if block is not None and block.open_approvals > 0:
            block.open_approvals -= 1
            self._touch(block)

    # -- events ------------------------------------------------------------------------------

    def __call__(self, event: ev.Event) -> None:
        self.handle(event)

    def handle(self, event: ev.Event) -> None:
        """Apply ``event``; never raises (a failure is kept in :attr:`errors`)."""
        try:
            self._apply(event)
        except Exception as error:  # the run must go on whatever the UI model does
            self._keep_error(f"{type(event).__name__}: {type(error).__name__}: {error}")

    def finish_run(self, result: RunResult | None, *, cancelled: bool = False) -> None:
        """Settle what the events could not: blocks left running when the run ended.

        A run cancelled by the user leaves its unfinished blocks ``cancelled``; a run that
        paused for a person leaves them ``paused``.
        """
        try:
            if result is not None and result.agent_id in self.blocks:
                self._finish(self.blocks[result.agent_id], result)
            left: BlockStatus = "cancelled"
            if not cancelled and result is not None and result.status == "awaiting_human":
                left = "paused"
            for block in self.blocks.values():
                if not block.finished and block.status != left:
                    block.status = left
                    block.streaming = ""
                    if block.started_at is not None and left == "cancelled":
                        block.duration_ms = self.elapsed_ms(block)
                    self._touch(block)
        except Exception as error:
            self._keep_error(f"finish_run: {type(error).__name__}: {error}")

    def _apply(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):  # the hottest event first
            block = self._block(event.agent_id)
            streamed = block.streaming + self._streamed(event.agent_id, event.text)
            block.streaming = streamed if len(streamed) <= _MAX_TEXT else streamed[-_MAX_TEXT:]
            self._touch(block)
        elif isinstance(event, ev.SessionStarted):
            self._session_started(event)
        elif isinstance(event, ev.TurnStarted):
            block = self._block(event.agent_id)
            if block.status == "paused":  # a person answered what it waited for alone
                block.status = "active"
            block.turns = max(block.turns, event.turn)
            block.streaming = ""
            self._streams.pop(event.agent_id, None)
            self._touch(block)
        elif isinstance(event, ev.ModelResponded):
            self._model_responded(event)
        elif isinstance(event, ev.ToolCallStarted):
            self._tool_started(event.agent_id, event.call)
        elif isinstance(event, ev.ToolCallFinished):
            self._tool_finished(event)
        elif isinstance(event, ev.SessionFinished):
            self._finish(self._block(event.agent_id), event.result)
        elif isinstance(event, ev.SubagentStarted):
            self._subagent_started(event)
        elif isinstance(event, ev.SubagentFinished):
            self._subagent_finished(event)
        elif isinstance(event, ev.ModelFallback):
            block = self._block(event.agent_id)
            requested = self._redact(event.requested)
            block.model = f"{event.model_name} (instead of {requested}: {event.reason})"
            self._touch(block)
        elif isinstance(event, ev.ModelRetrying):
            block = self._block(event.agent_id)
            block.retrying = self._redact(
                f"provider error ({event.reason}), retrying in {event.delay_s:.1f} s "
                f"(attempt {event.attempt} of {event.max_attempts})"
            )
            self._touch(block)
        elif isinstance(event, ev.WorkflowNodeStarted):
            self.workflow_path.append(event.node)
            self.map_counts = None
            self.version += 1
        elif isinstance(event, ev.WorkflowMapProgress):
            self.map_counts = event
            self.version += 1
        elif isinstance(event, ev.SessionPaused):
            block = self._block(event.agent_id)
            block.status = "paused"
            block.streaming = ""
            self._touch(block)
        elif isinstance(event, ev.LoopNoticed):
            self._loop_noticed(event)
        elif isinstance(event, ev.AnswerRejected):
            block = self._block(event.agent_id)
            block.streaming = ""  # the discarded answer is not the one that counts
            self._streams.pop(event.agent_id, None)
            block.retrying = self._redact(event.message) if event.asking_again else None
            self._touch(block)
        elif isinstance(event, ev.TodosUpdated):
            block = self._block(event.agent_id)
            block.todos = tuple(
                TodoItem(self._shown(item.content), item.status, self._shown(item.active_form))
                for item in event.todos
            )
            self._touch(block)

    def _session_started(self, event: ev.SessionStarted) -> None:
        block = self._block(event.agent_id, status="active")
        block.agent_type = event.agent_type
        if not block.model.startswith(event.model_name):  # keep a fallback's explanation
            block.model = event.model_name or block.model
        if event.parent_id is not None:
            self._attach(block, event.parent_id)
        if block.status != "active" or block.started_at is None:
            # a fresh start, or a resumed subagent starting over: time it from now
            block.started_at = self._clock()
            block.duration_ms = None
        block.status = "active"
        block.output = block.error = None
        block.streaming = ""
        if self._prompt is not None and event.parent_id is None and block.message_count == 0:
            block.add_message(BlockMessage("user", self._shown(self._prompt)))
            self._prompt = None
        self._touch(block)

    def _model_responded(self, event: ev.ModelResponded) -> None:
        block = self._block(event.agent_id)
        block.retrying = None
        response = event.response
        block.streaming = ""
        self._streams.pop(event.agent_id, None)  # the whole answer follows, redacted
        if response.text.strip():
            block.add_message(BlockMessage("assistant", self._shown(response.text)))
        self._add_usage(block, response.usage)
        if response.model_name and not block.model:
            block.model = response.model_name
        self._touch(block)

    def _tool_started(self, agent_id: str, call: ToolCall) -> None:
        block = self._block(agent_id)
        message = BlockMessage(
            "tool", self._redact(_describe_call(call)), tool_name=call.name, call_id=call.id
        )
        block.add_message(message)
        block._open_calls[call.id] = message
        block.tool_calls += 1
        if call.name == TASK_TOOL_NAME:
            self._task_called(block, call)
        self._touch(block)

    def _task_called(self, parent: AgentBlock, call: ToolCall) -> None:
        resumed = call.arguments.get("resume")
        prompt = call.arguments.get("prompt")
        if isinstance(resumed, str) and resumed.strip() in self.blocks:
            if isinstance(prompt, str) and prompt:
                child = self.blocks[resumed.strip()]
                child.add_message(BlockMessage("user", self._shown(prompt)))
                self._touch(child)
            return
        parent._task_calls.append(call)

    def _tool_finished(self, event: ev.ToolCallFinished) -> None:
        block = self._block(event.agent_id)
        message = block._open_calls.pop(event.call.id, None)
        if message is None:  # started before we subscribed
            message = BlockMessage(
                "tool",
                self._redact(_describe_call(event.call)),
                tool_name=event.call.name,
                call_id=event.call.id,
            )
            block.add_message(message)
            block.tool_calls += 1
        message.outcome = event.outcome.status
        message.result = self._shown(event.outcome.message.content)
        failed = event.outcome.status != "ok"
        if failed and event.call.name == TASK_TOOL_NAME and event.call in block._task_calls:
            # no child will claim it (bad arguments, unknown agent); a background Task call
            # succeeds before its child starts, so an ``ok`` one stays until it is claimed
            block._task_calls.remove(event.call)
        self._touch(block)

    def _loop_noticed(self, event: ev.LoopNoticed) -> None:
        """A repeated call: its line says so first (the loop guard's note to the model)."""
        block = self._block(event.agent_id)
        for message in reversed(block.messages):
            if message.call_id == event.tool_call_id:
                message.result = self._shown(f"⟳ {event.message}\n{message.result}")
                self._touch(block)
                return

    def _subagent_started(self, event: ev.SubagentStarted) -> None:
        block = self._block(event.agent_id, status="initializing")
        self._attach(block, event.parent_id)
        block.agent_type = event.subagent_type
        block.description = self._redact(event.description)
        block.model = event.resolved_model
        block.background = event.background
        if block.finished or block.status == "paused":
            block.status = "initializing"  # resumed: it waits for its turn again
        call = self._claim_task_call(self.blocks[event.parent_id], event)
        prompt = call.arguments.get("prompt") if call is not None else None
        if isinstance(prompt, str) and prompt:
            block.add_message(BlockMessage("user", self._shown(prompt)))
        self._touch(block)

    def _claim_task_call(self, parent: AgentBlock, event: ev.SubagentStarted) -> ToolCall | None:
        """The parent's Task call that started this child: by its id, or, for events that do
        not carry one, by agent type and description."""
        for index, call in enumerate(parent._task_calls):
            if event.tool_call_id and call.id == event.tool_call_id:
                return parent._task_calls.pop(index)
        for index, call in enumerate(parent._task_calls):
            arguments = call.arguments
            if (
                arguments.get("subagent_type") == event.subagent_type
                and arguments.get("description") == event.description
            ):
                return parent._task_calls.pop(index)
        return None

    def _subagent_finished(self, event: ev.SubagentFinished) -> None:
        block = self._block(event.agent_id)
        self._attach(block, event.parent_id)
        spawn = event.result
        if not block.finished:
            block.status = block_status(spawn.status)
            block.output = spawn.summary
            block.error = spawn.error
            block.duration_ms = spawn.duration_ms
            block.streaming = ""
        block.input_tokens = max(block.input_tokens, spawn.input_tokens)
        block.output_tokens = max(block.output_tokens, spawn.output_tokens)
        block.tool_calls = max(block.tool_calls, spawn.tool_use_count)
        if spawn.worktree_path:  # isolation: worktree, kept because it holds changes
            kept = f"(worktree kept: {spawn.worktree_path}, branch {spawn.worktree_branch})"
            if kept not in (block.output or ""):
                block.output = f"{block.output}\n\n{kept}" if block.output else kept
        self._touch(block)

    def _finish(self, block: AgentBlock, result: RunResult) -> None:
        block.status = block_status(result.status)
        block.output = result.output
        block.error = result.error
        block.streaming = ""
        block.duration_ms = result.duration_ms or self.elapsed_ms(block)
        block.input_tokens = result.usage.input_tokens
        block.output_tokens = result.usage.output_tokens
        block.tool_calls = max(block.tool_calls, result.tool_calls)
        block.turns = max(block.turns, result.turns)
        block.agent_type = result.agent_type or block.agent_type
        block.model = block.model or result.model_name
        if self._prices is not None and block.model:
            from subagents.models.prices import cost_of

            cost = cost_of(block.model, result.usage, self._prices)
            block.cost_usd = float(cost.usd) if cost.known and cost.usd else None
        self._touch(block)

    # -- structure ---------------------------------------------------------------------------

    def _block(self, agent_id: str, *, status: BlockStatus = "active") -> AgentBlock:
        """The block of ``agent_id``, made on first sight (events of a session we missed the
        start of get a block too, as a root until its parent is known)."""
        block = self.blocks.get(agent_id)
        if block is None:
            block = AgentBlock(agent_id, status=status)
            if status == "active":
                block.started_at = self._clock()
            self.blocks[agent_id] = block
            self.roots.append(agent_id)
            self.structure_version += 1
        return block

    def _attach(self, block: AgentBlock, parent_id: str) -> None:
        if block.parent_id == parent_id or parent_id == block.agent_id:
            return
        if self._is_descendant(parent_id, of=block.agent_id):
            raise ValueError(f"session {parent_id} cannot be the parent of its own ancestor")
        parent = self._block(parent_id)
        if block.parent_id is not None and block.parent_id in self.blocks:
            self.blocks[block.parent_id].children.remove(block.agent_id)
        elif block.agent_id in self.roots:
            self.roots.remove(block.agent_id)
        block.parent_id = parent_id
        parent.children.append(block.agent_id)
        self.structure_version += 1

    def _is_descendant(self, agent_id: str, *, of: str) -> bool:
        current = self.blocks.get(agent_id)
        while current is not None:
            if current.agent_id == of:
                return True
            current = self.blocks.get(current.parent_id) if current.parent_id else None
        return False

    def _add_usage(self, block: AgentBlock, usage: Usage) -> None:
        block.input_tokens += usage.input_tokens
        block.output_tokens += usage.output_tokens

    def _touch(self, block: AgentBlock) -> None:
        block.version += 1
        self.version += 1

    def _keep_error(self, text: str) -> None:
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(self._redact(text))
        self.version += 1

    def _shown(self, text: str) -> str:
        return _clip(self._redact(text))

    def _streamed(self, agent_id: str, text: str) -> str:
        """The part of a streamed piece that can be shown now (see StreamRedactor)."""
        if self._redactor is None:
            return text
        stream = self._streams.get(agent_id)
        if stream is None:
            stream = self._streams[agent_id] = self._redactor.stream()
        return stream.feed(text)


def _unchanged(text: str) -> str:
    return text


def _describe_call(call: ToolCall) -> str:
    if call.arguments_error is not None:
        return f"{call.name} (bad arguments: {call.arguments_error})"
    arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
    described = _clip(f"{call.name} {arguments}")
    return f"{described} (repaired: {'; '.join(call.repairs)})" if call.repairs else described
