"""Skills and memory through the real command line: `subagents run --agent` on an
OpenAI-compatible server (a local fake, through the real openai SDK)."""

from __future__ import annotations

import pytest

from cli_project import MODEL, Project, ScriptedServer, project, server

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

__all__ = ["project", "server"]  # the fixtures, used by name below


def test_run_agent_preloads_its_skill_and_keeps_its_memory(
    project: Project, server: ScriptedServer
) -> None:
    root = project.root
    skill = root / ".claude" / "skills" / "house-style" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: house-style\ndescription: How we write.\n---\nUse short sentences.\n"
    )
    agent = root / ".claude" / "agents" / "writer.md"
    agent.parent.mkdir(parents=True)
    agent.write_text(
        "---\nname: writer\ndescription: Writes.\ntools: Grep, Skill\nskills: house-style\n"
        "memory: project\n---\nYou write.\n"
    )
    memory = root / ".claude" / "agent-memory" / "writer" / "MEMORY.md"
    server.call("Write", {"file_path": str(memory), "content": "- Readers like lists.\n"})
    server.say("Written, and remembered.")

    done = project.cli(
        "run", "Write the intro", "--agent", "writer", "--model", MODEL,
        "--permission-mode", "acceptEdits",
    )  # fmt: skip

    assert done.code == 0, done.err
    assert "Written, and remembered." in done.out
    first = server.bodies()[0]
    system = first["messages"][0]
    assert system["role"] == "system"
    assert "Use short sentences." in system["content"]
    assert (
        f"You keep a memory folder that outlives this session: {memory.parent}"
        in (system["content"])
    )
    tools = sorted(tool["function"]["name"] for tool in first["tools"])
    assert tools == ["AskHuman", "Edit", "Grep", "Read", "Skill", "Write"]
    result = [m for m in server.bodies()[1]["messages"] if m["role"] == "tool"]
    assert "Created" in result[-1]["content"], result
    assert memory.read_text() == "- Readers like lists.\n"
