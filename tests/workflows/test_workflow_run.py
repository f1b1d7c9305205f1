"""Workflows run on the durable runtime: the example workflows end to end on scripted models,
pauses at human nodes and checkpoints, decisions in the checkpoint and the trace, the ledger
rules for a side-effecting tool node, and a run without a store."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paths import REPO
from scenarios import workflow_agents as agents
from subagents.errors import WorkflowValidationError
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel
from subagents.tools.decorator import tool
from subagents.workflows.files import load_workflow_file
from subagents.workflows.graph import (
    AgentNode,
    ConditionNode,
    Edge,
    HumanNode,
    JoinNode,
    ToolNode,
    Workflow,
)
from subagents.workflows.runner import WorkflowOutcome, workflow_session_id

EXAMPLE = REPO / "examples" / "workflow-project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(EXAMPLE, copy)
    return copy


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with open_store(tmp_path / "state.db") as opened:
        yield opened


def load(project: Path, name: str) -> Workflow:
    path = project / ".subagents" / "workflows" / f"{name}.yaml"
    return load_workflow_file(path)


def runtime_for(project: Path, store: SQLiteStore | None, **kwargs: Any) -> Runtime:
    kwargs.setdefault("agent_models", agents.models())
    kwargs.setdefault("permission_mode", "bypassPermissions")
    return Runtime(cwd=project, store=store, **kwargs)


def outcome(result: Any) -> WorkflowOutcome:
    assert isinstance(result.workflow, WorkflowOutcome)
    return result.workflow


def path_of(result: Any) -> list[str]:
    return [visit.node for visit in outcome(result).path]


# -- review -> fix -> verify, with a checkpoint before the fix ----------------------------------


async def test_review_fix_verify_pauses_before_the_fix_and_resumes_to_a_passing_test(
    project: Path, store: SQLiteStore
) -> None:
    cart = project / "src" / "shop" / "cart.py"
    first = await runtime_for(project, store).run_workflow(
        load(project, "review-fix-verify"), "src/shop/cart.py"
    )
    assert first.status == "awaiting_human", first.error
    assert first.question is not None and first.question.kind == "workflow"
    assert first.question.tool_call_id == "fix#0:confirm"
    assert "fix" in first.question.text
    assert path_of(first) == ["review"]
    assert agents.BUG in cart.read_text()  # nothing fixed before the person agreed
    assert first.task_id is not None
    task = store.get_task(first.task_id)
    assert task.status == "awaiting_human"
    paused = store.latest_checkpoint(task.id)
    assert paused is not None and paused.awaiting_human and paused.position == "awaiting_human"

    # a fresh runtime, as after the process exited
    resumed = await runtime_for(project, store).resume(task.id, HumanDecision("approve"))
    assert resumed.status == "completed", resumed.error
    assert path_of(resumed) == ["review", "fix", "verify"]
    assert agents.FIX in cart.read_text()
    state = outcome(resumed).state
    assert state.extra["verdict"].endswith("PASS")
    assert "total_cents ignores quantity" in state.extra["review"]
    assert store.get_task(task.id).status == "completed"
    # the decision is in the checkpoint after the pause, and in the trace
    checkpoints = [c for c in store.checkpoints(task.id) if c.session_id == paused.session_id]
    positions = [c.position for c in checkpoints]
    assert positions.index("awaiting_human") < len(positions) - 1
    after = checkpoints[positions.index("awaiting_human") + 1]
    (decision,) = after.state["decisions"]
    assert decision["action"] == "approve"
    assert decision["wait_point"]["key"] == "fix#0:confirm"
    traces = store.traces(task.id)
    waits = [t for t in traces if t.kind == "wait"]
    assert [t.step_name for t in waits] == ["awaiting_human", "decision"]
    steps = [t.step_name for t in traces if t.kind == "step" and t.step_name.startswith("node ")]
    assert steps == ["node review", "node fix", "node verify"]
    # every agent node ran in its own session of the task
    names = sorted(r.agent_name for r in store.sessions(task.id))
    assert names == ["fixer", "reviewer", "tester"]


async def test_rejecting_the_checkpoint_stops_the_workflow_before_the_fix(
    project: Path, store: SQLiteStore
) -> None:
    cart = project / "src" / "shop" / "cart.py"
    first = await runtime_for(project, store).run_workflow(
        load(project, "review-fix-verify"), "src/shop/cart.py"
    )
    assert first.task_id is not None
    rejected = await runtime_for(project, store).resume(
        first.task_id, HumanDecision("reject", reason="I will fix it myself")
    )
    assert rejected.status == "cancelled"
    assert "I will fix it myself" in (rejected.error or "")
    assert path_of(rejected) == ["review"]
    assert agents.BUG in cart.read_text()
    assert store.get_task(first.task_id).status == "cancelled"


# -- reflection ---------------------------------------------------------------------------------


async def test_reflection_alternates_until_the_critic_approves(
    project: Path, store: SQLiteStore
) -> None:
    result = await runtime_for(project, store).run_workflow(
        load(project, "draft-critique"), "src/shop/cart.py"
    )
    assert result.status == "completed", result.error
    assert path_of(result) == ["draft", "critique", "approved"] * 2
    state = outcome(result).state
    assert state.extra["critique"] == "APPROVED"
    assert "Example:" in state.extra["draft"]
    assert state.routing_key == "true"
    # messages are appended, never replaced: the input, then each agent's answer in order
    assert [m.name for m in state.messages] == [None, "writer", "critic", "writer", "critic"]
    assert all(m.timestamp for m in state.messages)


async def test_a_critic_that_never_approves_stops_at_max_iterations(
    project: Path, store: SQLiteStore
) -> None:
    models = agents.models()
    models["critic"] = FunctionModel(agents.never_satisfied, name="scripted:critic")
    result = await runtime_for(project, store, agent_models=models).run_workflow(
        load(project, "draft-critique"), "src/shop/cart.py"
    )
    assert result.status == "max_turns"
    assert "max_iterations (9)" in (result.error or "")
    assert outcome(result).iterations == 9
    assert result.task_id is not None
    assert store.get_task(result.task_id).status == "failed"


# -- fan-out and join ---------------------------------------------------------------------------


async def test_three_reviewers_run_in_parallel_and_the_join_merges_in_list_order(
    project: Path, store: SQLiteStore
) -> None:
    style_done = asyncio.Event()
    security_done = asyncio.Event()

    async def after_style() -> None:  # finishes last although it is first in the list
        await style_done.wait()
        await security_done.wait()

    async def after_style_only() -> None:
        await style_done.wait()

    models = agents.models()
    models["reviewer"] = agents.reviewer_named("correctness", after_style)
    models["security-reviewer"] = agents.reviewer_named("security", after_style_only)
    finished: list[str] = []

    def mark(event: Any) -> None:
        from subagents.runtime.events import SessionFinished

        if isinstance(event, SessionFinished):
            finished.append(event.result.agent_type)
            if event.result.agent_type == "style-reviewer":
                style_done.set()
            if event.result.agent_type == "security-reviewer":
                security_done.set()

    runtime = runtime_for(project, store, agent_models=models)
    runtime.events.subscribe(mark)
    result = await runtime.run_workflow(load(project, "parallel-review"), "")
    assert result.status == "completed", result.error
    assert finished[:3] == ["style-reviewer", "security-reviewer", "reviewer"]
    nodes = path_of(result)
    assert nodes[0] == "files" and nodes[-2:] == ["collect", "merge"]
    assert sorted(nodes[1:4]) == ["correctness", "security", "style"]
    state = outcome(result).state
    answers = [m.content.split(":")[0] for m in state.messages if m.role == "assistant"]
    assert answers[:3] == ["correctness", "security", "style"]  # list order, not finish order
    assert state.extra["report"] == "merged: correctness, security, style"
    assert "src/shop/cart.py" in state.extra["files"]  # the Glob tool node really ran


# -- human nodes, conditions in code ------------------------------------------------------------


def approval_workflow() -> Workflow:
    return Workflow(
        name="approve-release",
        entry_point="ask",
        nodes={
            "ask": HumanNode(question="Release {{ input }}?"),
            "release": AgentNode(agent="writer", prompt="Announce release {{ version }}"),
            "big": ConditionNode(expression=lambda state: state["version"] >= 2),
            "join": JoinNode(),
        },
        edges=[
            Edge.model_validate({"from": "ask", "to": {"approve": "big", "modify": "big"}}),
            Edge.model_validate({"from": "big", "to": {"true": "release", "false": "end"}}),
        ],
    )


async def test_a_human_node_routes_on_the_decision_and_applies_its_state_updates(
    project: Path, store: SQLiteStore
) -> None:
    workflow = approval_workflow()
    del workflow.nodes["join"]
    first = await runtime_for(project, store).run_workflow(workflow, "shop 2.0")
    assert first.status == "awaiting_human"
    assert first.question is not None and first.question.text == "Release shop 2.0?"
    assert first.task_id is not None
    decision = HumanDecision("approve", reason="ship it", values={"version": "2"})
    done = await runtime_for(project, store).resume(first.task_id, decision, workflow=workflow)
    assert done.status == "completed", done.error
    state = outcome(done).state
    assert state.next_action == "approve"
    assert state.extra["version"] == 2  # --set values read as JSON when they are
    assert path_of(done) == ["ask", "big", "release"]
    assert [m.role for m in state.messages] == ["user", "human", "assistant"]
    assert state.messages[1].content == "ship it"


async def test_a_code_built_workflow_cannot_be_resumed_without_its_code(
    project: Path, store: SQLiteStore
) -> None:
    workflow = approval_workflow()
    del workflow.nodes["join"]
    first = await runtime_for(project, store).run_workflow(workflow, "shop 1.0")
    assert first.task_id is not None
    from subagents.errors import WorkflowError

    with pytest.raises(WorkflowError, match="built in code"):
        await runtime_for(project, store).resume(first.task_id, HumanDecision("approve"))


# -- tool nodes: the ledger and permissions -----------------------------------------------------


class Crash(BaseException):
    """The process dying in the middle of a tool (nothing catches it)."""


async def test_a_side_effecting_tool_node_cut_off_by_a_crash_asks_before_running_again(
    project: Path, store: SQLiteStore
) -> None:
    runs: list[str] = []
    crash = True

    @tool
    def deploy(target: str) -> str:
        """Deploy (a side effect)."""
        runs.append(target)
        if crash:
            raise Crash
        return f"deployed {target}"

    workflow = Workflow(
        name="deploy",
        entry_point="deploy",
        nodes={"deploy": ToolNode(tool="deploy", arguments={"target": "{{ input }}"})},
    )
    runtime = runtime_for(project, store, tools=[deploy])
    with pytest.raises(Crash):
        await runtime.run_workflow(workflow, "prod", task_id="deploy-task")
    store.release_task("deploy-task", runtime.owner)  # the process is gone
    crash = False
    asked = await runtime_for(project, store, tools=[deploy]).resume("deploy-task")
    assert asked.status == "awaiting_human"
    assert asked.question is not None and asked.question.kind == "crash_recovery"
    assert runs == ["prod"]  # not run again on its own
    done = await runtime_for(project, store, tools=[deploy]).resume(
        "deploy-task", HumanDecision("approve")
    )
    assert done.status == "completed", done.error
    assert runs == ["prod", "prod"]
    assert outcome(done).state.messages[-1].content == "deployed prod"
    (entry,) = store.ledger("deploy-task", workflow_session_id("deploy-task"))
    assert entry.status == "completed"


@pytest.mark.parametrize("policy", ["rerun", "fail"])
async def test_a_tool_node_cut_off_by_a_crash_follows_interrupted_tool_calls_as_a_session_does(
    project: Path, store: SQLiteStore, policy: str
) -> None:
    """``[subagents] interrupted_tool_calls`` rules a workflow's tool node as it rules a
    session's call: 'rerun' runs it again without asking, 'fail' stops without running it."""
    from subagents.config import Config, SubagentsSettings

    runs: list[str] = []

    @tool
    def deploy(target: str) -> str:
        """Deploy (a side effect)."""
        runs.append(target)
        if len(runs) == 1:
            raise Crash
        return f"deployed {target}"

    workflow = Workflow(
        name="deploy",
        entry_point="deploy",
        nodes={"deploy": ToolNode(tool="deploy", arguments={"target": "{{ input }}"})},
    )
    config = Config(subagents=SubagentsSettings(interrupted_tool_calls=policy))
    crashed = runtime_for(project, store, tools=[deploy])
    with pytest.raises(Crash):
        await crashed.run_workflow(workflow, "prod", task_id="deploy-task")
    store.release_task("deploy-task", crashed.owner)
    resumed = await runtime_for(project, store, tools=[deploy], config=config).resume("deploy-task")
    (entry,) = store.ledger("deploy-task", workflow_session_id("deploy-task"))
    if policy == "rerun":
        assert resumed.status == "completed", resumed.error
        assert runs == ["prod", "prod"]
        assert entry.status == "completed"
    else:
        assert resumed.status == "failed"
        assert resumed.error is not None and "interrupted_tool_calls" in resumed.error
        assert runs == ["prod"]
        assert entry.status == "failed"


