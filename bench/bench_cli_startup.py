"""How long `subagents --help` takes, as a user sees it: a fresh process each time.

Usage: python bench/bench_cli_startup.py [--runs N] [COMMAND ...]
(default command: the venv's `subagents --help`). Prints the median and p90 against the goal.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main", "time_command"]

GOAL_MS = 300.0
ROOT = Path(__file__).resolve().parents[1]


def default_command() -> list[str]:
    script = Path(sys.executable).with_name("subagents")
    if script.exists():
        return [str(script), "--help"]
    return [sys.executable, "-m", "subagents", "--help"]


def time_command(command: list[str], runs: int) -> list[float]:
    """Wall-clock seconds of each run; output is discarded, a failure stops the benchmark."""
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        samples.append(time.perf_counter() - start)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("command", nargs="*")
    args = parser.parse_args(argv)
    command = args.command or default_command()
    time_command(command, 2)  # warm the OS file cache and .pyc files
    samples = time_command(command, args.runs)
    median_ms = statistics.median(samples) * 1e3
    p90_ms = percentile(samples, 0.9) * 1e3
    baseline = time_command([sys.executable, "-c", "pass"], max(5, args.runs // 3))
    baseline_ms = statistics.median(baseline) * 1e3
    verdict = "OK" if median_ms < GOAL_MS else "OVER GOAL"
    print(f"command: {' '.join(command)}")
    print(
        f"runs: {args.runs}  median: {median_ms:.0f} ms  p90: {p90_ms:.0f} ms  "
        f"(bare python: {baseline_ms:.0f} ms)  goal: < {GOAL_MS:.0f} ms  -> {verdict}"
    )
    return 0 if median_ms < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
