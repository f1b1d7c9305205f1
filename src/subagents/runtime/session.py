"""Session: one agent's isolated conversation, and the loop that drives it.

The loop is: request (system prompt, history, tool schemas) -> response -> run every tool call
of the turn concurrently -> append the results -> repeat, until the model answers without tool
calls or the turn limit is reached. Anything a model or a tool can get wrong becomes a tool
result or a ``failed`` RunResult; the loop itself never raises except for cancellation.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from subagents.models.base import ModelRequest, ModelResponse, ModelSettings, ResponseCompleted
from subagents.runtime import events as ev
from subagents.runtime.hooks import HookEventName, HookPayload, Hooks
from subagents.runtime.result import RunResult, RunStatus
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.execution import ToolOutcome, execute_tool_call

if TYPE_CHECKING:
    from subagents.models.base import Model, ToolSpec
    from subagents.runtime.delegation import Delegation
    from subagents.tools.permissions import PermissionPolicy

__all__ = ["DEFAULT_MAX_TURNS", "Session", "SessionStatus"]

DEFAULT_MAX_TURNS = 50

SessionStatus = str  # "initializing" | "active" | "completed" | "error" | "cancelled"


@dataclass(slots=True, eq=False)
class Session:
    """One agent's conversation: its model, its allowed tools and its own history.

    A session never sees another session's messages. ``tools`` is exactly the set it may
    call: the harness refuses anything else, whatever the model asks.
    """

    model: Model
    system_prompt: str
    tools: ToolRegistry
    workspace: Path
    agent_type: str = "main"
    agent_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    parent: Session | None = None
    depth: int = 0
    max_turns: int = DEFAULT_MAX_TURNS
    settings: ModelSettings = field(default_factory=ModelSettings)
    permissions: PermissionPolicy | None = None
    events: ev.EventBus = field(default_factory=ev.EventBus)
    stream: bool = False
    hooks: Hooks | None = None
    delegation: Delegation | None = None
    messages: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    status: SessionStatus = "initializing"
    turns: int = 0
    tool_call_count: int = 0
    _inbox: list[str] = field(default_factory=list)
    _tool_specs: Sequence[ToolSpec] | None = None

    @property
    def model_name(self) -> str:
        return self.model.name

    def notify(self, text: str) -> None:
        """Queue a message that reaches the model at the start of its next turn."""
        self._inbox.append(text)

    async def run(self, prompt: str) -> RunResult:
        """Add ``prompt`` as a user message and run until a final answer or the turn limit."""
        self.messages.append(UserMessage(prompt))
        return await self._run_loop()

    async def _run_loop(self) -> RunResult:
        started = time.perf_counter()
        events = self.events
        if events.active:
            parent_id = self.parent.agent_id if self.parent is not None else None
            events.emit(
                ev.SessionStarted(
                    self.agent_id, self.agent_type, parent_id, self.model.name, self.depth
                )
            )
        self.status = "active"
        turns_this_run = 0
        try:
            while turns_this_run < self.max_turns:
                turns_this_run += 1
                self.turns += 1
                self._deliver_inbox()
                if events.active:
                    events.emit(ev.TurnStarted(self.agent_id, self.turns))
                response = await self._request_model()
                self.usage.add(response.usage)
                self.messages.append(AssistantMessage(response.text, response.tool_calls))
                if not response.tool_calls:
                    if self._inbox:  # a background result arrived while the model answered
                        continue
                    delegation = self.delegation
                    if delegation is not None and await delegation.settle_background(self):
                        continue  # a background subagent finished: show the model its result
                    return self._finish("completed", response.text, started)
                await self._run_tool_calls(response.tool_calls)
            return self._finish(
                "max_turns",
                self._partial_output(),
                started,
                error=f"stopped after reaching the limit of {self.max_turns} turns; "
                "raise max_turns (agent frontmatter `maxTurns` or config "
                "`[subagents] max_turns`) if the task needs more",
            )
        except asyncio.CancelledError:
            self._finish("cancelled", self._partial_output(), started, error="cancelled")
            raise
        except Exception as error:
            return self._finish(
                "failed",
                self._partial_output(),
                started,
                error=f"{type(error).__name__}: {error}",
            )

    def _deliver_inbox(self) -> None:
        if self._inbox:
            pending, self._inbox[:] = list(self._inbox), []
            self.messages.append(UserMessage("\n\n".join(pending)))

    async def _request_model(self) -> ModelResponse:
        if self._tool_specs is None:
            self._tool_specs = [tool.spec for tool in self.tools]
        request = ModelRequest(self.system_prompt, self.messages, self._tool_specs, self.settings)
        events = self.events
        if not events.active:
            return await self.model.request(request)
        sent = time.perf_counter()
        if self.stream:
            response = await self._stream_model(request)
        else:
            response = await self.model.request(request)
        duration_ms = (time.perf_counter() - sent) * 1000
        events.emit(ev.ModelResponded(self.agent_id, self.turns, response, duration_ms))
        return response

    async def _stream_model(self, request: ModelRequest) -> ModelResponse:
        final: ModelResponse | None = None
        async for item in self.model.stream(request):
            if isinstance(item, ResponseCompleted):
                final = item.response
            else:
                self.events.emit(ev.TextDelta(self.agent_id, item.text))
        if final is None:
            raise RuntimeError(f"model {self.model.name} ended its stream without a response")
        return final

    async def _run_tool_calls(self, calls: tuple[ToolCall, ...]) -> None:
        self.tool_call_count += len(calls)
        if len(calls) == 1:
            outcome = await self._run_tool_call(calls[0])
            self.messages.append(outcome.message)
            return
        outcomes = await asyncio.gather(*(self._run_tool_call(call) for call in calls))
        self.messages.extend(outcome.message for outcome in outcomes)

    async def _run_tool_call(self, call: ToolCall) -> ToolOutcome:
        events = self.events
        if events.active:
            events.emit(ev.ToolCallStarted(self.agent_id, call))
        hooks = self.hooks
        denial = await self._pre_tool_use(call) if hooks is not None and hooks else None
        if denial is not None:
            outcome = denial
        else:
            ctx = ToolContext(self.workspace, self.agent_id, self.agent_type, call.id, self)
            outcome = await execute_tool_call(call, self.tools, ctx, permissions=self.permissions)
            if hooks is not None and hooks:
                await self._post_tool_use(call, outcome)
        if events.active:
            events.emit(ev.ToolCallFinished(self.agent_id, call, outcome))
        return outcome

    def _hook_payload(self, event: HookEventName, call: ToolCall) -> HookPayload:
        return HookPayload(
            event,
            self.agent_id,
            self.agent_type,
            parent_id=self.parent.agent_id if self.parent is not None else None,
            tool_name=call.name,
            tool_input=call.arguments,
        )

    async def _pre_tool_use(self, call: ToolCall) -> ToolOutcome | None:
        assert self.hooks is not None
        if not self.hooks.has("PreToolUse"):
            return None
        verdict = await self.hooks.run(self._hook_payload("PreToolUse", call), subject=call.name)
        if not verdict.block:
            return None
        reason = verdict.reason or "no reason given"
        message = ToolResultMessage(
            call.id,
            call.name,
            f"Tool call denied by a PreToolUse hook: {reason}",
            is_error=True,
        )
        return ToolOutcome(message, call.name, 0.0, "denied")

    async def _post_tool_use(self, call: ToolCall, outcome: ToolOutcome) -> None:
        assert self.hooks is not None
        if not self.hooks.has("PostToolUse"):
            return
        payload = self._hook_payload("PostToolUse", call)
        payload.tool_response = outcome.message.content
        payload.tool_error = outcome.message.is_error
        await self.hooks.run(payload, subject=call.name)

    def _partial_output(self) -> str:
        """Every piece of assistant text so far, so that nothing the agent wrote is lost."""
        texts = [m.content for m in self.messages if isinstance(m, AssistantMessage) and m.content]
        return "\n\n".join(texts)

    def _finish(
        self, status: RunStatus, output: str, started: float, *, error: str | None = None
    ) -> RunResult:
        self.status = {"completed": "completed", "cancelled": "cancelled"}.get(status, "error")
        result = RunResult(
            output=output,
            status=status,
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            model_name=self.model.name,
            messages=self.messages,
            usage=self.usage,
            turns=self.turns,
            tool_calls=self.tool_call_count,
            duration_ms=(time.perf_counter() - started) * 1000,
            error=error,
        )
        if self.events.active:
            self.events.emit(ev.SessionFinished(self.agent_id, result))
        return result
