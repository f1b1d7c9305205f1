"""Crash and resume with real processes: SIGKILL a three-level run at random points, resume it,
and check that it completes with every side effect done exactly once and nothing lost."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from paths import TESTS
from subagents.store.sqlite import open_store

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

SCENARIO = TESTS / "scenarios" / "crash_run.py"
EXPECTED_LINES = ["main-1", "worker-1", "nested-1", "nested-2", "worker-2"]
TRIALS = 20


def scenario(
    store: Path, workspace: Path, *args: str, shape: str = "nested", **env: str
) -> subprocess.Popen[str]:
    """The scenario run as a process (``env``: more variables, such as HOLD_LINE)."""
    return subprocess.Popen(
        [sys.executable, str(SCENARIO), str(store), str(workspace), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workspace,
        env={**os.environ, "CRASH_SHAPE": shape, **env},
    )


def wait_for_task(store: Path, task_id: str) -> None:
    """The task record exists: from here on the run is resumable."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if store.exists():
            with open_store(store) as db:
                if any(task.id == task_id for task in db.list_tasks(limit=None)):
                    return
        time.sleep(0.002)
    raise AssertionError(f"task {task_id} was never stored")


def last_json(text: str) -> dict[str, Any]:
    value = json.loads(text.strip().splitlines()[-1])
    assert isinstance(value, dict)
    return value


def run_and_kill(
    store: Path, workspace: Path, delay: float, shape: str = "nested"
) -> tuple[str, bool, float]:
    """Start a run, SIGKILL it ``delay`` seconds after its task exists; (task id, killed, how
    long it ran after its task existed: ``delay`` when killed)."""
    process = scenario(store, workspace, "run", shape=shape)
    assert process.stdout is not None
    started = json.loads(process.stdout.readline())["started"]
    wait_for_task(store, started)
    began = time.perf_counter()
    try:
        process.wait(timeout=delay)  # it prints one line more: no pipe can fill meanwhile
        killed = False
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        killed = True
    ran = time.perf_counter() - began
    process.communicate(timeout=30)
    return started, killed, ran


def resume_until_done(
    store: Path, workspace: Path, task_id: str, shape: str = "nested"
) -> tuple[dict[str, Any], int]:
    """Resume until completed; answer crash-recovery questions as a careful person would:
    re-run a call whose effect is not in the file, reject one whose effect is."""
    decision: list[str] = []
    with open_store(store) as db:
        task = db.get_task(task_id)
    if task.status == "completed":  # killed after the run had finished, while exiting
        return {"status": "completed", "output": task.result}, 0
    for pauses in range(10):
        process = scenario(store, workspace, "resume", task_id, *decision, shape=shape)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err[-3000:]
        outcome = last_json(out)
        if outcome["status"] != "awaiting_human":
            return outcome, pauses
        question = outcome["question"]
        assert question["kind"] == "crash_recovery" and question["tool_name"] == "Append"
        # killed after the call was recorded as started but before its first line was
        # written: the file may not exist yet, and then the line is not in it
        ledger = workspace / "ledger.txt"
        lines = ledger.read_text().split() if ledger.exists() else []
        decision = ["reject"] if question["arguments"]["line"] in lines else ["approve"]
    raise AssertionError("the run did not complete after 10 resumes")


def calibrate(tmp_path: Path, shape: str = "nested") -> float:
    """How long a run takes after its task exists, to spread the kills over all of it."""
    workspace = tmp_path / f"calibration-{shape}"
    workspace.mkdir()
    process = scenario(workspace / "state.db", workspace, "run", shape=shape)
    assert process.stdout is not None
    wait_for_task(workspace / "state.db", json.loads(process.stdout.readline())["started"])
    began = time.perf_counter()
    out, err = process.communicate(timeout=60)
    assert last_json(out)["status"] == "completed", err
    return time.perf_counter() - began


def test_sigkill_at_random_points_then_resume_completes_exactly_once(tmp_path: Path) -> None:
    duration = calibrate(tmp_path)
    rng = random.Random(20261122)
    killed_trials = 0
    paused_trials = 0
    for trial in range(TRIALS):
        workspace = tmp_path / f"trial{trial}"
        workspace.mkdir()
        store = workspace / "state.db"
        task_id, killed, ran = run_and_kill(store, workspace, rng.uniform(0.0, duration))
        if not killed:  # runs are quicker than the calibration found (its machine was busier)
            duration = min(duration, ran)
        killed_trials += killed
        if killed:
            outcome, pauses = resume_until_done(store, workspace, task_id)
            paused_trials += pauses > 0
        else:
            outcome = {"status": "completed", "output": "main done after 3 steps"}
        context = f"trial {trial} (killed={killed})"
        assert outcome["status"] == "completed", context
        assert outcome["output"] == "main done after 3 steps", context
        lines = (workspace / "ledger.txt").read_text().split()
        assert sorted(lines) == sorted(EXPECTED_LINES), f"{context}: {lines}"
        with open_store(store) as db:
            assert db.integrity_check() == [], context
            task = db.get_task(task_id)
            assert task.status == "completed", context
            sessions = {s.agent_name: s for s in db.sessions(task_id)}
            assert set(sessions) == {"main", "worker", "nested"}, context
            for name, record in sessions.items():
                assert record.status == "completed", f"{context}: {name}"
                messages = db.messages(record.session_id)
                # user prompt, 3 tool turns (call + result), final answer: nothing lost
                assert len(messages) == 8, f"{context}: {name} has {len(messages)}"
                assert messages[-1]["content"] == f"{name} done after 3 steps", context
    print(f"\n{TRIALS} trials: {killed_trials} killed mid-run, {paused_trials} paused for a person")
    # the kill points must really land inside runs for this test to mean anything
    assert killed_trials >= TRIALS * 0.6


