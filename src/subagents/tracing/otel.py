"""Export a stored task as OpenTelemetry spans, following the GenAI semantic conventions.

One ``invoke_agent {agent}`` span per session; a subagent's span is a child of the
``execute_tool Task`` span that started it (itself a child of the parent agent's span), or of
the parent agent's span when that call was never recorded (a run paused or killed inside it).
Under each agent span: one ``chat {model}`` span per model call and one
``execute_tool {tool}`` span per tool call. Spans carry the recorded start and end times, so an
export made long after the run still shows the real timeline.

The OpenTelemetry SDK is an optional extra (``pip install 'subagents[otel]'``), imported only
when exporting. Tool arguments and results are sensitive and left out unless
``include_content`` is set; everything exported is redacted either way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from subagents.errors import TracingError
from subagents.tracing.view import build_trace

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from subagents.messages import Usage
    from subagents.redaction import Redactor
    from subagents.store.base import Store
    from subagents.tracing.view import ModelCallTrace, SessionTrace, TaskTrace, ToolCallTrace

__all__ = ["INSTRUMENTATION_NAME", "export_task", "export_trace", "first_line"]

INSTRUMENTATION_NAME = "subagents"

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
AGENT_DESCRIPTION = "gen_ai.agent.description"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
MCP_METHOD = "mcp.method.name"
ERROR_TYPE = "error.type"
OTHER_ERROR = "_OTHER"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INSTALL_HINT = "run: pip install 'subagents[otel]'"


def export_task(
    store: Store,
    task_id: str,
    *,
    tracer_provider: TracerProvider | None = None,
    include_content: bool = False,
    redactor: Redactor | None = None,
) -> int:
    """Export the task (id or unique prefix) as spans; returns how many spans were made.

    ``tracer_provider`` defaults to the globally configured one (``opentelemetry.trace``);
    it is flushed afterwards so that batching exporters send everything.
    """
    _require_sdk()
    trace = build_trace(store, task_id, redactor=redactor)
    return export_trace(trace, tracer_provider=tracer_provider, include_content=include_content)


def export_trace(
    trace: TaskTrace,
    *,
    tracer_provider: TracerProvider | None = None,
    include_content: bool = False,
) -> int:
    """Export an already built :class:`~subagents.tracing.view.TaskTrace`."""
    _require_sdk()
    from opentelemetry import trace as otel_trace
    from opentelemetry.context import Context

    provider = tracer_provider or otel_trace.get_tracer_provider()
    tracer = provider.get_tracer(INSTRUMENTATION_NAME)
    emitter = _Emitter(tracer, trace.task.id, include_content)
    for root in trace.roots:
        # A stored run gets its own trace, whatever span happens to be current here.
        emitter.session(root, Context())
    flush = getattr(provider, "force_flush", None)
    if callable(flush):
        flush()
    return emitter.count


def _require_sdk() -> None:
    import importlib.util

    try:
        found = all(
            importlib.util.find_spec(name) is not None
            for name in ("opentelemetry.trace", "opentelemetry.sdk.trace")
        )
    except (ImportError, ValueError):  # a parent package missing, or half-installed
        found = False
    if not found:
        raise TracingError(
            "OpenTelemetry export needs the 'opentelemetry-api' and 'opentelemetry-sdk' "
            "packages, which are not installed.",
            hint=_INSTALL_HINT,
        )


def _nanoseconds(moment: datetime) -> int:
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def usage_attributes(model: str, usage: Usage) -> dict[str, int]:
    """The GenAI usage attributes of ``usage`` of ``model``: the input tokens count the
    cache's (as the conventions ask, whichever way the provider counted them), and the cache
    attributes are set when the provider reported cache tokens."""
    from subagents.models.prices import prompt_tokens

    attributes = {
        INPUT_TOKENS: prompt_tokens(model, usage),
        OUTPUT_TOKENS: usage.output_tokens,
    }
    if usage.cache_read_tokens:
        attributes[CACHE_READ_TOKENS] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attributes[CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    return attributes


def split_model(model: str) -> tuple[str | None, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; a bare id has no provider."""
    provider, separator, name = model.partition(":")
    if separator and provider and name:
        return provider, name
    return None, model


def mcp_attributes(server: str | None) -> dict[str, str]:
    """The MCP attributes of a call to a tool of MCP server ``server`` (none for ours)."""
    if not server or server == "builtin":
        return {}
    return {MCP_METHOD: "tools/call", "subagents.mcp.server": server}


