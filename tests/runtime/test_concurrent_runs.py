"""Runs that share a Runtime share its configuration only: two runs at once on one Runtime
keep their own results, subagents, decisions and stored rows, and a pause or an approval in
one leaves the other alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.events import Event, SessionStarted
from subagents.runtime.pause import HumanDecision
from subagents.runtime.result import RunResult
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response, tool_call_response

WORKER = AgentDefinition(name="worker", description="Does the work.", system_prompt="You work.")


def first_prompt(request: ModelRequest) -> str:
    return next(m.content for m in request.messages if isinstance(m, UserMessage))


def results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, ToolResultMessage)]


class Scene:
    """Two or three runs ("A", "B", "C") whose workers wait for each other on events."""

    def __init__(self) -> None:
        self.a_started = asyncio.Event()
        self.b_started = asyncio.Event()
        self.b_paused = asyncio.Event()
        self.b_resuming = asyncio.Event()
        self.c_waiting = asyncio.Event()

    async def main(self, request: ModelRequest) -> ModelResponse:
        run = first_prompt(request)  # "A", "B" or "C"
        done = results(request)
        if not done:
            arguments = {"description": f"work {run}", "prompt": f"work for {run}"}
            return tool_call_response("Task", {**arguments, "subagent_type": "worker"})
        return text_response(f"{run} done: {done[-1].splitlines()[0]}")

    async def worker(self, request: ModelRequest) -> ModelResponse:
        run = first_prompt(request).removeprefix("work for ")
        done = results(request)
        if run == "A":  # both workers are in flight; A finishes only after B has paused
            self.a_started.set()
            await self.b_started.wait()
            await self.b_paused.wait()
            return text_response("worker A finished")
        if run == "B":
            if done:
                return text_response(f"worker B: {done[-1]}")
            self.b_started.set()
            await self.a_started.wait()
            return self.write("b.txt")
        # C writes with the same call id as B's approved call, while B's resume holds it
        self.c_waiting.set()
        await self.b_resuming.wait()
        return self.write("c.txt")

    @staticmethod
    def write(name: str) -> ModelResponse:
        arguments = {"file_path": name, "content": name}
        return tool_call_response("Write", arguments, id="same-call-id")


def sessions_of(store: SQLiteStore, result: RunResult) -> dict[str, str | None]:
    return {r.session_id: r.parent_session_id for r in store.sessions(result.task_id or "")}


async def test_two_runs_on_one_runtime_keep_to_themselves(tmp_path: Path) -> None:
    scene = Scene()
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path,
            agents=[WORKER],
            model=FunctionModel(scene.main, name="scripted:main"),
            agent_models={"worker": FunctionModel(scene.worker, name="scripted:worker")},
            store=store,
            headless="pause",
        )

        async def run_b() -> RunResult:
            try:
                return await runtime.run("B")
            finally:
                scene.b_paused.set()

        a, b = await asyncio.wait_for(asyncio.gather(runtime.run("A"), run_b()), 30)

        # B paused for its worker's Write; A's worker went on and finished after that
        assert a.status == "completed", a.error
        assert a.output == "A done: worker A finished"
        assert b.status == "awaiting_human" and b.question is not None
        assert a.task_id != b.task_id
        (spawn,) = a.subagents
        assert (spawn.subagent_type, spawn.status) == ("worker", "completed")
        assert b.subagents == ()  # its worker is waiting, not finished
        a_rows, b_rows = sessions_of(store, a), sessions_of(store, b)
        assert a_rows == {a.agent_id: None, spawn.agent_id: a.agent_id}
        assert len(b_rows) == 2 and not a_rows.keys() & b_rows.keys()
        question = b.question
        assert question.task_id == b.task_id and question.tool_name == "Write"
        assert question.session_path[0] == b.agent_id
        assert set(question.session_path) == set(b_rows)
        assert store.get_task(a.task_id or "").status == "completed"
        assert store.get_task(b.task_id or "").status == "awaiting_human"

        # B's approval is B's: a run C asking about a call with the very same id meanwhile
        # is asked about it, not handed B's decision
        def on_event(event: Event) -> None:
            if isinstance(event, SessionStarted) and event.agent_id == b.agent_id:
                scene.b_resuming.set()

        async def resume_b() -> RunResult:
            await scene.c_waiting.wait()  # C's worker is in flight when B's decision arrives
            return await runtime.resume(b.task_id or "", HumanDecision("approve"))

        unsubscribe = runtime.events.subscribe(on_event)
        try:
            approved, c = await asyncio.wait_for(asyncio.gather(resume_b(), runtime.run("C")), 30)
        finally:
            unsubscribe()

    assert approved.status == "completed", approved.error
    assert approved.output.startswith("B done: worker B: Created b.txt")
    assert (tmp_path / "b.txt").read_text() == "b.txt"
    assert [s.subagent_type for s in approved.subagents] == ["worker"]
    assert c.status == "awaiting_human" and c.question is not None
    assert c.question.task_id == c.task_id and c.question.tool_call_id == "same-call-id"
    assert not (tmp_path / "c.txt").exists()
    assert approved.task_id == b.task_id != c.task_id
    assert c.subagents == ()


async def test_last_delegation_still_answers_but_is_deprecated(tmp_path: Path) -> None:
    scene = Scene()
    scene.b_started.set()
    scene.b_paused.set()
    runtime = Runtime(
        cwd=tmp_path,
        agents=[WORKER],
        model=FunctionModel(scene.main, name="scripted:main"),
        agent_models={"worker": FunctionModel(scene.worker, name="scripted:worker")},
    )
    result = await runtime.run("A")
    with pytest.warns(DeprecationWarning, match="RunResult.subagents"):
        delegation = runtime.last_delegation
    assert delegation is not None
    assert tuple(delegation.spawn_results) == result.subagents != ()


async def test_a_resumed_tasks_rules_stay_with_its_run(tmp_path: Path) -> None:
    """Resuming a task brings back the rules it was started with, for that run only: the
    next run of the same Runtime has the Runtime's own rules."""

    def offered(model: FunctionModel) -> set[str]:
        return {spec.name for spec in model.requests[-1].tools}

    def asking(request: ModelRequest) -> ModelResponse:
        if results(request):
            return text_response("done")
        return tool_call_response("AskHuman", {"question": "Go on?"})

    with open_store(tmp_path / "state.db") as store:
        first = FunctionModel(asking, name="scripted:first")
        strict = Runtime(
            cwd=tmp_path, model=first, store=store, headless="pause", disallowed_tools=["Write"]
        )
        paused = await strict.run("go")
        assert paused.status == "awaiting_human" and "Write" not in offered(first)

        model = FunctionModel(asking, name="scripted:first")
        runtime = Runtime(cwd=tmp_path, model=model, store=store, headless="pause")
        resumed = await runtime.resume(paused.task_id or "", HumanDecision("approve"))
        assert resumed.status == "completed" and "Write" not in offered(model)
        fresh = await runtime.run("go")
        assert fresh.status == "awaiting_human" and "Write" in offered(model)


@pytest.mark.slow
async def test_runs_that_start_at_once_share_one_start_of_the_mcp_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the second run saw the manager of the first before its servers were up, and
    ran without their tools."""
    from mcp_servers.harness import stdio_calc

    requests: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return text_response("done")

    runtime = Runtime(
        cwd=tmp_path, model=FunctionModel(answer, name="scripted:main"), mcp_servers=[stdio_calc()]
    )
    try:
        first, second = await asyncio.gather(runtime.run("one"), runtime.run("two"))
        assert first.status == second.status == "completed"
        assert runtime.toolbox.mcp is not None and len(runtime.toolbox.mcp.tools()) > 0
        for request in requests:
            assert "mcp__calc__add" in {spec.name for spec in request.tools}
    finally:
        await runtime.aclose()
