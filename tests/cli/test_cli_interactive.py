"""`subagents run` at a terminal: a tool that needs approval asks the person at the prompt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_project import MODEL, Project, ScriptedServer, at_a_terminal

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


@pytest.mark.parametrize(("answer", "written"), [("y", True), ("not now", False)])
def test_the_person_at_the_terminal_approves_or_declines(
    project: Project, server: ScriptedServer, answer: str, written: bool
) -> None:
    server.call("Write", {"file_path": "x.txt", "content": "hello"})
    server.say("finished")
    code, screen = at_a_terminal(
        project, "run", "write x.txt", "--model", MODEL, answers=(("Allow?", answer),)
    )
    assert code == 0, screen
    assert "wants to run Write" in screen and "finished" in screen
    assert (project.root / "x.txt").exists() is written
    result = next(m for m in server.bodies()[1]["messages"] if m["role"] == "tool")
    if written:
        assert "x.txt" in result["content"]
    else:
        assert "not now" in result["content"]
    assert project.only_task()["status"] == "completed"
