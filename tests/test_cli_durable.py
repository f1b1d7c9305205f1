"""Durable runs end to end: the real `subagents` console script in subprocesses, talking to a
real local OpenAI-compatible server, with the task store in the project's .subagents folder.

The fake server answers each chat-completions request with the next scripted turn, as a plain
JSON completion or as Server-Sent Events, whichever the request asked for (the CLI streams when
it prints progress), and records every request for the assertions.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import termios
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from fakes.http_server import PlannedReply, RecordedRequest, sse_frame
from fakes.openai_server import FakeOpenAIServer, chunk, completion, usage
from subagents.store.sqlite import SQLiteStore

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

SUBAGENTS = Path(sys.executable).with_name("subagents")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MODEL = "openai:fake-model"
SECRET = "tok-5f3a9c1e7b2d4e6f"
TIMEOUT_SECONDS = 60


@dataclass(slots=True)
class Turn:
    """One scripted model answer: text and/or tool calls (id, name, arguments)."""

    text: str | None = None
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def reply(self, *, streaming: bool) -> PlannedReply:
        raw_calls = [(call_id, name, json.dumps(args)) for call_id, name, args in self.calls]
        finish = "tool_calls" if raw_calls else "stop"
        if not streaming:
            body = completion(self.text, tool_calls=raw_calls or None, finish_reason=finish)
            return PlannedReply(json_body=body)
        chunks = [chunk({"role": "assistant", "content": self.text or ""})]
        for index, (call_id, name, arguments) in enumerate(raw_calls):
            piece = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            chunks.append(chunk({"tool_calls": [piece]}))
        chunks += [chunk(finish_reason=finish), chunk(usage_body=usage())]
        frames = [sse_frame(item) for item in chunks] + [sse_frame("[DONE]")]
        return PlannedReply(sse_frames=frames)


class ScriptedServer(FakeOpenAIServer):
    """Answers the n-th request with the n-th scripted turn, streamed when asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: deque[Turn] = deque()
        self._turn_lock = threading.Lock()

    def say(self, text: str) -> None:
        self.turns.append(Turn(text=text))

    def call(self, name: str, arguments: dict[str, Any], call_id: str = "call_1") -> None:
        self.turns.append(Turn(calls=[(call_id, name, arguments)]))

    def record(self, request: RecordedRequest) -> PlannedReply:
        with self._turn_lock:
            self.requests.append(request)
            turn = self.turns.popleft() if self.turns else None
        if turn is None:
            return PlannedReply(
                status=418,
                json_body={"error": {"message": "fake server: no turn scripted for this request"}},
            )
        body = request.json() if request.body else {}
        return turn.reply(streaming=bool(body.get("stream")))

    def bodies(self) -> list[dict[str, Any]]:
        return [request.json() for request in self.requests]


@dataclass(slots=True)
class Done:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def said(self) -> str:
        """stderr with line wrapping undone (Rich wraps long messages)."""
        return " ".join(self.err.split())

    @property
    def task_id(self) -> str:
        """The task id a run names on stderr."""
        match = re.search(r"task ([0-9a-f]{8}-[0-9a-f-]{27})", self.err)
        assert match is not None, self.err
        return match.group(1)


class Project:
    """A project folder whose config points the `openai` provider at the fake server."""

    def __init__(self, root: Path, server: ScriptedServer, home: Path) -> None:
        self.root = root
        self.server = server
        (root / ".git").mkdir(parents=True)
        config = root / ".subagents" / "config.toml"
        config.parent.mkdir()
        config.write_text(
            f'[providers.openai]\nbase_url = "{server.base_url}"\nmax_retries = 0\n'
            'tool_calls = "auto"\n\n'
            f'[models]\nhaiku = "{MODEL}"\n',
            encoding="utf-8",
        )
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("OPENAI_", "ANTHROPIC_", "SUBAGENTS_"))
        }
        self.env.update(
            SUBAGENTS_HOME=str(home), OPENAI_API_KEY="test-key", NO_COLOR="1", COLUMNS="300"
        )

    @property
    def store_file(self) -> Path:
        return self.root / ".subagents" / "state.db"

    def cli(self, *args: str, env: dict[str, str] | None = None) -> Done:
        """Run the console script in the project, stdin not a terminal (nobody watching)."""
        done = subprocess.run(
            [str(SUBAGENTS), *args],
            cwd=self.root,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return Done(done.returncode, done.stdout, done.stderr)

    def run(self, prompt: str, *extra: str, env: dict[str, str] | None = None) -> Done:
        return self.cli("run", prompt, "--model", MODEL, *extra, env=env)

    def tasks(self) -> list[dict[str, Any]]:
        done = self.cli("tasks", "list", "--json")
        assert done.code == 0, done.err
        tasks: list[dict[str, Any]] = done.json()
        return tasks

    def only_task(self) -> dict[str, Any]:
        tasks = self.tasks()
        assert len(tasks) == 1, tasks
        return tasks[0]

    def show(self, task_id: str) -> dict[str, Any]:
        done = self.cli("tasks", "show", task_id, "--json")
        assert done.code == 0, done.err
        shown: dict[str, Any] = done.json()
        return shown


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    return Project(tmp_path / "project", server, isolated_home)


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


def at_a_terminal(
    project: Project, *args: str, answers: tuple[tuple[str, str], ...] = ()
) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin, stdout and stderr; each time the next
    prompt of ``answers`` shows, type its answer. Returns the exit code and the screen."""
    code, seen = terminal_bytes(project, *args, answers=answers)
    screen = ANSI.sub("", seen.decode(errors="replace"))
    assert "Traceback" not in screen, screen
    return code, screen


def terminal_bytes(
    project: Project,
    *args: str,
    answers: tuple[tuple[str, str], ...] = (),
    stderr: int | IO[bytes] | None = None,
    echo: bool = True,
) -> tuple[int, bytes]:
    """:func:`at_a_terminal`, the exit code and the bytes the terminal received, escape codes
    and all (its line discipline makes each line feed CR LF); ``stderr`` sends stderr
    elsewhere than to the terminal; without ``echo`` what is typed is not shown back."""
    leader, follower = pty.openpty()
    if not echo:
        modes = termios.tcgetattr(follower)
        modes[3] &= ~termios.ECHO
        termios.tcsetattr(follower, termios.TCSANOW, modes)
    process = subprocess.Popen(
        [str(SUBAGENTS), *args],
        cwd=project.root,
        env=project.env,
        stdin=follower,
        stdout=follower,
        stderr=follower if stderr is None else stderr,
    )
    os.close(follower)
    seen = b""
    searched_from = 0
    pending = list(answers)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if pending:
            prompt, answer = pending[0]
            found = seen.find(prompt.encode(), searched_from)
            if found >= 0:
                os.write(leader, answer.encode() + b"\n")
                searched_from = found + len(prompt)
                pending.pop(0)
        if process.poll() is not None and not ready:
            break
    process.wait(timeout=30)
    os.close(leader)
    assert not pending, f"never asked {pending[0][0]!r}:\n{seen.decode(errors='replace')}"
    return process.returncode, seen
