"""Run the benchmarks and print a table of `subagents` against its peers, measured in one run.

    python bench/run.py [--quick] [--peers] [--only w1,w2,w3,scaling,import,discovery,store]
    python bench/run.py --only weak     # delegation on weak models, before and after issue 10

``--peers`` also runs ../shared/peer-bench's scripts with the interpreter named by $PEER_PY
(a venv holding the peer frameworks; see ../shared/peer-bench/README.md). Results go to
bench/results/ (one JSON per framework and workload) and bench/results/report.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEER_BENCH = Path(os.environ.get("PEER_BENCH_DIR", ROOT.parent / "shared" / "peer-bench"))
RESULTS = HERE / "results"
PEERS = {
    "baseline": "bench_baseline.py",
    "pydantic_ai": "bench_pydantic_ai.py",
    "openai_agents": "bench_openai_agents.py",
    "langgraph": "bench_langgraph.py",
    "smolagents": "bench_smolagents.py",
}
IMPORTS = {
    "subagents": "import subagents",
    "subagents (runtime)": "from subagents.runtime.runtime import Runtime",
    "pydantic_ai": "from pydantic_ai import Agent",
    "openai_agents": "from agents import Agent, Runner",
    "langgraph": "from langgraph.prebuilt import create_react_agent",
    "smolagents": "from smolagents import ToolCallingAgent",
}


def run_json(
    python: str, script: Path, *args: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    completed = subprocess.run(
        [python, str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCH_NO_SAVE": "1", **(env or {})},
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{script.name} {' '.join(args)} failed:\n{completed.stderr[-2000:]}")
    row = json.loads(completed.stdout.strip().splitlines()[-1])
    assert isinstance(row, dict)
    return row


def frameworks(with_peers: bool, variants: bool = False) -> list[tuple[str, str, Path]]:
    ours = [("subagents", sys.executable, HERE / "bench_subagents.py")]
    if variants:  # the same workload with the tool declared as a user may declare it
        ours += [
            ("subagents (tool run inline)", sys.executable, HERE / "bench_subagents.py"),
            ("subagents (async def tool)", sys.executable, HERE / "bench_subagents.py"),
        ]
    if not with_peers:
        return ours
    peer_python = os.environ.get("PEER_PY")
    if not peer_python:
        raise SystemExit(
            "--peers needs PEER_PY: the python of a venv with the peers "
            "(see ../shared/peer-bench/README.md)"
        )
    return ours + [(name, peer_python, PEER_BENCH / script) for name, script in PEERS.items()]


_VARIANT_ENV = {"subagents (tool run inline)": "inline", "subagents (async def tool)": "async"}


def workload_rows(
    workload: str,
    with_peers: bool,
    iters: list[str],
    env: dict[str, str] | None = None,
    *,
    variants: bool = False,
) -> dict[str, dict[str, Any]]:
    rows = {}
    for name, python, script in frameworks(with_peers, variants):
        variant_env = {**(env or {}), "BENCH_TOOL": _VARIANT_ENV.get(name, "thread")}
        rows[name] = run_json(python, script, workload, *iters, env=variant_env)
        print(f"  {workload} {name}: done", file=sys.stderr)
    return rows


def import_time(python: str, statement: str, samples: int = 7) -> float:
    walls = []
    for _ in range(samples + 1):
        started = time.perf_counter()
        subprocess.run([python, "-c", statement], check=True)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls[1:]) * 1000


def row(*cells: object) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def ratio(ours: float, theirs: float) -> str:
    return f"{theirs / ours:.1f}x" if ours > 0 else "-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--only", default="w1,w2,w3,scaling,import")
    args = parser.parse_args()
    wanted = set(args.only.split(","))
    RESULTS.mkdir(exist_ok=True)
    lines: list[str] = []
    w1_iters = ["--iters", "200", "--warmup", "20"] if args.quick else []
    if "w1" in wanted:
        rows = workload_rows("w1", args.peers, w1_iters, variants=True)
        ours = rows["subagents"]["cpu_per_model_turn_us"]
        lines += [
            "## W1 tool loop (20 tool turns): framework CPU per model turn",
            "",
            "The workload's tool is a plain `def`. `subagents` runs such a tool in a worker "
            "thread by default, since it may block; the variants declare the same tool "
            "`@tool(run_in_thread=False)` or `async def`.",
            "",
            "| framework | CPU µs / turn (median) | wall µs / turn | slower than subagents by |",
            "|---|---|---|---|",
        ]
        for name, result in rows.items():
            cpu = result["cpu_per_model_turn_us"]
            lines.append(
                row(name, f"{cpu:.0f}", f"{result['per_model_turn_us']:.0f}", ratio(ours, cpu))
            )
        lines.append("")
    if "scaling" in wanted:
        lines += [
            "## W1 at 5 / 20 / 50 turns: CPU µs per model turn (flat: history does not slow it)",
            "",
            "| framework | 5 | 20 | 50 |",
            "|---|---|---|---|",
        ]
        table: dict[str, list[str]] = {}
        for steps in (5, 20, 50):
            rows = workload_rows(
                "w1",
                args.peers,
                ["--iters", "60", "--warmup", "5"],
                env={"W1_STEPS": str(steps)},
                variants=True,
            )
            for name, result in rows.items():
                per_turn = result["cpu_median_ms"] * 1e3 / (steps + 1)
                table.setdefault(name, []).append(f"{per_turn:.0f}")
        lines += [row(name, *cells) for name, cells in table.items()] + [""]
    if "w2" in wanted:
        rows = workload_rows(
            "w2", args.peers, ["--iters", "300", "--warmup", "30"] if args.quick else []
        )
        ours = rows["subagents"]["cpu_median_ms"]
        lines += [
            "## W2 delegation round trip (parent -> subagent with 3 tool steps -> parent)",
            "",
            "| framework | CPU ms (median) | wall ms (median) | slower than subagents by |",
            "|---|---|---|---|",
        ]
        for name, result in rows.items():
            cpu = result["cpu_median_ms"]
            lines.append(row(name, f"{cpu:.3f}", f"{result['median_ms']:.3f}", ratio(ours, cpu)))
        lines.append("")
    if "w3" in wanted:
        rows = workload_rows("w3", args.peers, [])
        ours = rows["subagents"]["median_ms"]
        lines += [
            "## W3 fan-out: 100 subagents at once, 2 model calls of 50 ms each (floor 100 ms)",
            "",
            "| framework | wall ms (median) | runs | slower than subagents by |",
            "|---|---|---|---|",
        ]
        for name, result in rows.items():
            each = ", ".join(f"{x:.0f}" for x in result["wall_ms_each"])
            wall = result["median_ms"]
            lines.append(row(name, f"{wall:.0f}", each, ratio(ours, wall)))
        lines.append("")
    if "import" in wanted:
        lines += [
            "## Import time (fresh interpreter, median of 7)",
            "",
            "| what | ms |",
            "|---|---|",
        ]
        lines.append(row("python -c pass", f"{import_time(sys.executable, 'pass'):.0f}"))
        for name, statement in IMPORTS.items():
            if not name.startswith("subagents") and not args.peers:
                continue
            python = sys.executable if name.startswith("subagents") else os.environ["PEER_PY"]
            lines.append(row(name, f"{import_time(python, statement):.0f}"))
        lines.append("")
    if "weak" in wanted:  # about two minutes: the suite on the commit before issue 10 and now
        completed = subprocess.run(
            [sys.executable, str(HERE / "bench_weak_models.py")],
            capture_output=True,
            text=True,
            check=True,
        )
        lines += [
            "## Delegation on weak models: success before / after issue 10",
            "",
            completed.stdout.strip(),
            "",
        ]
    report = "\n".join(lines)
    (RESULTS / "report.md").write_text(report + "\n")
    print(report)


if __name__ == "__main__":
    main()
