"""`subagents run` and `resume` at a terminal (a pseudo-terminal for stdin, stdout and stderr):
the answer is printed once; a run exits 3 only when it really pauses; `resume` asks for what the
task waits for, then for each later approval, inline; `resume --approve` keeps its headless
meaning."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_project import MODEL, SUBAGENTS, Project, ScriptedServer, at_a_terminal

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    return Project(tmp_path / "project", server, isolated_home)


def tool_results(server: ScriptedServer, request: int) -> list[str]:
    body = server.bodies()[request]
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_the_answer_is_printed_once_at_a_terminal(project: Project, server: ScriptedServer) -> None:
    server.say("The one and only answer.")
    code, screen = at_a_terminal(project, "run", "question", "--model", MODEL)
    assert code == 0, screen
    assert screen.count("The one and only answer.") == 1, screen
    assert project.only_task()["status"] == "completed"


def test_a_continued_conversation_prints_its_answer_once(
    project: Project, server: ScriptedServer
) -> None:
    server.say("First.")
    server.say("Second, with the history.")
    assert at_a_terminal(project, "run", "one", "--model", MODEL)[0] == 0
    code, screen = at_a_terminal(project, "run", "-c", "two", "--model", MODEL)
    assert code == 0, screen
    assert screen.count("Second, with the history.") == 1, screen
    assert [m["content"] for m in server.bodies()[1]["messages"][1:]] == ["one", "First.", "two"]


def test_piped_stdout_still_gets_the_answer_when_stderr_is_a_terminal(
    project: Project, server: ScriptedServer
) -> None:
    server.say("For the program reading stdout.")
    leader, follower = pty.openpty()
    done = subprocess.run(
        [str(SUBAGENTS), "run", "question", "--model", MODEL],
        cwd=project.root,
        env=project.env,
        stdin=follower,
        stderr=follower,
        stdout=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    os.close(follower)
    os.close(leader)
    assert done.returncode == 0
    assert done.stdout.decode().count("For the program reading stdout.") == 1


def test_an_approval_at_a_terminal_is_asked_and_the_run_exits_0(
    project: Project, server: ScriptedServer
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    server.say("written")
    code, screen = at_a_terminal(
        project, "run", "write x.txt", "--model", MODEL, answers=(("Allow?", "y"),)
    )
    assert code == 0, screen  # asked there: it did not pause
    assert (project.root / "x.txt").read_text() == "hello"


def test_a_question_pauses_the_run_with_3_and_resume_asks_it_then_each_approval(
    project: Project, server: ScriptedServer
) -> None:
    server.call("AskHuman", {"question": "Which port should it listen on?"})
    code, screen = at_a_terminal(project, "run", "configure the server", "--model", MODEL)
    assert code == 3, screen  # it really waits for a person
    assert "Which port should it listen on?" in screen
    task_id = project.only_task()["id"]

    server.call("Write", {"file_path": "port.txt", "content": "8080"}, call_id="call_2")
    server.say("configured")
    code, screen = at_a_terminal(
        project,
        "resume",
        task_id[:8],
        answers=(("Answer: ", "8080"), ("Allow?", "y")),
    )

    assert code == 0, screen
    assert "Which port should it listen on?" in screen
    assert "wants to run Write" in screen  # the later approval was asked inline
    assert any("8080" in content for content in tool_results(server, 1))
    assert (project.root / "port.txt").read_text() == "8080"
    assert project.only_task()["status"] == "completed"
    assert screen.count("configured") == 1, screen


def test_resume_at_a_terminal_can_modify_then_reject_later_calls(
    project: Project, server: ScriptedServer
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    paused = project.run("write x.txt")  # nobody watching: it pauses
    assert paused.code == 3, paused.err
    task_id = paused.task_id

    server.call("Write", {"file_path": "y.txt", "content": "more"}, call_id="call_2")
    server.say("finished")
    modified = json.dumps({"args": {"file_path": "x.txt", "content": "changed"}})
    code, screen = at_a_terminal(
        project,
        "resume",
        task_id,
        answers=(
            ("Allow? [y/N/m", "m"),
            ("(JSON): ", modified),
            ("Allow?", "not that one"),
        ),
    )

    assert code == 0, screen
    assert (project.root / "x.txt").read_text() == "changed"
    assert not (project.root / "y.txt").exists()
    assert any("not that one" in content for content in tool_results(server, 2))
    assert project.only_task()["status"] == "completed"


def test_resume_approve_at_a_terminal_asks_the_next_approval_there(
    project: Project, server: ScriptedServer
) -> None:
    """The issue: `resume --approve` paused again at the next tool even at a terminal. The
    decision answers the pending call; a person is there, so the next call asks them."""
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    paused = project.run("write x.txt")
    assert paused.code == 3, paused.err

    server.call("Write", {"file_path": "y.txt", "content": "more"}, call_id="call_2")
    server.say("both written")
    code, screen = at_a_terminal(
        project, "resume", paused.task_id, "--approve", answers=(("Allow?", "y"),)
    )

    assert code == 0, screen
    assert (project.root / "x.txt").read_text() == "hello"
    assert (project.root / "y.txt").read_text() == "more"
    assert project.only_task()["status"] == "completed"


def test_resume_approve_without_a_terminal_keeps_its_headless_meaning(
    project: Project, server: ScriptedServer
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    paused = project.run("write x.txt")
    assert paused.code == 3, paused.err
    server.call("Write", {"file_path": "y.txt", "content": "more"}, call_id="call_2")
    again = project.cli("resume", paused.task_id, "--approve")
    assert again.code == 3  # the next approval pauses it again: nobody to ask
    assert (project.root / "x.txt").read_text() == "hello"
    assert not (project.root / "y.txt").exists()


def test_resume_without_a_terminal_and_without_a_decision_still_refuses(
    project: Project, server: ScriptedServer
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    paused = project.run("write x.txt")
    assert paused.code == 3, paused.err
    undecided = project.cli("resume", paused.task_id)
    assert undecided.code == 2
    assert "--approve" in undecided.said


def test_a_run_at_a_terminal_offers_the_agent_that_stands_out_and_runs_it_on_yes(
    project: Project, server: ScriptedServer
) -> None:
    agents = project.root / ".subagents" / "agents"
    agents.mkdir(parents=True)
    (agents / "db-migrator.md").write_text(
        "---\nname: db-migrator\ndescription: Writes PostgreSQL database migrations for "
        "schema changes (tables, columns, indexes).\n---\nYou write careful SQL migrations.\n"
    )
    (agents / "css-stylist.md").write_text(
        "---\nname: css-stylist\ndescription: Styles web pages with CSS and design tokens.\n"
        "---\nYou write CSS.\n"
    )
    server.say("migration written")
    code, screen = at_a_terminal(
        project,
        "run",
        "add a postgres migration for the users table",
        "--model",
        MODEL,
        answers=(("for this?", "y"),),
    )
    assert code == 0, screen
    assert "Use db-migrator for this? [Y/n]" in screen
    system = server.bodies()[0]["messages"][0]["content"]
    assert "You write careful SQL migrations." in system  # the agent ran as the main one
    assert "migration written" in screen
