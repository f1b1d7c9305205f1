"""A large tool argument is stored once (in the session's messages); the ledger, the trace and
a paused run's question keep a bounded preview that says where the full value is. Crash
recovery, approval, ``subagents trace`` and the export keep working. Real runs, real SQLite."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios.planned import planner
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.store.export import export_task
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.tools.decorator import tool
from subagents.tracing.preview import (
    BUDGET,
    FULL_VALUE_NOTE,
    SMALL_CHARS,
    preview_arguments,
    preview_text,
)
from subagents.tracing.view import build_trace, trace_to_json

TAIL = "<<the-end-of-the-argument>>"
# Where a value may be stored: (table, column), by what it holds.
PLACES = {
    "tasks": ("tasks", "data"),
    "sessions": ("sessions", "data"),
    "messages": ("steps", "messages"),
    "checkpoints": ("steps", "checkpoint"),
    "ledger": ("steps", "ledger"),
    "traces": ("steps", "traces"),
}


def _content(size: int) -> str:
    return "HEAD" + "x" * (size - len(TAIL) - 4) + TAIL


def _copies(path: Path) -> dict[str, int]:
    """Rows holding the whole argument (its tail), by what they hold."""
    raw = sqlite3.connect(path)
    try:
        return {
            place: raw.execute(
                f"SELECT count(*) FROM {table} WHERE instr({column}, ?) > 0", (TAIL,)
            ).fetchone()[0]
            for place, (table, column) in PLACES.items()
        }
    finally:
        raw.close()


def _bytes(path: Path, place: str) -> int:
    table, column = PLACES[place]
    raw = sqlite3.connect(path)
    try:
        sql = f"SELECT coalesce(sum(length({column})), 0) FROM {table}"
        return int(raw.execute(sql).fetchone()[0])
    finally:
        raw.close()


Plan = list[tuple[str, dict[str, Any]]]


def _runtime(workspace: Path, store: SQLiteStore, plan: Plan, **kw: Any) -> Runtime:
    kw.setdefault("permission_mode", "bypassPermissions")
    kw.setdefault("headless", "pause")
    return Runtime(cwd=workspace, agents=[], model=planner("main", plan), store=store, **kw)


@pytest.mark.parametrize("size", [10_000, 10_000_000], ids=["10KB", "10MB"])
async def test_a_large_argument_is_stored_once_and_described_elsewhere(
    tmp_path: Path, size: int
) -> None:
    content = _content(size)
    path = tmp_path / "state.db"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plan = [("Write", {"file_path": "big.txt", "content": content})]
    with open_store(path) as store:
        result = await _runtime(workspace, store, plan).run("write the big file")
        assert result.status == "completed", result.error
        ledger = store.ledger(result.task_id or "")
        tool_traces = [t for t in store.traces(result.task_id or "") if t.kind == "tool_call"]
    assert (workspace / "big.txt").read_text() == content  # the tool got the whole value

    assert _copies(path) == {place: int(place == "messages") for place in PLACES}
    assert _bytes(path, "messages") > size
    for place in ("ledger", "traces", "checkpoints"):
        assert _bytes(path, place) < 3 * BUDGET

    (entry,) = ledger
    assert entry.status == "completed" and entry.arguments["file_path"] == "big.txt"
    preview = entry.arguments["content"]
    assert preview.startswith("HEADxxx") and FULL_VALUE_NOTE in preview
    assert f"{size - 500:,} more characters cut" in preview
    (traced,) = tool_traces
    assert traced.data["arguments_preview"] is True
    assert traced.data["arguments"] == entry.arguments


async def test_trace_and_export_show_the_preview_and_the_whole_value(tmp_path: Path) -> None:
    content = _content(200_000)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with open_store(tmp_path / "state.db") as store:
        plan = [("Write", {"file_path": "big.txt", "content": content})]
        result = await _runtime(workspace, store, plan).run("write it")
        task_id = result.task_id or ""
        trace = build_trace(store, task_id)
        target = export_task(store, task_id, tmp_path / "exported")
    (call,) = [c for s in trace.sessions() for c in s.tool_calls]
    assert call.arguments_preview and not call.result_preview
    assert call.arguments["file_path"] == "big.txt"
    assert FULL_VALUE_NOTE in call.arguments["content"]
    as_json = trace_to_json(trace)["tool_calls"][0]
    assert as_json["arguments_preview"] is True and "wrote 200000 bytes" in as_json["result"]
    exported = {p.name: p.read_text() for p in target.rglob("*.json")}
    assert any(TAIL in text for name, text in exported.items() if name != "ledger.json")
    assert TAIL not in exported["ledger.json"] and TAIL not in exported["trace.json"]


async def test_crash_recovery_reruns_the_call_with_its_whole_arguments(tmp_path: Path) -> None:
    payload = _content(1_000_000)
    seen: list[str] = []
    hang = asyncio.Event()

    @tool
    async def Upload(blob: str) -> str:
        """Upload a blob (a side effect)."""
        seen.append(blob)
        if len(seen) == 1:
            hang.set()
            await asyncio.sleep(3600)  # the process "dies" here
        return f"uploaded {len(blob)} characters"

    plan = [("Upload", {"blob": payload})]
    task_id = "22222222-2222-4333-8444-555555555555"
    with open_store(tmp_path / "state.db") as store:
        running = asyncio.create_task(
            _runtime(tmp_path, store, plan, tools=[Upload]).run("upload", task_id=task_id)
        )
        await asyncio.wait_for(hang.wait(), timeout=30)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        (started,) = store.ledger(task_id)
        assert started.status == "started" and FULL_VALUE_NOTE in started.arguments["blob"]

        again = _runtime(tmp_path, store, plan, tools=[Upload])
        paused = await again.resume(task_id)
        assert paused.status == "awaiting_human" and paused.question is not None
        assert paused.question.kind == "crash_recovery"
        assert paused.question.arguments["blob"] == payload  # read back from the messages
        stored = store.latest_checkpoint(task_id)
        assert stored is not None and stored.question is not None
        assert stored.question["arguments_preview"] is True
        assert TAIL not in json.dumps(stored.question)

        done = await again.resume(task_id, HumanDecision("approve"))
    assert done.status == "completed", done.error
    assert seen == [payload, payload]
    assert "uploaded 1000000 characters" in done.output


async def test_an_approval_of_a_large_call_runs_it_whole(tmp_path: Path) -> None:
    content = _content(300_000)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plan = [("Write", {"file_path": "big.txt", "content": content})]
    with open_store(tmp_path / "state.db") as store:
        runtime = _runtime(workspace, store, plan, permission_mode="default")
        paused = await runtime.run("write it")
        assert paused.status == "awaiting_human"
        stored = store.latest_checkpoint(paused.task_id or "")
        assert stored is not None and stored.question is not None
        assert stored.question["arguments"]["file_path"] == "big.txt"
        assert stored.question["arguments_preview"] is True
        again = _runtime(workspace, store, plan, permission_mode="default")
        done = await again.resume(paused.task_id or "", HumanDecision("approve"))
    assert done.status == "completed", done.error
    assert (workspace / "big.txt").read_text() == content


_LONG_TEXT = st.builds(
    lambda piece, times: piece * times, st.text(min_size=1, max_size=4), st.integers(0, 3000)
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _LONG_TEXT,
    lambda inner: (
        st.lists(inner, max_size=30) | st.dictionaries(st.text(max_size=6), inner, max_size=30)
    ),
    max_leaves=60,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=10), _VALUES, max_size=40))
def test_previews_are_bounded_keep_small_values_and_keep_the_first_keys(
    arguments: dict[str, Any],
) -> None:
    preview, cut = preview_arguments(arguments)
    shown = json.dumps(preview, ensure_ascii=False)
    assert len(shown) <= 6 * (BUDGET + 2_000)  # \\uXXXX escapes may grow a character sixfold
    if not cut:
        assert preview is arguments
    else:
        assert set(preview) <= {*arguments, "…"}
        assert FULL_VALUE_NOTE in shown
    first = next(iter(arguments), None)
    if first is not None:
        assert first in preview


@given(text=_LONG_TEXT)
def test_text_previews(text: str) -> None:
    preview, cut = preview_text(text)
    assert cut == (len(text) > SMALL_CHARS)
    assert preview == text if not cut else preview.startswith(text[:500]) and len(preview) < 700
