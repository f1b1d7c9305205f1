"""The recorder builds its records as plain fields and the store encodes them as they are
(nothing validated on the way in): every record it writes must be the record its model
describes, every field present, none added, each value as the model would store it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.decorator import tool


@tool
def note(text: str) -> str:
    """Write a note."""
    if text == "fail":
        raise ValueError("the note would not stick")
    return f"noted {text}"


def main_turn(request: ModelRequest) -> ModelResponse:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        task = {"description": "d", "prompt": "work", "subagent_type": "worker"}
        return ModelResponse(
            tool_calls=(
                ToolCall("", "Task", task),
                ToolCall("", "note", {"text": "a"}),
                ToolCall("", "note", {"text": "fail"}),
            ),
            stop_reason="tool_use",
        )
    return text_response("main done")


def worker_turn(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        arguments = {"text": "é api_key=sk-live-0123456789abcdef0123456789"}
        return ModelResponse(
            tool_calls=(ToolCall("c1", "note", arguments),), stop_reason="tool_use"
        )
    return text_response("worker done")


def _same_as_its_model(model: type[BaseModel], stored: dict[str, Any]) -> None:
    record = model.model_validate(stored)
    as_the_model_stores_it = json.loads(record.model_dump_json())
    assert as_the_model_stores_it == stored, model.__name__


async def test_every_record_the_recorder_writes_is_its_models_own(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with open_store(path) as store:
        runtime = Runtime(
            cwd=tmp_path,
            agents=[AgentDefinition(name="worker", description="Works.", system_prompt="W.")],
            model=FunctionModel(main_turn, name="scripted:main"),
            agent_models={"worker": FunctionModel(worker_turn, name="scripted:worker")},
            tools=[note],
            store=store,
            permission_mode="bypassPermissions",
        )
        result = await runtime.run("go")
        assert result.status == "completed", result.error
    raw = sqlite3.connect(path)
    kinds: dict[str, int] = {}
    for checkpoint, ledger, traces in raw.execute("SELECT checkpoint, ledger, traces FROM steps"):
        if checkpoint is not None:
            _same_as_its_model(CheckpointRecord, json.loads(checkpoint))
            kinds["checkpoint"] = kinds.get("checkpoint", 0) + 1
        for entry in json.loads(ledger) if ledger is not None else []:
            _same_as_its_model(ToolLedgerEntry, entry)
            kinds["ledger"] = kinds.get("ledger", 0) + 1
        for trace in json.loads(traces) if traces is not None else []:
            _same_as_its_model(TraceRecord, trace)
            kinds[trace["kind"]] = kinds.get(trace["kind"], 0) + 1
    for (data,) in raw.execute("SELECT data FROM sessions"):
        _same_as_its_model(SessionRecord, json.loads(data))
        kinds["session record"] = kinds.get("session record", 0) + 1
    raw.close()
    # each kind the loop writes was seen: checkpoints, both ledger entries of the side
    # effects, model and tool traces, session events and both sessions' records
    assert kinds.keys() >= {"checkpoint", "ledger", "step", "tool_call", "session"}
    assert kinds["session record"] == 2
