"""Runs carried out by `subagents worker` processes on a shared PostgreSQL store (DBOS): queued
from the command line, paused for a person and approved from elsewhere, cancelled, and failed
with a reason when they cannot run. Real processes, a real server, a real model over HTTP."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.runtime.pause import HumanDecision
from subagents.workers.engine import (
    WorkerError,
    dbos_schema,
    decision_from_dict,
    decision_to_dict,
    require_postgres,
    sqlalchemy_url,
)
from worker_support import Cluster, cluster


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One worker on a fresh schema, shared by the tests of this module."""
    with cluster(tmp_path_factory.mktemp("project")) as built:
        built.start_worker("--concurrency", "4")
        yield built


@pytest.mark.slow
def test_a_remote_run_is_carried_out_by_a_worker_through_two_levels(running: Cluster) -> None:
    done = running.cli(
        "run", "--remote", "--wait", "--permission-mode", "bypassPermissions", "r1 go"
    )
    assert done.returncode == 0, done.stderr
    assert "main done: middle done: leaf done" in done.stdout
    assert running.effects().count("r1") == 1
    with running.store() as store:
        [task] = [t for t in store.list_tasks() if t.prompt == "r1 go"]
        assert task.status == "completed"
        assert task.settings["remote"] == {"queue": "subagents"}
        assert task.settings["permission_mode"] == "bypassPermissions"
        names = sorted(s.agent_name for s in store.sessions(task.id))
        assert names == ["leaf", "main", "middle"]
        assert store.integrity_check() == []
    # any machine that reaches the store sees it: here, from another directory
    shown = running.cli("tasks", "show", task.id[:8], "--json", cwd=Path("/"))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["task"]["status"] == "completed"


