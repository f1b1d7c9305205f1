"""The views of stored runs and of project files (`trace`, `tasks show`, `tasks list`,
`skills list`, `agents list`, `agents show`, `workflow show`) at a terminal: what a model, a
tool or a file the user did not write says can neither drive the terminal (a title change, a
cleared screen, a C1 CSI) nor be read as Rich markup (a style, an OSC 8 link to a local file).

A real run is stored with scripted models in the project's SQLite store; the real console
script then shows it at a pseudo-terminal (as test_cli_answer_output does), and the bytes the
terminal received are checked: no escape, bell or C1 byte but the printer's own SGR styles,
and the markup shown as the text it is."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.control import strip_control_codes
from rich.markup import escape, render
from rich.text import Text

from cli_project import MODEL, Project, ScriptedServer, terminal_bytes
from paths import TESTS
from subagents.cli.answer import markup_line, quote_markup, terminal_safe
from subagents.definitions.model import AgentDefinition
from subagents.errors import ToolError
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, ScriptedModel, text_response, tool_call_response
from subagents.tools.decorator import tool

TITLE = "\x1b]0;pwned\x07"  # sets the window title
CLEAR = "\x1b[2J"  # clears the screen
CSI = "\x9b2J"  # the same, as a C1 control
BOLD = "[bold red]x[/]"
LINK = "[link=file:///etc/passwd]y[/link]"
FIRST = f"{TITLE} {BOLD}"
SECOND = f"{CLEAR} {CSI} {LINK}"
EVERYTHING = f"{FIRST} {SECOND}"
# the same in a YAML double-quoted scalar (an agent's or a skill's description)
YAML_EVERYTHING = '"\\e]0;pwned\\a [bold red]x[/] \\e[2J \\x9b2J [link=file:///etc/passwd]y[/link]"'
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # the printer's own styles
RAW = (b"\x1b", b"\x07", "\x9b".encode())


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:  # not asked: the runs here are recorded in the test
        yield running


@pytest.fixture
def project(tmp_path: Path, server: ScriptedServer, isolated_home: Path) -> Project:
    return Project(tmp_path / "project", server, isolated_home)  # a terminal of 300 columns


@tool
async def Boom(note: str) -> str:
    """Fail with the note as the error."""
    raise ToolError(note)


def record_run(project: Project) -> str:
    """A completed run in the project's store whose every text holds :data:`EVERYTHING`: the
    prompt, a todo, a failed tool's error, a subagent's task description and prompt, its
    answer and the final answer."""
    plan: list[tuple[str, dict[str, Any]]] = [
        (
            "TodoWrite",
            {"todos": [{"content": EVERYTHING, "status": "in_progress", "activeForm": FIRST}]},
        ),
        ("Boom", {"note": EVERYTHING}),
        ("Task", {"description": FIRST, "prompt": EVERYTHING, "subagent_type": "helper"}),
    ]

    def main(request: ModelRequest) -> ModelResponse:
        done = sum(isinstance(message, ToolResultMessage) for message in request.messages)
        return tool_call_response(*plan[done]) if done < len(plan) else text_response(EVERYTHING)

    helper = AgentDefinition(name="helper", description="Helps.", system_prompt="You help.")

    async def run() -> str:
        with open_store(project.store_file) as store:
            runtime = Runtime(
                cwd=project.root,
                agents=[helper],
                model=FunctionModel(main, name="scripted:main"),
                agent_models={"helper": ScriptedModel([EVERYTHING], name="scripted:helper")},
                tools=[Boom],
                permission_mode="bypassPermissions",
                store=store,
            )
            result = await runtime.run(EVERYTHING, description=EVERYTHING)
            await runtime.aclose()
        assert result.status == "completed", result.error
        assert result.task_id is not None
        return result.task_id

    return asyncio.run(run())


def record_paused_run(project: Project) -> str:
    """A run waiting for a person to approve a Write whose content is :data:`EVERYTHING`."""
    model = ScriptedModel(
        [tool_call_response("Write", {"file_path": "x.txt", "content": EVERYTHING})]
    )

    async def run() -> str:
        with open_store(project.store_file) as store:
            runtime = Runtime(
                cwd=project.root,
                model=model,
                permission_mode="default",
                headless="pause",
                store=store,
            )
            result = await runtime.run("write it")
            await runtime.aclose()
        assert result.status == "awaiting_human", result.error
        assert result.task_id is not None
        return result.task_id

    return asyncio.run(run())


def checked_screen(code: int, seen: bytes, *, exit_code: int = 0) -> str:
    """What a terminal received from a command (:func:`terminal_bytes`), as text, checked: it
    exited with ``exit_code``, without a traceback, and no raw escape, bell or C1 byte reached
    the terminal (the printer's own SGR styles aside)."""
    screen = SGR.sub(b"", seen)
    shown = screen.decode(errors="replace")
    assert code == exit_code, shown
    assert "Traceback" not in shown, shown
    for raw in RAW:
        assert raw not in screen, f"{raw!r} reached the terminal:\n{shown!r}"
    return shown


def shown_at_a_terminal(project: Project, *args: str) -> str:
    """The screen of the console script run at a pseudo-terminal, checked (see
    :func:`checked_screen`), as text."""
    shown = checked_screen(*terminal_bytes(project, *args))
    assert "pwned" in shown, shown  # shown, not acted on (nor dropped)
    return shown.replace("\r\n", "\n")


def assert_markup_shown_as_text(shown: str) -> None:
    assert BOLD in shown, shown
    assert LINK in shown, shown


# -- views of a stored run ------------------------------------------------------------------


def test_trace_shows_a_models_and_a_tools_text_without_driving_the_terminal(
    project: Project,
) -> None:
    task_id = record_run(project)
    shown = shown_at_a_terminal(project, "trace", task_id)
    assert_markup_shown_as_text(shown)
    assert terminal_safe(EVERYTHING) in shown  # the tool's error and the todo, whole
    assert "helper " in shown


def test_trace_json_keeps_the_text_exactly(project: Project) -> None:
    import json

    task_id = record_run(project)
    done = project.cli("trace", task_id, "--json")
    assert done.code == 0, done.err
    data = json.loads(done.out)
    assert data["task"]["description"] == EVERYTHING
    assert [call["error"] for call in data["tool_calls"] if call["tool"] == "Boom"] == [EVERYTHING]


def test_tasks_show_shows_the_sessions_tree_without_driving_the_terminal(
    project: Project,
) -> None:
    task_id = record_run(project)
    shown = shown_at_a_terminal(project, "tasks", "show", task_id)
    assert_markup_shown_as_text(shown)
    assert terminal_safe(FIRST) in shown.split("Sessions", 1)[1]  # the subagent's task


def test_tasks_show_shows_a_pending_question_without_driving_the_terminal(
    project: Project,
) -> None:
    task_id = record_paused_run(project)
    shown = shown_at_a_terminal(project, "tasks", "show", task_id)
    assert "Awaiting a person" in shown, shown
    assert_markup_shown_as_text(shown)


def test_tasks_show_shows_an_imported_stores_words_without_driving_the_terminal(
    project: Project,
) -> None:
    # a store copied in from elsewhere ('store copy') may hold anything in its records
    task_id = record_paused_run(project)
    raw = sqlite3.connect(project.store_file)
    raw.execute(
        "UPDATE steps SET checkpoint = json_set(checkpoint, '$.position', ?)",
        (f"tool:{TITLE}{CLEAR}{CSI}",),
    )
    raw.commit()
    raw.close()
    shown = shown_at_a_terminal(project, "tasks", "show", task_id)
    assert f"tool:{terminal_safe(TITLE + CLEAR + CSI)}" in shown, shown


def test_tasks_show_json_keeps_the_text_exactly(project: Project) -> None:
    task_id = record_run(project)
    shown = project.show(task_id)
    assert shown["task"]["result"] == EVERYTHING
    assert [session["task_description"] for session in shown["sessions"]][1:] == [FIRST]


def test_tasks_list_shows_a_description_without_driving_the_terminal(project: Project) -> None:
    # already safe: the listing is plain text, its control characters shown as spaces
    record_run(project)
    shown = shown_at_a_terminal(project, "tasks", "list")
    assert_markup_shown_as_text(shown)


# -- views of project files -----------------------------------------------------------------


def write_agent(project: Project) -> None:
    agents = project.root / ".subagents" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "evil.md").write_text(
        f"---\nname: evil\ndescription: {YAML_EVERYTHING}\ntools: Read\n---\n"
        f"You are evil. {EVERYTHING} [a link](https://example.test/where)\n",
        encoding="utf-8",
    )


