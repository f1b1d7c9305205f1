"""The durable floor of the headline benchmark (bench/floor_durable.py) still runs and still
writes what it claims: each tool call marked started in its own commit before the tool runs,
and done in the commit of its result. It needs ../shared/peer-bench's harness (beside the
clone); it skips where that is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import SHARED
from paths import REPO

BENCH = REPO / "bench"
PEER_BENCH = SHARED / "peer-bench"


def _floor(*args: str) -> str:
    if not (PEER_BENCH / "common.py").is_file():
        pytest.skip(f"peer-bench harness not found at {PEER_BENCH} (it lives in ../shared)")
    env = {**os.environ, "PEER_BENCH_DIR": str(PEER_BENCH), "BENCH_NO_SAVE": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCH / "floor_durable.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_floor_commits_each_call_before_it_runs_and_its_result_after() -> None:
    # one user message, 21 answers of the model, 20 tool results: each a commit
    assert json.loads(_floor("check")) == {"rows": 42, "calls_kept": 20}


def test_the_floor_reports_w1_as_the_headline_reads_it() -> None:
    result = json.loads(_floor("w1", "--iters", "3", "--warmup", "1"))
    assert result["framework"] == "floor_durable" and result["workload"] == "w1"
    assert result["cpu_per_model_turn_us"] > 0
