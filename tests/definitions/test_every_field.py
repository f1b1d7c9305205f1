"""One agent file using every frontmatter field Claude Code agent files carry today
(tests/fixtures/every-field.md), end to end: each field has its effect, and `agents show`
reports none of them as having no effect here.

The subagent's ``model: sonnet`` has no Anthropic key here, so it runs on its parent's model
(the FunctionModel below, which answers for both, telling them apart by their system prompts).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_project import Project, ScriptedServer
from fakes.http_server import FakeHTTPServer, PlannedReply
from paths import TESTS
from subagents.cli.agents import agents_app
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.testing import FunctionModel, text_response, tool_calls_response

FIXTURE = TESTS / "fixtures" / "every-field.md"
NAME = "every-field"
SEARCH_KEY = "brv-every-field-0123456789"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_project(root: Path, search: FakeHTTPServer) -> Path:
    """A git repository with everything the fixture agent refers to."""
    repo = root / "repo"
    write(repo / ".claude" / "agents" / f"{NAME}.md", FIXTURE.read_text(encoding="utf-8"))
    write(repo / "CLAUDE.md", "Project rule: the mascot is a ZEBRA.\n")
    write(repo / "notes" / "todo.md", "- fix the parser\n- write the docs\n")
    skill = "---\nname: {0}\ndescription: {1}\n---\n{2}\n"
    write(
        repo / ".claude" / "skills" / "house-style" / "SKILL.md",
        skill.format("house-style", "How we write", "Write BANANA-style sentences."),
    )
    write(
        repo / ".claude" / "skills" / "release" / "SKILL.md",
        skill.format("release", "How we release", "Tag with CHERRY-1.0."),
    )
    write(repo / ".claude" / "agent-memory" / NAME / "MEMORY.md", "Remember: the KIWI build.\n")
    memory = repo / ".claude" / "agent-memory" / NAME / "MEMORY.md"
    settings = {
        "permissions": {
            "allow": [
                "Edit(/notes/**)",
                f"Edit(/{memory.parent})",
                f"Edit(/{memory.parent}/**)",
                "WebFetch(domain:127.0.0.1)",
                "Bash(git status*)",
            ]
        }
    }
    write(repo / ".claude" / "settings.json", json.dumps(settings))
    write(
        repo / ".subagents" / "config.toml",
        '[web]\nallow_private_addresses = ["127.0.0.1"]\nsearch_backend = "brave"\n'
        f'search_url = "{search.url}/res/v1/web/search"\n',
    )
    write(repo / ".gitignore", ".subagents/\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "-m",
        "start",
    )
    return repo


def results(request: ModelRequest) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in request.messages if isinstance(m, ToolResultMessage)}


class Script:
    """The model for the main agent and, through the fallback, for the subagent."""

    def __init__(self, page_url: str, memory: Path) -> None:
        self.page_url = page_url
        self.memory = memory
        self.child_requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if "You are the every-field agent" in request.system:
            self.child_requests.append(request)
            return self.child_turn(len(self.child_requests))
        if not any(isinstance(m, ToolResultMessage) for m in request.messages):
            return tool_calls_response(
                [
                    (
                        "Task",
                        {
                            "description": "exercise every field",
                            "prompt": "Tidy the notes and remember what you learn.",
                            "subagent_type": NAME,
                        },
                    )
                ]
            )
        return text_response("main done")

    def child_turn(self, turn: int) -> ModelResponse:
        if turn == 1:
            todos = [
                {"content": "Tidy notes", "status": "in_progress", "activeForm": "Tidying notes"},
                {"content": "Record", "status": "pending", "activeForm": "Recording"},
            ]
            return tool_calls_response(
                [
                    ("TodoWrite", {"todos": todos}),
                    ("Skill", {"skill": "release"}),
                    ("WebSearch", {"query": "zebra parser docs"}),
                    ("Bash", {"command": "git push origin main"}),
                    ("Task", {"description": "x", "prompt": "y", "subagent_type": "plan"}),
                ]
            )
        if turn == 2:
            edits = [
                {"old_string": "fix the parser", "new_string": "fixed the parser"},
                {"old_string": "write the docs", "new_string": "docs written"},
            ]
            return tool_calls_response(
                [
                    ("WebFetch", {"url": self.page_url, "prompt": "what does it say?"}),
                    ("MultiEdit", {"file_path": "notes/todo.md", "edits": edits}),
                    ("Write", {"file_path": str(self.memory), "content": "KIWI; docs done\n"}),
                ]
            )
        if turn == 3:  # the calls of a turn run at once: the edit is seen a turn later
            return tool_calls_response([("Bash", {"command": "git status --short"})])
        return text_response("every-field done")


def brave_answer(url: str) -> PlannedReply:
    hit = {"title": "Parser docs", "url": url, "description": "How the parser works"}
    return PlannedReply(json_body={"type": "search", "web": {"type": "search", "results": [hit]}})


def page() -> PlannedReply:
    body = "<html><body><h1>Parser</h1><p>It reads ZEBRA files.</p></body></html>"
    return PlannedReply(raw_body=body.encode(), content_type="text/html; charset=utf-8")


async def test_every_field_has_its_effect_in_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("BRAVE_API_KEY", SEARCH_KEY)
    with FakeHTTPServer() as search, FakeHTTPServer() as site:
        repo = make_project(tmp_path, search)
        memory = repo / ".claude" / "agent-memory" / NAME / "MEMORY.md"
        page_url = site.url + "/parser"
        search.plan(brave_answer(page_url))
        site.plan(page())
        script = Script(page_url, memory)
        seen: list[ev.Event] = []
        bus = EventBus()
        bus.subscribe(seen.append)
        rt = Runtime(cwd=repo, model=FunctionModel(script), events=bus)
        result = await rt.run("Use the every-field agent on the notes.")

    assert result.output == "main done"
    first, second, third, last = script.child_requests

    # model: sonnet has no key here -> the parent's model, and the run says so
    (fallback,) = [e for e in seen if isinstance(e, ev.ModelFallback)]
    assert fallback.agent_type == NAME and fallback.requested == "sonnet"
    assert "ANTHROPIC_API_KEY" in fallback.reason

    # skills (preloaded), memory, CLAUDE.md, effort, the tools and their specs
    assert "BANANA-style" in first.system and "CHERRY" not in first.system
    assert "KIWI" in first.system and "ZEBRA" in first.system
    assert {r.settings.effort for r in script.child_requests} == {"high"}
    offered = {spec.name for spec in first.tools}
    assert {"MultiEdit", "TodoWrite", "WebFetch", "WebSearch", "Skill", "Task"} <= offered
    assert "Agent" not in offered and "Bash" in offered
    (task_spec,) = [spec for spec in first.tools if spec.name == "Task"]
    assert "explore" in task_spec.description and "general-purpose" not in task_spec.description

    todo, skill, searched, push, task = results(second).values()
    assert not todo.is_error
    assert not skill.is_error and "CHERRY-1.0" in skill.content
    assert not searched.is_error and page_url in searched.content
    assert push.is_error and "git push" in push.content  # disallowedTools: Bash(git push *)
    assert task.is_error and "explore" in task.content  # tools: Agent(explore)

    fetched, edited, remembered = list(results(third).values())[-3:]
    status = list(results(last).values())[-1]
    assert not fetched.is_error and "ZEBRA files" in fetched.content, fetched.content
    assert not edited.is_error, edited.content
    assert not remembered.is_error, remembered.content
    assert not status.is_error and "notes/todo.md" in status.content, status.content
    assert memory.read_text(encoding="utf-8") == "KIWI; docs done\n"

    # isolation: worktree -- the edit is in a kept worktree, the checkout is untouched
    (spawn,) = result.subagents
    assert spawn.success and spawn.worktree_path and spawn.worktree_branch
    worktree = Path(spawn.worktree_path)
    assert "fixed the parser" in (worktree / "notes" / "todo.md").read_text(encoding="utf-8")
    assert "fix the parser" in (repo / "notes" / "todo.md").read_text(encoding="utf-8")
    # hooks: its Stop hook ran as SubagentStop, in its worktree
    assert (worktree / "stop-hook.log").read_text(encoding="utf-8").strip() == "stopped"
    # TodoWrite: the subagent's list was announced
    (todos,) = [e for e in seen if isinstance(e, ev.TodosUpdated)]
    assert [item.content for item in todos.todos] == ["Tidy notes", "Record"]


def test_agents_show_reports_no_field_as_without_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", SEARCH_KEY)
    with FakeHTTPServer() as search:
        repo = make_project(tmp_path, search)
        runner = CliRunner()
        shown = runner.invoke(agents_app, ["show", NAME, "--cwd", str(repo)])
        as_json = runner.invoke(agents_app, ["show", NAME, "--json", "--cwd", str(repo)])
        strict = runner.invoke(agents_app, ["validate", "--strict", "--cwd", str(repo)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    for said in ("no effect", "not available", "left out", "not supported", "ignored"):
        assert said not in text, text
    data: dict[str, Any] = json.loads(as_json.output)
    assert data["status"] == "active" and data["warnings"] == [], data["warnings"]
    assert strict.exit_code == 0, strict.output
    for label in (
        "may start only explore",
        "disallowed tools Bash(git push *)",
        "permission mode dontAsk",
        "skills house-style",
        "memory project:",
        "isolation worktree:",
        "effort high:",
        "hooks Stop: 1 command (as SubagentStop",
        "project instructions CLAUDE.md",
        "initial prompt 'Check the notes",
    ):
        assert label in text, label
    assert data["effort"] == "high" and data["isolation"] == "worktree"
    assert data["initial_prompt"] == "Check the notes and record what you learn."
    assert data["omit_claude_md"] is False and data["subagent_types"] == ["explore"]


@pytest.mark.slow
def test_initial_prompt_starts_the_agent_run_as_the_main_agent(
    tmp_path: Path, isolated_home: Path
) -> None:
    with ScriptedServer() as server:
        project = Project(tmp_path / "project", server, isolated_home)
        write(
            project.root / ".claude" / "agents" / f"{NAME}.md",
            FIXTURE.read_text(encoding="utf-8"),
        )
        server.say("Checked.")
        done = project.cli("run", "--agent", NAME, "--model", "openai:fake-model")
    assert done.code == 0, done.err
    (body,) = server.bodies()
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert users == ["Check the notes and record what you learn."]
