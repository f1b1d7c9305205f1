"""A project in a temporary folder, the real ``subagents`` console script run in it as a
subprocess, and a local OpenAI-compatible server answering with scripted turns: what the CLI
tests share. The server answers each chat-completions request with the next turn, as plain
JSON or as Server-Sent Events, whichever the request asked for (the CLI streams when it
prints progress), and records every request for the assertions."""

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
