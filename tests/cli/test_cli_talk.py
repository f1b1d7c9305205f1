"""Talking to a task's agents end to end (`subagents send`, `subagents inbox`): the real
console script, against a real local OpenAI-compatible server that answers each agent by its
system prompt (the main agent and its background worker ask at the same time, in no fixed
order)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_project import MODEL, SUBAGENTS, TIMEOUT_SECONDS, Project, Turn
from fakes.http_server import PlannedReply, RecordedRequest
from fakes.openai_server import FakeOpenAIServer
from subagents.store.sqlite import open_store

pytestmark = pytest.mark.slow  # real subprocesses and a server: not in `make test-fast`

MESSAGE = "also count the hidden files"
WORKER = """---
name: worker
description: Counts files.
---
You are the file counter.
"""

Responder = Callable[[dict[str, Any]], Turn]


class RoutedServer(FakeOpenAIServer):
    """Answers each request with ``responder(body)``: a function of what the agent saw."""

    def __init__(self) -> None:
        super().__init__()
        self.responder: Responder = lambda body: Turn(text="(unscripted)")
        self._lock_requests = threading.Lock()

    def record(self, request: RecordedRequest) -> PlannedReply:
        with self._lock_requests:
            self.requests.append(request)
        body = request.json()
        return self.responder(body).reply(streaming=bool(body.get("stream")))

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock_requests:
            return [request.json() for request in self.requests]


@pytest.fixture
def routed(tmp_path: Path, isolated_home: Path) -> Iterator[tuple[Project, RoutedServer]]:
    with RoutedServer() as running:
        project = Project(tmp_path / "project", running, isolated_home)  # type: ignore[arg-type]
        agents = project.root / ".claude" / "agents"
        agents.mkdir(parents=True)
        (agents / "worker.md").write_text(WORKER)
        config = project.root / ".subagents" / "config.toml"
        # the steered worker looks again each turn until the mail comes: room on a busy machine
        config.write_text(config.read_text() + "\n[subagents]\nmax_turns = 500\n")
        yield project, running


def is_worker(body: dict[str, Any]) -> bool:
    return "You are the file counter." in body["messages"][0]["content"]


def texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body["messages"] if m["role"] == "user"]


def holding(body: dict[str, Any]) -> int:
    return sum(MESSAGE in text for text in texts(body))


def tool_results(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "tool")


def background_task(call_id: str = "call_task") -> Turn:
    arguments = {
        "description": "count files",
        "prompt": "count the files here",
        "subagent_type": "worker",
        "run_in_background": True,
    }
    return Turn(calls=[(call_id, "Task", arguments)])


def main_turn(body: dict[str, Any]) -> Turn:
    """The main agent: starts the worker in the background, waits, then passes its word on."""
    notified = [t for t in texts(body) if "task-notification" in t]
    if notified:
        return Turn(text="The worker says: " + notified[-1])
    if tool_results(body) == 0:
        return background_task()
    return Turn(text="The worker is counting.")


def test_a_person_steers_a_running_background_agent_from_another_terminal(
    routed: tuple[Project, RoutedServer],
) -> None:
    project, server = routed
    sent = threading.Event()
    pace = threading.Event()  # never set: paces the worker's turns while mail is on its way

    def respond(body: dict[str, Any]) -> Turn:
        if is_worker(body):
            if tool_results(body) == 0:
                sent.wait(TIMEOUT_SECONDS)  # busy with its first step while the person writes
                return Turn(calls=[("call_ls_0", "LS", {})])
            if holding(body):
                return Turn(text="12 files, 3 of them hidden")
            # the running process reads the store's mail once a second: look again
            pace.wait(0.1)
            return Turn(calls=[(f"call_ls_{tool_results(body)}", "LS", {})])
        return main_turn(body)

    server.responder = respond
    running = subprocess.Popen(
        [str(SUBAGENTS), "run", "count the files with the worker", "--model", MODEL],
        cwd=project.root,
        env=project.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        task_id, worker_id = _wait_for_worker(project, server)
        done = project.cli("send", task_id[:8], worker_id[:8], MESSAGE)
        sent.set()
        out, err = running.communicate(timeout=TIMEOUT_SECONDS)
    finally:
        sent.set()
        if running.poll() is None:
            running.kill()
    assert done.code == 0, done.err
    assert "delivers it at the agent's next step" in done.said
    assert running.returncode == 0, err
    assert "12 files, 3 of them hidden" in out
    worker_bodies = [b for b in server.bodies() if is_worker(b)]
    told = [b for b in worker_bodies if holding(b)]
    assert told and all(holding(b) == 1 for b in told)  # delivered once, kept once
    (letter,) = [t for t in texts(told[0]) if MESSAGE in t]
    assert letter.startswith('<agent-message id="msg-') and 'from="a person"' in letter


def test_a_message_to_an_agent_of_a_finished_task_continues_it(
    routed: tuple[Project, RoutedServer],
) -> None:
    project, server = routed

    def respond(body: dict[str, Any]) -> Turn:
        if is_worker(body):
            return Turn(text="with hidden files: 12" if holding(body) else "9 files")
        notified = [t for t in texts(body) if "task-notification" in t]
        if notified:
            return Turn(text="Now: " + notified[-1])
        if tool_results(body) == 0:
            arguments = {"description": "count", "prompt": "count", "subagent_type": "worker"}
            return Turn(calls=[("call_task", "Task", arguments)])
        return Turn(text="There are 9 files.")

    server.responder = respond
    first = project.run("count the files with the worker")
    assert first.code == 0 and "There are 9 files." in first.out, first.err
    task = project.only_task()

    done = project.cli("send", task["id"], "worker", MESSAGE, "--json")

    assert done.code == 0, done.err
    assert "continues here" in done.said
    assert "with hidden files: 12" in json.loads(done.out)["output"]
    with open_store(project.store_file) as store:
        assert store.get_task(task["id"]).status == "completed"
    unknown = project.cli("send", task["id"], "reviewer", "look again")
    assert unknown.code == 2
    assert "'reviewer' names no agent of this task" in unknown.said and "(main)" in unknown.said


def test_a_background_approval_waits_in_the_inbox_and_is_answered_there(
    routed: tuple[Project, RoutedServer],
) -> None:
    project, server = routed

    def respond(body: dict[str, Any]) -> Turn:
        if is_worker(body):
            if tool_results(body) == 0:
                arguments = {"file_path": "count.txt", "content": "12\n"}
                return Turn(calls=[("call_write", "Write", arguments)])
            return Turn(text="wrote count.txt")
        return main_turn(body)

    server.responder = respond
    paused = project.run("count the files with the worker, write the count")
    assert paused.code == 3, paused.err  # nothing else to do: the run pauses
    assert (
        f"subagents inbox {project.only_task()['id'][:8]} call_write --approve" in paused.said
    )  # told how to answer it alone

    listed = project.cli("inbox")
    assert listed.code == 0 and "call_write" in listed.out and "worker" in listed.out
    task_id = project.only_task()["id"]

    done = project.cli("inbox", task_id[:8], "call_write", "--approve", "--json")

    assert done.code == 0, done.err
    assert "continues here" in done.said
    assert "wrote count.txt" in json.loads(done.out)["output"]
    assert (project.root / "count.txt").read_text() == "12\n"
    assert "Nothing waits for you." in project.cli("inbox").out


def _wait_for_worker(project: Project, server: RoutedServer) -> tuple[str, str]:
    """The task's id and its worker's, once the worker asks its model for its first step."""
    done = threading.Event()
    found: list[tuple[str, str]] = []

    def look() -> bool:
        if not any(is_worker(b) for b in server.bodies()) or not project.store_file.exists():
            return False
        with open_store(project.store_file) as store:
            for task in store.list_tasks(limit=None):
                for session in store.sessions(task.id):
                    if session.agent_name == "worker":
                        found.append((task.id, session.session_id))
                        return True
        return False

    for _ in range(int(TIMEOUT_SECONDS / 0.05)):
        if look():
            break
        done.wait(0.05)
    assert found, "the worker never started"
    return found[0]
