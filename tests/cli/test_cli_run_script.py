"""`subagents run` for scripts: `--version`, `run -` (stdin), `--max-turns`, `--output-format
json | stream-json`, the exit codes, `--continue` / `--resume TASK`, output that fits the width,
the answer printed once. In process (CliRunner) against a real local OpenAI-compatible server
that streams when asked; the terminal cases are in test_cli_resume_terminal.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli_project import MODEL, SECRET, Project, ScriptedServer
from subagents import __version__
from subagents.cli.app import app
from subagents.cli.run import MAX_STDIN_BYTES

runner = CliRunner()
ENV = {"NO_COLOR": "1", "COLUMNS": "300", "OPENAI_API_KEY": "test-key"}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    return Project(tmp_path / "project", server, isolated_home)


def cli(
    project: Project, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> Result:
    result = runner.invoke(
        app, [*args, "--cwd", str(project.root)], input=stdin, env={**ENV, **(env or {})}
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def run(project: Project, *args: str, **kwargs: Any) -> Result:
    return cli(project, "run", *args, "--model", MODEL, **kwargs)


def said(result: Result) -> str:
    return " ".join(result.stderr.split())


def messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in body["messages"] if m["role"] != "system"]


# -- 1. --version ---------------------------------------------------------------------------------


def test_version_prints_the_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"subagents {__version__}"


# -- 2. width -------------------------------------------------------------------------------------


def test_agents_list_and_trace_fit_80_columns(project: Project, server: ScriptedServer) -> None:
    agents = project.root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "code-reviewer.md").write_text(
        "---\nname: code-reviewer\ndescription: Reviews changed code for bugs and style problems."
        " Use proactively after editing any code in the repository.\ntools: Read, Grep, Glob\n"
        "model: sonnet\n---\nYou review code.\n",
        encoding="utf-8",
    )
    server.call("Read", {"file_path": "notes/a-rather-long-file-name-for-the-trace-line.md"})
    server.say("A final answer that is long enough to need more than eighty columns " * 3)
    done = run(project, "read the notes")
    assert done.exit_code == 0, done.stderr
    task_id = json.loads(cli(project, "tasks", "list", "--json").stdout)[0]["id"]

    for args in (("agents", "list"), ("trace", task_id), ("tasks", "list")):
        shown = cli(project, *args, env={"COLUMNS": "80"})
        assert shown.exit_code == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines, args
        assert max(len(line) for line in lines) <= 80, (args, shown.stdout)


def test_output_that_is_not_a_terminal_stays_wide_without_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from subagents.cli.common import make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console().width >= 160
    monkeypatch.setenv("COLUMNS", "80")
    assert make_console().width == 80


# -- 3. the answer once, on stdout when piped -----------------------------------------------------


def test_piped_stdout_gets_the_answer(project: Project, server: ScriptedServer) -> None:
    server.say("The answer.")
    done = run(project, "question")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.count("The answer.") == 1


# -- 4. run -, --max-turns ------------------------------------------------------------------------


def test_dash_reads_the_prompt_from_stdin(project: Project, server: ScriptedServer) -> None:
    server.say("read it")
    done = run(project, "-", stdin="Summarise this:\nline one\nline two\n")
    assert done.exit_code == 0, done.stderr
    assert ("user", "Summarise this:\nline one\nline two\n") in messages(server.bodies()[0])
    assert project.only_task()["prompt"].startswith("Summarise this:")


def test_dash_refuses_more_than_a_megabyte(project: Project, server: ScriptedServer) -> None:
    done = run(project, "-", stdin="x" * (MAX_STDIN_BYTES + 1))
    assert done.exit_code == 2
    assert "longer than 1,000,000 bytes" in said(done)
    assert server.requests == []


def test_max_turns_stops_the_main_agent(project: Project, server: ScriptedServer) -> None:
    for index in range(3):
        server.call("Read", {"file_path": f"f{index}.txt"}, call_id=f"call_{index}")
    done = run(project, "read many files", "--max-turns", "2", "--json")
    assert done.exit_code == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "max_turns"
    assert result["turns"] == 2
    assert len(server.requests) == 2


def test_max_turns_wins_over_the_maxturns_of_the_agent_file(
    project: Project, server: ScriptedServer
) -> None:
    agents = project.root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads files.\ntools: Read\nmaxTurns: 10\n---\nYou read.\n",
        encoding="utf-8",
    )
    for index in range(3):
        server.call("Read", {"file_path": f"f{index}.txt"}, call_id=f"call_{index}")
    done = run(project, "read", "--agent", "reader", "--max-turns", "1", "--json")
    assert done.exit_code == 1, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["turns"]) == ("max_turns", 1)
    assert "You read." in server.bodies()[0]["messages"][0]["content"]


def test_max_turns_must_be_positive(project: Project) -> None:
    assert run(project, "x", "--max-turns", "0").exit_code == 2


# -- 5. output formats ----------------------------------------------------------------------------


def test_json_and_output_format_json_print_the_same_fields(
    project: Project, server: ScriptedServer
) -> None:
    server.say("one")
    server.say("two")
    first = json.loads(run(project, "a", "--json").stdout)
    second = json.loads(run(project, "b", "--output-format", "json").stdout)
    assert first.keys() == second.keys()
    assert (first["output"], second["output"]) == ("one", "two")


def test_stream_json_prints_one_event_a_line_and_the_result_last(
    project: Project, server: ScriptedServer
) -> None:
    (project.root / "notes.txt").write_text(f"the key is {SECRET}\n", encoding="utf-8")
    task = {"description": "look", "prompt": "look around", "subagent_type": "general-purpose"}
    server.call("Read", {"file_path": "notes.txt"}, call_id="call_read")
    server.call("Task", task, call_id="call_task")
    server.say("child says hi")
    server.say(f"All done; the key was {SECRET}.")

    done = run(
        project,
        "read the notes, then delegate",
        "--output-format",
        "stream-json",
        "--yes",
        env={"MY_SERVICE_TOKEN": SECRET},
    )

    assert done.exit_code == 0, done.stderr
    assert SECRET not in done.stdout
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "session_started"
    assert {"text", "tool_call", "tool_result", "subagent_started", "subagent_finished"} <= set(
        types
    )
    assert types.count("result") == 1 and types[-1] == "result"
    calls = [line for line in lines if line["type"] == "tool_call"]
    assert [call["name"] for call in calls] == ["Read", "Task"]
    read_result = next(line for line in lines if line["type"] == "tool_result")
    assert "[REDACTED" in read_result["content"] or SECRET not in read_result["content"]
    started = next(line for line in lines if line["type"] == "subagent_started")
    assert started["subagent_type"] == "general-purpose"
    finished = next(line for line in lines if line["type"] == "subagent_finished")
    assert finished["summary"] == "child says hi"
    result = lines[-1]
    assert result["status"] == "completed"
    assert result["output"].startswith("All done; the key was")
    expected = json.loads(run(project, "again", "--json").stdout)  # no turn left: failed
    assert set(expected) | {"type"} == set(result)


def test_stream_json_says_when_the_run_pauses(project: Project, server: ScriptedServer) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    done = run(project, "write x.txt", "--output-format", "stream-json")
    assert done.exit_code == 3, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    paused = next(line for line in lines if line["type"] == "paused")
    assert paused["question"]["tool_name"] == "Write"
    assert lines[-1]["type"] == "result" and lines[-1]["status"] == "awaiting_human"


@pytest.mark.parametrize(
    "args",
    [
        ("--output-format", "yaml"),
        ("--json", "--output-format", "stream-json"),
        ("--ui", "--json"),
        ("--continue", "--resume", "abcd1234"),
        ("--continue", "--agent", "explore"),
        ("--continue", "--no-store"),
    ],
)
def test_options_that_do_not_go_together_exit_2(
    project: Project, server: ScriptedServer, args: tuple[str, ...]
) -> None:
    done = run(project, "prompt", *args)
    assert done.exit_code == 2, done.stdout + done.stderr
    assert server.requests == []


# -- 6. exit codes --------------------------------------------------------------------------------


@pytest.mark.slow
def test_exit_codes_completed_failed_paused(project: Project, server: ScriptedServer) -> None:
    server.say("fine")
    assert run(project, "ok").exit_code == 0
    # no turn scripted: the fake server answers 418, the run fails
    failed = run(project, "fails")
    assert failed.exit_code == 1, failed.stderr
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    paused = run(project, "write x.txt")
    assert paused.exit_code == 3, paused.stderr
    assert "Waiting for a person" in said(paused)
    task_id = next(t["id"] for t in project.tasks() if t["status"] == "awaiting_human")
    server.say("written")
    resumed = cli(project, "resume", task_id, "--approve")
    assert resumed.exit_code == 0, resumed.stderr
    assert (project.root / "x.txt").read_text() == "hello"


def test_help_documents_the_exit_codes() -> None:
    shown = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    text = " ".join(shown.stdout.split())
    assert "Exit codes: 0 completed; 1 failed, out of turns or cancelled; 2 usage" in text
    assert "3 paused" in text


# -- 7. --continue / --resume TASK ----------------------------------------------------------------


@pytest.mark.slow
def test_continue_goes_on_with_the_latest_conversation(
    project: Project, server: ScriptedServer
) -> None:
    server.say("Paris.")
    server.say("About two million.")
    first = run(project, "What is the capital of France?")
    assert first.exit_code == 0, first.stderr

    second = run(project, "-c", "How many people live there?")

    assert second.exit_code == 0, second.stderr
    assert "About two million." in second.stdout
    assert messages(server.bodies()[1]) == [
        ("user", "What is the capital of France?"),
        ("assistant", "Paris."),
        ("user", "How many people live there?"),
    ]
    [task] = project.tasks()  # the same task goes on
    assert task["status"] == "completed"


@pytest.mark.slow
def test_resume_option_continues_the_task_it_names(
    project: Project, server: ScriptedServer
) -> None:
    server.say("first answer")
    server.say("second answer")
    server.say("the first one goes on")
    run(project, "first question", "--tag", "one")
    run(project, "second question")
    first_id = next(t["id"] for t in project.tasks() if t["prompt"] == "first question")

    done = run(project, "--resume", first_id[:8], "and then?", "--json")

    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["task_id"] == first_id
    assert messages(server.bodies()[2]) == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "and then?"),
    ]


def test_continue_with_nothing_to_continue_is_a_clear_error(
    project: Project, server: ScriptedServer
) -> None:
    done = run(project, "-c", "go on")
    assert done.exit_code == 2
    assert "no conversation to continue" in said(done)
    assert "subagents run" in said(done)
    assert server.requests == []


def test_continue_needs_a_prompt(project: Project, server: ScriptedServer) -> None:
    server.say("hello")
    run(project, "hi")
    done = run(project, "--continue")
    assert done.exit_code == 2
    assert "No prompt given to continue" in said(done)
