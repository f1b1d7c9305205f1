"""Compare two versions of `subagents` on one workload of bench_subagents.py, interleaved.

On a shared 2-core machine, CPU and wall medians of one tree move by ±10% between
invocations, more than most single changes save. This puts the two trees side by side in
the way that has proved steady enough:

- ``--measure instructions`` (the default) counts instructions under valgrind's callgrind:
  the difference between a run of ``--high`` and one of ``--low`` iterations, per iteration,
  so that start-up cancels out. Both trees sit at paths of one length and run with
  ``PYTHONHASHSEED=0``, and the heap is frozen (``gc.freeze``) when the bench collects
  after its first run: without that, whether a full collection over the start-up heap falls
  in the measured runs moved a W2 figure by up to 10%. Take several ``--rounds`` all the same.
  The collector's work on what the measured runs keep is still counted; its share over a real
  heap shows in ``--measure cpu``.
- ``--measure cpu`` reads the bench's own CPU median (``cpu_median_ms``), the trees taking
  turns round by round.

Each version is a git revision (exported with ``git archive``: its ``src`` and ``bench``)
or ``.``, the working tree as it is (uncommitted changes included). The workload's scripts
are each tree's own.

    python bench/compare_trees.py HEAD~1 . --workload w2 --rounds 3
    python bench/compare_trees.py main . --workload w1 --measure cpu --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER_BENCH = Path(os.environ.get("PEER_BENCH_DIR", ROOT.parent / "shared" / "peer-bench"))
WORKING_TREE = "."
# iterations of the low and the high run, per workload: enough that the difference dwarfs
# the noise, few enough that a callgrind pair takes well under a minute
_SPANS = {"w1": (10, 60), "w2": (10, 60), "w3": (2, 6)}
_COLLECTED = re.compile(r"Collected : (\d+)")


class CompareError(Exception):
    """A tree could not be prepared or a run failed; the message says which and why."""


@dataclass(frozen=True)
class Tree:
    label: str
    path: Path


def export(revision: str, into: Path) -> Path:
    """``src`` and ``bench`` of ``revision`` (``.``: the working tree) under ``into``."""
    into.mkdir(parents=True)
    if revision == WORKING_TREE:
        for part in ("src", "bench"):
            shutil.copytree(ROOT / part, into / part, ignore=shutil.ignore_patterns("__pycache__"))
        return into
    done = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "src", "bench"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        raise CompareError(f"git archive {revision} failed: {message}")
    with tarfile.open(fileobj=BytesIO(done.stdout)) as archive:
        archive.extractall(into, filter="data")
    return into


def bench_env(tree: Path, extra: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(tree / "src"),
        "PYTHONHASHSEED": "0",
        "PEER_BENCH_DIR": str(PEER_BENCH),
        "BENCH_NO_SAVE": "1",
        **extra,
    }


# Runs a bench script (its path and arguments follow) as `python SCRIPT ...` would, except
# that each gc.collect() it makes also freezes the heap (gc.freeze). The bench collects once
# after its first run, before the measured ones: full collections then walk only what those
# runs made, and one collection more or fewer over the start-up heap no longer moves a run's
# figure by several per cent.
_FROZEN_START = """
import gc, runpy, sys
from pathlib import Path
collect = gc.collect
def collect_and_freeze(*generation):
    found = collect(*generation)
    gc.freeze()
    return found