@pytest.mark.slow
def test_agents_show_shows_an_agent_files_text_without_driving_the_terminal(
    project: Project,
) -> None:
    write_agent(project)
    assert project.cli("agents", "show", "evil", "--json").json()["description"] == EVERYTHING
    shown = shown_at_a_terminal(project, "agents", "show", "evil")
    assert_markup_shown_as_text(shown)
    assert "https://example.test/where" in shown  # a link's target shown, not hidden in OSC 8


def test_agents_list_shows_an_agent_file_without_driving_the_terminal(project: Project) -> None:
    # already safe: the listing is plain text, its control characters shown as spaces
    write_agent(project)
    agents = project.root / ".subagents" / "agents"
    (agents / "broken.md").write_text(
        f"---\nname: broken\ndescription: Broken.\nmodel: {YAML_EVERYTHING}\n---\nBroken.\n",
        encoding="utf-8",
    )
    shown = checked_screen(*terminal_bytes(project, "agents", "list"))
    assert "evil" in shown and "broken" in shown, shown


def test_skills_list_shows_a_skill_files_text_without_driving_the_terminal(
    project: Project,
) -> None:
    skill = project.root / ".claude" / "skills" / "evil"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: evil\ndescription: {YAML_EVERYTHING}\nunknown-key: {YAML_EVERYTHING}\n"
        f"---\nDo evil. {EVERYTHING}\n",
        encoding="utf-8",
    )
    shown = shown_at_a_terminal(project, "skills", "list")
    assert_markup_shown_as_text(shown)