def finish_reasons(provider_reason: str, our_reason: str | None) -> list[str] | None:
    """``gen_ai.response.finish_reasons``: as the provider sent it; ours only for a response
    with no provider's word (a scripted model, a record older than the provider's word)."""
    if provider_reason:
        return [provider_reason]
    return [our_reason] if our_reason else None


def first_line(text: str) -> str:
    """The first line of ``text`` with something on it ("" for none): a span's status."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


@dataclass(slots=True)
class _Emitter:
    tracer: Tracer
    task_id: str
    include_content: bool
    count: int = 0

    def _start(
        self,
        name: str,
        parent: Context,
        kind_name: str,
        attributes: Mapping[str, Any],
        at: datetime,
    ) -> Span:
        from opentelemetry.trace import SpanKind

        self.count += 1
        return self.tracer.start_span(
            name,
            context=parent,
            kind=SpanKind[kind_name],
            attributes={key: value for key, value in attributes.items() if value is not None},
            start_time=_nanoseconds(at),
        )

    def session(self, session: SessionTrace, parent: Context) -> None:
        from opentelemetry import trace as otel_trace
        from opentelemetry.trace import Status, StatusCode

        provider, model = split_model(session.model)
        span = self._start(
            f"invoke_agent {session.agent}",
            parent,
            "INTERNAL",
            {
                OPERATION: "invoke_agent",
                PROVIDER: provider,
                AGENT_NAME: session.agent,
                AGENT_ID: session.session_id,
                AGENT_DESCRIPTION: session.description or None,
                CONVERSATION_ID: session.session_id,
                REQUEST_MODEL: model,
                **usage_attributes(session.model, session.usage),
                "subagents.task.id": self.task_id,
                "subagents.session.status": session.status,
                "subagents.session.depth": session.depth,
                "subagents.session.turns": session.turns,
                "subagents.parent_tool_call_id": session.parent_tool_call_id,
            },
            session.started_at,
        )
        inside = otel_trace.set_span_in_context(span)
        for call in session.model_calls:
            self.model_call(session, call, inside)
        # Each child is emitted once: under its Task call when recorded, else under this span.
        waiting = {child.session_id: child for child in session.children}
        for tool_call in session.tool_calls:
            child = waiting.pop(tool_call.child_session_id or "", None)
            self.tool_call(tool_call, inside, child)
        for child in session.children:
            if child.session_id in waiting:
                self.session(child, inside)
        if session.error is not None:
            span.set_attribute(ERROR_TYPE, OTHER_ERROR)
            span.set_status(Status(StatusCode.ERROR, first_line(session.error)))
        span.end(end_time=_nanoseconds(session.finished_at))

    def model_call(self, session: SessionTrace, call: ModelCallTrace, parent: Context) -> None:
        provider, model = split_model(call.model or session.model)
        span = self._start(
            f"chat {model}",
            parent,
            "CLIENT",
            {
                OPERATION: "chat",
                PROVIDER: provider,
                REQUEST_MODEL: model,
                CONVERSATION_ID: session.session_id,
                **usage_attributes(call.model or session.model, call.usage),
                RESPONSE_MODEL: call.response_model or None,
                RESPONSE_ID: call.response_id or None,
                FINISH_REASONS: finish_reasons(call.finish_reason, call.stop_reason),
                "subagents.turn": call.turn,
            },
            call.started_at,
        )
        span.end(end_time=_nanoseconds(call.finished_at))

    def tool_call(self, call: ToolCallTrace, parent: Context, child: SessionTrace | None) -> None:
        from opentelemetry import trace as otel_trace
        from opentelemetry.trace import Status, StatusCode

        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: call.name,
            TOOL_CALL_ID: call.call_id or None,
            TOOL_TYPE: "function",
            "subagents.tool.server": call.server,
            "subagents.tool.outcome": call.outcome,
            **mcp_attributes(call.server),
        }
        if call.repairs:
            attributes["subagents.tool.repairs"] = list(call.repairs)
        if self.include_content:
            attributes[TOOL_ARGUMENTS] = json.dumps(call.arguments, ensure_ascii=False, default=str)
            attributes[TOOL_RESULT] = call.result if not call.failed else call.error
        span = self._start(
            f"execute_tool {call.name}", parent, "INTERNAL", attributes, call.started_at
        )
        if child is not None:
            self.session(child, otel_trace.set_span_in_context(span))
        if call.failed:
            span.set_attribute(ERROR_TYPE, call.outcome or OTHER_ERROR)
            span.set_status(Status(StatusCode.ERROR, first_line(call.error or call.outcome)))
        span.end(end_time=_nanoseconds(call.finished_at))