gc.collect = collect_and_freeze
sys.argv = sys.argv[1:]
sys.path.insert(0, str(Path(sys.argv[0]).resolve().parent))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def instructions(tree: Path, workload: str, iterations: int, extra: dict[str, str]) -> int:
    """Instructions callgrind counts for one bench process of ``iterations`` runs, the heap
    frozen after its first (see :data:`_FROZEN_START`)."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={scratch}/callgrind.out",
                sys.executable,
                "-c",
                _FROZEN_START,
                "bench/bench_subagents.py",
                workload,
                "--iters",
                str(iterations),
                "--warmup",
                "0",
            ],
            cwd=tree,
            env=bench_env(tree, extra),
            capture_output=True,
            text=True,
            check=False,
        )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise CompareError(f"{tree}: the bench under callgrind failed:\n{done.stderr[-1500:]}")
    return int(found.group(1))


def per_iteration(tree: Path, workload: str, extra: dict[str, str]) -> float:
    """Millions of instructions one iteration of ``workload`` costs in ``tree``."""
    low, high = _SPANS[workload]
    counts = [instructions(tree, workload, n, extra) for n in (low, high)]
    return (counts[1] - counts[0]) / (high - low) / 1e6


def cpu_median(tree: Path, workload: str, extra: dict[str, str], iterations: int) -> float:
    """The bench's CPU median in ms (W3: its wall median; the bench times W3 so)."""
    args = ["--iters", str(iterations)] + (["--warmup", "10"] if workload != "w3" else [])
    done = subprocess.run(
        [sys.executable, "bench/bench_subagents.py", workload, *args],
        cwd=tree,
        env=bench_env(tree, extra),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        row = json.loads(done.stdout.strip().splitlines()[-1])
        return float(row["median_ms" if workload == "w3" else "cpu_median_ms"])
    except (IndexError, KeyError, ValueError):
        raise CompareError(f"{tree}: the bench failed:\n{done.stderr[-1500:]}") from None


def parse_env(pairs: list[str]) -> dict[str, str]:
    extra = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CompareError(f"--env takes NAME=VALUE, not {pair!r}")
        extra[name] = value
    return extra


def summary(label: str, values: list[float], unit: str) -> str:
    middle = statistics.median(values)
    spread = f"{min(values):.3f}-{max(values):.3f}"
    return f"{label}: median {middle:.3f} {unit} (range {spread}, {len(values)} rounds)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="a git revision, or . for the working tree")
    parser.add_argument("after", help="a git revision, or . for the working tree")
    parser.add_argument("--workload", choices=sorted(_SPANS), default="w1")
    parser.add_argument("--measure", choices=("instructions", "cpu"), default="instructions")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=200, help="bench runs a round (cpu)")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the bench")
    args = parser.parse_args(argv)
    try:
        extra = parse_env(args.env)
        if args.measure == "instructions" and shutil.which("valgrind") is None:
            raise CompareError(
                "valgrind is not installed - install it (apt-get install valgrind), "
                "or pass --measure cpu"
            )
        if not (PEER_BENCH / "common.py").is_file():
            raise CompareError(
                f"no peer-bench harness at {PEER_BENCH} - set PEER_BENCH_DIR to the "
                "shared/peer-bench folder"
            )
        results = compare(args.before, args.after, args.workload, args, extra)
    except CompareError as error:
        print(f"compare_trees: {error}", file=sys.stderr)
        return 1
    unit = "M instructions/run" if args.measure == "instructions" else "ms"
    before, after = results.values()
    for label, values in results.items():
        print(summary(label, values, unit))
    change = statistics.median(after) / statistics.median(before) - 1
    print(f"after / before: {change:+.1%}")
    return 0


def compare(
    before: str, after: str, workload: str, args: argparse.Namespace, extra: dict[str, str]
) -> dict[str, list[float]]:
    """Each tree's figure, round by round, the trees taking turns."""
    with tempfile.TemporaryDirectory(prefix="compare-") as scratch:
        trees = [
            Tree(f"before ({before})", export(before, Path(scratch) / "a")),
            Tree(f"after ({after})", export(after, Path(scratch) / "b")),
        ]
        results: dict[str, list[float]] = {tree.label: [] for tree in trees}
        for round_number in range(args.rounds):
            for tree in trees:
                if args.measure == "instructions":
                    value = per_iteration(tree.path, workload, extra)
                else:
                    value = cpu_median(tree.path, workload, extra, args.iters)
                results[tree.label].append(value)
                print(f"  round {round_number + 1} {tree.label}: {value:.3f}", file=sys.stderr)
    return results


if __name__ == "__main__":
    sys.exit(main())