def write_workflow(project: Project, more_nodes: str = "") -> None:
    """The workflow ``evil`` (and its agent), its text all markup and escapes; ``more_nodes``:
    further lines of its ``nodes``."""
    write_agent(project)
    workflows = project.root / ".subagents" / "workflows"
    workflows.mkdir()
    (workflows / "evil.yaml").write_text(
        f"name: evil\ndescription: {YAML_EVERYTHING}\nentry_point: ask\nnodes:\n"
        f"  ask: {{type: agent, agent: evil, prompt: {YAML_EVERYTHING}}}\n{more_nodes}"
        "edges:\n  - {from: ask, to: end}\n",
        encoding="utf-8",
    )


def test_workflow_show_shows_a_workflow_files_text_without_driving_the_terminal(
    project: Project,
) -> None:
    write_workflow(project)
    shown = shown_at_a_terminal(project, "workflow", "show", "evil")
    assert_markup_shown_as_text(shown)


def test_workflow_show_mermaid_shows_a_workflow_files_text_without_driving_the_terminal(
    project: Project,
) -> None:
    write_workflow(project, '  "\\e]0;pwned\\a": {type: agent, agent: evil, prompt: go}\n')
    shown = checked_screen(*terminal_bytes(project, "workflow", "show", "evil", "--mermaid"))
    assert "flowchart" in shown and "pwned" in shown, shown


def test_mcp_list_shows_a_config_files_text_without_driving_the_terminal(
    project: Project,
) -> None:
    evil = {"command": EVERYTHING, "args": [EVERYTHING]}
    (project.root / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": evil}}))
    shown = shown_at_a_terminal(project, "mcp", "list")
    assert_markup_shown_as_text(shown.replace("\n", ""))


# -- the helper -----------------------------------------------------------------------------


def rich_shows(quoted: str) -> str:
    """What Rich shows of ``quoted`` inside a tag, as the views print it."""
    return Text.from_markup(f"[dim]{quoted}[/]").plain


@given(st.text(), st.integers(min_value=1, max_value=200))
def test_markup_line_at_a_terminal_is_one_safe_line_of_the_text_as_written(
    text: str, width: int
) -> None:
    quoted = markup_line(text, width, terminal=True)
    assert terminal_safe(quoted) == quoted  # nothing left that drives a terminal
    shown = rich_shows(quoted)  # the text, not markup
    assert len(shown) <= width
    assert "\n" not in shown and "\t" not in shown
    whole = " ".join(terminal_safe(text).split())
    assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1]))


