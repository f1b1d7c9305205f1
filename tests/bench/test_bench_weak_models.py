"""The weak-model bench (bench/bench_weak_models.py) still runs, and the current tree still
delegates under every scripted misbehaviour: one task per policy, through Runtime.run against
the bench's own OpenAI-compatible server, so the bench cannot rot unnoticed."""

from __future__ import annotations

import sys

import pytest

from paths import REPO

BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

from weak_models.driver import Endpoint, run_suite  # noqa: E402
from weak_models.policies import POLICIES  # noqa: E402
from weak_models.tasks import TASKS  # noqa: E402

pytestmark = pytest.mark.slow  # subprocesses, servers or many examples

NEVER_RECOVERS = "looper-never"


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, object]]:
    tasks = [task for task in TASKS if task.name == "grep-folder"]
    ran = run_suite([Endpoint(policy=policy) for policy in POLICIES], tasks)
    return {str(row["policy"]): row for row in ran}


@pytest.mark.slow
@pytest.mark.parametrize("policy", [p.name for p in POLICIES if p.name != NEVER_RECOVERS], ids=str)
def test_the_current_tree_delegates_despite_the_misbehaviour(
    rows: dict[str, dict[str, object]], policy: str
) -> None:
    row = rows[policy]
    assert row["success"], row
    assert row["started_types"] == ["finder"] and row["status"] == "completed"


def test_a_model_that_never_recovers_is_stopped_within_three_turns(
    rows: dict[str, dict[str, object]],
) -> None:
    row = rows[NEVER_RECOVERS]
    assert not row["success"] and row["status"] == "failed"
    assert row["turns"] == 3 and row["requests"] == 3
    assert str(row["error"]).startswith("Loop detected:")
