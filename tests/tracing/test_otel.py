"""OpenTelemetry export of stored runs, through the real SDK and its in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from scenarios.recorded_runs import (
    MODEL_CRASH,
    PLANTED_BEARER,
    PLANTED_KEY,
    SECRET,
    TOKENS,
    RecordedRun,
    plant_leaky_record,
    record_paused_run,
    record_run,
)
from subagents.store.sqlite import open_store
from subagents.tracing.otel import export_task


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RecordedRun:
    return record_run(tmp_path, monkeypatch)


def export(run: RecordedRun, *, include_content: bool = False) -> tuple[int, list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with open_store(run.store_path) as store:
        count = export_task(
            store, run.task_id, tracer_provider=provider, include_content=include_content
        )
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    return count, spans


def parent_of(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next(
        s for s in spans if s.context is not None and s.context.span_id == span.parent.span_id
    )


def agent_span(spans: Sequence[ReadableSpan], agent: str) -> ReadableSpan:
    return next(s for s in spans if s.name == f"invoke_agent {agent}")


def test_one_span_per_session_model_call_and_tool_call(recorded: RecordedRun) -> None:
    count, spans = export(recorded)
    names = sorted(span.name for span in spans)
    assert count == len(spans) == 3 + 8 + 6
    assert names.count("invoke_agent main") == 1
    assert sum(name.startswith("chat ") for name in names) == 8
    assert sum(name.startswith("execute_tool ") for name in names) == 6
    assert {"execute_tool Read", "execute_tool Task", "execute_tool Deploy"} <= set(names)
    assert len({span.context.trace_id for span in spans if span.context}) == 1


def test_subagents_are_children_of_the_task_call_inside_their_parent(
    recorded: RecordedRun,
) -> None:
    _, spans = export(recorded)
    main, level1, level2 = (agent_span(spans, name) for name in ("main", "level1", "level2"))
    assert parent_of(main, spans) is None
    task_call = parent_of(level1, spans)
    assert task_call is not None and task_call.name == "execute_tool Task"
    assert parent_of(task_call, spans) is main
    nested_call = parent_of(level2, spans)
    assert nested_call is not None and nested_call.name == "execute_tool Task"
    assert parent_of(nested_call, spans) is level1
    for span in spans:
        if span.name.startswith(("chat ", "execute_tool ")):
            owner = parent_of(span, spans)
            assert owner is not None and owner.name.startswith("invoke_agent ")
    chats_of_main = [s for s in spans if s.name == "chat main" and parent_of(s, spans) is main]
    assert len(chats_of_main) == 3


def test_genai_attributes(recorded: RecordedRun) -> None:
    _, spans = export(recorded)
    level1 = agent_span(spans, "level1")
    attributes = dict(level1.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "level1"
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.request.model"] == "level1"
    assert attributes["gen_ai.usage.input_tokens"] == TOKENS["level1"][0] * 3
    assert attributes["gen_ai.usage.output_tokens"] == TOKENS["level1"][1] * 3
    with open_store(recorded.store_path) as store:
        ids = {s.agent_name: s.session_id for s in store.sessions(recorded.task_id)}
    assert attributes["gen_ai.agent.id"] == ids["level1"]
    assert level1.kind == SpanKind.INTERNAL

    chat = next(s for s in spans if s.name == "chat level2")
    chat_attributes = dict(chat.attributes or {})
    assert chat_attributes["gen_ai.operation.name"] == "chat"
    assert chat_attributes["gen_ai.request.model"] == "level2"
    assert chat_attributes["gen_ai.usage.input_tokens"] == TOKENS["level2"][0]
    assert chat_attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert chat.kind == SpanKind.CLIENT

    read = next(s for s in spans if s.name == "execute_tool Read")
    read_attributes = dict(read.attributes or {})
    assert read_attributes["gen_ai.operation.name"] == "execute_tool"
    assert read_attributes["gen_ai.tool.name"] == "Read"
    assert str(read_attributes["gen_ai.tool.call.id"]).startswith("call_")
    assert "gen_ai.tool.call.arguments" not in read_attributes  # content is opt-in


def test_failures_carry_error_status(recorded: RecordedRun) -> None:
    _, spans = export(recorded)
    failed = {s.name for s in spans if s.status.status_code == StatusCode.ERROR}
    assert failed == {
        "execute_tool Read",
        "execute_tool Deploy",
        "execute_tool Task",  # level1's Task call: its subagent failed
        "invoke_agent level2",
    }
    deploy = next(s for s in spans if s.name == "execute_tool Deploy")
    assert deploy.status.description == "deploy of v2 failed: quota exceeded"
    assert (deploy.attributes or {})["error.type"] == "error"
    level2 = agent_span(spans, "level2")
    assert level2.status.description == MODEL_CRASH
    assert agent_span(spans, "main").status.status_code == StatusCode.UNSET


def test_spans_use_the_recorded_timeline(recorded: RecordedRun) -> None:
    _, spans = export(recorded)
    with open_store(recorded.store_path) as store:
        task = store.get_task(recorded.task_id)
    assert task.started_at is not None and task.completed_at is not None
    run_start = int(task.started_at.timestamp() * 1e9) - 1_000_000
    run_end = int(task.completed_at.timestamp() * 1e9) + 1_000_000
    for span in spans:
        assert span.start_time is not None and span.end_time is not None
        assert run_start <= span.start_time <= span.end_time <= run_end
    main, level1 = agent_span(spans, "main"), agent_span(spans, "level1")
    assert main.start_time is not None and level1.start_time is not None
    assert main.start_time <= level1.start_time


def test_content_is_opt_in_and_redacted(recorded: RecordedRun) -> None:
    plant_leaky_record(recorded)
    _, spans = export(recorded, include_content=True)
    fetch = next(s for s in spans if s.name == "execute_tool Fetch")
    attributes = dict(fetch.attributes or {})
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == {
        "url": "https://example.test/a"
    }
    assert (
        attributes["gen_ai.tool.call.result"] == "body of https://example.test/a; token=[REDACTED]"
    )
    everything = json.dumps(
        [
            {"name": s.name, "attributes": dict(s.attributes or {}), "status": s.status.description}
            for s in spans
        ],
        default=str,
    )
    for secret in (SECRET, PLANTED_KEY, PLANTED_BEARER):
        assert secret not in everything
    assert "[REDACTED]" in everything


def test_a_subagent_without_a_recorded_task_call_hangs_off_its_parent(tmp_path: Path) -> None:
    run = record_paused_run(tmp_path)
    count, spans = export(run)
    main, level1 = agent_span(spans, "main"), agent_span(spans, "level1")
    assert parent_of(level1, spans) is main
    with open_store(run.store_path) as store:
        model_calls = [t for t in store.traces(run.task_id) if t.step_name == "model_call"]
    assert count == len(spans) == 2 + len(model_calls)  # Write never ran: no tool span
    assert not any(span.name.startswith("execute_tool") for span in spans)


def test_without_the_extra_the_error_names_the_install_command(
    recorded: RecordedRun, tmp_path: Path
) -> None:
    # A fresh interpreter in which the opentelemetry packages cannot be imported.
    script = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from subagents.errors import TracingError\n"
        "from subagents.store.sqlite import open_store\n"
        "from subagents.tracing.otel import export_task\n"
        f"store = open_store({str(recorded.store_path)!r})\n"
        "try:\n"
        f"    export_task(store, {recorded.task_id!r})\n"
        "except TracingError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'subagents[otel]'" in done.stdout