def test_a_task_that_a_live_process_runs_cannot_be_resumed_beside_it(tmp_path: Path) -> None:
    store = tmp_path / "state.db"
    # it stays busy inside that tool call
    process = scenario(store, tmp_path, "run", HOLD_LINE="worker-1")
    assert process.stdout is not None
    task_id = json.loads(process.stdout.readline())["started"]
    try:
        deadline = time.monotonic() + 30
        while "worker-1" not in _lines(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = scenario(store, tmp_path, "resume", task_id)
        _, err = refused.communicate(timeout=60)
        assert refused.returncode != 0
        assert f"being run by process {process.pid}" in err and "--force" in err
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)
    outcome, _ = resume_until_done(store, tmp_path, task_id)  # its owner is gone now
    assert outcome["status"] == "completed"
    assert sorted(_lines(tmp_path)) == sorted(EXPECTED_LINES)


def _lines(workspace: Path) -> list[str]:
    ledger = workspace / "ledger.txt"
    return ledger.read_text().split() if ledger.exists() else []


PARALLEL_LINES = ["main-1", *(f"{n}-{i}" for n in ("alpha", "beta", "gamma") for i in (1, 2))]
PARALLEL_TRIALS = 8


def test_parallel_subagents_committed_in_groups_survive_sigkill_exactly_once(
    tmp_path: Path,
) -> None:
    """Three subagents in one turn: their steps share transactions (store/group.py); a kill at
    any point loses no committed step and repeats no side effect."""
    duration = calibrate(tmp_path, "parallel")
    rng = random.Random(20261125)
    killed_trials = 0
    for trial in range(PARALLEL_TRIALS):
        workspace = tmp_path / f"parallel{trial}"
        workspace.mkdir()
        store = workspace / "state.db"
        delay = rng.uniform(0.0, duration)
        task_id, killed, ran = run_and_kill(store, workspace, delay, "parallel")
        if not killed:  # runs are quicker than the calibration found (its machine was busier)
            duration = min(duration, ran)
        killed_trials += killed
        outcome, _ = resume_until_done(store, workspace, task_id, "parallel")
        context = f"trial {trial} (killed={killed})"
        assert outcome["status"] == "completed", context
        lines = (workspace / "ledger.txt").read_text().split()
        assert sorted(lines) == sorted(PARALLEL_LINES), f"{context}: {lines}"
        with open_store(store) as db:
            assert db.integrity_check() == [], context
            sessions = {s.agent_name: s for s in db.sessions(task_id)}
            assert set(sessions) == {"main", "alpha", "beta", "gamma"}, context
            for name in ("alpha", "beta", "gamma"):
                record = sessions[name]
                assert record.status == "completed", f"{context}: {name}"
                # user prompt, 2 tool turns (call + result), final answer: nothing lost
                assert len(db.messages(record.session_id)) == 6, f"{context}: {name}"
    assert killed_trials >= PARALLEL_TRIALS * 0.6


def test_sigkill_inside_a_sessions_first_model_call_then_resume_starts_it_again(
    tmp_path: Path,
) -> None:
    """A session's opening prompt is stored with its first checkpoint, not before its first
    model call: a run killed inside that call has no record of the session, and resuming
    starts it again on the same prompt (the task's, or the Task call its parent stored)."""
    for who in ("main", "worker", "nested"):
        workspace = tmp_path / who
        workspace.mkdir()
        store = workspace / "state.db"
        process = scenario(store, workspace, "run", HOLD_MODEL=who)
        assert process.stdout is not None
        task_id = json.loads(process.stdout.readline())["started"]
        try:
            holding = process.stdout.readline()  # the held model call says it got there
            assert holding and json.loads(holding) == {"holding": who}, holding
            with open_store(store) as db:
                stored = {s.agent_name for s in db.sessions(task_id)}
            assert who not in stored, f"{who} was stored before its first model call answered"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
        outcome, _ = resume_until_done(store, workspace, task_id)
        assert outcome["status"] == "completed", who
        assert sorted(_lines(workspace)) == sorted(EXPECTED_LINES), who
        with open_store(store) as db:
            assert db.integrity_check() == [], who
            sessions = {s.agent_name: s for s in db.sessions(task_id)}
            assert set(sessions) == {"main", "worker", "nested"}, who
            for name, record in sessions.items():
                messages = db.messages(record.session_id)
                assert len(messages) == 8, f"{who} held: {name} has {len(messages)}"
                assert [m["role"] for m in messages].count("user") == 1, who
