"""The CLI paths bench (bench/bench_cli_paths.py) still runs: its server answers the SDK, its
store set-up uses the store's API as it is, and `subagents run` / `tasks list` work as it calls
them. One run each; nothing about time is asserted here."""

from __future__ import annotations

import sys

import pytest

from paths import REPO

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import bench_cli_paths  # noqa: E402


def test_the_bench_runs_and_reports_its_goals(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_cli_paths.main(["--runs", "1", "--only", "run,tasks"]) == 0
    out = capsys.readouterr().out
    assert "run overhead" in out and "tasks list (1000 tasks)" in out
    assert "goal run overhead:" in out and "goal tasks list:" in out