async def test_a_tool_node_that_needs_approval_pauses_at_the_node(
    project: Path, store: SQLiteStore
) -> None:
    workflow = Workflow(
        name="touch",
        entry_point="write",
        nodes={
            "write": ToolNode(
                tool="Write", arguments={"file_path": "NOTES.md", "content": "{{ input }}"}
            )
        },
    )
    runtime = runtime_for(project, store, permission_mode="default", headless="pause")
    first = await runtime.run_workflow(workflow, "hello")
    assert first.status == "awaiting_human"
    assert first.question is not None and first.question.kind == "approval"
    assert not (project / "NOTES.md").exists()
    assert first.task_id is not None
    again = runtime_for(project, store, permission_mode="default", headless="pause")
    done = await again.resume(first.task_id, HumanDecision("approve"))
    assert done.status == "completed", done.error
    assert (project / "NOTES.md").read_text() == "hello"


async def test_a_workflow_runs_without_a_store(project: Path) -> None:
    result = await runtime_for(project, None).run_workflow(
        load(project, "draft-critique"), "src/shop/cart.py"
    )
    assert result.status == "completed", result.error
    assert result.task_id is None
    assert outcome(result).state.extra["critique"] == "APPROVED"


async def test_a_workflow_naming_an_unknown_agent_is_refused_before_it_starts(
    project: Path, store: SQLiteStore
) -> None:
    workflow = Workflow(
        name="typo", entry_point="a", nodes={"a": AgentNode(agent="reviewr", prompt="x")}
    )
    with pytest.raises(WorkflowValidationError) as raised:
        await runtime_for(project, store).run_workflow(workflow, "")
    ((location, message),) = raised.value.problems
    assert location == "nodes.a.agent" and "reviewer" in message
    assert store.list_tasks(limit=None) == []  # nothing started