@pytest.mark.slow
def test_a_workflow_run_goes_to_a_worker_too(running: Cluster) -> None:
    folder = running.project / ".subagents" / "workflows"
    folder.mkdir(exist_ok=True)
    (folder / "relay.yaml").write_text(
        "name: relay\nentry_point: hand\nnodes:\n"
        "  hand: {type: agent, agent: middle, prompt: '{{ input }}'}\n"
        "edges:\n  - {from: hand, to: end}\n"
    )
    done = running.cli(
        "workflow",
        "run",
        "relay",
        "--input",
        "wf1 go",
        "--remote",
        "--wait",
        "--json",
        "--permission-mode",
        "bypassPermissions",
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["status"] == "completed"
    assert "middle done: leaf done" in printed["output"]
    assert running.effects().count("wf1") == 1
    with running.store() as store:
        task = store.get_task(printed["task_id"])
    assert task.settings["workflow"]["name"] == "relay" and "remote" in task.settings


@pytest.mark.slow
def test_run_remote_without_wait_prints_the_queued_task(running: Cluster) -> None:
    queued = running.cli(
        "run", "--remote", "--json", "--permission-mode", "bypassPermissions", "r2 go"
    )
    assert queued.returncode == 0, queued.stderr
    printed = json.loads(queued.stdout)
    assert printed["status"] == "queued" and printed["queue"] == "subagents"
    assert running.wait(printed["task_id"]).status == "completed"
    assert running.effects().count("r2") == 1


@pytest.mark.slow
def test_a_paused_remote_run_is_decided_from_elsewhere_and_goes_on(running: Cluster) -> None:
    paused = running.cli("run", "--remote", "--wait", "--json", "r3 go")  # Bash must ask
    assert paused.returncode == 3, paused.stderr
    task_id = json.loads(paused.stdout)["task_id"]
    assert json.loads(paused.stdout)["status"] == "awaiting_human"
    assert "r3" not in running.effects()
    refused = running.cli("resume", task_id[:8], "--remote")  # a decision is needed
    assert refused.returncode == 2
    assert "waiting for a person" in refused.stderr and "--approve" in refused.stderr
    approved = running.cli(
        "resume",
        task_id[:8],
        "--remote",
        "--wait",
        "--reject",
        "not now: sk-proj-" + "x" * 40,
        cwd=Path("/"),
    )
    assert approved.returncode == 0, approved.stderr
    assert "leaf done" in approved.stdout
    assert "r3" not in running.effects()  # rejected: the command never ran
    # the decision (its reason holds a key) is nowhere once delivered: not in DBOS's
    # workflow inputs, not in the decisions' table, and redacted in the store
    with running.store() as store:
        records = [*store.checkpoints(task_id), *store.traces(task_id), *store.ledger(task_id)]
        dumped = json.dumps([record.model_dump(mode="json") for record in records])
        dumped += json.dumps([store.messages(s.session_id) for s in store.sessions(task_id)])
    assert "x" * 40 not in dumped and "not now" in dumped
    import psycopg

    with psycopg.connect(running.url) as connection:
        schema = dbos_schema(running.url)
        inputs = connection.execute(
            f"SELECT inputs FROM {schema}.workflow_status WHERE workflow_uuid LIKE %s",
            (task_id + "%",),
        ).fetchall()
        left = connection.execute(f"SELECT count(*) FROM {schema}.subagents_decisions").fetchone()
    assert inputs and all("x" * 40 not in str(row[0]) for row in inputs)
    assert left == (0,)


@pytest.mark.slow
def test_cancelling_a_running_remote_run_stops_it_at_its_step(running: Cluster) -> None:
    queued = running.cli(
        "run", "--remote", "--json", "--permission-mode", "bypassPermissions", "r4 pause=60"
    )
    task_id = json.loads(queued.stdout)["task_id"]
    with running.store() as store:
        _wait_for_leaf_call(store, task_id)
    cancelled = running.cli("tasks", "cancel", task_id[:8])
    assert cancelled.returncode == 0, cancelled.stderr
    assert "Cancelled task" in cancelled.stdout
    ended = running.wait(task_id, timeout=45)  # the leaf's command sleeps 60 s
    assert ended.status == "cancelled"
    assert "r4" not in running.effects()
    again = running.cli("tasks", "cancel", task_id[:8])
    assert again.returncode == 0 and "nothing queued or running" in again.stdout


@pytest.mark.slow
def test_a_stopped_worker_hands_its_run_over_to_the_next(running: Cluster) -> None:
    first = running.start_worker("--queue", "handover")
    queued = running.cli(
        "run",
        "--remote",
        "--json",
        "--queue",
        "handover",
        "--permission-mode",
        "bypassPermissions",
        "h1 pause=2",
    )
    task_id = json.loads(queued.stdout)["task_id"]
    with running.store() as store:
        _wait_for_leaf_call(store, task_id)
    first.stop()  # SIGTERM, no grace: the run is left mid-step
    assert first.process.returncode == 0, first.output
    with running.store() as store:
        assert store.get_task(task_id).status == "running"  # not cancelled: handed over
    running.start_worker("--queue", "handover")
    ended = running.wait(task_id)
    assert ended.status == "completed", ended.error
    assert "middle done" in (ended.result or "")
    assert running.effects().count("h1") <= 1
    with running.store() as store:
        assert sorted(s.agent_name for s in store.sessions(task_id)) == ["leaf", "main", "middle"]


@pytest.mark.slow
def test_a_run_queued_where_no_worker_listens_is_cancelled_before_it_starts(
    running: Cluster,
) -> None:
    queued = running.cli("run", "--remote", "--json", "--queue", "nobody-listens", "r5 go")
    task_id = json.loads(queued.stdout)["task_id"]
    with running.store() as store:
        assert store.get_task(task_id).status == "pending"
    cancelled = running.cli("tasks", "cancel", task_id[:8])
    assert cancelled.returncode == 0, cancelled.stderr
    with running.store() as store:
        task = store.get_task(task_id)
    assert task.status == "cancelled"
    assert task.error == "cancelled before a worker took it up"


@pytest.mark.slow
def test_a_task_whose_workspace_is_missing_or_outside_the_root_fails_with_the_reason(
    running: Cluster, tmp_path: Path
) -> None:
    gone, outside = tmp_path / "gone", tmp_path / "outside"
    for project in (gone, outside):
        shutil.copytree(running.project / ".subagents", project / ".subagents")
    queued = {
        project: json.loads(
            running.cli(
                "run", "--remote", "--json", "--queue", "later", "r6 go", cwd=project
            ).stdout
        )["task_id"]
        for project in (gone, outside)
    }
    shutil.rmtree(gone)
    # a worker on that queue (its root: the cluster's project), started after one went away
    running.start_worker("--queue", "later")
    missing = running.wait(queued[gone])
    assert missing.status == "failed" and missing.error is not None
    assert "does not exist on this worker" in missing.error
    assert "checked out at the same path" in missing.error
    elsewhere = running.wait(queued[outside])
    assert elsewhere.status == "failed" and elsewhere.error is not None
    assert f"is outside this worker's root {running.project.resolve()}" in elsewhere.error
    assert "--root DIR" in elsewhere.error
    assert "r6" not in running.effects()


@pytest.mark.slow
def test_local_tasks_cannot_be_cancelled_as_remote_ones(running: Cluster, tmp_path: Path) -> None:
    with running.store() as store:
        from subagents.store.records import TaskRecord

        local = TaskRecord(description="here", prompt="here", workspace=str(tmp_path))
        store.create_task(local)
    refused = running.cli("tasks", "cancel", local.id[:8])
    assert refused.returncode == 2
    assert "not on a worker" in refused.stderr


# -- without a server --------------------------------------------------------------------------


def test_a_worker_refuses_a_sqlite_store(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import build_app

    result = CliRunner().invoke(
        build_app("worker"), ["worker", "--store", str(tmp_path / "state.db")]
    )
    assert result.exit_code == 2
    assert "Workers share a PostgreSQL store" in result.output
    assert "SUBAGENTS_STORE" in result.output


def test_run_remote_on_the_sqlite_store_says_what_to_do(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import build_app

    result = CliRunner().invoke(
        build_app("run"),
        ["run", "--remote", "--model", "openai:gpt-4o-mini", "--cwd", str(tmp_path), "hello"],
        env={"SUBAGENTS_STORE": ""},
    )
    assert result.exit_code == 2, result.output
    assert "PostgreSQL store" in result.output


def test_remote_does_not_go_with_options_that_need_the_run_here(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from subagents.cli.app import build_app

    for extra in (["--ui"], ["--no-store"], ["--output-format", "stream-json"], ["--continue"]):
        result = CliRunner().invoke(build_app("run"), ["run", "--remote", *extra, "x"])
        assert result.exit_code == 2, (extra, result.output)
        assert "does not go with --remote" in result.output
    waiting = CliRunner().invoke(build_app("run"), ["run", "--wait", "x"])
    assert waiting.exit_code == 2 and "--wait goes with --remote" in waiting.output


def test_the_dbos_schema_follows_the_stores_search_path() -> None:
    base = "postgresql://u@h:5432/db"
    assert dbos_schema(base) == "dbos"
    assert dbos_schema(base + "?options=-csearch_path%3Dt_abc") == "t_abc_dbos"
    assert dbos_schema(base + "?options=-c%20search_path%3Dproj") == "proj_dbos"
    with pytest.raises(WorkerError, match="plain schema name"):
        dbos_schema(base + "?options=-csearch_path%3Dx%3Bdrop")
    assert sqlalchemy_url(base).startswith("postgresql+psycopg://u@h")
    with pytest.raises(WorkerError, match="SUBAGENTS_STORE"):
        require_postgres("/tmp/state.db")
    with pytest.raises(WorkerError, match="none is named"):
        require_postgres(None)


@given(st.text(max_size=80))
def test_any_search_path_gives_a_plain_schema_or_a_clear_error(path: str) -> None:
    from urllib.parse import quote

    url = f"postgresql://u@h/db?options={quote('-csearch_path=' + path)}"
    try:
        schema = dbos_schema(url)
    except WorkerError as error:
        assert "schema" in str(error)
        return
    assert schema == "dbos" or (schema.endswith("_dbos") and schema.replace("_", "").isalnum())


@given(
    st.sampled_from(["approve", "reject", "modify"]),
    st.none() | st.text(max_size=20),
    st.none() | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
def test_a_decision_survives_the_queue(
    action: str, reason: str | None, arguments: dict[str, int] | None, values: dict[str, str]
) -> None:
    decision = HumanDecision(action, reason, arguments, values)  # type: ignore[arg-type]
    assert decision_from_dict(json.loads(json.dumps(decision_to_dict(decision)))) == decision


def test_a_decision_with_an_unknown_action_is_refused() -> None:
    with pytest.raises(WorkerError, match="unknown action"):
        decision_from_dict({"action": "delete everything"})


def _wait_for_leaf_call(store: object, task_id: str, timeout: float = 60.0) -> None:
    """Until the leaf's Bash call has started (its ledger entry is written before it runs)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ledger = store.ledger(task_id)  # type: ignore[attr-defined]
        if any(entry.tool_name == "Bash" for entry in ledger):
            return
        time.sleep(0.05)
    raise AssertionError(f"the leaf's Bash call of task {task_id} never started")


@pytest.mark.slow
def test_a_workflow_with_python_conditions_is_not_queued(running: Cluster) -> None:
    from subagents.runtime.runtime import Runtime
    from subagents.workers.submit import queue_workflow
    from subagents.workflows.graph import AgentNode, ConditionNode, Edge, Workflow

    workflow = Workflow(
        name="in-code",
        entry_point="check",
        nodes={
            "check": ConditionNode(expression=lambda state: "go" in str(state.get("input"))),
            "hand": AgentNode(agent="middle", prompt="{{ input }}"),
        },
        edges=[Edge.model_validate({"from": "check", "to": {"true": "hand", "false": "end"}})],
    )
    with running.store() as store:
        before = len(store.list_tasks(limit=None))
        runtime = Runtime(cwd=running.project, store=store)
        with pytest.raises(WorkerError, match="Python conditions") as refused:
            queue_workflow(runtime, workflow, "go")
        assert "Runtime.run_workflow" in (refused.value.hint or "")
        assert len(store.list_tasks(limit=None)) == before  # nothing left pending
