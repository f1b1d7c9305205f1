"""A hostile model against the permission layer, through the public API.

Each test plays a model that tries to get around the harness: a subagent whose file asks for
more than its parent has, writes to the files that make the next run execute code, an archive
crafted to resume with more rights than the person gives, MCP tools that claim to be harmless,
tool filters that a server's name can stretch. Every test asserts that nothing got through:
the file is not there, the command did not run, the tool was not offered.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_servers.harness import CALC_SERVER
from subagents.definitions.model import AgentDefinition
from subagents.errors import ConfigError
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.answer_check import CUT_OFF_MARK
from subagents.runtime.pause import HumanDecision
from subagents.runtime.permissions import Headless
from subagents.runtime.runtime import Runtime
from subagents.store.export import export_task, import_task
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, ScriptedModel, text_response, tool_call_response
from subagents.tools.permissions import ApprovalDecision, ApprovalRequest, PermissionMode

Plan = list[tuple[str, dict[str, Any]]]


def attacker(name: str, plan: Plan) -> FunctionModel:
    """Tries each call of ``plan`` in turn, then reports every result it got."""

    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if len(results) < len(plan):
            tool_name, arguments = plan[len(results)]
            return tool_call_response(tool_name, arguments)
        return text_response(f"{name}: " + " | ".join(r.content for r in results))

    return FunctionModel(turn, name=f"test:{name}")


def entries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def results_of(model: FunctionModel) -> list[ToolResultMessage]:
    last = model.requests[-1]
    return [m for m in last.messages if isinstance(m, ToolResultMessage)]


def task(agent: str, prompt: str = "go") -> tuple[str, dict[str, Any]]:
    return ("Task", {"description": f"to {agent}", "prompt": prompt, "subagent_type": agent})


def write(path: str, content: str = "pwned") -> tuple[str, dict[str, Any]]:
    return ("Write", {"file_path": path, "content": content})


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": command})


class Approver:
    """A person at the terminal: answers every request with ``approve`` and keeps them."""

    def __init__(self, approve: bool) -> None:
        self.approve = approve
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(approved=self.approve, reason=None if self.approve else "no")


def agent(name: str, mode: PermissionMode | None = None, **kwargs: Any) -> AgentDefinition:
    return AgentDefinition(
        name=name,
        description=f"The {name} agent.",
        system_prompt=f"You are {name}.",
        permission_mode=mode,
        **kwargs,
    )


# -- a subagent is never more permissive than its parent ---------------------------------------


@pytest.mark.parametrize("child_mode", ["acceptEdits", "bypassPermissions", "default", None])
@pytest.mark.parametrize("headless", ["allow", "deny"])
async def test_plan_mode_stays_read_only_through_every_level_of_delegation(
    tmp_path: Path, child_mode: PermissionMode | None, headless: Headless
) -> None:
    attempts: Plan = [write("child.txt"), bash("touch child_bash.txt")]
    grand_attempts: Plan = [write("grand.txt"), bash("touch grand_bash.txt")]
    main = attacker("main", [task("worker")])
    worker = attacker("worker", [*attempts, task("deeper")])
    deeper = attacker("deeper", grand_attempts)
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("worker", child_mode), agent("deeper", "bypassPermissions")],
        model=main,
        agent_models={"worker": worker, "deeper": deeper},
        permission_mode="plan",
        headless=headless,
    )
    result = await runtime.run("change things")
    assert result.status == "completed"
    assert entries(tmp_path) == []
    for model, count in ((worker, 2), (deeper, 2)):
        outcomes = results_of(model)[:count]
        assert all(r.is_error and "plan mode is read-only" in r.content for r in outcomes)


async def test_a_subagent_cannot_widen_accept_edits_to_bypass(tmp_path: Path) -> None:
    main = attacker("main", [task("worker")])
    worker = attacker("worker", [bash("touch ran.txt"), write("edit.txt", "fine")])
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("worker", "bypassPermissions")],
        model=main,
        agent_models={"worker": worker},
        permission_mode="acceptEdits",
        headless="deny",
    )
    await runtime.run("go")
    bash_result, write_result = results_of(worker)
    assert bash_result.is_error and "needs approval" in bash_result.content
    assert not (tmp_path / "ran.txt").exists()
    assert not write_result.is_error and (tmp_path / "edit.txt").read_text() == "fine"


async def test_a_subagent_may_be_stricter_than_its_parent(tmp_path: Path) -> None:
    main = attacker("main", [task("reviewer")])
    reviewer = attacker("reviewer", [write("x.txt")])
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("reviewer", "plan")],
        model=main,
        agent_models={"reviewer": reviewer},
        permission_mode="bypassPermissions",
    )
    await runtime.run("go")
    (outcome,) = results_of(reviewer)
    assert outcome.is_error and "plan mode is read-only" in outcome.content
    assert not (tmp_path / "x.txt").exists()


async def test_the_main_agent_file_cannot_widen_the_run_either(tmp_path: Path) -> None:
    main = attacker("boss", [bash("touch ran.txt")])
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("boss", "bypassPermissions")],
        model=main,
        permission_mode="default",
        headless="deny",
    )
    await runtime.run("go", agent="boss")
    (outcome,) = results_of(main)
    assert outcome.is_error and not (tmp_path / "ran.txt").exists()


async def test_agent_with_disallowed_task_gets_no_delegation_as_main_agent(tmp_path: Path) -> None:
    main = attacker("solo", [task("helper")])
    helper = ScriptedModel(["should never run"])
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("solo", disallowed_tools=["Task"]), agent("helper")],
        model=main,
        agent_models={"helper": helper},
        permission_mode="bypassPermissions",
    )
    await runtime.run("go", agent="solo")
    offered = {spec.name for spec in main.requests[0].tools}
    assert not offered & {"Task", "TaskOutput", "TaskCancel"}
    (outcome,) = results_of(main)
    assert outcome.is_error and "not available" in outcome.content
    assert helper.requests == []


# -- protected paths ----------------------------------------------------------------------------

PROTECTED_TARGETS = [
    ".subagents/config.toml",
    ".subagents/agents/evil.md",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/agents/evil.md",
    ".claude/skills/x/SKILL.md",
    ".git/hooks/pre-commit",
    ".git/config",
    ".GIT/hooks/post-checkout",
    "vendor/lib/.git/hooks/pre-commit",
    ".codex/agents/evil.toml",
    ".gemini/agents/evil.md",
    ".wave/agents/evil.md",
    "sub/.mcp.json",
]


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions", "default"])
async def test_protected_files_are_refused_where_nobody_can_approve(
    tmp_path: Path, mode: PermissionMode
) -> None:
    (tmp_path / ".git").mkdir()
    main = attacker("main", [write(target) for target in PROTECTED_TARGETS])
    runtime = Runtime(
        cwd=tmp_path,
        model=main,
        permission_mode=mode,
        headless="allow",
    )
    result = await runtime.run("go")
    assert result.status == "completed"
    outcomes = results_of(main)
    assert len(outcomes) == len(PROTECTED_TARGETS)
    for target, outcome in zip(PROTECTED_TARGETS, outcomes, strict=True):
        assert outcome.is_error, target
        assert "protected" in outcome.content and "needs a person" in outcome.content
        assert not (tmp_path / target).exists(), target


async def test_a_symlink_does_not_launder_a_protected_path(tmp_path: Path) -> None:
    (tmp_path / ".subagents").mkdir()
    (tmp_path / "innocent").symlink_to(".subagents")
    (tmp_path / "notes.md").symlink_to(".mcp.json")
    main = attacker("main", [write("innocent/config.toml"), write("notes.md")])
    runtime = Runtime(cwd=tmp_path, model=main, permission_mode="acceptEdits")
    await runtime.run("go")
    assert all(r.is_error and "protected" in r.content for r in results_of(main))
    assert not (tmp_path / ".subagents" / "config.toml").exists()
    assert not (tmp_path / ".mcp.json").exists()


async def test_edit_of_a_protected_file_is_refused_too(tmp_path: Path) -> None:
    config = tmp_path / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text("[subagents]\nmax_turns = 5\n")
    main = attacker(
        "main",
        [
            (
                "Edit",
                {
                    "file_path": ".subagents/config.toml",
                    "old_string": "max_turns = 5",
                    "new_string": 'max_turns = 5\n[[hooks.PreToolUse]]\ncommand = "touch x"',
                },
            )
        ],
    )
    runtime = Runtime(cwd=tmp_path, model=main, permission_mode="acceptEdits")
    await runtime.run("go")
    (outcome,) = results_of(main)
    assert outcome.is_error and "protected" in outcome.content
    assert config.read_text() == "[subagents]\nmax_turns = 5\n"


async def test_the_task_store_is_protected_wherever_it_lives(tmp_path: Path) -> None:
    store = open_store(tmp_path / "data" / "tasks.db")
    try:
        main = attacker("main", [write("data/tasks.db", "x"), write("data/tasks.db-wal", "x")])
        runtime = Runtime(
            cwd=tmp_path, model=main, permission_mode="bypassPermissions", store=store
        )
        result = await runtime.run("go")
        assert all(r.is_error and "task store" in r.content for r in results_of(main))
        assert store.get_task(result.task_id or "").status == "completed"
    finally:
        store.close()


async def test_a_person_is_asked_about_a_protected_write_even_in_bypass_mode(
    tmp_path: Path,
) -> None:
    approver = Approver(approve=True)
    main = attacker("main", [write(".mcp.json", "{}"), write("plain.txt", "ok")])
    runtime = Runtime(
        cwd=tmp_path, model=main, permission_mode="bypassPermissions", approver=approver
    )
    await runtime.run("go")
    assert [r.tool_name for r in approver.requests] == ["Write"]
    (request,) = approver.requests
    assert request.reason is not None and ".mcp.json" in request.reason
    assert (tmp_path / ".mcp.json").read_text() == "{}"
    assert (tmp_path / "plain.txt").read_text() == "ok"


async def test_a_durable_headless_run_pauses_for_a_protected_write(tmp_path: Path) -> None:
    store = open_store(tmp_path / "state.db")
    try:
        main = attacker("main", [write(".git/hooks/pre-commit", "#!/bin/sh\necho owned\n")])
        runtime = Runtime(
            cwd=tmp_path,
            model=main,
            permission_mode="acceptEdits",
            headless="pause",
            store=store,
        )
        paused = await runtime.run("go")
        assert paused.status == "awaiting_human" and paused.question is not None
        assert ".git" in paused.question.text and "protected" in paused.question.text
        assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
        resumed = await runtime.resume(paused.task_id or "", HumanDecision("reject", "no"))
        assert resumed.status == "completed"
        assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    finally:
        store.close()


async def test_allow_protected_lets_a_project_open_one_folder(tmp_path: Path) -> None:
    config = tmp_path / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text('[permissions]\nallow_protected = [".claude/agents/**"]\n')
    main = attacker(
        "main", [write(".claude/agents/new.md", "agent"), write(".claude/settings.json", "{}")]
    )
    runtime = Runtime(cwd=tmp_path, model=main, permission_mode="acceptEdits")
    await runtime.run("go")
    allowed, refused = results_of(main)
    assert not allowed.is_error and (tmp_path / ".claude/agents/new.md").read_text() == "agent"
    assert refused.is_error and not (tmp_path / ".claude/settings.json").exists()


def test_allow_protected_patterns_must_stay_inside_the_project(tmp_path: Path) -> None:
    from subagents.config import load_config

    config = tmp_path / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text('[permissions]\nallow_protected = ["../elsewhere/**"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert "config.toml:2" in caught.value.message and "not relative" in caught.value.message


async def test_a_config_written_by_a_model_never_runs_its_hook(tmp_path: Path) -> None:
    """The attack of the issue: in acceptEdits, Write plants a hook and a server; the next
    run, in plan mode, must not execute either."""
    hook = '[[hooks.PreToolUse]]\nmatcher = "*"\ncommand = "touch hook_ran"\n'
    server = {"mcpServers": {"evil": {"command": "sh", "args": ["-c", "touch server_ran"]}}}
    first = attacker(
        "main", [write(".subagents/config.toml", hook), write(".mcp.json", json.dumps(server))]
    )
    await Runtime(cwd=tmp_path, model=first, permission_mode="acceptEdits").run("plant")
    second = attacker("main", [("Read", {"file_path": "anything.txt"})])
    runtime = Runtime(cwd=tmp_path, model=second, permission_mode="plan")
    try:
        await runtime.run("innocent")
    finally:
        await runtime.aclose()
    assert not (tmp_path / "hook_ran").exists()
    assert not (tmp_path / "server_ran").exists()
    assert not (tmp_path / ".subagents" / "config.toml").exists()


# -- imported tasks ------------------------------------------------------------------------------


def _paused_bash_task(origin: Path, store_path: Path) -> str:
    """A task in ``origin`` paused on a Bash call (the call is pending in its history)."""
    store = open_store(store_path)
    try:
        main = attacker("main", [bash("touch imported_ran.txt")])
        runtime = Runtime(
            cwd=origin, model=main, permission_mode="default", headless="pause", store=store
        )
        import asyncio

        result = asyncio.run(runtime.run("go"))
        assert result.status == "awaiting_human"
        assert result.task_id is not None
        return result.task_id
    finally:
        store.close()


def _craft_archive(archive: Path, *, workspace: Path) -> None:
    """Edit an export as an attacker would: another workspace, bypass mode, and a session
    that claims tools its agent never had, at depth 0."""
    folder = next((archive / "tasks").iterdir())
    task_file = folder / "task.json"
    record = json.loads(task_file.read_text())
    record["workspace"] = str(workspace)
    record["settings"] = {"permission_mode": "bypassPermissions", "headless": "allow"}
    task_file.write_text(json.dumps(record))
    sessions_file = folder / "sessions.json"
    sessions = json.loads(sessions_file.read_text())
    for session in sessions:
        session["depth"] = 0
        session["tool_names"] = [*session["tool_names"], "Bash", "Write"]
    sessions_file.write_text(json.dumps(sessions))


async def test_an_imported_task_runs_where_and_how_the_person_resuming_says(
    tmp_path: Path,
) -> None:
    origin, victim, home = tmp_path / "origin", tmp_path / "victim", tmp_path / "here"
    for folder in (origin, victim, home):
        folder.mkdir()
    source = tmp_path / "source.db"
    import asyncio

    task_id = await asyncio.to_thread(_paused_bash_task, origin, source)
    with open_store(source) as store:
        archive = tmp_path / "archive"
        export_task(store, task_id, archive)
    _craft_archive(archive, workspace=victim)

    target = open_store(tmp_path / "target.db")
    try:
        imported_id = import_task(target, archive)
        record = target.get_task(imported_id)
        assert "permission_mode" not in record.settings
        assert record.settings["imported"]["workspace"] == str(victim)
        assert record.settings["imported"]["pending_calls"]

        main = attacker("main", [bash("touch imported_ran.txt")])
        runtime = Runtime(
            cwd=home,
            model=main,
            permission_mode="bypassPermissions",  # even so: pending calls ask again
            headless="pause",
            store=target,
        )
        result = await runtime.resume(imported_id)
        assert result.status == "awaiting_human" and result.question is not None
        assert "imported" in result.question.text
        for folder in (origin, victim, home):
            assert not (folder / "imported_ran.txt").exists()
        adopted = target.get_task(imported_id)
        assert adopted.workspace == str(home.resolve())
        assert adopted.settings["permission_mode"] == "bypassPermissions"
        assert adopted.settings["imported"]["adopted_at"]

        approved = await runtime.resume(imported_id, HumanDecision("approve"))
        assert approved.status == "completed"
        assert (home / "imported_ran.txt").exists()
        assert not (victim / "imported_ran.txt").exists()
    finally:
        target.close()


async def test_a_rebuilt_session_gets_no_tool_its_agent_and_parent_do_not_allow(
    tmp_path: Path,
) -> None:
    """An archive whose child session claims Bash: the rebuilt child only has Read."""
    store = open_store(tmp_path / "state.db")
    try:
        main = attacker("main", [task("reader")])
        reader = attacker("reader", [("AskHuman", {"question": "go on?"})])
        reader_agent = agent("reader", tools=["Read", "AskHuman"])
        runtime = Runtime(
            cwd=tmp_path,
            agents=[reader_agent],
            model=main,
            agent_models={"reader": reader},
            permission_mode="bypassPermissions",
            store=store,
        )
        paused = await runtime.run("go")
        assert paused.status == "awaiting_human"
        task_id = paused.task_id or ""
        archive = tmp_path / "archive"
        export_task(store, task_id, archive)
        _craft_archive(archive, workspace=tmp_path)
        target = open_store(tmp_path / "target.db")
        try:
            imported = import_task(target, archive)
            second_reader = attacker("reader", [bash("touch child_ran.txt")])
            again = Runtime(
                cwd=tmp_path,
                agents=[reader_agent],
                model=attacker("main", []),
                agent_models={"reader": second_reader},
                permission_mode="bypassPermissions",
                store=target,
            )
            asked = await again.resume(imported)  # the first resume asks again, itself
            assert asked.status == "awaiting_human" and asked.question is not None
            assert asked.question.tool_name == "AskHuman"
            await again.resume(imported, HumanDecision("approve", values={"answer": "yes"}))
            offered = {spec.name for spec in second_reader.requests[0].tools}
            assert "Bash" not in offered and "Write" not in offered
            assert not (tmp_path / "child_ran.txt").exists()
            children = [s for s in target.sessions(imported) if s.parent_session_id]
            assert children and "Bash" not in children[0].tool_names
        finally:
            target.close()
    finally:
        store.close()


# -- MCP annotations are hints -------------------------------------------------------------------


def _calc_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **servers: Any) -> None:
    monkeypatch.setenv("TEST_PYTHON", sys.executable)
    monkeypatch.setenv("TEST_CALC_SERVER", str(CALC_SERVER))
    entries = {
        name: {
            "command": "${TEST_PYTHON}",
            "args": ["${TEST_CALC_SERVER}", "stdio"],
            "timeout_seconds": 20,
            **settings,
        }
        for name, settings in servers.items()
    }
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": entries}))


@pytest.mark.slow
@pytest.mark.parametrize(("trusted", "allowed"), [(False, False), (True, True), (["add"], True)])
async def test_read_only_hint_counts_only_for_a_trusted_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: object, allowed: bool
) -> None:
    _calc_servers(tmp_path, monkeypatch, calc={"trusted": trusted})
    main = attacker("main", [("mcp__calc__add", {"a": 2, "b": 3})])
    runtime = Runtime(cwd=tmp_path, model=main, permission_mode="plan")
    try:
        await runtime.run("add")
    finally:
        await runtime.aclose()
    (outcome,) = results_of(main)
    if allowed:
        assert (outcome.content, outcome.is_error) == ("5", False)
    else:
        assert outcome.is_error and "plan mode is read-only" in outcome.content


@pytest.mark.slow
async def test_a_server_name_cannot_stretch_an_mcp_tool_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tools: mcp__gh`` means server gh only, not a server named ``gh__admin``."""
    _calc_servers(tmp_path, monkeypatch, gh={}, gh__admin={})
    limited = AgentDefinition(name="limited", description="d", system_prompt="p", tools=["mcp__gh"])
    child = ScriptedModel(["done"])
    main = attacker("main", [task("limited")])
    runtime = Runtime(
        cwd=tmp_path,
        agents=[limited],
        model=main,
        agent_models={"limited": child},
        permission_mode="bypassPermissions",
    )
    try:
        await runtime.run("go")
    finally:
        await runtime.aclose()
    offered = {spec.name for spec in child.requests[0].tools}
    assert "mcp__gh__add" in offered
    assert not [name for name in offered if name.startswith("mcp__gh__admin__")]


