"""Approvals and questions from background agents wait alone, in the run's inbox, while the
rest of the run goes on; they are answered in any order, in this process or another."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.hooks import Hooks
from subagents.runtime.inbox import post_decision
from subagents.runtime.pause import DeliveredDecision, HumanDecision, HumanQuestion
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.decorator import tool

DEPLOYED: list[str] = []


@tool(needs_approval=True)
async def deploy(target: str) -> str:
    """Deploy to a target (needs a person's approval)."""
    DEPLOYED.append(target)
    return f"deployed {target}"


def agent(name: str) -> AgentDefinition:
    return AgentDefinition(name=name, description=f"The {name}.", system_prompt=f"You are {name}.")


def background(kind: str, prompt: str) -> tuple[str, dict[str, Any]]:
    arguments = {"description": kind, "prompt": prompt, "subagent_type": kind}
    return "Task", {**arguments, "run_in_background": True}


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def deployer(target: str) -> FunctionModel:
    def turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return tool_call_response("deploy", {"target": target})
        return text_response(f"{target}: {done[0].content}")

    return FunctionModel(turn)


def main_model() -> FunctionModel:
    def turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if len(done) < 3:
            name, arguments = background(
                *[("a", "deploy a"), ("b", "deploy b"), ("c", "count")][len(done)]
            )
            return tool_call_response(name, arguments)
        notes = sum(
            m.content.count("<task-notification>")
            for m in request.messages
            if isinstance(m, UserMessage)
        )
        return text_response("done" if notes >= 3 else "waiting")

    return FunctionModel(turn)


async def test_two_approvals_are_answered_from_the_inbox_while_a_third_agent_works(
    tmp_path: Path,
) -> None:
    DEPLOYED.clear()
    answered = asyncio.Event()
    working_turns: list[int] = []

    async def counter(request: ModelRequest) -> ModelResponse:
        working_turns.append(len(request.messages))
        if len(working_turns) == 3:
            await answered.wait()  # still working when both questions are answered
        if len(working_turns) < 4:
            return tool_call_response("LS", {})
        return text_response("counted")

    asked = asyncio.Event()
    paused: list[str] = []

    def watch(event: object) -> None:
        if isinstance(event, ev.SessionPaused):
            paused.append(event.agent_id)
            if len(paused) == 2:
                asked.set()

    bus = ev.EventBus()
    bus.subscribe(watch)
    notified: list[tuple[str | None, str]] = []
    hooks = Hooks()
    hooks.add("Notification", lambda p: notified.append((p.notification_type, p.agent_type)))
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            events=bus,
            hooks=hooks,
            cwd=tmp_path,
            model=main_model(),
            agents=[agent("a"), agent("b"), agent("c")],
            agent_models={"a": deployer("a"), "b": deployer("b"), "c": FunctionModel(counter)},
            tools=[deploy],
            headless="pause",
            store=store,
        )

        async def person() -> None:
            await asked.wait()
            assert len(working_turns) < 4  # the third agent has not finished
            first, second = runtime.pending_questions()
            runtime.answer(second.tool_call_id, HumanDecision("approve"))  # in any order
            runtime.answer(first.tool_call_id, HumanDecision("reject", reason="not today"))
            answered.set()

        result, _ = await asyncio.gather(runtime.run("deploy both, count"), person())

        assert result.status == "completed" and result.output == "done"
        assert DEPLOYED in (["a"], ["b"])  # the approved one ran, the rejected one did not
        assert len(working_turns) == 4
        outputs = {spawn.summary for spawn in result.subagents}
        assert any("rejected this call: not today" in text for text in outputs)
        # the stored trace holds both waits and both answers
        assert result.task_id is not None
        steps = [t.step_name for t in store.traces(result.task_id) if t.kind == "wait"]
        assert steps.count("waiting") == 2 and steps.count("decided") == 2
    # a person hears of each question, and of each background agent that ended
    assert sorted(notified) == [
        ("agent_completed", "a"),
        ("agent_completed", "b"),
        ("agent_completed", "c"),
        ("agent_needs_input", "a"),
        ("agent_needs_input", "b"),
    ]


async def test_a_run_with_nothing_left_but_questions_pauses_and_resumes(tmp_path: Path) -> None:
    DEPLOYED.clear()
    with open_store(tmp_path / "state.db") as store:

        def build() -> Runtime:
            return Runtime(
                cwd=tmp_path,
                model=main_model(),
                agents=[agent("a"), agent("b"), agent("c")],
                agent_models={
                    "a": deployer("a"),
                    "b": deployer("b"),
                    "c": FunctionModel(lambda request: text_response("counted")),
                },
                tools=[deploy],
                headless="pause",
                store=store,
            )

        paused = await build().run("deploy both, count")
        assert paused.status == "awaiting_human" and paused.question is not None
        assert paused.task_id is not None
        # the other question is stored too: a person answers it from another process
        waiting = [
            (session, store.latest_checkpoint(paused.task_id, session.session_id))
            for session in store.sessions(paused.task_id)
            if session.status == "awaiting_human" and session.agent_name in ("a", "b")
        ]
        assert len(waiting) == 2
        for _, checkpoint in waiting:
            assert checkpoint is not None and checkpoint.question is not None
            question = checkpoint.question
            point_key = question["tool_call_id"]
            asked = HumanQuestion.from_dict(question)
            assert asked.tool_call_id == point_key
            post_decision(
                store, DeliveredDecision(asked.wait_point, HumanDecision("approve"), "deploy")
            )

        resumed = await build().resume(paused.task_id)

        assert resumed.status == "completed" and resumed.output == "done"
        assert sorted(DEPLOYED) == ["a", "b"]
