"""Durable runs end to end: the real `subagents` console script in subprocesses, talking to a
real local OpenAI-compatible server, with the task store in the project's .subagents folder
(the project, the script and the server are ``cli_project``'s)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from cli_project import (
    MODEL,
    SECRET,
    SUBAGENTS,
    Project,
    ScriptedServer,
    project,
    server,
)
from subagents.store.sqlite import SQLiteStore

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

__all__ = ["project", "server"]  # the fixtures, used by name below


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [message for message in body["messages"] if message["role"] == "tool"]


def test_console_script_is_installed_beside_the_interpreter() -> None:
    assert SUBAGENTS.is_file(), f"install the package into the venv: pip install -e . ({SUBAGENTS})"


# -- 1. a plain run ------------------------------------------------------------------------------


def test_plain_run_prints_the_answer_and_records_a_completed_task(
    project: Project, server: ScriptedServer
) -> None:
    server.say("Hello from the fake model.")

    done = project.run("Say hello")

    assert done.code == 0, done.err
    assert "Hello from the fake model." in done.out
    task = project.only_task()
    assert task["status"] == "completed"
    assert task["prompt"] == "Say hello"
    assert task["result"] == "Hello from the fake model."
    assert done.task_id == task["id"]  # the run names its task
    assert server.bodies()[0]["model"] == "fake-model"
    assert server.requests[0].headers["authorization"] == "Bearer test-key"

    shown = project.show(task["id"][:8])
    assert shown["task"]["id"] == task["id"]
    assert [session["agent_name"] for session in shown["sessions"]] == ["main"]
    assert shown["sessions"][0]["status"] == "completed"
    assert shown["awaiting_human"] is False

    text = project.cli("tasks", "show", task["id"])
    assert text.code == 0, text.err
    assert task["id"] in text.out
    assert "completed" in text.out
    assert "Hello from the fake model." in text.out


def test_no_store_run_records_nothing(project: Project, server: ScriptedServer) -> None:
    server.say("Not recorded.")

    done = project.run("Say hello", "--no-store")

    assert done.code == 0, done.err
    assert "Not recorded." in done.out
    assert not project.store_file.exists()


# -- 2. human in the loop ------------------------------------------------------------------------


def _pause_on_write(project: Project, server: ScriptedServer) -> str:
    """Run until the model's Write call pauses the run; returns the task id."""
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    done = project.run("Write hello to x.txt")
    assert done.code == 3, done.err
    assert "Waiting for a person" in done.said
    assert f"subagents resume {done.task_id}" in done.said
    assert not (project.root / "x.txt").exists()
    shown = project.show(done.task_id)
    assert shown["task"]["status"] == "awaiting_human"
    assert shown["awaiting_human"] is True
    [question] = shown["questions"]
    assert question["question"]["tool_name"] == "Write"
    assert question["question"]["arguments"] == {"file_path": "x.txt", "content": "hello"}
    return done.task_id


def test_approve_through_the_cli_writes_the_file_and_finishes(
    project: Project, server: ScriptedServer
) -> None:
    task_id = _pause_on_write(project, server)
    server.say("Wrote x.txt.")

    done = project.cli("resume", task_id[:8], "--approve")

    assert done.code == 0, done.err
    assert "Wrote x.txt." in done.out
    assert (project.root / "x.txt").read_text(encoding="utf-8") == "hello"
    assert project.only_task()["status"] == "completed"
    assert len(server.requests) == 2  # the paused call was not re-planned
    [result] = _tool_results(server.bodies()[1])
    assert result["tool_call_id"] == "call_1"
    assert "rejected" not in result["content"]

    again = project.cli("resume", task_id, "--approve")
    assert again.code == 2
    assert "not waiting for a decision" in again.said
    assert "hint:" in again.err
    assert len(server.requests) == 2


def test_reject_through_the_cli_tells_the_model_and_writes_nothing(
    project: Project, server: ScriptedServer
) -> None:
    task_id = _pause_on_write(project, server)
    undecided = project.cli("resume", task_id)
    assert undecided.code == 2
    assert "waiting for a person" in undecided.said
    assert "--approve" in undecided.said
    assert len(server.requests) == 1
    server.say("Understood, I left it alone.")

    done = project.cli("resume", task_id, "--reject", "no")

    assert done.code == 0, done.err
    assert "I left it alone" in done.out
    assert not (project.root / "x.txt").exists()
    assert project.only_task()["status"] == "completed"
    [result] = _tool_results(server.bodies()[1])
    assert result["tool_call_id"] == "call_1"
    assert "rejected" in result["content"]
    assert result["content"].endswith(": no")