async def test_a_stored_graph_changed_behind_the_task_is_checked_again_on_resume(
    project: Path, store: SQLiteStore
) -> None:
    """The graph a task keeps is data anyone with the file can change (or an archive can
    carry): a resume checks it against this runtime's agents and tools before running it."""
    first = await runtime_for(project, store).run_workflow(
        load(project, "review-fix-verify"), "src/shop/cart.py"
    )
    assert first.task_id is not None
    task = store.get_task(first.task_id)
    definition = task.settings["workflow"]["definition"]
    definition["nodes"]["fix"] = {"type": "tool", "tool": "Exfiltrate", "arguments": {}}
    store.update_task(task)
    for _ in range(2):  # refused each time: the lease is not left held
        with pytest.raises(WorkflowValidationError, match="Exfiltrate"):
            await runtime_for(project, store).resume(task.id, HumanDecision("approve"))
    assert agents.BUG in (project / "src" / "shop" / "cart.py").read_text()


async def test_modify_at_a_human_node_applies_the_persons_state_updates(
    project: Path, store: SQLiteStore
) -> None:
    workflow = approval_workflow()
    del workflow.nodes["join"]
    first = await runtime_for(project, store).run_workflow(workflow, "shop 1.0")
    assert first.task_id is not None
    decision = HumanDecision(
        "modify", reason="make it a major release", arguments={"state_updates": {"version": 3}}
    )
    done = await runtime_for(project, store).resume(first.task_id, decision, workflow=workflow)
    assert done.status == "completed", done.error
    state = outcome(done).state
    assert state.next_action == "modify" and state.extra["version"] == 3
    assert path_of(done) == ["ask", "big", "release"]
    latest = [c for c in store.checkpoints(first.task_id) if "decisions" in c.state]
    (delivered,) = latest[0].state["decisions"]
    assert delivered["action"] == "modify"
    assert delivered["arguments"] == {"state_updates": {"version": 3}}


