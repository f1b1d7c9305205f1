"""What a trace says of usage: cache tokens per call and per session, the task's cache hit
rate and cost in `subagents trace`, its JSON, and OpenTelemetry's GenAI usage attributes (the
input tokens counting the cache's, as the conventions ask, on a provider that leaves them out)."""

from __future__ import annotations

import asyncio
import io
from decimal import Decimal
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rich.console import Console

from subagents.cli.trace import render_tree
from subagents.messages import ToolResultMessage, Usage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.prices import ModelPrice
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tracing.otel import export_task
from subagents.tracing.view import build_trace, trace_to_json

MODEL = "anthropic:claude-sonnet-4-5"


def cached_turns(request: ModelRequest) -> ModelResponse:
    """Anthropic's way: the first turn writes the 900-token prefix to the cache, the next ones
    read it; ``input_tokens`` counts only what is neither."""
    done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
    response = (
        tool_call_response("Read", {"file_path": "n.md"}) if done < 2 else text_response("done")
    )
    first = done == 0
    response.usage = Usage(
        input_tokens=100,
        output_tokens=20,
        cache_read_tokens=0 if first else 900,
        cache_write_tokens=900 if first else 0,
    )
    return response


@pytest.fixture
def task(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "n.md").write_text("notes\n")
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        runtime = Runtime(cwd=tmp_path, model=FunctionModel(cached_turns, name=MODEL), store=store)
        result = asyncio.run(runtime.run("read the notes twice"))
    assert result.status == "completed", result.error
    assert result.task_id is not None
    return store_path, result.task_id


def test_the_trace_keeps_cache_tokens_and_says_the_hit_rate_and_cost(
    task: tuple[Path, str],
) -> None:
    store_path, task_id = task
    with open_store(store_path) as store:
        trace = build_trace(store, task_id)
    (session,) = trace.sessions()
    assert (session.cache_read_tokens, session.cache_write_tokens) == (1800, 900)
    assert [c.cache_read_tokens for c in session.model_calls] == [0, 900, 900]
    # 3 x 100 plain + 1,800 read + 900 written: 1,800 / 3,000 of the input came from the cache
    assert trace.cache_hit_rate == pytest.approx(0.6)

    data = trace_to_json(trace)
    assert data["totals"]["tokens"]["cache_read_tokens"] == 1800
    assert data["totals"]["tokens"]["cache_hit_rate"] == pytest.approx(0.6)

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render_tree(trace, terminal=False, prices={}))
    shown = console.export_text()
    cost = trace.cost({})
    assert cost.known and cost.usd > 0  # the price table knows this model
    assert "cache hit rate 60%" in shown and f"${cost.usd:.4f}" in shown
    assert "(1,800 from the cache)" in shown
    mine = {MODEL: ModelPrice(input_per_mtok=Decimal(1000), output_per_mtok=Decimal(1000))}
    assert trace.cost(mine).usd == Decimal("3.06")  # (3,000 in + 60 out) x $1,000 / M


def test_otel_input_tokens_count_the_cache_and_the_cache_attributes_are_set(
    task: tuple[Path, str],
) -> None:
    store_path, task_id = task
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with open_store(store_path) as store:
        export_task(store, task_id, tracer_provider=provider)
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    chats = [dict(s.attributes or {}) for s in spans if s.name.startswith("chat ")]
    assert [c["gen_ai.usage.input_tokens"] for c in chats] == [1000, 1000, 1000]
    assert [c.get("gen_ai.usage.cache_read.input_tokens") for c in chats] == [None, 900, 900]
    assert chats[0]["gen_ai.usage.cache_creation.input_tokens"] == 900
    agent = next(dict(s.attributes or {}) for s in spans if s.name.startswith("invoke_agent"))
    assert agent["gen_ai.usage.input_tokens"] == 3000
    assert agent["gen_ai.usage.cache_read.input_tokens"] == 1800
