"""`subagents run` at a terminal: a tool that needs approval asks the person at the prompt."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_cli_durable import MODEL, SUBAGENTS, Project, ScriptedServer

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    return Project(tmp_path / "project", server, isolated_home)


def run_at_a_terminal(project: Project, prompt: str, answer: str) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin; type ``answer`` when it asks."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(SUBAGENTS), "run", prompt, "--model", MODEL],
        cwd=project.root,
        env=project.env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    answered = False
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
        if not answered and b"Allow?" in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
        if process.poll() is not None and not ready:
            break
    process.wait(timeout=30)
    os.close(leader)
    return process.returncode, ANSI.sub("", seen.decode(errors="replace"))


@pytest.mark.parametrize(("answer", "written"), [("y", True), ("not now", False)])
def test_the_person_at_the_terminal_approves_or_declines(
    project: Project, server: ScriptedServer, answer: str, written: bool
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    server.say("finished")
    code, screen = run_at_a_terminal(project, "write x.txt", answer)
    assert code == 0, screen
    assert "wants to run Write" in screen and "finished" in screen
    assert (project.root / "x.txt").exists() is written
    result = next(m for m in server.bodies()[1]["messages"] if m["role"] == "tool")
    if written:
        assert "x.txt" in result["content"]
    else:
        assert "not now" in result["content"]
    assert project.only_task()["status"] == "completed"