@given(st.text(), st.integers(min_value=1, max_value=200))
def test_markup_line_off_a_terminal_keeps_the_characters(text: str, width: int) -> None:
    shown = rich_shows(markup_line(text, width, terminal=False))
    whole = " ".join(text.split())
    cut = whole if len(whole) <= width else whole[: width - 1] + "…"
    assert shown == strip_control_codes(cut)  # Rich drops a bell, a backspace, ... itself


# -- line-mode chat and a tool called by hand ----------------------------------------------


@pytest.mark.slow
def test_chat_line_mode_shows_a_models_question_without_driving_the_terminal(
    project: Project, server: ScriptedServer
) -> None:
    server.call("AskHuman", {"question": EVERYTHING})
    code, seen = terminal_bytes(
        project,
        "chat",
        "--no-tui",
        "--model",
        MODEL,
        answers=(("› ", "question"), ("(/resume)", "/quit")),
    )
    shown = checked_screen(code, seen)
    assert f"waiting for you: {terminal_safe(EVERYTHING)} (/resume)" in shown, shown


@pytest.mark.slow
def test_chat_line_mode_lists_a_stored_prompt_without_driving_the_terminal(
    project: Project, server: ScriptedServer
) -> None:
    server.say("done")
    code, seen = terminal_bytes(
        project,
        "chat",
        "--no-tui",
        "--model",
        MODEL,
        answers=(("› ", f"wipe {CLEAR} it"), ("done", "/tasks"), ("/resume TASK", "/quit")),
        echo=False,  # the terminal does not show the typed prompt back: only the chat's output
    )
    shown = checked_screen(code, seen)
    assert f"wipe {terminal_safe(CLEAR)} it" in shown, shown


@pytest.mark.slow
def test_mcp_call_shows_a_servers_text_without_driving_the_terminal(project: Project) -> None:
    calc = {
        "command": sys.executable,
        "args": [str(TESTS / "mcp_servers" / "calc_server.py"), "stdio"],
    }
    (project.root / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": calc}}))
    arguments = json.dumps({"message": EVERYTHING})
    code, seen = terminal_bytes(project, "mcp", "call", "calc", "fail", arguments)
    shown = checked_screen(code, seen, exit_code=1)
    assert terminal_safe(EVERYTHING) in shown, shown
    piped = project.cli("mcp", "call", "calc", "fail", arguments)  # exact in a pipe
    assert piped.code == 1 and EVERYTHING in piped.err, piped.err


MARKUPISH = st.text(alphabet=st.sampled_from(list("[]\\/ab#@=:x \n")), max_size=40) | st.text()


@given(MARKUPISH)
def test_quote_markup_shows_any_text_as_written_inside_a_tag(text: str) -> None:
    # (Text drops the carriage returns Rich does not show)
    assert render(f"[dim]{quote_markup(text)}[/]", emoji=False).plain == Text(text).plain


@given(MARKUPISH.filter(lambda text: not text.endswith("\\")))
def test_quote_markup_shows_any_text_as_written_at_the_end_of_a_line(text: str) -> None:
    assert render(f"{quote_markup(text)} ok", emoji=False).plain == Text(f"{text} ok").plain


def test_a_regular_expressions_backslashes_before_a_bracket_are_kept() -> None:
    # Rich's escape left '[' alone here, and Rich then read '\\[' as an escaped bracket
    pattern = "Grep(pattern='self\\\\.quantities\\\\[', output_mode='content')"
    assert render(f"[dim]{quote_markup(pattern)}[/]").plain == pattern
    assert render(f"[dim]{escape(pattern)}[/]").plain != pattern  # what it fixes