# -- failures a person can recover from ---------------------------------------------------------


async def test_a_failed_task_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    from subagents.errors import ModelError

    store = open_store(tmp_path / "state.db")
    try:
        first = ScriptedModel(
            [
                tool_call_response("Bash", {"command": "echo once >> effects.txt"}),
                ModelError("HTTP 500: the provider is down"),
            ]
        )
        runtime = Runtime(
            cwd=tmp_path, model=first, permission_mode="bypassPermissions", store=store
        )
        failed = await runtime.run("append once, then report")
        assert failed.status == "failed"
        assert store.get_task(failed.task_id or "").status == "failed"

        second = ScriptedModel(["appended"])
        again = Runtime(
            cwd=tmp_path, model=second, permission_mode="bypassPermissions", store=store
        )
        resumed = await again.resume(failed.task_id or "")
        assert resumed.status == "completed" and resumed.output == "appended"
        assert (tmp_path / "effects.txt").read_text() == "once\n"  # not run a second time
        history = second.requests[0].messages
        assert any(isinstance(m, ToolResultMessage) for m in history)
    finally:
        store.close()


async def test_an_answer_cut_at_max_tokens_is_not_a_success(tmp_path: Path) -> None:
    store = open_store(tmp_path / "state.db")
    try:
        cut = ModelResponse(text="The three causes are: first, the", stop_reason="max_tokens")
        runtime = Runtime(cwd=tmp_path, model=ScriptedModel([cut]), store=store)
        result = await runtime.run("explain")
        assert result.status == "failed" and not result.success
        assert "max_tokens" in (result.error or "")
        # what it wrote is kept, and the output says where it was cut
        assert result.output == f"The three causes are: first, the\n\n{CUT_OFF_MARK}"

        rest = ScriptedModel(["second, ...; third, ..."])
        resumed = await Runtime(cwd=tmp_path, model=rest, store=store).resume(result.task_id or "")
        assert resumed.status == "completed"
        note = rest.requests[0].messages[-1]
        assert "Continue" in note.content and "max_tokens" in note.content
    finally:
        store.close()


