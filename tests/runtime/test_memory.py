"""Agent memory: each scope's folder, MEMORY.md in the prompt (capped), the agent keeping its
memory with the file tools in a real run, and every write outside that folder still refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.memory import (
    MAX_MEMORY_BYTES,
    MAX_MEMORY_LINES,
    memory_folder,
    memory_grants,
    memory_prompt,
)
from subagents.runtime.runtime import Runtime
from subagents.testing import ScriptedModel, tool_call_response


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    return directory


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def task(subagent_type: str, prompt: str = "do it") -> ModelResponse:
    arguments = {"description": "delegate", "prompt": prompt, "subagent_type": subagent_type}
    return tool_call_response("Task", arguments)


def write(path: str | Path, content: str) -> ModelResponse:
    return tool_call_response("Write", {"file_path": str(path), "content": content})


def results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def run_child(
    repo: Path, definition: AgentDefinition, script: list[Any], **kwargs: Any
) -> tuple[Runtime, ScriptedModel]:
    child = ScriptedModel(script)
    main = ScriptedModel([task(definition.name), "main done"])
    kwargs.setdefault("permission_mode", "acceptEdits")
    runtime = Runtime(
        cwd=repo, agents=[definition], model=main, agent_models={definition.name: child}, **kwargs
    )
    return runtime, child


# -- folders -------------------------------------------------------------------------------------


def test_each_scope_has_its_folder_as_claude_code_keeps_it(repo: Path, isolated_home: Path) -> None:
    assert memory_folder("reviewer", "user", workspace=repo) == (
        isolated_home / ".claude" / "agent-memory" / "reviewer"
    )
    assert memory_folder("reviewer", "project", workspace=repo) == (
        repo / ".claude" / "agent-memory" / "reviewer"
    )
    assert memory_folder("reviewer", "local", workspace=repo) == (
        repo / ".claude" / "agent-memory-local" / "reviewer"
    )


@pytest.mark.parametrize("scope", ["user", "project", "local"])
async def test_the_folder_is_made_on_first_run_and_memory_md_reaches_the_prompt(
    repo: Path, scope: str
) -> None:
    definition = agent("reviewer", memory=scope)
    folder = memory_folder("reviewer", scope, workspace=repo)  # type: ignore[arg-type]
    assert not folder.exists()
    runtime, child = run_child(repo, definition, ["nothing to keep"])
    await runtime.run("review")
    assert folder.is_dir()
    first = child.requests[0].system
    assert first.startswith("You are reviewer.") and str(folder) in first
    assert "MEMORY.md does not exist yet" in first

    (folder / "MEMORY.md").write_text("- The team prefers tabs.\n- CI runs on Fridays.\n")
    runtime, child = run_child(repo, definition, ["noted"])
    await runtime.run("review again")
    assert "- The team prefers tabs.\n- CI runs on Fridays." in child.requests[0].system


async def test_agents_without_memory_get_no_memory_block(repo: Path) -> None:
    runtime, child = run_child(repo, agent("plain"), ["ok"])
    await runtime.run("go")
    assert "# Memory" not in child.requests[0].system
    assert not (repo / ".claude").exists()


def test_a_long_memory_md_is_cut_at_200_lines_with_a_note(repo: Path) -> None:
    definition = agent("keeper", memory="project")
    folder = memory_folder("keeper", "project", workspace=repo)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("".join(f"fact {i}\n" for i in range(1, 301)))
    prompt = memory_prompt(definition, workspace=repo)
    assert f"fact {MAX_MEMORY_LINES}\n" in prompt and f"fact {MAX_MEMORY_LINES + 1}\n" not in prompt
    assert f"only its first {MAX_MEMORY_LINES} lines are shown" in prompt


def test_a_huge_memory_md_is_cut_at_its_byte_cap_on_a_line_boundary(repo: Path) -> None:
    definition = agent("keeper", memory="project")
    folder = memory_folder("keeper", "project", workspace=repo)
    folder.mkdir(parents=True)
    line = "y" * 999 + "\n"
    (folder / "MEMORY.md").write_text(line * 100)  # 100 kB in 100 lines
    prompt = memory_prompt(definition, workspace=repo)
    kept = prompt.count("y" * 999)
    assert kept == MAX_MEMORY_BYTES // 1000
    assert f"only its first {MAX_MEMORY_BYTES // 1024} kB are shown" in prompt


def test_exactly_200_lines_are_not_said_to_be_cut(repo: Path) -> None:
    definition = agent("keeper", memory="local")
    folder = memory_folder("keeper", "local", workspace=repo)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("".join(f"fact {i}\n" for i in range(MAX_MEMORY_LINES)))
    prompt = memory_prompt(definition, workspace=repo)
    assert "goes on beyond" not in prompt and f"fact {MAX_MEMORY_LINES - 1}" in prompt


# -- keeping memory with the file tools ----------------------------------------------------------


async def test_the_agent_writes_its_project_memory_with_write_in_a_real_run(repo: Path) -> None:
    folder = memory_folder("reviewer", "project", workspace=repo)
    definition = agent("reviewer", memory="project")
    runtime, child = run_child(
        repo,
        definition,
        [
            write(folder / "MEMORY.md", "- Prefers tabs; see style.md\n"),
            write(".claude/agent-memory/reviewer/style.md", "Tabs, width 4.\n"),
            tool_call_response("Read", {"file_path": str(folder / "MEMORY.md")}),
            "kept",
        ],
        headless="deny",
    )
    await runtime.run("review")

    outcomes = [r for request in child.requests[1:] for r in results(request)[-1:]]
    assert [r.is_error for r in outcomes] == [False, False, False], outcomes
    assert (folder / "MEMORY.md").read_text() == "- Prefers tabs; see style.md\n"
    assert (folder / "style.md").read_text() == "Tabs, width 4.\n"
    assert "Prefers tabs" in outcomes[2].content

    runtime, child = run_child(repo, definition, ["remembered"])
    await runtime.run("review again")
    assert "- Prefers tabs; see style.md" in child.requests[0].system


async def test_user_memory_outside_the_workspace_is_granted_and_nothing_beside_it(
    repo: Path, isolated_home: Path
) -> None:
    folder = memory_folder("reviewer", "user", workspace=repo)
    beside = isolated_home / ".claude" / "settings.json"
    other = memory_folder("other", "user", workspace=repo)
    other.mkdir(parents=True)
    runtime, child = run_child(
        repo,
        agent("reviewer", memory="user"),
        [
            write(folder / "MEMORY.md", "learned\n"),
            write(beside, "{}"),
            write(other / "MEMORY.md", "not mine"),
            write(folder / ".." / "other" / "MEMORY.md", "not mine either"),
            tool_call_response("Edit", {"file_path": str(folder / "MEMORY.md"),
                                        "old_string": "learned", "new_string": "learned more"}),
            "done",
        ],
        permission_mode="bypassPermissions",
    )  # fmt: skip
    await runtime.run("go")

    ok, settings, others, dotdot, edited = (results(r)[-1] for r in child.requests[1:6])
    assert not ok.is_error and not edited.is_error
    assert (folder / "MEMORY.md").read_text() == "learned more\n"
    for refused in (settings, others, dotdot):
        assert refused.is_error and "outside the workspace" in refused.content
        assert f"or inside {folder}" in refused.content
    assert not beside.exists() and not (other / "MEMORY.md").exists()


async def test_project_memory_does_not_open_the_rest_of_claude_folder(repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    runtime, child = run_child(
        repo,
        agent("reviewer", memory="project"),
        [
            write(".claude/settings.json", '{"permissions": {"allow": ["Bash"]}}'),
            write(".claude/agent-memory/other/MEMORY.md", "not mine"),
            write(".claude/agent-memory/reviewer/.git/config", "[core]"),
            "done",
        ],
        headless="deny",
    )
    await runtime.run("go")
    refusals = [results(r)[-1] for r in child.requests[1:4]]
    assert all(r.is_error and "protected" in r.content for r in refusals), refusals
    assert ".git is protected" in refusals[2].content
    assert not settings.exists()
    assert not (repo / ".claude" / "agent-memory" / "other").exists()


async def test_a_symlink_inside_memory_cannot_lead_out_of_it(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = memory_folder("reviewer", "user", workspace=repo)
    folder.mkdir(parents=True)
    (folder / "escape").symlink_to(outside, target_is_directory=True)
    runtime, child = run_child(
        repo,
        agent("reviewer", memory="user"),
        [write(folder / "escape" / "pwned.txt", "x"), "done"],
        permission_mode="bypassPermissions",
    )
    await runtime.run("go")
    (refused,) = results(child.requests[1])[-1:]
    assert refused.is_error and "outside the workspace" in refused.content
    assert not (outside / "pwned.txt").exists()


def test_a_planted_symlink_in_place_of_the_folder_is_not_granted(
    repo: Path, tmp_path: Path
) -> None:
    target = tmp_path / "secrets"
    target.mkdir()
    link = memory_folder("reviewer", "project", workspace=repo)
    link.parent.mkdir(parents=True)
    link.symlink_to(target, target_is_directory=True)
    definition = agent("reviewer", memory="project")

    assert memory_grants(definition, workspace=repo) == ()
    prompt = memory_prompt(definition, workspace=repo)
    assert "not available in this run" in prompt and "remove that link" in prompt


def test_a_planted_link_above_the_folder_makes_nothing_elsewhere(
    repo: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (repo / ".claude").mkdir()
    (repo / ".claude" / "agent-memory").symlink_to(target, target_is_directory=True)
    definition = agent("reviewer", memory="project")
    assert memory_grants(definition, workspace=repo) == ()
    assert list(target.iterdir()) == []


def test_a_file_in_place_of_the_folder_is_reported(repo: Path) -> None:
    folder = memory_folder("reviewer", "local", workspace=repo)
    folder.parent.mkdir(parents=True)
    folder.write_text("not a folder")
    prompt = memory_prompt(agent("reviewer", memory="local"), workspace=repo)
    assert "not available in this run" in prompt


async def test_a_subagent_never_gets_its_parents_memory(repo: Path) -> None:
    parent_memory = memory_folder("lead", "project", workspace=repo)
    worker = ScriptedModel([write(parent_memory / "MEMORY.md", "overwritten"), "done"])
    lead = ScriptedModel([task("worker"), "lead done"])
    runtime = Runtime(
        cwd=repo,
        agents=[agent("lead", memory="project"), agent("worker")],
        model=lead,
        agent_models={"worker": worker},
        permission_mode="acceptEdits",
    )
    await runtime.run("go", agent="lead")
    assert str(parent_memory) in lead.requests[0].system
    (refused,) = results(worker.requests[1])[-1:]
    assert refused.is_error and "protected" in refused.content
    assert not (parent_memory / "MEMORY.md").exists()


async def test_plan_mode_keeps_memory_read_only(repo: Path) -> None:
    folder = memory_folder("reviewer", "project", workspace=repo)
    runtime, child = run_child(
        repo,
        agent("reviewer", memory="project"),
        [write(folder / "MEMORY.md", "x"), "done"],
        permission_mode="plan",
    )
    await runtime.run("go")
    (refused,) = results(child.requests[1])[-1:]
    assert refused.is_error and "plan mode" in refused.content
    assert not (folder / "MEMORY.md").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_memory_md_is_reported_without_blocking(repo: Path) -> None:
    definition = agent("keeper", memory="project")
    folder = memory_folder("keeper", "project", workspace=repo)
    folder.mkdir(parents=True)
    os.mkfifo(folder / "MEMORY.md")
    prompt = memory_prompt(definition, workspace=repo)
    assert "cannot be read" in prompt and "not a regular file" in prompt


# -- Read, Write and Edit for memory, confined to it ---------------------------------------------


async def test_an_agent_without_file_tools_gets_them_for_its_memory_only(repo: Path) -> None:
    folder = memory_folder("scout", "project", workspace=repo)
    (repo / "src").mkdir()
    runtime, child = run_child(
        repo,
        agent("scout", memory="project", tools=["Grep"]),
        [
            write(folder / "MEMORY.md", "- entry points are in src/\n"),
            write("src/app.py", "pwned"),
            tool_call_response("Read", {"file_path": "README.md"}),
            tool_call_response("Edit", {"file_path": str(folder / "MEMORY.md"),
                                        "old_string": "src/", "new_string": "src/app.py"}),
            "done",
        ],
    )  # fmt: skip
    (repo / "README.md").write_text("project readme")
    await runtime.run("go")

    specs = {spec.name: spec for spec in child.requests[0].tools}
    assert sorted(specs) == ["Edit", "Grep", "Read", "Write"]
    assert f"works only inside your memory folder: {folder}" in specs["Write"].description
    kept, code, readme, edited = (results(r)[-1] for r in child.requests[1:5])
    assert not kept.is_error and not edited.is_error
    assert (folder / "MEMORY.md").read_text() == "- entry points are in src/app.py\n"
    for refused in (code, readme):
        assert refused.is_error and "only for your memory folder" in refused.content
    assert not (repo / "src" / "app.py").exists()


async def test_memory_tools_never_exceed_the_parent_nor_the_agents_disallowed_tools(
    repo: Path,
) -> None:
    narrow = ScriptedModel(["ok"])
    careful = ScriptedModel(["ok"])
    lead = ScriptedModel([task("narrow"), task("careful"), "done"])
    runtime = Runtime(
        cwd=repo,
        model=lead,
        agents=[
            agent("lead", tools=["Read", "Grep", "Task"]),
            agent("narrow", memory="project", tools=["Grep"]),
            agent("careful", memory="project", disallowed_tools=["Write", "Edit", "Bash"]),
        ],
        agent_models={"narrow": narrow, "careful": careful},
        permission_mode="acceptEdits",
    )
    await runtime.run("go", agent="lead")
    # the lead has Read but no Write or Edit: its subagent's memory gets Read only
    assert sorted(spec.name for spec in narrow.requests[0].tools) == ["Grep", "Read"]
    careful_tools = {spec.name for spec in careful.requests[0].tools}
    assert "Write" not in careful_tools and "Edit" not in careful_tools
    assert "Read" in careful_tools


async def test_memory_tools_are_confined_again_when_the_session_is_rebuilt(repo: Path) -> None:
    from subagents.runtime.pause import HumanDecision
    from subagents.store.sqlite import open_store

    folder = memory_folder("scout", "project", workspace=repo)
    definition = agent("scout", memory="project", tools=["Grep"])
    asking = ScriptedModel([tool_call_response("AskHuman", {"question": "Where?"})])
    resumed = ScriptedModel([write("outside.txt", "pwned"), write(folder / "n.md", "ok"), "done"])
    with open_store(repo / "state.db") as store:
        first = Runtime(cwd=repo, model=asking, agents=[definition], store=store)
        paused = await first.run("go", agent="scout")
        assert paused.question is not None
        again = Runtime(
            cwd=repo, model=resumed, agents=[definition], store=store,
            permission_mode="acceptEdits",
        )  # fmt: skip
        decision = HumanDecision("approve", values={"answer": "here"})
        done = await again.resume(paused.task_id or "", decision)

    assert done.output == "done"
    names = {spec.name for spec in resumed.requests[0].tools}
    assert {"Edit", "Grep", "Read", "Write"} <= names and "Bash" not in names
    refused, kept = (results(r)[-1] for r in resumed.requests[1:3])
    assert refused.is_error and "only for your memory folder" in refused.content
    assert not kept.is_error and (folder / "n.md").read_text() == "ok"
    assert not (repo / "outside.txt").exists()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.binary(max_size=400), max_size=320),
    ending=st.sampled_from([b"\n", b"\r\n"]),
)
def test_any_memory_md_stays_within_its_caps(
    tmp_path: Path, lines: list[bytes], ending: bytes
) -> None:
    definition = agent("keeper", memory="project")
    folder = memory_folder("keeper", "project", workspace=tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    data = ending.join(lines)
    (folder / "MEMORY.md").write_bytes(data)
    prompt = memory_prompt(definition, workspace=tmp_path)
    shown = prompt.split("<memory file='MEMORY.md'>\n", 1)[1].rsplit("\n</memory>", 1)[0]
    body, _, note = shown.partition("\n[MEMORY.md goes on beyond this point")
    assert body.count("\n") < MAX_MEMORY_LINES
    assert len(body.encode("utf-8", "surrogateescape")) <= MAX_MEMORY_BYTES * 3  # U+FFFD is 3
    cut = data.count(b"\n") >= MAX_MEMORY_LINES or len(data) > MAX_MEMORY_BYTES
    if not cut:
        assert not note


# -- worktrees -----------------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> None:
    import subprocess

    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null",
         *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    import shutil

    if shutil.which("git") is None:
        pytest.fail("git is needed for the worktree tests")
    root = tmp_path / "clone"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "README.md").write_text("x")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    return root


def test_a_worktree_inside_git_keeps_project_memory_in_the_main_checkout(git_repo: Path) -> None:
    inside = git_repo / ".git" / "subagents" / "worktrees" / "scout-1"
    _git(git_repo, "worktree", "add", "-q", "-b", "scout-1", str(inside))
    definition = agent("scout", memory="project")

    folder = memory_folder("scout", "project", workspace=inside / "pkg")
    assert folder == git_repo / "pkg" / ".claude" / "agent-memory" / "scout"
    assert memory_grants(definition, workspace=inside / "pkg") == (folder,)
    assert str(folder) in memory_prompt(definition, workspace=inside / "pkg")
    assert not (inside / "pkg" / ".claude").exists()  # nothing made in the worktree
    local = memory_folder("scout", "local", workspace=inside)
    assert local == git_repo / ".claude" / "agent-memory-local" / "scout"


def test_an_ordinary_worktree_or_a_planted_git_file_keeps_its_own_folder(
    git_repo: Path, tmp_path: Path
) -> None:
    beside = tmp_path / "beside"
    _git(git_repo, "worktree", "add", "-q", "-b", "beside", str(beside))
    assert memory_folder("scout", "project", workspace=beside) == (
        beside / ".claude" / "agent-memory" / "scout"
    )
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / ".git").write_text(f"gitdir: {git_repo / '.git' / 'worktrees' / 'beside'}\n")
    assert memory_folder("scout", "project", workspace=planted) == (
        planted / ".claude" / "agent-memory" / "scout"
    )
    assert memory_folder("scout", "project", workspace=git_repo) == (
        git_repo / ".claude" / "agent-memory" / "scout"
    )


async def test_an_isolated_subagent_keeps_its_memory_in_the_project(git_repo: Path) -> None:
    folder = memory_folder("scout", "project", workspace=git_repo)
    child = ScriptedModel([write(folder / "MEMORY.md", "- learned in a worktree\n"), "done"])
    main = ScriptedModel([task("scout"), "main done"])
    runtime = Runtime(
        cwd=git_repo,
        agents=[agent("scout", memory="project", isolation="worktree")],
        model=main,
        agent_models={"scout": child},
        permission_mode="acceptEdits",
    )
    await runtime.run("go")

    (kept,) = results(child.requests[1])[-1:]
    assert not kept.is_error, kept.content
    assert str(folder) in child.requests[0].system
    assert (folder / "MEMORY.md").read_text() == "- learned in a worktree\n"
    worktrees = git_repo / ".git" / "subagents" / "worktrees"
    assert not worktrees.exists() or not any(worktrees.iterdir())  # nothing changed in it


def test_a_memory_md_linked_to_a_file_elsewhere_is_not_read(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY MATERIAL")
    folder = memory_folder("reviewer", "project", workspace=repo)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").symlink_to(secret)
    prompt = memory_prompt(agent("reviewer", memory="project"), workspace=repo)
    assert "PRIVATE KEY MATERIAL" not in prompt
    assert "outside your memory folder, so it was not read" in prompt


async def test_glob_grep_and_ls_search_a_memory_folder_outside_the_workspace(
    repo: Path, isolated_home: Path
) -> None:
    folder = memory_folder("scout", "user", workspace=repo)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("alpha beta\n")
    (folder / "notes.md").write_text("beta gamma\n")
    main = ScriptedModel(
        [
            tool_call_response("Glob", {"pattern": "*.md", "path": str(folder)}),
            tool_call_response("Grep", {"pattern": "gamma", "path": str(folder)}),
            tool_call_response("LS", {"path": str(folder)}),
            "ok",
        ]
    )
    runtime = Runtime(cwd=repo, agents=[agent("scout", memory="user")], model=main)
    await runtime.run("recall", agent="scout")
    globbed, grepped, listed = (results(main.requests[i])[-1] for i in (1, 2, 3))
    assert not globbed.is_error and str(folder / "notes.md") in globbed.content, globbed
    assert not grepped.is_error and str(folder / "notes.md") in grepped.content, grepped
    assert str(folder / "MEMORY.md") not in grepped.content
    assert not listed.is_error and "notes.md" in listed.content, listed
