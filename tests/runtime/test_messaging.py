"""SendMessage and ListAgents: a parent steers its running subagents, a finished one continues
on a message, a subagent asks its parent; who may message whom; messages are stored first."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paths import TESTS
from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.mail import stored_letters
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import (
    FunctionModel,
    text_response,
    tool_call_response,
    tool_calls_response,
)

MAIL_RUN = TESTS / "scenarios" / "mail_run.py"
AGENT_ID = re.compile(r"agent_id (?:is )?([0-9a-f-]{36})|agent_id: ([0-9a-f-]{36})")


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def task(subagent_type: str, prompt: str = "do it", **extra: Any) -> ModelResponse:
    arguments = {"description": f"run {subagent_type}", "prompt": prompt}
    arguments.update(subagent_type=subagent_type, **extra)
    return tool_call_response("Task", arguments)


def send(to: str, message: str) -> ModelResponse:
    return tool_call_response("SendMessage", {"to": to, "message": message})


def runtime(tmp_path: Path, main: Any, *agents: AgentDefinition, **kwargs: Any) -> Runtime:
    kwargs.setdefault("permission_mode", "bypassPermissions")
    return Runtime(cwd=tmp_path, agents=agents, model=main, **kwargs)


def team(tmp_path: Path, main_turn: Any, name: str, child_turn: Any, **kwargs: Any) -> Runtime:
    """A main agent and one subagent type ``name``, each on its own scripted model."""
    models = {name: FunctionModel(child_turn)}
    return runtime(tmp_path, FunctionModel(main_turn), agent(name), agent_models=models, **kwargs)


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def agent_id_in(text: str) -> str:
    found = AGENT_ID.search(text)
    assert found is not None, text
    return found.group(1) or found.group(2)


def tool_names(request: ModelRequest) -> set[str]:
    return {spec.name for spec in request.tools}


def mentions(requests: list[ModelRequest], text: str) -> int:
    """In how many user messages of the last request ``text`` is."""
    return sum(text in m.content for m in requests[-1].messages if isinstance(m, UserMessage))


async def test_a_parent_steers_a_running_background_child(tmp_path: Path) -> None:
    release = asyncio.Event()
    child_requests: list[ModelRequest] = []

    async def child_turn(request: ModelRequest) -> ModelResponse:
        child_requests.append(request)
        if len(child_requests) == 1:
            await release.wait()  # still working on its first step when the message comes
            return tool_call_response("LS", {})
        return text_response("checked the tests as asked")

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return task("worker", run_in_background=True)
        if len(done) == 1:
            return send(agent_id_in(done[0].content), "also check the tests folder")
        if len(done) == 2 and not isinstance(request.messages[-1], UserMessage):
            release.set()
            return text_response("waiting for the worker")
        return text_response("done: " + request.messages[-1].content)

    main = FunctionModel(main_turn)
    rt = runtime(
        tmp_path, main, agent("worker"), agent_models={"worker": FunctionModel(child_turn)}
    )
    result = await rt.run("go")

    assert result.status == "completed" and "checked the tests as asked" in result.output
    assert "SendMessage" not in tool_names(main.requests[0])  # nobody to message yet
    assert "SendMessage" in tool_names(main.requests[1])  # a background child runs
    sent = results(main.requests[2])[-1].content
    assert "Message sent to worker" in sent and "next step" in sent
    # the child's next request carries the message, once, with who sent it
    assert mentions(child_requests, "also check the tests folder") == 1
    delivered = next(
        m.content
        for m in child_requests[1].messages
        if isinstance(m, UserMessage) and "also check" in m.content
    )
    assert delivered.startswith('<agent-message id="msg-') and 'to="parent"' in delivered
    assert "SendMessage" in tool_names(child_requests[1])  # it may answer now


async def test_a_finished_subagent_continues_on_a_message(tmp_path: Path) -> None:
    child_prompts: list[str] = []

    def child_turn(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        assert isinstance(last, UserMessage)
        child_prompts.append(last.content)
        return text_response(f"answer {len(child_prompts)}")

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return task("helper")
        if len(done) == 1:
            return send("helper", "now the second file")  # by type: the newest helper
        last = request.messages[-1]
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("final: " + last.content)
        return text_response("waiting")

    rt = team(tmp_path, main_turn, "helper", child_turn)
    result = await rt.run("go")

    assert result.status == "completed"
    assert child_prompts[0] == "do it" and "now the second file" in child_prompts[1]
    assert "answer 2" in result.output  # its new answer reached the parent


async def test_a_background_child_asks_its_parent_and_gets_the_answer(tmp_path: Path) -> None:
    answered = asyncio.Event()
    child_requests: list[ModelRequest] = []

    async def child_turn(request: ModelRequest) -> ModelResponse:
        child_requests.append(request)
        if len(child_requests) == 1:
            return send("parent", "which config file do you mean?")
        if len(child_requests) == 2:
            await answered.wait()
            return tool_call_response("LS", {})
        return text_response("used the one the parent named")

    def main_turn(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        done = results(request)
        if not done:
            return task("worker", run_in_background=True)
        if isinstance(last, UserMessage) and "which config file" in last.content:
            assert 'to="' in last.content  # told how to answer
            answered.set()
            return send(agent_id_in(done[0].content), "setup.cfg")
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("done")
        return text_response("waiting")

    rt = team(tmp_path, main_turn, "worker", child_turn)
    result = await rt.run("go")

    assert result.status == "completed" and result.output == "done"
    assert results(child_requests[1])[-1].content.startswith("Message sent to your parent")
    assert mentions(child_requests, "setup.cfg") == 1


async def test_a_subagent_may_not_message_a_sibling(tmp_path: Path) -> None:
    ids: dict[str, str] = {}
    child_results: list[str] = []
    release = asyncio.Event()

    async def a_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            await release.wait()
            return send(ids["b"], "delete everything")
        if len(done) == 1:
            child_results.append(done[0].content)
            return tool_call_response("ListAgents", {})
        child_results.append(done[-1].content)
        return text_response("a done")

    async def b_turn(request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text_response("b done")

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return task("a", run_in_background=True)
        if len(done) == 1:
            return task("b", run_in_background=True)
        if len(done) == 2 and "b" not in ids:
            ids["b"] = agent_id_in(done[1].content)
            release.set()
            return tool_call_response("ListAgents", {})
        if len(done) == 3 and not isinstance(request.messages[-1], UserMessage):
            ids["main listing"] = done[2].content
        return text_response("ok")

    rt = runtime(
        tmp_path,
        FunctionModel(main_turn),
        agent("a"),
        agent("b"),
        agent_models={"a": FunctionModel(a_turn), "b": FunctionModel(b_turn)},
    )
    result = await rt.run("go")

    assert result.status == "completed"
    refused, listing = child_results
    main_listing = ids["main listing"]
    assert "you may not message agent" in refused and "ListAgents" in refused
    assert 'to="parent": main' in listing and ids["b"] not in listing
    assert ids["b"] in main_listing and "b, " in main_listing


async def test_messages_are_stored_before_delivery_and_kept_once(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def child_turn(request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text_response("child done")

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            return task("worker", run_in_background=True)
        if len(done) == 1:
            return send("worker", "the token is sk-live-1234567890abcdefghijklmnop")
        release.set()
        return text_response("ok")

    with open_store(tmp_path / "state.db") as store:
        rt = team(tmp_path, main_turn, "worker", child_turn, store=store)
        result = await rt.run("go")
        assert result.task_id is not None
        (letter,) = stored_letters(store, result.task_id)
    assert letter.sender_name == "main" and "the token is" in letter.text
    assert "sk-live-1234567890abcdefghijklmnop" not in letter.text  # secrets never stored


@pytest.mark.slow
def test_a_message_sent_before_a_sigkill_is_delivered_once_after_resume(tmp_path: Path) -> None:
    store = tmp_path / "state.db"
    process = subprocess.Popen(
        [sys.executable, str(MAIL_RUN), str(store), str(tmp_path), "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert process.stdout is not None
    task_id = json.loads(process.stdout.readline())["started"]
    line = process.stdout.readline()  # the message is stored and waits for the busy worker
    assert json.loads(line) == {"sent": True}, process.communicate(timeout=30)[1][-2000:]
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)

    resumed = subprocess.run(
        [sys.executable, str(MAIL_RUN), str(store), str(tmp_path), "resume", task_id],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    outcome = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert outcome["status"] == "completed" and "saw the message" in outcome["output"]
    # its first request after the restart carried the message, and kept it, once
    assert outcome["seen"] == [1, 1]
    with open_store(store) as db:
        worker = next(s for s in db.sessions(task_id) if s.agent_name == "worker")
        held = [m for m in db.messages(worker.session_id) if "hidden files" in str(m["content"])]
    assert len(held) == 1


async def test_the_21st_background_child_queues_and_says_so(tmp_path: Path) -> None:
    release = asyncio.Event()
    started: list[int] = []

    async def child_turn(request: ModelRequest) -> ModelResponse:
        started.append(1)
        await release.wait()
        return text_response("ok")

    listings: list[str] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        done = results(request)
        if not done:
            calls = [
                ("Task", {"description": f"part {n}", "prompt": "p", "subagent_type": "worker"})
                for n in range(21)
            ]
            return tool_calls_response(
                [(name, {**a, "run_in_background": True}) for name, a in calls]
            )
        if len(done) == 21:
            return tool_call_response("ListAgents", {})
        if len(done) == 22 and not listings:
            listings.append(done[-1].content)
            release.set()
        return text_response("all done")

    rt = team(tmp_path, main_turn, "worker", child_turn)
    result = await rt.run("go")

    assert result.status == "completed"
    (listing,) = listings
    assert listing.count("worker, running (background)") == 20  # max_concurrent, by default
    assert listing.count("worker, queued (background)") == 1
    assert "part 20" in next(line for line in listing.splitlines() if "queued" in line)
    assert len(started) == 21  # it ran once a place was free


async def test_the_watchdog_reports_then_stops_a_stalled_background_child(tmp_path: Path) -> None:
    (tmp_path / ".subagents").mkdir()
    (tmp_path / ".subagents" / "config.toml").write_text("[subagents]\nstall_seconds = 0.05\n")
    seen: list[ev.AgentStalled] = []
    bus = ev.EventBus()
    bus.subscribe(lambda event: seen.append(event) if isinstance(event, ev.AgentStalled) else None)

    async def hung_child(request: ModelRequest) -> ModelResponse:
        await asyncio.Event().wait()  # a provider that never answers, with no timeout
        raise AssertionError("unreachable")

    def main_turn(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if not results(request):
            return task("worker", run_in_background=True)
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("heard: " + last.content)
        return text_response("waiting")

    rt = team(tmp_path, main_turn, "worker", hung_child, events=bus)
    result = await rt.run("go")

    assert result.status == "completed"
    assert "status cancelled" in result.output and "stopped by the watchdog" in result.output
    assert [event.stopped for event in seen] == [False, True]  # reported, then stopped


async def test_a_message_to_a_nested_agent_of_a_finished_task_reaches_the_main_agent(
    tmp_path: Path,
) -> None:
    def main_turn(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("again: " + last.content)
        return task("helper") if not results(request) else text_response("first answer")

    def helper_turn(request: ModelRequest) -> ModelResponse:
        return task("nested") if not results(request) else text_response("helper answer")

    def nested_turn(request: ModelRequest) -> ModelResponse:
        told = any(
            isinstance(m, UserMessage) and "look deeper" in m.content for m in request.messages
        )
        return text_response("nested looked deeper" if told else "nested answer")

    with open_store(tmp_path / "state.db") as store:
        rt = runtime(
            tmp_path,
            FunctionModel(main_turn),
            agent("helper"),
            agent("nested"),
            agent_models={
                "helper": FunctionModel(helper_turn),
                "nested": FunctionModel(nested_turn),
            },
            store=store,
        )
        first = await rt.run("go")
        assert first.output == "first answer" and first.task_id is not None

        rt.send_message("nested", "look deeper")  # the run has ended: kept for the resume
        again = await rt.resume(first.task_id)

    # its parent (helper) has ended: the main agent hears of it instead, and answers anew
    assert again.status == "completed"
    assert again.output.startswith("again:") and "nested looked deeper" in again.output


async def test_after_a_restart_a_parent_finds_and_messages_its_earlier_subagent(
    tmp_path: Path,
) -> None:
    listings: list[str] = []

    def main_turn(request: ModelRequest) -> ModelResponse:
        users = [m.content for m in request.messages if isinstance(m, UserMessage)]
        done = results(request)
        last = request.messages[-1]
        if len(users) == 1:  # the first conversation: one helper, in the foreground
            return task("helper") if not done else text_response("first")
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("heard: " + last.content)
        if len(done) == 1:
            return tool_call_response("ListAgents", {})
        if len(done) == 2:
            listings.append(done[-1].content)
            return send("helper", "check the tests too")
        return text_response("waiting")

    def helper_turn(request: ModelRequest) -> ModelResponse:
        told = any(
            isinstance(m, UserMessage) and "tests too" in m.content for m in request.messages
        )
        return text_response("tests checked" if told else "code checked")

    with open_store(tmp_path / "state.db") as store:

        def build() -> Runtime:
            return team(tmp_path, main_turn, "helper", helper_turn, store=store)

        first = await build().run("review")
        assert first.output == "first" and first.task_id is not None
        # another process: the helper is only in the store now
        again = await build().continue_task(first.task_id, "and the tests?")

    (listing,) = listings
    assert "helper, completed (before the last restart)" in listing
    assert again.status == "completed" and "tests checked" in again.output