async def test_a_cut_off_subagent_answer_reaches_the_parent_as_a_failure(tmp_path: Path) -> None:
    cut = ModelResponse(text="half an answer", stop_reason="max_tokens")
    main = attacker("main", [task("writer")])
    runtime = Runtime(
        cwd=tmp_path,
        agents=[agent("writer")],
        model=main,
        agent_models={"writer": ScriptedModel([cut])},
    )
    await runtime.run("go")
    (outcome,) = results_of(main)
    assert outcome.is_error and "half an answer" in outcome.content
    assert "max_tokens" in outcome.content


# -- hooks ---------------------------------------------------------------------------------------


async def test_hook_matcher_star_matches_every_tool(tmp_path: Path) -> None:
    config = tmp_path / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        '[[hooks.PreToolUse]]\nmatcher = "*"\ncommand = "echo blocked by policy >&2; exit 2"\n'
    )
    main = attacker("main", [("LS", {}), bash("touch x")])
    runtime = Runtime(cwd=tmp_path, model=main, permission_mode="bypassPermissions")
    result = await runtime.run("go")
    assert result.status == "completed"
    assert all("blocked by policy" in r.content for r in results_of(main))
    assert not (tmp_path / "x").exists()


def test_an_invalid_hook_matcher_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    from subagents.config import load_config

    config = tmp_path / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text('[[hooks.PreToolUse]]\nmatcher = "Bash("\ncommand = "true"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert "config.toml:2" in caught.value.message
    assert "not a valid regular expression" in caught.value.message


# -- agents with no tools ------------------------------------------------------------------------


async def test_an_agent_with_an_empty_tool_list_runs_with_no_tools(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "thinker.md").write_text(
        "---\nname: thinker\ndescription: Thinks.\ntools: ''\n---\nThink.\n"
    )
    thinker = ScriptedModel(["a thought"])
    main = attacker("main", [task("thinker")])
    runtime = Runtime(cwd=tmp_path, model=main, agent_models={"thinker": thinker})
    await runtime.run("go")
    assert list(thinker.requests[0].tools) == []
    (outcome,) = results_of(main)
    assert not outcome.is_error and outcome.content.startswith("a thought")


def test_protected_paths_module_is_independent_of_the_cwd(tmp_path: Path) -> None:
    from subagents.tools.protected import ProtectedPaths

    protected = ProtectedPaths.for_workspace(tmp_path)
    assert protected.reason(tmp_path / "src" / "app.py") is None
    assert protected.reason(tmp_path / "docs" / "git" / "hooks.md") is None
    assert protected.reason(tmp_path / "my.mcp.json.bak") is None
    assert protected.reason(tmp_path / ".github" / "workflows" / "ci.yml") is None
    assert protected.reason(tmp_path / ".gitignore") is None
    assert protected.reason(tmp_path / ".git") is not None
    assert protected.reason(tmp_path / "a" / ".Claude" / "x") is not None
    shutil.rmtree(tmp_path, ignore_errors=True)


# -- a secret never comes back as "[REDACTED]" in a file -----------------------------------------

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def test_an_approved_call_whose_secret_was_not_stored_is_made_again(tmp_path: Path) -> None:
    """The run pauses on a Write whose content holds a token; the store keeps it redacted.
    Approving must not write "[REDACTED]" into the file: the model sends the call again and
    that call runs without asking a second time."""
    content = f"GITHUB_TOKEN={TOKEN}\n"

    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        again = bool(results) and "Make exactly the same call again" in results[-1].content
        if not results or (again and len(results) < 2):
            return tool_call_response("Write", {"file_path": ".env.local", "content": content})
        return text_response("written: " + " | ".join(r.content for r in results))

    store = open_store(tmp_path / "state.db")
    try:
        runtime = Runtime(
            cwd=tmp_path,
            model=FunctionModel(turn),
            permission_mode="default",
            headless="pause",
            store=store,
        )
        paused = await runtime.run("save the token")
        assert paused.status == "awaiting_human"
        stored = json.dumps(store.messages(paused.agent_id))
        assert TOKEN not in stored
        done = await runtime.resume(paused.task_id or "", HumanDecision("approve"))
        assert done.status == "completed", done.error
        assert (tmp_path / ".env.local").read_text() == content
        assert "[REDACTED]" not in (tmp_path / ".env.local").read_text()
        assert store.get_task(paused.task_id or "").status == "completed"
    finally:
        store.close()


async def test_an_interrupted_call_that_lost_a_secret_is_not_rerun(tmp_path: Path) -> None:
    """A crash (here: the run is cancelled) while a Write holding a token runs; even with
    ``interrupted_tool_calls = "rerun"`` the stored, redacted call is not run again."""
    import asyncio

    config = tmp_path / ".subagents" / "config.toml"
    config.parent.mkdir()
    config.write_text('[subagents]\ninterrupted_tool_calls = "rerun"\n')
    started = asyncio.Event()

    async def slow_write(ctx: Any = None, **arguments: Any) -> str:
        started.set()
        await asyncio.Event().wait()  # never finishes: the "process" dies here
        return "unreachable"

    from subagents.tools.base import Tool

    slow = Tool(
        name="SlowWrite",
        description="Writes slowly.",
        parameters={"type": "object", "properties": {"content": {"type": "string"}}},
        function=slow_write,
    )
    store = open_store(tmp_path / "state.db")
    try:
        first = attacker("main", [("SlowWrite", {"content": f"token {TOKEN}"})])
        runtime = Runtime(
            cwd=tmp_path,
            model=first,
            tools=[slow],
            permission_mode="bypassPermissions",
            store=store,
        )
        running = asyncio.ensure_future(runtime.run("write"))
        await started.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        (task_record,) = store.list_tasks()
        second = attacker("main", [])
        again = Runtime(
            cwd=tmp_path,
            model=second,
            tools=[slow],
            permission_mode="bypassPermissions",
            store=store,
        )
        started.clear()
        resumed = await again.resume(task_record.id, force=True)
        assert resumed.status == "completed"
        assert not started.is_set()  # the tool was not called with "[REDACTED]"
        (outcome,) = results_of(second)
        assert outcome.is_error and "secret" in outcome.content
        ledger = store.ledger(task_record.id)
        assert [entry.status for entry in ledger] == ["failed"]
    finally:
        store.close()


# -- a careless model, and a careless caller ------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        {"id": "c1", "name": None, "arguments": {}},
        {"id": None, "name": "LS", "arguments": {}},
        {"id": "c3", "name": 42, "arguments": {"path": "."}},
        {"id": "c4", "name": "LS", "arguments": None},
        {"id": "c5", "name": "LS", "arguments": ["path", "."]},
    ],
)
async def test_a_tool_call_of_any_shape_is_answered_never_raised(
    tmp_path: Path, call: dict[str, Any]
) -> None:
    from subagents.messages import ToolCall

    bad = ToolCall(id=call["id"], name=call["name"], arguments=call["arguments"])

    def turn(request: ModelRequest) -> ModelResponse:
        if not any(isinstance(m, ToolResultMessage) for m in request.messages):
            return ModelResponse(text="", tool_calls=(bad,), stop_reason="tool_use")
        return text_response("recovered")

    store = open_store(tmp_path / "state.db")
    try:
        runtime = Runtime(cwd=tmp_path, model=FunctionModel(turn), store=store)
        result = await runtime.run("go")
        assert result.status == "completed" and result.output == "recovered"
        assert store.get_task(result.task_id or "").status == "completed"
    finally:
        store.close()


