"""The final answer on stdout is the model's text exactly (redacted, then one newline): no
emoji for ``:rocket:``, no markup, no tabs expanded, no carriage return dropped, no line
broken at 80 columns. The real console script in subprocesses, against the scripted local
OpenAI-compatible server of test_cli_durable: stdout piped (``COLUMNS`` unset), and at an
80-column pseudo-terminal, where the control characters a model writes are shown escaped
instead of driving the terminal."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_project import (
    MODEL,
    SECRET,
    SUBAGENTS,
    TIMEOUT_SECONDS,
    Project,
    ScriptedServer,
    terminal_bytes,
)
from subagents.cli.answer import terminal_safe, write_answer

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

URL = "https://example.com/" + "a-long-path-segment/" * 8 + "index.html?q=1#top"
ANSWER = (
    "Done :rocket: with [bold]markup[/] and [/], :smile:\n"
    f"See {URL}\n"
    "tab\tseparated\tvalues\n"
    "a Windows line end\r\n"
    "naïve café, 中文, 🚀 — ok\n"
    f"the token is {SECRET}\n"
    "a lone \r carriage return\n"
    "red \x1b[31mtext\x1b[0m, clear \x1b[2J\x1b[H, title \x1b]0;owned\x07, c1 \x9b2J\n"
    "trailing spaces   \n" + "word " * 40 + "\n"
    "the last line, no newline"
)
SHOWN = ANSWER.replace(SECRET, "[REDACTED]")  # the project's redaction stays
TOKEN_ENV = {"MY_SERVICE_TOKEN": SECRET}  # a secret of the run's environment
# what a model's text must not send to a terminal raw (the printer's own dim codes aside)
DRIVING = (b"\x1b[31m", b"\x1b[2J", b"\x1b[H", b"\x1b]0;", b"\xc2\x9b", b"lone \r c")
SGR = re.compile(rb"\x1b\[[0-9;]*m")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    made = Project(tmp_path / "project", server, isolated_home)
    del made.env["COLUMNS"]  # a pipe without COLUMNS: Rich would wrap at 80
    made.env.update(TOKEN_ENV)
    return made


def piped(project: Project, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The console script with stdin, stdout and stderr all pipes (bytes kept as they are)."""
    done = subprocess.run(
        [str(SUBAGENTS), *args],
        cwd=project.root,
        env=project.env,
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def on_screen(seen: bytes) -> bytes:
    """What a terminal received, its CR LF line ends back to the line feeds written."""
    return seen.replace(b"\r\n", b"\n")


# -- piped ----------------------------------------------------------------------------------


def test_run_piped_prints_exactly_the_models_answer(
    project: Project, server: ScriptedServer
) -> None:
    server.say(ANSWER)
    done = piped(project, "run", "question", "--model", MODEL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == SHOWN.encode() + b"\n"


def test_the_json_formats_carry_the_answer_exactly(
    project: Project, server: ScriptedServer
) -> None:
    # exact before this change too: a guard that it stays so
    server.say(ANSWER)
    server.say(ANSWER)
    done = piped(project, "run", "question", "--model", MODEL, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == SHOWN
    done = piped(project, "run", "question", "--model", MODEL, "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["output"] == SHOWN
    assert "".join(line["text"] for line in lines if line["type"] == "text") == SHOWN


def test_resume_piped_prints_exactly_the_models_answer(
    project: Project, server: ScriptedServer
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    paused = piped(project, "run", "write it", "--model", MODEL)
    assert paused.returncode == 3, paused.stderr
    task_id = project.only_task()["id"]
    server.say(ANSWER)
    done = piped(project, "resume", task_id, "--approve")
    assert done.returncode == 0, done.stderr
    assert done.stdout == SHOWN.encode() + b"\n"


def test_workflow_run_piped_prints_exactly_the_models_answer(
    project: Project, server: ScriptedServer
) -> None:
    agents = project.root / ".subagents" / "agents"
    agents.mkdir()
    (agents / "answerer.md").write_text(
        "---\nname: answerer\ndescription: Answers.\ntools: Read\n---\nAnswer.\n",
        encoding="utf-8",
    )
    workflows = project.root / ".subagents" / "workflows"
    workflows.mkdir()
    (workflows / "answer.yaml").write_text(
        "name: answer\ndescription: One agent answers.\nentry_point: ask\nnodes:\n"
        "  ask: {type: agent, agent: answerer, prompt: 'Answer {{ input }}'}\n"
        "edges:\n  - {from: ask, to: end}\n",
        encoding="utf-8",
    )
    server.say(ANSWER)
    done = piped(project, "workflow", "run", "answer", "--input", "it", "--model", MODEL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == SHOWN.encode() + b"\n"


def test_chat_line_mode_piped_prints_exactly_the_models_answer(
    project: Project, server: ScriptedServer
) -> None:
    server.say(ANSWER)
    done = piped(project, "chat", "--no-tui", "--model", MODEL, stdin=b"question\n")
    assert done.returncode == 0, done.stderr
    # input() writes its prompt to stdout when stdin is not a terminal
    assert done.stdout == "› ".encode() + SHOWN.encode() + "\n› ".encode()


def test_chat_line_mode_shows_a_models_question_as_written(
    project: Project, server: ScriptedServer
) -> None:
    # Rich read "[/]" as a closing tag: the question crashed the chat
    server.call("AskHuman", {"question": "Close [/] it :smile:?"})
    done = piped(project, "chat", "--no-tui", "--model", MODEL, stdin=b"question\n")
    assert done.returncode == 0, done.stderr
    assert "waiting for you: Close [/] it :smile:? (/resume)\n" in done.stdout.decode()


# -- at a terminal --------------------------------------------------------------------------


@pytest.fixture
def terminal(project: Project) -> Project:
    project.env["COLUMNS"] = "80"
    return project


def test_at_an_80_column_terminal_the_answer_is_whole_and_cannot_drive_it(
    terminal: Project, server: ScriptedServer
) -> None:
    # stdout and stderr one terminal: the answer shows as it streams, and only then
    server.say(ANSWER)
    code, seen = terminal_bytes(terminal, "run", "question", "--model", MODEL)
    assert code == 0, seen
    assert not any(raw in seen for raw in DRIVING), seen
    screen = SGR.sub(b"", on_screen(seen))  # the dim of streamed text comes in pieces
    assert terminal_safe(SHOWN).encode() in screen, screen
    assert screen.count(b"the last line, no newline") == 1, screen


def test_an_answer_printed_to_a_terminal_stdout_is_whole_and_cannot_drive_it(
    terminal: Project, server: ScriptedServer, tmp_path: Path
) -> None:
    # stderr elsewhere: the answer is printed on stdout, not streamed there
    server.say(ANSWER)
    with (tmp_path / "stderr").open("wb") as stderr:
        code, seen = terminal_bytes(terminal, "run", "question", "--model", MODEL, stderr=stderr)
    assert code == 0, (tmp_path / "stderr").read_text(errors="replace")
    assert on_screen(seen) == b"\n" + terminal_safe(SHOWN).encode() + b"\n"


# -- the rule itself ------------------------------------------------------------------------


def test_terminal_safe_escapes_what_drives_a_terminal_and_keeps_what_lays_out_text() -> None:
    assert terminal_safe("a\tb\nc\r\nd") == "a\tb\nc\r\nd"
    assert terminal_safe("\x1b[2J\rx\x07\x7f\x9b") == "\\x1b[2J\\x0dx\\x07\\x7f\\x9b"
    assert terminal_safe("naïve 中文 🚀 :rocket: [b]") == "naïve 中文 🚀 :rocket: [b]"


def test_write_answer_to_a_file_is_exact(tmp_path: Path) -> None:
    with (tmp_path / "out").open("w", encoding="utf-8", newline="") as out:
        write_answer(ANSWER, out)
    assert (tmp_path / "out").read_bytes() == ANSWER.encode() + b"\n"


def test_tasks_show_reads_no_emoji_codes_in_the_result_and_escapes_control_codes_at_a_terminal(
    terminal: Project, server: ScriptedServer
) -> None:
    server.say(ANSWER)
    assert piped(terminal, "run", "question", "--model", MODEL).returncode == 0
    task_id = terminal.only_task()["id"]
    shown = piped(terminal, "tasks", "show", task_id)
    assert shown.returncode == 0, shown.stderr
    assert b"Done :rocket: with [bold]markup[/] and [/], :smile:" in shown.stdout
    code, seen = terminal_bytes(terminal, "tasks", "show", task_id)
    assert code == 0, seen
    assert not any(raw in seen for raw in DRIVING), seen
    assert b"\\x1b[31mtext" in SGR.sub(b"", seen)  # Rich highlights the brackets


def test_a_models_question_at_a_terminal_reads_no_emoji_code_and_cannot_drive_it(
    terminal: Project, server: ScriptedServer
) -> None:
    server.call("AskHuman", {"question": "Wipe \x1b[2J\x1b[H the screen :smile:?"})
    code, seen = terminal_bytes(terminal, "run", "question", "--model", MODEL)
    assert code == 3, seen
    assert b"\x1b[2J" not in seen and "😄".encode() not in seen, seen
    screen = SGR.sub(b"", on_screen(seen))
    # the progress line, and the run's last word on what it waits for
    assert screen.count(b"Wipe \\x1b[2J\\x1b[H the screen :smile:?") == 2, screen


def test_chat_line_mode_at_a_terminal_shows_the_answer_once(
    terminal: Project, server: ScriptedServer
) -> None:
    # stdout and stderr one terminal: the answer streamed as it comes is not printed again
    server.say(ANSWER)
    code, seen = terminal_bytes(
        terminal,
        "chat",
        "--no-tui",
        "--model",
        MODEL,
        answers=(("› ", "question"), ("› ", "/quit")),
    )
    assert code == 0, seen
    assert not any(raw in seen for raw in DRIVING), seen
    screen = SGR.sub(b"", on_screen(seen))
    assert screen.count(b"the last line, no newline") == 1, screen