def test_modify_through_the_cli_runs_the_call_with_the_new_arguments(
    project: Project, server: ScriptedServer
) -> None:
    task_id = _pause_on_write(project, server)
    server.say("Wrote the changed text.")

    done = project.cli(
        "resume",
        task_id,
        "--modify",
        '{"args": {"file_path": "x.txt", "content": "changed"}}',
        "--json",
    )

    assert done.code == 0, done.err
    assert done.json()["status"] == "completed"
    assert done.json()["output"] == "Wrote the changed text."
    assert (project.root / "x.txt").read_text(encoding="utf-8") == "changed"
    assert project.only_task()["status"] == "completed"
    [result] = _tool_results(server.bodies()[1])
    assert result["tool_call_id"] == "call_1"


# -- 3. a subagent -------------------------------------------------------------------------------


def test_subagent_explore_runs_through_the_haiku_alias_and_is_stored(
    project: Project, server: ScriptedServer
) -> None:
    (project.root / "app.py").write_text("print('the app')\n", encoding="utf-8")
    task_call = {
        "description": "Find the app",
        "prompt": "Which Python files are there, and what does the main one print?",
        "subagent_type": "explore",
    }
    server.call("Task", task_call, call_id="call_task")
    server.call("Glob", {"pattern": "**/*.py"}, call_id="call_glob")
    server.call("Read", {"file_path": "app.py"}, call_id="call_read")
    server.say("app.py prints 'the app'.")
    server.say("The project has app.py, which prints 'the app'.")

    done = project.run("Tell me about the Python files")

    assert done.code == 0, done.err
    assert "The project has app.py" in done.out
    assert server.turns == deque()
    bodies = server.bodies()
    assert len(bodies) == 5
    main_system = bodies[0]["messages"][0]["content"]
    sub_system = bodies[1]["messages"][0]["content"]
    assert "exploration specialist" in sub_system
    assert "exploration specialist" not in main_system
    assert task_call["prompt"] in json.dumps(bodies[1]["messages"])
    # the subagent sees only its own tools, and its tools really ran
    assert {tool["function"]["name"] for tool in bodies[1]["tools"]} <= {
        "Read",
        "Glob",
        "Grep",
        "LS",
        "AskHuman",
    }
    assert "app.py" in _tool_results(bodies[2])[-1]["content"]
    assert "the app" in _tool_results(bodies[3])[-1]["content"]
    [task_result] = _tool_results(bodies[4])
    assert task_result["tool_call_id"] == "call_task"
    assert "app.py prints 'the app'." in task_result["content"]

    shown = project.show(done.task_id)
    assert shown["task"]["status"] == "completed"
    sessions = {session["agent_name"]: session for session in shown["sessions"]}
    assert set(sessions) == {"main", "explore"}
    assert sessions["explore"]["parent_session_id"] == sessions["main"]["session_id"]
    assert sessions["explore"]["parent_tool_call_id"] == "call_task"
    assert sessions["explore"]["model"] == MODEL
    assert all(session["status"] == "completed" for session in sessions.values())

    text = project.cli("tasks", "show", done.task_id)
    assert text.code == 0, text.err
    assert "explore" in text.out
    assert sessions["explore"]["session_id"] in text.out


# -- 4. export and import ------------------------------------------------------------------------


def test_export_then_import_into_another_project_round_trips(
    project: Project, server: ScriptedServer, tmp_path: Path, isolated_home: Path
) -> None:
    server.call("Glob", {"pattern": "*.toml"}, call_id="call_glob")
    server.say("Nothing to see.")
    run = project.run("Look around")
    assert run.code == 0, run.err
    task_id = run.task_id
    original = project.show(task_id)

    exported = project.cli("export", task_id[:8], str(tmp_path / "archive"))

    assert exported.code == 0, exported.err
    folder = tmp_path / "archive" / "tasks" / task_id
    assert str(folder) in exported.out
    assert json.loads((folder / "task.json").read_text(encoding="utf-8"))["id"] == task_id
    assert (folder / "checkpoint_000.json").is_file()
    trace = json.loads((folder / "trace.json").read_text(encoding="utf-8"))
    assert any("Glob" in json.dumps(record) for record in trace)

    other = Project(tmp_path / "other", server, isolated_home)
    imported = other.cli("import", str(tmp_path / "archive"))

    assert imported.code == 0, imported.err
    assert task_id in imported.out
    assert other.store_file.is_file()
    copy = other.show(task_id)
    imported_settings = copy["task"].pop("settings")
    original_settings = original["task"].pop("settings")
    assert copy == original
    # an imported task keeps what the archive said only as a note, never to act on
    assert imported_settings["imported"]["settings"]["permission_mode"] == str(
        original_settings["permission_mode"]
    )
    assert "permission_mode" not in imported_settings
    again = other.cli("import", str(folder))
    assert again.code == 2
    assert "--replace" in again.err
    assert other.cli("import", str(folder), "--replace").code == 0
    replaced = other.show(task_id)
    replaced["task"].pop("settings")
    assert replaced == original


# -- 5. bad input never shows a traceback --------------------------------------------------------