async def test_a_crash_inside_a_fan_out_resumes_only_the_branch_that_had_not_finished(
    project: Path, store: SQLiteStore
) -> None:
    calls: dict[str, int] = {"correctness": 0, "security": 0, "style": 0}
    crash = True

    def counting(label: str) -> FunctionModel:
        def turn(request: Any) -> str:
            calls[label] += 1
            if label == "style" and crash:
                raise Crash  # the process dies while the last branch runs
            return f"{label}: ok"

        return FunctionModel(turn, name=f"scripted:{label}")

    models = agents.models()
    models["reviewer"] = counting("correctness")
    models["security-reviewer"] = counting("security")
    models["style-reviewer"] = counting("style")
    runtime = runtime_for(project, store, agent_models=models)
    with pytest.raises(Crash):
        await runtime.run_workflow(load(project, "parallel-review"), "", task_id="fan-task")
    store.release_task("fan-task", runtime.owner)
    assert calls == {"correctness": 1, "security": 1, "style": 1}
    crash = False
    done = await runtime_for(project, store, agent_models=models).resume("fan-task")
    assert done.status == "completed", done.error
    assert calls == {"correctness": 1, "security": 1, "style": 2}  # only the cut-off one again
    answers = [m.content for m in outcome(done).state.messages if m.role == "assistant"]
    assert answers[:3] == ["correctness: ok", "security: ok", "style: ok"]
    assert sorted(path_of(done)[1:4]) == ["correctness", "security", "style"]


