"""Workflows across processes: a run pauses at a checkpoint and its process exits; another
process resumes it with the decision; a process SIGKILLed in the middle of an agent node is
resumed by a third, which continues that node's session instead of starting it again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from paths import REPO, TESTS
from subagents.store.sqlite import open_store
from subagents.workflows.runner import node_session_id

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

SCENARIO = TESTS / "scenarios" / "workflow_run.py"
EXAMPLE = REPO / "examples" / "workflow-project"
BUG = "sum(line.price_cents for line in self.lines)"
FIX = "sum(line.price_cents * line.quantity for line in self.lines)"


def scenario(
    store: Path, project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCENARIO), str(store), str(project), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
        env={**os.environ, **(env or {})},
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    value = json.loads(out.strip().splitlines()[-1])
    assert isinstance(value, dict)
    return value


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    """Until ``path`` exists (the process reached the point to kill it at)."""
    deadline = time.monotonic() + 60
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the process ended first: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


def test_pause_exit_then_resume_in_another_process_then_sigkill_mid_node(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    store = tmp_path / "state.db"
    cart = project / "src" / "shop" / "cart.py"

    paused = finish(scenario(store, project, "run", "review-fix-verify", "src/shop/cart.py"))
    assert paused["status"] == "awaiting_human"
    assert paused["question"] == "fix#0:confirm"
    assert paused["path"] == ["review"]
    task_id = paused["task_id"]

    # approve in a second process, which is killed inside the fix node, after its Edit ran
    marker = tmp_path / "fixer-edited"
    second = scenario(
        store, project, "resume", task_id, "approve", env={"WORKFLOW_BLOCK_MARKER": str(marker)}
    )
    wait_for(marker, second)
    os.kill(second.pid, signal.SIGKILL)
    second.wait(timeout=30)
    assert FIX in cart.read_text()
    with open_store(store) as db:
        assert db.get_task(task_id).status == "running"  # as the killed process left it

    # a third process resumes after the crash: the fix node's session continues
    done = finish(
        scenario(store, project, "resume", task_id, env={"WORKFLOW_BLOCK_MARKER": str(marker)})
    )
    assert done["status"] == "completed", done["error"]
    assert done["path"] == ["review", "fix", "verify"]
    assert done["output"].endswith("PASS")
    assert cart.read_text().count(FIX) == 1 and BUG not in cart.read_text()
    with open_store(store) as db:
        sessions = db.sessions(task_id)
        assert sorted(s.agent_name for s in sessions) == ["fixer", "reviewer", "tester"]
        fixer = node_session_id(task_id, "fix#0")
        assert fixer in {s.session_id for s in sessions}
        edits = [e for e in db.ledger(task_id, fixer) if e.tool_name == "Edit"]
        assert [e.status for e in edits] == ["completed"]  # the edit ran once
        assert db.get_task(task_id).status == "completed"
