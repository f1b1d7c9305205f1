"""Wait points: a run waits for a person at (task, session path, key); the pause and the
decision that resumes it are recorded there, in the checkpoint and in the trace."""

from __future__ import annotations

import json
from pathlib import Path

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.pause import HumanDecision, WaitPoint
from subagents.runtime.run import Run
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def calls(*items: ToolCall) -> ModelResponse:
    return ModelResponse(tool_calls=items, stop_reason="tool_use")


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


async def test_a_pause_and_its_decision_are_recorded_at_the_wait_point(tmp_path: Path) -> None:
    def main_turn(request: ModelRequest) -> ModelResponse:
        if not results(request):
            task = {"description": "d", "prompt": "write", "subagent_type": "writer"}
            return calls(ToolCall("t1", "Task", task))
        return text_response("main done")

    def writer_turn(request: ModelRequest) -> ModelResponse:
        if not results(request):
            return calls(ToolCall("w1", "Write", {"file_path": "out.txt", "content": "model"}))
        return text_response("writer done: " + results(request)[0].content)

    def runtime(store: object) -> Runtime:
        return Runtime(
            cwd=tmp_path,
            agents=[AgentDefinition(name="writer", description="Writes.", system_prompt="W.")],
            model=FunctionModel(main_turn),
            agent_models={"writer": FunctionModel(writer_turn)},
            permission_mode="default",
            headless="pause",
            store=store,  # type: ignore[arg-type]
        )

    with open_store(tmp_path / "state.db") as store:
        paused = await runtime(store).run("go")
        assert paused.status == "awaiting_human" and paused.question is not None
        task_id = paused.task_id or ""
        child = paused.question.session_id
        where = {
            "schema_version": 1,
            "task_id": task_id,
            "session_path": [paused.agent_id, child],
            "key": "w1",
        }
        latest = store.latest_checkpoint(task_id)
        assert latest is not None and latest.question is not None
        assert latest.question["wait_point"] == where
        assert latest.question["schema_version"] == 1
        waits = [t for t in store.traces(task_id) if t.kind == "wait"]
        assert [(t.session_id, t.step_name) for t in waits] == [(child, "waiting")]  # once
        assert waits[0].data["question_kind"] == "approval"
        assert waits[0].data["wait_point"] == where

        modified = {"file_path": "out.txt", "content": f"token {TOKEN}"}
        done = await runtime(store).resume(task_id, HumanDecision("modify", arguments=modified))
        assert done.status == "completed", done.error
        assert (tmp_path / "out.txt").read_text() == f"token {TOKEN}"
        decided = [t for t in store.traces(task_id) if t.step_name == "decided"]
        assert [(t.kind, t.session_id, t.message) for t in decided] == [("wait", child, "modify")]
        assert decided[0].data["wait_point"] == where
        recorded = [
            c.state["decisions"]
            for c in store.checkpoints(task_id)
            if c.session_id == child and "decisions" in c.state
        ]
        assert len(recorded) == 1
        (decision,) = recorded[0]
        assert decision["what"] == "modify" and decision["wait_point"] == where
        assert decision["arguments"]["file_path"] == "out.txt"
        assert "[REDACTED]" in decision["arguments"]["content"]
        everything = json.dumps([c.model_dump(mode="json") for c in store.checkpoints(task_id)])
        everything += json.dumps([t.model_dump(mode="json") for t in store.traces(task_id)])
        assert TOKEN not in everything


async def test_a_decision_reaches_only_its_own_wait_point(tmp_path: Path) -> None:
    here = WaitPoint("task", ("main", "child"), "call_0")
    run = Run(Runtime(cwd=tmp_path), decisions={here: HumanDecision("approve")})
    assert run.take_decision(WaitPoint("task", ("main",), "call_0")) is None  # same call id
    assert run.take_decision(WaitPoint("task", ("main", "child"), "call_0")) is not None
    assert run.take_decision(here) is None  # handed out once


async def test_an_approval_to_send_a_call_again_outlives_a_restart(tmp_path: Path) -> None:
    """A Write holding a token is approved, but its stored arguments lost the token, so the
    model is asked to send it again. A second pause (a sibling call) ends the process before
    it does; after the restart the call the model sends again still runs without asking."""
    secret = f"GITHUB_TOKEN={TOKEN}\n"

    def turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return calls(
                ToolCall("a1", "Write", {"file_path": ".env.local", "content": secret}),
                ToolCall("b1", "Write", {"file_path": "notes.txt", "content": "notes"}),
            )
        if not any(r.tool_call_id == "a2" for r in done):
            return calls(ToolCall("a2", "Write", {"file_path": ".env.local", "content": secret}))
        return text_response("written")

    def runtime(store: object) -> Runtime:
        return Runtime(
            cwd=tmp_path,
            model=FunctionModel(turn),
            permission_mode="default",
            headless="pause",
            store=store,  # type: ignore[arg-type]
        )

    with open_store(tmp_path / "state.db") as store:
        first = await runtime(store).run("save")
        assert first.question is not None and first.question.tool_call_id == "a1"
        task_id = first.task_id or ""
        second = await runtime(store).resume(task_id, HumanDecision("approve"))
        assert second.question is not None and second.question.tool_call_id == "b1"
        done = await runtime(store).resume(task_id, HumanDecision("approve"))  # a fresh process
        assert done.status == "completed", done.error
        assert (tmp_path / ".env.local").read_text() == secret
        assert (tmp_path / "notes.txt").read_text() == "notes"
        assert TOKEN not in json.dumps([c.state for c in store.checkpoints(task_id)])
