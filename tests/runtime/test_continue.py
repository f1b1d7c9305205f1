"""Continuing a finished conversation: the same task, its main session rebuilt with the whole
history, one more prompt; and which task `run --continue` picks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from subagents.errors import StoreError
from subagents.messages import AssistantMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.decorator import tool


@tool
def remember(fact: str) -> str:
    """Note a fact (a side effect: it needs approval in default mode)."""
    return f"noted {fact}"


def recaller(request: ModelRequest) -> ModelResponse:
    prompts = [m.content for m in request.messages if isinstance(m, UserMessage)]
    answers = [m.content for m in request.messages if isinstance(m, AssistantMessage) and m.content]
    if prompts[-1].startswith("note "):
        if answers and answers[-1].startswith("noted"):
            return text_response("done")
        return tool_call_response("remember", {"fact": prompts[-1][5:]})
    return text_response(f"prompts so far: {' | '.join(prompts)}; answers: {len(answers)}")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with open_store(tmp_path / "state.db") as opened:
        yield opened


def runtime(tmp_path: Path, store: SQLiteStore, **kwargs: object) -> Runtime:
    return Runtime(
        cwd=tmp_path,
        model=FunctionModel(recaller, name="scripted:recaller"),
        store=store,
        tools=[remember],
        **kwargs,  # type: ignore[arg-type]
    )


async def test_a_finished_conversation_goes_on_in_the_same_task_with_its_history(
    tmp_path: Path, store: SQLiteStore
) -> None:
    first = await runtime(tmp_path, store).run("the sky is blue")
    assert first.status == "completed" and first.task_id is not None
    again = await runtime(tmp_path, store).continue_task(first.task_id, "what colour is it?")
    assert again.status == "completed", again.error
    assert again.task_id == first.task_id
    assert again.output == "prompts so far: the sky is blue | what colour is it?; answers: 1"
    task = store.get_task(first.task_id)
    assert task.status == "completed" and task.result == again.output
    (main,) = [s for s in store.sessions(task.id) if s.parent_session_id is None]
    roles = [m["role"] for m in store.messages(main.session_id)]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert runtime(tmp_path, store).latest_conversation() == task.id


async def test_only_ended_conversations_of_this_workspace_are_continued(
    tmp_path: Path, store: SQLiteStore
) -> None:
    paused = await runtime(tmp_path, store, headless="pause").run("note the sky")
    assert paused.status == "awaiting_human" and paused.task_id is not None
    with pytest.raises(StoreError, match="waiting for a person"):
        await runtime(tmp_path, store).continue_task(paused.task_id, "and?")
    assert runtime(tmp_path, store).latest_conversation() is None
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    done = await runtime(elsewhere, store).run("hello")
    assert done.task_id is not None
    assert runtime(tmp_path, store).latest_conversation() is None
    assert runtime(elsewhere, store).latest_conversation() == done.task_id


def delegating_main(request: ModelRequest) -> ModelResponse:
    """The main model: it never delegates by itself; after a Task result it reports it."""
    from subagents.messages import ToolResultMessage

    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if results and request.messages[-1] is results[-1]:
        return text_response(f"the helper said: {results[-1].content[:60]}")
    return text_response("I answer myself")


async def test_a_prompt_handed_to_an_agent_runs_it_whatever_the_model_would_do(
    tmp_path: Path, store: SQLiteStore
) -> None:
    from subagents.definitions.model import AgentDefinition

    helper_model = FunctionModel(lambda request: "42 widgets", name="scripted:helper")
    rt = Runtime(
        cwd=tmp_path,
        model=FunctionModel(delegating_main, name="scripted:main"),
        agents=[AgentDefinition(name="counter", description="Counts.", system_prompt="Count.")],
        agent_models={"counter": helper_model},
        store=store,
    )
    first = await rt.run("count the widgets", delegate_to="counter")
    assert first.status == "completed", first.error
    assert "42 widgets" in first.output
    assert [s.subagent_type for s in first.subagents] == ["counter"]
    assert helper_model.requests and "count the widgets" in str(helper_model.requests[0].messages)
    assert first.task_id is not None
    # a later turn of the same conversation can hand off too; an unknown agent is refused
    # before anything runs, and the task is left free
    again = await rt.continue_task(first.task_id, "and now?", delegate_to="counter")
    assert again.status == "completed" and "42 widgets" in again.output
    from subagents.errors import AgentNotFoundError

    with pytest.raises(AgentNotFoundError, match="counter"):
        await rt.continue_task(first.task_id, "x", delegate_to="countr")
    with pytest.raises(AgentNotFoundError):
        await rt.run("x", delegate_to="nobody")
    done = await rt.continue_task(first.task_id, "thanks")
    assert done.output == "I answer myself"


async def cancel_inside_its_model(
    rt: Runtime, prompt: str, task_id: str, entered: asyncio.Event
) -> None:
    """Run ``prompt`` as task ``task_id`` and cancel it once its model has ``entered`` a call
    that never returns; the run ends cancelled."""
    running = asyncio.create_task(rt.run(prompt, task_id=task_id))
    await entered.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_a_run_stopped_in_its_first_model_call_stores_its_prompt_for_later(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """Its main session had no checkpoint yet: the prompt is stored as it stops, and only the
    prompt (a later `continue` goes on from it)."""
    entered = asyncio.Event()

    async def stuck(request: ModelRequest) -> ModelResponse:
        entered.set()
        await asyncio.Event().wait()  # until cancelled
        raise AssertionError("never answers")

    rt = Runtime(cwd=tmp_path, model=FunctionModel(stuck, name="scripted:stuck"), store=store)
    await cancel_inside_its_model(rt, "remember the prompt", "first-call", entered)
    (session,) = store.sessions("first-call")
    assert [m["content"] for m in store.messages(session.session_id)] == ["remember the prompt"]


async def test_a_run_stopped_on_purpose_is_recorded_cancelled_and_goes_on_later(
    tmp_path: Path, store: SQLiteStore
) -> None:
    entered = asyncio.Event()
    never = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        if "wait" in str(request.messages[-1]):
            entered.set()
            await never.wait()  # until cancelled
        return recaller(request)

    rt = Runtime(cwd=tmp_path, model=FunctionModel(slow, name="scripted:slow"), store=store)
    await cancel_inside_its_model(rt, "wait for me", "stopped-task", entered)
    task = store.get_task("stopped-task")
    assert task.status == "cancelled" and task.error == "stopped before it finished"
    again = await rt.continue_task("stopped-task", "and now?")
    assert again.status == "completed", again.error
    assert again.output.startswith("prompts so far: wait for me")
