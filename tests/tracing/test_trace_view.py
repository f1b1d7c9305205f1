"""The trace view: real stores written by real scripted durable runs, read back as a tree and
as the JSON seed format (the runs are those of ``scenarios.recorded_runs``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from subagents.errors import StoreError
from subagents.store.base import StepWrite
from subagents.store.records import TraceRecord
from subagents.store.sqlite import open_store
from subagents.tracing.view import SessionTrace, TaskTrace, build_trace, trace_to_json


def by_agent(trace: TaskTrace) -> dict[str, SessionTrace]:
    return {session.agent: session for session in trace.sessions()}


# -- tests ------------------------------------------------------------------------------------


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RecordedRun:
    return record_run(tmp_path, monkeypatch)


def test_the_tree_nests_subagents_under_their_parents(recorded: RecordedRun) -> None:
    with open_store(recorded.store_path) as store:
        trace = build_trace(store, recorded.task_id[:8])  # a prefix is enough
    assert trace.task.id == recorded.task_id and trace.task.status == "completed"
    assert [root.agent for root in trace.roots] == ["main"]
    main = trace.roots[0]
    assert [child.agent for child in main.children] == ["level1"]
    level1 = main.children[0]
    assert [child.agent for child in level1.children] == ["level2"]
    level2 = level1.children[0]
    assert level2.children == []
    assert [s.depth for s in trace.sessions()] == [0, 1, 2]
    assert level1.parent_session_id == main.session_id
    assert level2.parent_session_id == level1.session_id
    # each subagent is bound to the Task call that started it
    (task_call,) = [c for c in main.tool_calls if c.name == "Task"]
    assert task_call.child_session_id == level1.session_id
    assert task_call.call_id == level1.parent_tool_call_id
    (nested_call,) = [c for c in level1.tool_calls if c.name == "Task"]
    assert nested_call.child_session_id == level2.session_id


def test_numbers_add_up(recorded: RecordedRun) -> None:
    with open_store(recorded.store_path) as store:
        trace = build_trace(store, recorded.task_id)
        stored = {s.agent_name: s for s in store.sessions(recorded.task_id)}
    sessions = by_agent(trace)
    # main: Read, Task, answer; level1: Fetch, Task, answer; level2: Grep, Deploy, crash
    expected_calls = {"main": 3, "level1": 3, "level2": 2}
    for agent, session in sessions.items():
        input_tokens, output_tokens = TOKENS[agent]
        assert len(session.model_calls) == expected_calls[agent]
        assert session.input_tokens == input_tokens * expected_calls[agent]
        assert session.output_tokens == output_tokens * expected_calls[agent]
        assert sum(c.input_tokens for c in session.model_calls) == session.input_tokens
        assert sum(c.output_tokens for c in session.model_calls) == session.output_tokens
        assert len(session.tool_calls) == stored[agent].tool_calls == 2
        assert session.turns == stored[agent].turns
        assert session.model == f"scripted:{agent}"
        assert session.started_at <= session.finished_at
        assert all(c.duration_ms is not None and c.duration_ms >= 0 for c in session.tool_calls)
    assert trace.input_tokens == 110 * 3 + 120 * 3 + 130 * 2
    assert trace.output_tokens == 11 * 3 + 12 * 3 + 13 * 2
    # a child runs inside its parent's Task call, which runs inside the parent
    main, level1 = sessions["main"], sessions["level1"]
    assert main.started_at <= level1.started_at <= level1.finished_at <= main.finished_at
    assert trace.duration_ms >= main.duration_ms > 0
    # each model call lists the tool calls its response asked for
    asked = [call_id for m in main.model_calls for call_id in m.tool_call_ids]
    assert asked == [c.call_id for c in main.tool_calls]
    assert main.model_calls[-1].tool_call_ids == []
    assert main.message_count == 6


def test_errors_are_kept_per_call_and_per_session(recorded: RecordedRun) -> None:
    with open_store(recorded.store_path) as store:
        sessions = by_agent(build_trace(store, recorded.task_id))
    read = sessions["main"].tool_calls[0]
    assert (read.name, read.failed, read.result) == ("Read", True, None)
    assert read.error is not None and "missing.txt does not exist" in read.error
    deploy = next(c for c in sessions["level2"].tool_calls if c.name == "Deploy")
    assert deploy.failed and deploy.error is not None
    assert deploy.error.startswith("deploy of v2 failed: quota exceeded")
    grep = next(c for c in sessions["level2"].tool_calls if c.name == "Grep")
    assert not grep.failed and grep.result is not None and "notes.txt" in grep.result
    assert grep.arguments == {"pattern": "hello"}
    assert sessions["level2"].status == "error"
    assert sessions["level2"].error == MODEL_CRASH
    assert sessions["level2"].failed_tool_calls == 1
    assert sessions["main"].error is None and sessions["level1"].error is None
    # the parent's Task call reports the failed subagent as a failed tool call
    nested_task = next(c for c in sessions["level1"].tool_calls if c.name == "Task")
    assert nested_task.failed


def test_json_seed_format(recorded: RecordedRun) -> None:
    with open_store(recorded.store_path) as store:
        data = trace_to_json(build_trace(store, recorded.task_id))
    json.dumps(data)  # plain JSON all the way down
    assert set(data) == {"task", "steps", "tool_calls", "subagent_sessions", "totals"}
    assert data["task"]["id"] == recorded.task_id
    assert data["task"]["description"] == "traced run"

    step_keys = {"step_name", "message", "timestamp", "status", "agent", "tool_calls"}
    assert all(step_keys | {"duration_ms"} <= set(step) for step in data["steps"])
    model_steps = [s for s in data["steps"] if s["step_name"] == "model_call"]
    assert len(model_steps) == 8
    finished = [s for s in data["steps"] if s["step_name"] == "session_finished"]
    assert sorted(s["agent"] for s in finished) == ["level1", "level2", "main"]
    assert next(s for s in finished if s["agent"] == "level2")["status"] == "error"
    stamps = [s["timestamp"] for s in data["steps"]]
    assert stamps == sorted(stamps)

    call_keys = {"server", "tool", "arguments", "result", "error", "duration_ms", "agent"}
    assert all(call_keys | {"session_id", "timestamp"} <= set(c) for c in data["tool_calls"])
    assert [c["tool"] for c in data["tool_calls"] if c["agent"] == "main"] == ["Read", "Task"]
    assert sum(c["status"] == "error" for c in data["tool_calls"]) == 3  # Read, Deploy, Task
    asked = {call_id for step in model_steps for call_id in step["tool_calls"]}
    assert asked == {c["id"] for c in data["tool_calls"]}

    sessions = {s["agent"]: s for s in data["subagent_sessions"]}
    assert sessions["main"]["parent_id"] is None
    assert sessions["level1"]["parent_id"] == sessions["main"]["id"]
    assert sessions["level2"]["parent_id"] == sessions["level1"]["id"]
    assert sessions["level2"]["status"] == "error" and sessions["level2"]["model"] == (
        "scripted:level2"
    )
    assert sessions["level1"]["tokens"] == {
        "input_tokens": 360,
        "output_tokens": 36,
        "total_tokens": 396,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert sessions["main"]["message_count"] == 6
    assert all(s["duration_ms"] >= 0 for s in sessions.values())
    totals = data["totals"]
    assert (totals["sessions"], totals["model_calls"], totals["tool_calls"]) == (3, 8, 6)
    assert totals["failed_tool_calls"] == 3
    assert totals["tokens"]["input_tokens"] == sum(
        s["tokens"]["input_tokens"] for s in sessions.values()
    )


def test_secrets_never_reach_the_view(recorded: RecordedRun) -> None:
    plant_leaky_record(recorded)
    with open_store(recorded.store_path) as store:
        trace = build_trace(store, recorded.task_id)
    text = json.dumps(trace_to_json(trace))
    for secret in (SECRET, PLANTED_KEY, PLANTED_BEARER):
        assert secret not in text
    fetch = by_agent(trace)["level1"].tool_calls[0]
    assert fetch.result == "body of https://example.test/a; token=[REDACTED]"
    leaky = next(c for c in by_agent(trace)["main"].tool_calls if c.call_id == "call_leaky")
    assert leaky.result == "key is sk-[REDACTED]"  # the kind of key is kept, not the key
    assert "[REDACTED]" in leaky.arguments["command"]


def test_a_paused_run_keeps_the_subagent_whose_task_call_is_still_open(
    tmp_path: Path,
) -> None:
    run = record_paused_run(tmp_path)
    with open_store(run.store_path) as store:
        trace = build_trace(store, run.task_id)
    assert trace.task.status == "awaiting_human"
    (main,) = trace.roots
    assert [c.agent for c in main.children] == ["level1"]
    assert main.tool_calls == []  # the Task call has not ended, so it has no record
    assert main.children[0].status == "awaiting_human"
    data = trace_to_json(trace)
    assert [s["agent"] for s in data["subagent_sessions"]] == ["main", "level1"]


def test_an_unknown_task_is_a_store_error(recorded: RecordedRun) -> None:
    with open_store(recorded.store_path) as store, pytest.raises(StoreError, match="tasks list"):
        build_trace(store, "00000000-no-such-task")


def test_a_task_without_sessions_has_an_empty_tree(tmp_path: Path) -> None:
    from subagents.store.records import TaskRecord

    with open_store(tmp_path / "state.db") as store:
        task = TaskRecord(description="empty", prompt="nothing", workspace=str(tmp_path))
        store.create_task(task)
        trace = build_trace(store, task.id)
    assert trace.roots == [] and trace.input_tokens == 0
    data = trace_to_json(trace)
    assert data["steps"] == data["tool_calls"] == data["subagent_sessions"] == []
    assert data["totals"]["sessions"] == 0


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_records: st.SearchStrategy[dict[str, Any]] = st.builds(
    dict,
    kind=st.sampled_from(["step", "tool_call", "session"]),
    step_name=st.sampled_from(["model_call", "session_finished", "Read", "Task", "odd"]),
    message=st.text(max_size=30),
    status=st.sampled_from(["info", "warning", "error"]),
    duration_ms=st.none() | st.floats(allow_nan=True, allow_infinity=True),
    timestamp=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
    data=st.dictionaries(
        st.sampled_from(
            [
                "tool_call_id",
                "arguments",
                "result",
                "error",
                "turn",
                "input_tokens",
                "model",
                "stop_reason",
                "message_count",
                "server",
                "tool",
            ]
        ),
        _json_values,
        max_size=6,
    ),
)


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(_records, max_size=6), parented=st.booleans())
def test_odd_records_never_break_the_view(
    tmp_path: Path, records: list[dict[str, Any]], parented: bool
) -> None:
    """Whatever a foreign or older writer stored, the view, its JSON, the tree and the spans
    still come out (the store validates record shapes; the contents of ``data`` are free)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from subagents.cli.trace import render_tree
    from subagents.store.records import SessionRecord, TaskRecord
    from subagents.tracing.otel import export_trace

    with open_store(tmp_path / "odd.db") as store:
        task = TaskRecord(description="odd", prompt="odd", workspace=str(tmp_path))
        store.create_task(task)
        session = SessionRecord(
            session_id=f"s-{task.id}",
            task_id=task.id,
            parent_session_id=f"s-{task.id}" if parented else "gone",  # itself, or missing
            agent_name="main",
            model="scripted:main",
            max_turns=5,
            status="error",
        )
        traces = [
            TraceRecord(task_id=task.id, session_id=session.session_id, **record)
            for record in records
        ]
        store.commit(StepWrite(task_id=task.id, session=session, traces=traces))
        trace = build_trace(store, task.id)
    json.dumps(trace_to_json(trace))
    render_tree(trace)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    count = export_trace(trace, tracer_provider=provider, include_content=True)
    assert count == len(exporter.get_finished_spans()) >= 1
    assert [root.session_id for root in trace.roots] == [session.session_id]
    assert trace.roots[0].error is not None
