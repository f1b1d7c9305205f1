"""OpenTelemetry spans while a run goes, from the runtime's events.

:class:`LiveSpans` subscribes to a :class:`~subagents.runtime.events.EventBus` and makes the
spans :mod:`subagents.tracing.otel` makes from a stored task, as things happen: one trace per
task, an ``invoke_agent {agent}`` span per session, ``chat {model}`` per model call and
``execute_tool {tool}`` per tool call under it, a subagent's session under the
``execute_tool Task`` span that started it, and ``workflow_node {node}`` per node a workflow
runs, under the workflow's own session. Each span ends (and so reaches the exporter) when
its work ends; a batch span processor sends them on its own thread.

Content (tool arguments and results) is left out unless ``include_content``; what is exported
is redacted either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from subagents.runtime import events as ev
from subagents.tracing.otel import (
    AGENT_ID,
    AGENT_NAME,
    CONVERSATION_ID,
    ERROR_TYPE,
    FINISH_REASONS,
    INSTRUMENTATION_NAME,
    OPERATION,
    OTHER_ERROR,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_ID,
    RESPONSE_MODEL,
    TOOL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_RESULT,
    TOOL_TYPE,
    finish_reasons,
    first_line,
    mcp_attributes,
    split_model,
    usage_attributes,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from subagents.redaction import Redactor
    from subagents.runtime.events import EventBus

__all__ = ["LiveSpans"]


@dataclass(slots=True)
class _Agent:
    span: Span
    context: Context
    model: str
    chat: Span | None = None
    tools: dict[str, Span] = field(default_factory=dict)
    nodes: dict[str, Span] = field(default_factory=dict)  # a workflow's running nodes, by key
    workflow: bool = False  # a workflow's own session (it has no session events)
    waiting: dict[str, str] = field(default_factory=dict)  # node key -> the agent it will run


class LiveSpans:
    """Spans from a run's events, exported as they end. ``attach`` it to an event bus;
    ``close`` ends whatever is still open (a run cut short) and flushes the provider."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        *,
        include_content: bool = False,
        redactor: Redactor | None = None,
    ) -> None:
        from subagents.redaction import Redactor

        self.provider = tracer_provider
        self.tracer: Tracer = tracer_provider.get_tracer(INSTRUMENTATION_NAME)
        self.include_content = include_content
        self.redactor = redactor or Redactor()
        self._agents: dict[str, _Agent] = {}
        self._task_calls: dict[str, Span] = {}  # a subagent's id -> the Task call that started it
        self._detach: Callable[[], None] | None = None

    def attach(self, events: EventBus) -> LiveSpans:
        self._detach = events.subscribe(self)
        return self

    def close(self) -> None:
        """Stop listening, end the spans still open, and send what is buffered."""
        if self._detach is not None:
            self._detach()
            self._detach = None
        for agent in reversed(list(self._agents.values())):
            open_spans = [*agent.tools.values(), *agent.nodes.values()]
            for span in [*open_spans, *([agent.chat] if agent.chat else [])]:
                span.end()
            agent.span.end()
        self._agents.clear()
        flush = getattr(self.provider, "force_flush", None)
        if callable(flush):
            flush()

    def __call__(self, event: ev.Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    # -- sessions --------------------------------------------------------------------------------

    def _session_started(self, event: ev.SessionStarted) -> None:
        from opentelemetry import trace as otel_trace
        from opentelemetry.context import Context

        if event.agent_id in self._agents:  # a session continued in the same run
            return
        parent = self._agents.get(event.parent_id or "")
        context = self._node_running(event.agent_type) or Context()  # else: its own trace
        if parent is not None:
            task_call = self._task_calls.get(event.agent_id)
            context = otel_trace.set_span_in_context(task_call or parent.span)
        provider, model = split_model(event.model_name)
        span = self._start(
            f"invoke_agent {event.agent_type}",
            context,
            {
                OPERATION: "invoke_agent",
                PROVIDER: provider,
                AGENT_NAME: event.agent_type,
                AGENT_ID: event.agent_id,
                CONVERSATION_ID: event.agent_id,
                REQUEST_MODEL: model,
                "subagents.task.id": event.task_id,
                "subagents.session.depth": event.depth,
            },
        )
        self._agents[event.agent_id] = _Agent(
            span, otel_trace.set_span_in_context(span), event.model_name
        )

    def _subagent_started(self, event: ev.SubagentStarted) -> None:
        parent = self._agents.get(event.parent_id)
        if parent is not None and event.tool_call_id in parent.tools:
            self._task_calls[event.agent_id] = parent.tools[event.tool_call_id]

    def _session_finished(self, event: ev.SessionFinished) -> None:
        from opentelemetry.trace import Status, StatusCode

        agent = self._agents.pop(event.agent_id, None)
        self._task_calls.pop(event.agent_id, None)
        if agent is None:
            return
        result = event.result
        if agent.chat is not None:  # the model call that failed
            agent.chat.set_attribute(ERROR_TYPE, OTHER_ERROR)
            agent.chat.end()
        for span in [*agent.tools.values(), *agent.nodes.values()]:
            span.end()
        for key, value in usage_attributes(agent.model, result.usage).items():
            agent.span.set_attribute(key, value)
        agent.span.set_attribute("subagents.session.status", result.status)
        if result.error:
            agent.span.set_attribute(ERROR_TYPE, OTHER_ERROR)
            agent.span.set_status(
                Status(StatusCode.ERROR, first_line(self.redactor.text(result.error)))
            )
        agent.span.end()

    # -- model calls -----------------------------------------------------------------------------

    def _turn_started(self, event: ev.TurnStarted) -> None:
        agent = self._agents.get(event.agent_id)
        if agent is None:
            return
        provider, model = split_model(agent.model)
        agent.chat = self._start(
            f"chat {model}",
            agent.context,
            {
                OPERATION: "chat",
                PROVIDER: provider,
                REQUEST_MODEL: model,
                CONVERSATION_ID: event.agent_id,
                "subagents.turn": event.turn,
            },
            kind="CLIENT",
        )

    def _model_responded(self, event: ev.ModelResponded) -> None:
        agent = self._agents.get(event.agent_id)
        if agent is None or agent.chat is None:
            return
        span, agent.chat = agent.chat, None
        response = event.response
        attributes = {
            RESPONSE_MODEL: response.response_model or None,
            RESPONSE_ID: response.response_id or None,
            FINISH_REASONS: finish_reasons(response.finish_reason, response.stop_reason),
            **usage_attributes(agent.model, response.usage),
        }
        for key, value in attributes.items():
            if value is not None:
                span.set_attribute(key, value)
        span.end()

    # -- tool calls ------------------------------------------------------------------------------

    def _tool_started(self, event: ev.ToolCallStarted) -> None:
        agent = self._agents.get(event.agent_id)
        if agent is None:
            return
        call = event.call
        server = call.name.split("__")[1] if call.name.startswith("mcp__") else None
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: call.name,
            TOOL_CALL_ID: call.id or None,
            TOOL_TYPE: "function",
            **mcp_attributes(server),
        }
        if self.include_content:
            arguments = self.redactor.value(call.arguments)
            attributes[TOOL_ARGUMENTS] = json.dumps(arguments, ensure_ascii=False, default=str)
        agent.tools[call.id] = self._start(f"execute_tool {call.name}", agent.context, attributes)

    def _tool_finished(self, event: ev.ToolCallFinished) -> None:
        from opentelemetry.trace import Status, StatusCode

        agent = self._agents.get(event.agent_id)
        span = agent.tools.pop(event.call.id, None) if agent is not None else None
        if span is None:
            return
        outcome = event.outcome
        span.set_attribute("subagents.tool.outcome", outcome.status)
        if outcome.tool_name != event.call.name:  # a fallback tool answered
            span.set_attribute("subagents.tool.answered_by", outcome.tool_name)
        if self.include_content:
            span.set_attribute(TOOL_RESULT, self.redactor.text(outcome.message.content))
        if outcome.status != "ok":
            span.set_attribute(ERROR_TYPE, outcome.status)
            first = first_line(self.redactor.text(outcome.message.content))
            span.set_status(Status(StatusCode.ERROR, first or outcome.status))
        span.end()

    # -- workflow nodes ---------------------------------------------------------------------------

    def _node_started(self, event: ev.WorkflowNodeStarted) -> None:
        agent = self._agents.get(event.agent_id) or self._workflow(event)
        if event.node_type == "agent" and event.detail:
            agent.waiting[event.key] = event.detail
        agent.nodes[event.key] = self._start(
            f"workflow_node {event.node}",
            agent.context,
            {
                "subagents.workflow.name": event.workflow,
                "subagents.workflow.node": event.node,
                "subagents.workflow.node_type": event.node_type,
                "subagents.workflow.detail": event.detail or None,
            },
        )

    def _node_running(self, agent_type: str) -> Context | None:
        """The span of the workflow node that is starting an ``agent_type`` session, if any
        (a node's session has no parent session: the node is its parent)."""
        from opentelemetry import trace as otel_trace

        for agent in self._agents.values():
            for key, waiting_for in agent.waiting.items():
                if waiting_for == agent_type and key in agent.nodes:
                    del agent.waiting[key]
                    return otel_trace.set_span_in_context(agent.nodes[key])
        return None

    def _workflow(self, event: ev.WorkflowNodeStarted) -> _Agent:
        """The span of a workflow's own session, a task's root: it has no session events."""
        from opentelemetry import trace as otel_trace
        from opentelemetry.context import Context

        span = self._start(
            f"workflow {event.workflow}",
            Context(),
            {"subagents.workflow.name": event.workflow, "subagents.session.id": event.agent_id},
        )
        agent = _Agent(span, otel_trace.set_span_in_context(span), "", workflow=True)
        self._agents[event.agent_id] = agent
        return agent

    def _node_finished(self, event: ev.WorkflowNodeFinished) -> None:
        agent = self._agents.get(event.agent_id)
        span = agent.nodes.pop(event.key, None) if agent is not None else None
        if agent is None or span is None:
            return
        agent.waiting.pop(event.key, None)
        span.set_attribute("subagents.workflow.next", event.next)
        span.end()
        if agent.workflow and event.next == "end" and not agent.nodes:  # the workflow is done
            self._agents.pop(event.agent_id, None)
            agent.span.end()

    def _start(
        self, name: str, context: Context, attributes: dict[str, Any], *, kind: str = "INTERNAL"
    ) -> Span:
        from opentelemetry.trace import SpanKind

        present = {key: value for key, value in attributes.items() if value is not None}
        return self.tracer.start_span(
            name, context=context, kind=SpanKind[kind], attributes=present
        )


_HANDLERS: dict[type, Callable[[LiveSpans, Any], None]] = {
    ev.SessionStarted: LiveSpans._session_started,
    ev.SubagentStarted: LiveSpans._subagent_started,
    ev.SessionFinished: LiveSpans._session_finished,
    ev.TurnStarted: LiveSpans._turn_started,
    ev.ModelResponded: LiveSpans._model_responded,
    ev.ToolCallStarted: LiveSpans._tool_started,
    ev.ToolCallFinished: LiveSpans._tool_finished,
    ev.WorkflowNodeStarted: LiveSpans._node_started,
    ev.WorkflowNodeFinished: LiveSpans._node_finished,
}