def test_a_corrupt_store_gives_a_way_out_not_a_traceback(
    project: Project, server: ScriptedServer
) -> None:
    project.store_file.write_bytes(b"this is not a database, just garbage " * 200)

    run = project.run("Say hello")
    listing = project.cli("tasks", "list")

    for done in (run, listing):
        assert done.code == 2, done.err
        assert "state.db is not a readable subagents database" in done.said
        assert "move it aside" in done.said
    assert server.requests == []


def test_resume_of_an_unknown_task_is_a_clear_error(project: Project) -> None:
    nowhere = project.cli("resume", "00000000-dead-beef-0000-000000000000", "--approve")

    assert nowhere.code == 2
    assert "no store at" in nowhere.said
    assert not project.store_file.exists()  # resume does not leave an empty store behind

    SQLiteStore(project.store_file).close()
    unknown = project.cli("resume", "00000000-dead-beef-0000-000000000000", "--approve")

    assert unknown.code == 2
    assert "no task '00000000-dead-beef-0000-000000000000'" in unknown.said
    assert "subagents tasks list" in unknown.said


def test_modify_that_is_not_json_is_a_clear_error(project: Project) -> None:
    done = project.cli("resume", "abcd1234", "--modify", "{not json")

    assert done.code == 2
    assert "--modify is not valid JSON" in done.said
    assert "hint:" in done.err


def test_two_decisions_at_once_are_refused(project: Project) -> None:
    done = project.cli("resume", "abcd1234", "--approve", "--reject", "x")

    assert done.code == 2
    assert "--approve and --reject cannot be combined" in done.said
    assert "hint:" in done.err


# -- 6. secrets ----------------------------------------------------------------------------------


def test_a_secret_printed_by_a_tool_is_redacted_in_the_export(
    project: Project, server: ScriptedServer, tmp_path: Path
) -> None:
    server.call("Bash", {"command": "echo $MY_SERVICE_TOKEN"}, call_id="call_bash")
    server.say(f"The token is {SECRET}.")

    done = project.run("Show me the token", "--yes", env={"MY_SERVICE_TOKEN": SECRET})

    assert done.code == 0, done.err
    # the tool really printed it (it is no provider key, so Bash had it): the model got the real
    # output; the person sees the answer redacted, like everything the CLI prints
    [result] = _tool_results(server.bodies()[1])
    assert SECRET in result["content"]
    assert "The token is [REDACTED]." in done.out
    assert SECRET not in done.out + done.err
    task_id = done.task_id
    exported = project.cli("export", task_id, str(tmp_path / "archive"))
    assert exported.code == 0, exported.err
    files = [path for path in (tmp_path / "archive").rglob("*") if path.is_file()]
    assert len(files) >= 5
    everything = "\n".join(path.read_text(encoding="utf-8") for path in files)
    assert SECRET not in everything
    assert "[REDACTED]" in everything
    assert "echo $MY_SERVICE_TOKEN" in everything  # the command itself is kept
    store_bytes = b"".join(
        path.read_bytes() for path in project.store_file.parent.glob("state.db*")
    )
    assert SECRET.encode() not in store_bytes


def test_an_imported_task_resumes_in_the_project_of_the_person_not_the_archive(
    project: Project, server: ScriptedServer, tmp_path: Path, isolated_home: Path
) -> None:
    server.call("Bash", {"command": "touch ran_here"})
    paused = project.run("Touch a file")
    assert paused.code == 3 and "Waiting for a person" in paused.err
    task_id = paused.task_id
    archive = tmp_path / "archive"
    assert project.cli("export", task_id, str(archive)).code == 0
    task_file = archive / "tasks" / task_id / "task.json"
    record = json.loads(task_file.read_text(encoding="utf-8"))
    victim = tmp_path / "victim"
    victim.mkdir()
    record["workspace"] = str(victim)
    record["settings"] = {"permission_mode": "bypassPermissions", "headless": "allow"}
    task_file.write_text(json.dumps(record), encoding="utf-8")

    other = Project(tmp_path / "other", server, isolated_home)
    assert other.cli("import", str(archive)).code == 0
    refused = other.cli("resume", task_id[:8], "--approve")
    assert refused.code == 2 and "without a decision first" in refused.said

    asked = other.cli("resume", task_id[:8])
    assert asked.code == 3, asked.err
    assert "was imported" in asked.said and str(other.root) in asked.said
    assert "permission mode default" in asked.said
    assert "pending when the task was imported" in asked.said
    server.say("Touched.")
    done = other.cli("resume", task_id[:8], "--approve")
    assert done.code == 0, done.err
    assert (other.root / "ran_here").exists()
    assert not (victim / "ran_here").exists() and not (project.root / "ran_here").exists()
    shown = other.show(task_id)["task"]
    assert shown["workspace"] == str(other.root) and shown["status"] == "completed"