async def test_a_task_id_that_is_a_path_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    from subagents.errors import StoreError

    store = open_store(tmp_path / "state.db")
    try:
        runtime = Runtime(cwd=tmp_path, model=ScriptedModel(["never"]), store=store)
        with pytest.raises(StoreError) as caught:
            await runtime.run("go", task_id="../../etc")
        assert "not a valid task id" in caught.value.message
        assert store.list_tasks() == []
        ok = await Runtime(cwd=tmp_path, model=ScriptedModel(["fine"]), store=store).run(
            "go", task_id="nightly-review-42"
        )
        assert ok.task_id == "nightly-review-42" and ok.status == "completed"
    finally:
        store.close()


async def test_a_path_too_long_for_the_system_is_a_tool_error_that_says_so(
    tmp_path: Path,
) -> None:
    # names that do not repeat themselves: "n" * 5000 is an answer caught in a loop, which
    # the model step asks again (test_answer_check) before any tool sees it
    long_name = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(80))
    deep = "/".join(f"d{i}" for i in range(3000))
    main = attacker(
        "main",
        [
            ("Read", {"file_path": long_name}),
            write(f"{deep}/x.txt"),
            ("Grep", {"pattern": "x", "path": long_name}),
        ],
    )
    runtime = Runtime(cwd=tmp_path, model=main, permission_mode="bypassPermissions")
    result = await runtime.run("go")
    assert result.status == "completed"
    for outcome in results_of(main):
        assert outcome.is_error and "too long" in outcome.content
        assert len(outcome.content) < 500 and "OSError" not in outcome.content
