"""One assembly path: main, child and rebuilt sessions are put together by the same builder,
and agree on tools (AskHuman), limits and prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.assembly import SessionSpec
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response


def offered(request: ModelRequest) -> list[str]:
    return sorted(spec.name for spec in request.tools)


def asker(requests: list[ModelRequest]) -> FunctionModel:
    """Asks a person once, then answers with what it heard."""

    def turn(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return tool_call_response("AskHuman", {"question": "Which port?"})
        return text_response(results[-1].content)

    return FunctionModel(turn, name="scripted:asker")


async def test_a_main_agent_with_a_tools_list_keeps_ask_human_after_a_resume(
    tmp_path: Path,
) -> None:
    # Before one builder, the resumed main session lost AskHuman: its rebuild filtered the
    # stored tools through the definition's list, which the first run had not done.
    writer = AgentDefinition(
        name="writer", description="Writes.", system_prompt="You write.", tools=["Read"]
    )
    requests: list[ModelRequest] = []
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path, agents=[writer], model=asker(requests), store=store, headless="pause"
        )
        paused = await runtime.run("configure", agent="writer")
        assert paused.status == "awaiting_human", paused.error
        decision = HumanDecision("approve", values={"answer": "8080"})
        again = Runtime(
            cwd=tmp_path, agents=[writer], model=asker(requests), store=store, headless="pause"
        )
        done = await again.resume(paused.task_id or "", decision)
    assert done.status == "completed", done.error
    assert "8080" in done.output
    first, resumed = requests[0], requests[-1]
    assert offered(first) == offered(resumed) == ["AskHuman", "Read"]
    assert first.system == resumed.system == "You write."


async def test_a_rebuilt_session_has_the_spec_it_was_built_with(tmp_path: Path) -> None:
    from subagents.runtime.delegation import Delegation
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.run import Run

    requests: list[ModelRequest] = []
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(cwd=tmp_path, model=asker(requests), store=store, headless="pause")
        paused = await runtime.run("configure")
        task_id = paused.task_id or ""
        record = next(r for r in store.sessions(task_id) if r.parent_session_id is None)
        stored = SessionSpec.from_record(record, definition=None)
        again = Runtime(cwd=tmp_path, model=asker(requests), store=store, headless="pause")
        recorder = Recorder(store, store.get_task(task_id), again.redactor())
        run = Run(again, delegation=Delegation(again))
        spec = SessionSpec.of(run.builder.rebuilt(record, None, recorder))
    same: dict[str, Any] = {
        name: getattr(stored, name)
        for name in ("agent_id", "agent_type", "role", "model_name", "system_prompt", "depth")
    }
    assert {name: getattr(spec, name) for name in same} == same
    assert spec.tool_names == stored.tool_names and "AskHuman" in spec.tool_names
    assert spec.max_turns == stored.max_turns == 50
    assert SessionSpec.from_dict(spec.to_dict()) == spec