async def test_the_live_ui_shows_each_agent_node_as_a_block_and_the_path_taken(
    project: Path,
) -> None:
    from subagents.cli.ui.live import RunApp
    from subagents.runtime.events import EventBus

    runtime = runtime_for(project, None, events=EventBus())
    app = RunApp(
        runtime,
        "src/shop/cart.py",
        exit_when_done=True,
        ask_approval=False,
        workflow=load(project, "draft-critique"),
        workflow_input={"input": "src/shop/cart.py"},
    )
    await asyncio.wait_for(app.run_async(headless=True, size=(120, 40)), timeout=60)
    assert app.result is not None and app.result.status == "completed", app.result
    assert app.blocks.workflow_path == ["draft", "critique", "approved"] * 2
    assert [b.agent_type for b in app.blocks.ordered()] == ["writer", "critic"] * 2
    assert all(b.status == "completed" for b in app.blocks.ordered())


async def test_a_damaged_workflow_checkpoint_is_a_clear_error_not_a_crash(
    project: Path, store: SQLiteStore, tmp_path: Path
) -> None:
    import sqlite3

    first = await runtime_for(project, store).run_workflow(
        load(project, "review-fix-verify"), "src/shop/cart.py"
    )
    assert first.task_id is not None
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.execute(
            "UPDATE steps SET checkpoint = json_set(checkpoint, "
            "'$.state.workflow.main.counts', json('{\"review\": \"many\"}')) "
            "WHERE checkpoint IS NOT NULL"
        )
    from subagents.errors import WorkflowError

    for _ in range(2):  # and the task is not left held
        with pytest.raises(WorkflowError, match="cannot be read"):
            await runtime_for(project, store).resume(first.task_id, HumanDecision("approve"))
