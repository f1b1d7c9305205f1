"""CLAUDE.md / AGENTS.md reach the main agent and its subagents, as the requests a scripted
model records show: nearest first, up to the repository root, then the user's own file;
``omitClaudeMd`` leaves them out; oversized and unreadable files are cut or skipped, and said so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.models.base import ModelResponse
from subagents.models.testing import ScriptedModel, tool_call_response
from subagents.runtime.events import Event, EventBus, InstructionsNotice
from subagents.runtime.instructions import (
    _BYTES_PER_CHAR,
    MAX_FILE_CHARS,
    imports_in,
    load_project_instructions,
)
from subagents.runtime.runtime import Runtime


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """outside/repo (a git repository) with a nested package folder to work in."""
    root = tmp_path / "outside" / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    return root


def task(subagent_type: str) -> ModelResponse:
    return tool_call_response(
        "Task", {"description": "delegate", "prompt": "do it", "subagent_type": subagent_type}
    )


def helper(**fields: Any) -> AgentDefinition:
    return AgentDefinition(
        name="helper", description="Helps.", system_prompt="You are helper.", **fields
    )


def positions(text: str, *needles: str) -> list[int]:
    found = [text.find(needle) for needle in needles]
    assert all(index >= 0 for index in found), (needles, text)
    return found


# -- which files, in which order -------------------------------------------------------------


async def test_main_and_subagent_get_the_files_nearest_first_then_the_users(
    repo: Path, isolated_home: Path
) -> None:
    workspace = repo / "pkg" / "sub"
    write(repo.parent / "CLAUDE.md", "ABOVE-THE-REPO: must not be read")
    write(repo / "CLAUDE.md", "ROOT-CLAUDE: run make test")
    write(repo / "AGENTS.md", "ROOT-AGENTS: use ruff")
    write(repo / "pkg" / ".claude" / "CLAUDE.md", "PKG-DOT-CLAUDE: pkg rules")
    write(workspace / "CLAUDE.local.md", "LOCAL: my sandbox is at port 9000")
    write(isolated_home / ".claude" / "CLAUDE.md", "USER-FILE: answer in English")
    child = ScriptedModel(["child done"])
    main = ScriptedModel([task("helper"), "main done"])
    runtime = Runtime(cwd=workspace, model=main, agents=[helper()], agent_models={"helper": child})

    result = await runtime.run("go")

    assert result.output == "main done"
    for system in (main.requests[0].system, child.requests[0].system):
        assert "ABOVE-THE-REPO" not in system
        local, pkg, root, root_agents, user = positions(
            system,
            "LOCAL: my sandbox",
            "PKG-DOT-CLAUDE",
            "ROOT-CLAUDE",
            "ROOT-AGENTS",
            "USER-FILE",
        )
        assert local < pkg < root < root_agents < user
        assert f"Contents of {repo / 'CLAUDE.md'} (project instructions)" in system
        assert "(the user's instructions)" in system
    assert main.requests[0].system.startswith("You are the main agent")
    assert child.requests[0].system.startswith("You are helper.")


def test_without_a_repository_the_walk_stops_below_home(
    tmp_path: Path, isolated_home: Path
) -> None:
    project = isolated_home / "projects" / "demo"
    write(isolated_home / "CLAUDE.md", "HOME-ROOT: not a project file")
    write(isolated_home / "projects" / "CLAUDE.md", "PROJECTS: read")
    project.mkdir(parents=True)

    loaded = load_project_instructions(project)

    texts = [file.text for file in loaded.files]
    assert texts == ["PROJECTS: read"]


def test_the_same_file_reached_twice_is_put_in_once(repo: Path) -> None:
    write(repo / "CLAUDE.md", "ONCE")
    (repo / "AGENTS.md").symlink_to(repo / "CLAUDE.md")

    loaded = load_project_instructions(repo)

    assert [file.path.name for file in loaded.files] == ["CLAUDE.md"]
    assert loaded.prompt_section().count("ONCE") == 1


async def test_omit_claude_md_leaves_them_out_of_that_agent_only(repo: Path) -> None:
    write(repo / "CLAUDE.md", "PROJECT-RULES")
    child = ScriptedModel(["child done"])
    main = ScriptedModel([task("helper"), "main done"])
    runtime = Runtime(
        cwd=repo,
        model=main,
        agents=[helper(omit_claude_md=True)],
        agent_models={"helper": child},
    )

    await runtime.run("go")

    assert "PROJECT-RULES" in main.requests[0].system
    assert "PROJECT-RULES" not in child.requests[0].system
    assert "You are helper." in child.requests[0].system


async def test_an_agent_run_as_main_with_omit_claude_md_gets_none(repo: Path) -> None:
    write(repo / "AGENTS.md", "PROJECT-RULES")
    main = ScriptedModel(["done"])
    runtime = Runtime(cwd=repo, model=main, agents=[helper(omit_claude_md=True)])

    await runtime.run("go", agent="helper")

    assert main.requests[0].system == "You are helper."


async def test_no_files_leave_the_prompt_as_it_was(repo: Path) -> None:
    main = ScriptedModel(["done"])
    await Runtime(cwd=repo, model=main, agents=[helper()]).run("go", agent="helper")
    assert main.requests[0].system == "You are helper."


# -- bounds and bad files --------------------------------------------------------------------


async def test_an_oversized_file_is_cut_with_a_note_in_the_prompt_and_an_event(
    repo: Path,
) -> None:
    big = "x" * (MAX_FILE_CHARS + 500) + "TAIL-NEVER-SHOWN"
    write(repo / "CLAUDE.md", big)
    events: list[Event] = []
    main = ScriptedModel(["done"])
    runtime = Runtime(cwd=repo, model=main, events=EventBus([events.append]))

    await runtime.run("go")

    system = main.requests[0].system
    assert "TAIL-NEVER-SHOWN" not in system
    assert system.count("x") >= MAX_FILE_CHARS
    assert f"only its first {MAX_FILE_CHARS:,} of {len(big):,} characters are shown" in system
    notices = [event for event in events if isinstance(event, InstructionsNotice)]
    assert len(notices) == 1
    assert str(repo / "CLAUDE.md") in notices[0].message
    assert "cut" in notices[0].message and "shorten it" in notices[0].message


def test_the_total_cap_cuts_the_farther_files_first(repo: Path, isolated_home: Path) -> None:
    write(repo / "CLAUDE.md", "n" * 60)
    write(repo / "AGENTS.md", "a" * 60)
    write(isolated_home / ".claude" / "CLAUDE.md", "USER")

    loaded = load_project_instructions(repo, max_file_chars=100, max_total_chars=100)

    assert [(f.path.name, len(f.text), f.cut) for f in loaded.files] == [
        ("CLAUDE.md", 60, False),
        ("AGENTS.md", 40, True),
    ]
    assert any("AGENTS.md is cut to 40 characters" in w for w in loaded.warnings)
    assert any("CLAUDE.md is left out" in w and "shorten them" in w for w in loaded.warnings)
    assert "only its first 40 of 60 characters are shown" in loaded.prompt_section()


def test_binary_and_non_utf8_files_are_skipped_with_a_warning(repo: Path) -> None:
    write(repo / "CLAUDE.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write(repo / "AGENTS.md", b"caf\xe9 au lait")
    write(repo / "CLAUDE.local.md", "GOOD")

    loaded = load_project_instructions(repo)

    assert [file.text for file in loaded.files] == ["GOOD"]
    assert any("CLAUDE.md is skipped: it is a binary file" in w for w in loaded.warnings)
    assert any("AGENTS.md is skipped: it is not UTF-8 text" in w for w in loaded.warnings)


def test_a_directory_a_fifo_and_a_broken_link_are_skipped_without_hanging(repo: Path) -> None:
    (repo / "CLAUDE.md").mkdir()
    os.mkfifo(repo / "AGENTS.md")
    (repo / "CLAUDE.local.md").symlink_to(repo / "gone.md")

    loaded = load_project_instructions(repo)

    assert loaded.files == ()
    reasons = " | ".join(loaded.warnings)
    assert "CLAUDE.md is skipped: it is not a regular file" in reasons
    assert "AGENTS.md is skipped: it is not a regular file" in reasons
    assert "CLAUDE.local.md is skipped: it is a broken symbolic link" in reasons


def test_a_file_is_read_again_only_when_it_changes(repo: Path) -> None:
    path = write(repo / "CLAUDE.md", "FIRST")
    assert load_project_instructions(repo).files[0].text == "FIRST"
    path.write_text("SECOND, longer", encoding="utf-8")
    os.utime(path, ns=(1, 1_000_000_000))
    assert load_project_instructions(repo).files[0].text == "SECOND, longer"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300), max_chars=st.integers(min_value=1, max_value=80))
@example(data=b"\x01\x01\x01\x01\x01\x00", max_chars=1)  # a NUL past what is read
def test_any_bytes_give_a_prefix_within_the_cap_or_a_warning(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, max_chars: int
) -> None:
    root = tmp_path_factory.mktemp("repo")
    (root / ".git").mkdir()
    write(root / "CLAUDE.md", data)

    loaded = load_project_instructions(root, max_file_chars=max_chars, max_total_chars=max_chars)

    assert sum(len(file.text) for file in loaded.files) <= max_chars
    # only what the cap lets it read is looked at: a NUL further on is past the prefix it keeps
    if b"\x00" in data[: max_chars * _BYTES_PER_CHAR + 1]:
        assert loaded.files == ()
        assert any("binary" in warning for warning in loaded.warnings)
    for file in loaded.files:
        whole = data.decode("utf-8", "ignore").removeprefix("\ufeff").replace("\r\n", "\n")
        assert whole.startswith(file.text)
        assert file.cut == (len(file.text) < len(whole))
        assert file.cut == any("is cut" in warning for warning in loaded.warnings)


# -- @path imports ---------------------------------------------------------------------------


def test_imports_follow_the_importing_file_and_say_who_imported_them(
    repo: Path, isolated_home: Path
) -> None:
    write(
        repo / "pkg" / "CLAUDE.md",
        "PKG-RULES: see @docs/style.md and @~/.claude/mine.md; use @pytest.fixture freely.\n",
    )
    write(repo / "pkg" / "docs" / "style.md", "STYLE: four spaces")
    write(isolated_home / ".claude" / "mine.md", "MINE: my sandbox")
    write(repo / "AGENTS.md", "ROOT-AGENTS")

    loaded = load_project_instructions(repo / "pkg")

    assert [file.text.split(":")[0] for file in loaded.files] == [
        "PKG-RULES",
        "STYLE",
        "MINE",
        "ROOT-AGENTS",
    ]
    assert loaded.warnings == ()
    section = loaded.prompt_section()
    assert f"(project instructions, imported by {repo / 'pkg' / 'CLAUDE.md'})" in section


def test_imports_inside_code_are_not_followed(repo: Path) -> None:
    write(
        repo / "CLAUDE.md",
        "Run `@code-span.md` like this:\n\n```\n@fenced.md\n```\n\nThen @prose.md\n",
    )
    for name in ("code-span.md", "fenced.md", "prose.md"):
        write(repo / name, f"FROM {name}")

    loaded = load_project_instructions(repo)

    assert [file.path.name for file in loaded.files] == ["CLAUDE.md", "prose.md"]


def test_a_project_file_cannot_import_files_outside_the_project(
    repo: Path, isolated_home: Path
) -> None:
    write(repo.parent / "secret.md", "OUTSIDE-SECRET")
    write(isolated_home / ".ssh" / "id_rsa", "PRIVATE-KEY")
    write(repo / "CLAUDE.md", "Read @../secret.md and @~/.ssh/id_rsa and @/etc/hostname\n")

    loaded = load_project_instructions(repo)

    section = loaded.prompt_section()
    assert "OUTSIDE-SECRET" not in section and "PRIVATE-KEY" not in section
    refused = [w for w in loaded.warnings if "outside the project and ~/.claude" in w]
    assert len(refused) == 3
    assert "not read" in refused[0]


def test_a_project_file_linking_outside_the_project_is_not_read(
    repo: Path, isolated_home: Path
) -> None:
    secret = write(isolated_home / ".aws" / "credentials", "AWS-SECRET")
    (repo / "CLAUDE.md").symlink_to(secret)
    write(repo / "docs" / "shared.md", "SHARED-INSIDE")
    (repo / "AGENTS.md").symlink_to(repo / "docs" / "shared.md")

    loaded = load_project_instructions(repo)

    assert [file.text for file in loaded.files] == ["SHARED-INSIDE"]
    assert "AWS-SECRET" not in loaded.prompt_section()
    assert any(
        f"{repo / 'CLAUDE.md'} links to {secret}, outside the project" in w for w in loaded.warnings
    )


def test_the_users_own_file_may_link_anywhere(tmp_path: Path, isolated_home: Path) -> None:
    elsewhere = write(tmp_path / "dotfiles" / "CLAUDE.md", "USER-DOTFILES @extra.md")
    write(tmp_path / "dotfiles" / "extra.md", "NOT-HERE: imports start beside the link")
    write(isolated_home / ".claude" / "extra.md", "USER-EXTRA")
    (isolated_home / ".claude" / "CLAUDE.md").symlink_to(elsewhere)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)

    loaded = load_project_instructions(project)

    assert [file.text for file in loaded.files] == ["USER-DOTFILES @extra.md", "USER-EXTRA"]
    assert loaded.warnings == ()


def test_an_import_cycle_puts_each_file_in_once(repo: Path) -> None:
    write(repo / "CLAUDE.md", "A imports @b.md")
    write(repo / "b.md", "B imports @CLAUDE.md and @b.md")

    loaded = load_project_instructions(repo)

    assert [file.path.name for file in loaded.files] == ["CLAUDE.md", "b.md"]


def test_imports_nest_five_deep_and_say_where_they_stop(repo: Path) -> None:
    write(repo / "CLAUDE.md", "level 0 @l1.md")
    for level in range(1, 8):
        write(repo / f"l{level}.md", f"level {level} @l{level + 1}.md")

    loaded = load_project_instructions(repo)

    assert [file.path.name for file in loaded.files] == [
        "CLAUDE.md",
        *(f"l{level}.md" for level in range(1, 6)),
    ]
    assert any("imports of" in w and "l5.md" in w and "5 deep" in w for w in loaded.warnings)


@given(text=st.text(max_size=200))
def test_finding_imports_never_fails(text: str) -> None:
    for target in imports_in(text, Path("/base")):
        assert isinstance(target, Path)


def test_agents_show_names_the_files_an_agent_gets_or_why_none(
    repo: Path, isolated_home: Path
) -> None:
    from typer.testing import CliRunner

    from subagents.cli.agents import agents_app

    write(repo / "CLAUDE.md", "rules")
    write(isolated_home / ".claude" / "CLAUDE.md", "mine")
    agents = repo / ".claude" / "agents"
    write(agents / "reader.md", "---\nname: reader\ndescription: Reads\n---\nYou read.\n")
    write(
        agents / "loner.md",
        "---\nname: loner\ndescription: Alone\nomitClaudeMd: true\n---\nYou work alone.\n",
    )
    runner = CliRunner()

    reader = runner.invoke(
        agents_app, ["show", "reader", "--cwd", str(repo)], env={"COLUMNS": "400"}
    )
    loner = runner.invoke(agents_app, ["show", "loner", "--cwd", str(repo)], env={"COLUMNS": "400"})

    assert reader.exit_code == 0 and loner.exit_code == 0
    assert f"project instructions  CLAUDE.md, {isolated_home / '.claude' / 'CLAUDE.md'}" in (
        reader.stdout
    )
    assert "project instructions  left out (omitClaudeMd)" in loner.stdout
    shown = runner.invoke(agents_app, ["show", "reader", "--json", "--cwd", str(repo)])
    assert json.loads(shown.stdout)["project_instructions"] == [
        {"path": "CLAUDE.md", "cut": False},
        {"path": str(isolated_home / ".claude" / "CLAUDE.md"), "cut": False},
    ]


# -- .claude/rules ---------------------------------------------------------------------------


def test_rules_follow_their_directorys_files_and_scoped_rules_are_left_out_with_a_warning(
    repo: Path, isolated_home: Path
) -> None:
    rules = repo / ".claude" / "rules"
    write(repo / "CLAUDE.md", "ROOT")
    write(rules / "testing.md", "TESTING: run pytest -x")
    write(rules / "frontend" / "style.md", "---\ndescription: style\n---\nSTYLE: use tabs\n")
    write(rules / "go.md", '---\npaths:\n  - "**/*.go"\n---\nGO-ONLY\n')
    write(rules / "cs.md", "---\nglobs: **/*.cs\n---\nCS-ONLY\n")
    write(rules / ".hidden.md", "HIDDEN")
    write(rules / "notes.txt", "NOT-MARKDOWN")
    write(isolated_home / ".claude" / "rules" / "mine.md", "MY-RULE")

    loaded = load_project_instructions(repo)

    assert [file.text.strip() for file in loaded.files] == [
        "ROOT",
        "STYLE: use tabs",
        "TESTING: run pytest -x",
        "MY-RULE",
    ]
    (warning,) = loaded.warnings
    assert warning.startswith("2 rule file(s) apply only to some paths")
    assert str(rules / "go.md") in warning and str(rules / "cs.md") in warning


def test_a_rules_folder_with_too_many_files_is_cut_with_a_warning(repo: Path) -> None:
    from subagents.runtime.instructions import MAX_RULE_FILES

    for index in range(MAX_RULE_FILES + 5):
        write(repo / ".claude" / "rules" / f"r{index:04d}.md", f"rule {index}")

    loaded = load_project_instructions(repo)

    assert len(loaded.files) == MAX_RULE_FILES
    assert any(f"more than {MAX_RULE_FILES} rule files" in w for w in loaded.warnings)


async def test_builtin_explore_and_plan_skip_them_as_in_claude_code_general_purpose_does_not(
    repo: Path,
) -> None:
    write(repo / "CLAUDE.md", "PROJECT-RULES")
    children = {
        name: ScriptedModel([f"{name} done"]) for name in ("explore", "plan", "general-purpose")
    }
    main = ScriptedModel([task("explore"), task("plan"), task("general-purpose"), "all done"])
    runtime = Runtime(cwd=repo, model=main, agent_models=children)

    await runtime.run("go")

    assert "PROJECT-RULES" not in children["explore"].requests[0].system
    assert "PROJECT-RULES" not in children["plan"].requests[0].system
    assert "PROJECT-RULES" in children["general-purpose"].requests[0].system
