"""The loop's steps have plain inputs and outputs: every step of a real run survives a trip
through JSON and back, as a durable-execution engine would store and replay it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import session as session_module
from subagents.runtime import steps
from subagents.runtime.runtime import Runtime
from subagents.runtime.steps import (
    CommitStepInput,
    ModelStepInput,
    ModelStepOutput,
    ToolStepInput,
    ToolStepOutput,
)
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.decorator import tool


@tool
def note(text: str) -> str:
    """Write a note."""
    return f"noted {text}"


def main_turn(request: ModelRequest) -> ModelResponse:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        task = {"description": "d", "prompt": "work", "subagent_type": "worker"}
        return ModelResponse(
            tool_calls=(ToolCall("", "Task", task), ToolCall("", "note", {"text": "a"})),
            stop_reason="tool_use",
        )
    return text_response("main done")


def worker_turn(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        return ModelResponse(
            tool_calls=(ToolCall("call_0", "note", {"text": "é secret-ish"}),),
            stop_reason="tool_use",
        )
    return text_response("worker done")


Recorded = list[tuple[str, Any, Any]]


def spy(recorded: Recorded, kind: str, step: Callable[..., Any], is_async: bool) -> Any:
    """``step`` itself, noting each input and output (the real step runs)."""
    if is_async:

        async def wrapped_async(env: Any, given: Any) -> Any:
            taken = through_json(given.to_dict())  # as an engine records it, when it starts
            output = await step(env, given)
            recorded.append((kind, taken, output))
            return output

        return wrapped_async

    def wrapped(env: Any, given: Any) -> Any:
        taken = through_json(given.to_dict())
        output = step(env, given)
        recorded.append((kind, taken, output))
        return output

    return wrapped


def through_json(data: dict[str, Any]) -> dict[str, Any]:
    value = json.loads(json.dumps(data))
    assert isinstance(value, dict)
    return value


async def test_every_step_of_a_real_run_round_trips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded: Recorded = []
    monkeypatch.setattr(
        session_module, "model_step", spy(recorded, "model", steps.model_step, True)
    )
    monkeypatch.setattr(session_module, "tool_step", spy(recorded, "tool", steps.tool_step, True))
    monkeypatch.setattr(
        session_module, "commit_step", spy(recorded, "commit", steps.commit_step, False)
    )

    async def commit_in_group(env: Any, given: Any, committed: Callable[..., None]) -> None:
        taken = through_json(given.to_dict())

        def noted(sequence: int | None) -> None:
            recorded.append(("commit", taken, sequence))
            committed(sequence)

        await steps.commit_step_in_group(env, given, noted)

    monkeypatch.setattr(session_module, "commit_step_in_group", commit_in_group)
    with open_store(tmp_path / "state.db") as store:
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
    kinds = {kind for kind, _, _ in recorded}
    assert kinds == {"model", "tool", "commit"}
    types: dict[str, tuple[Any, Any]] = {
        "model": (ModelStepInput, ModelStepOutput),
        "tool": (ToolStepInput, ToolStepOutput),
        "commit": (CommitStepInput, None),
    }
    for kind, taken, output in recorded:
        in_type, out_type = types[kind]
        assert in_type.from_dict(taken).to_dict() == taken, kind
        if out_type is None:  # the commit step's output is its checkpoint's sequence
            assert isinstance(output, int) and output >= 0
            continue
        data = through_json(output.to_dict())
        assert out_type.from_dict(data).to_dict() == data, kind
    # what the steps returned is what the run kept
    tool_outputs = [o for kind, _, o in recorded if kind == "tool"]
    kept = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert all(any(o.outcome.message == m for o in tool_outputs) for m in kept)
    assert all(o.traces for o in tool_outputs)  # each step returns its own trace
    # a side effect's ledger entries ride along (the closing one, to go with the turn's commit)
    assert any(o.ledger or o.closing for o in tool_outputs)
