"""Run the benchmarks and print a table of `subagents` against its peers, measured in one run.

    python bench/run.py [--quick] [--peers] [--only w1,w2,w3,scaling,import]
    python bench/run.py --peers --only headline   # issue 14's table, store off / on, 5-8 min
    python bench/run.py --only sdk      # W1 through the OpenAI SDK (bench_sdk_path.py), ~20 s
    python bench/run.py --only weak     # delegation on weak models, before and after issue 10

``--peers`` also runs ../shared/peer-bench's scripts with the interpreter named by $PEER_PY
(a venv holding the peer frameworks; see ../shared/peer-bench/README.md), and with
``headline`` also ``bench/peer_langgraph_durable.py`` (LangGraph with its SQLite
checkpointer). ``headline`` always runs ``bench/floor_durable.py`` (the durable floor: a
hand-written loop with the store's commits and nothing else), and the SDK path section too.
The report goes to bench/results/report.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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


# ../shared/peer-bench's scripts take W3's fan-out from `common.W3_FANOUT`, a constant (100):
# this runs a script with that constant set from $W3_FANOUT first, as bench_subagents.py reads it.
_FANOUT_SHIM = """
import os, runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
import common
common.W3_FANOUT = int(os.environ.get("W3_FANOUT", common.W3_FANOUT))
runpy.run_path(script, run_name="__main__")
"""


class BenchFailed(RuntimeError):
    """A bench script exited with an error; ``summary`` is the error's line."""

    def __init__(self, message: str, summary: str) -> None:
        super().__init__(message)
        self.summary = summary


def _error_line(stderr: str, returncode: int) -> str:
    """The line that names the error: a traceback's last unindented line, else the last one."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    unindented = [line for line in stderr.splitlines() if line and not line[0].isspace()]
    if unindented and not unindented[-1].startswith("Traceback"):
        return unindented[-1].strip()
    return lines[-1] if lines else f"exit code {returncode}"


def run_json(
    python: str,
    script: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    fanout_shim: bool = False,
) -> dict[str, Any]:
    command = [python, "-c", _FANOUT_SHIM] if fanout_shim else [python]
    try:
        completed = subprocess.run(
            [*command, str(script), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "BENCH_NO_SAVE": "1", **(env or {})},
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as error:
        summary = f"timed out after {error.timeout:.0f} s"
        raise BenchFailed(f"{script.name} {' '.join(args)}: {summary}", summary) from None
    if completed.returncode != 0:
        raise BenchFailed(
            f"{script.name} {' '.join(args)} failed:\n{completed.stderr[-2000:]}",
            _error_line(completed.stderr, completed.returncode),
        )
    try:
        row = json.loads(completed.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        summary = "no JSON result on stdout"
        raise BenchFailed(f"{script.name} {' '.join(args)}: {summary}", summary) from None
    assert isinstance(row, dict)
    return row


def peers_python() -> str:
    """The interpreter of the peers' venv ($PEER_PY), which ``--peers`` needs."""
    peer_python = os.environ.get("PEER_PY")
    if not peer_python:
        raise SystemExit(
            "--peers needs PEER_PY: the python of a venv with the peers "
            "(see ../shared/peer-bench/README.md)"
        )
    return peer_python


def frameworks(with_peers: bool, variants: bool = False) -> list[tuple[str, str, Path]]:
    ours = [("subagents", sys.executable, HERE / "bench_subagents.py")]
    if variants:  # the same workload with the tool declared as a user may declare it
        ours += [
            ("subagents (tool run inline)", sys.executable, HERE / "bench_subagents.py"),
            ("subagents (async def tool)", sys.executable, HERE / "bench_subagents.py"),
        ]
    if not with_peers:
        return ours
    peer_python = peers_python()
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
        variant_env = {**(env or {}), "BENCH_TOOL": _VARIANT_ENV.get(name, "default")}
        rows[name] = run_json(python, script, workload, *iters, env=variant_env)
        print(f"  {workload} {name}: done", file=sys.stderr)
    return rows


@dataclass(frozen=True)
class Column:
    """One column of the headline table: a framework run as one script."""

    name: str
    python: str
    script: Path
    env: tuple[tuple[str, str], ...] = ()
    fanout_shim: bool = False


@dataclass(frozen=True)
class HeadlineRow:
    """One row of the headline table: a workload and the figure read from its JSON."""

    label: str
    workload: str
    fanout: int | None
    field: str
    digits: int
    iters: tuple[str, ...]
    runs: str  # the iteration counts, as the note under the table says them


DURABLE_PEER = "langgraph + SQLite checkpointer"
DURABLE_FLOOR = "durable floor"
HEADLINE_TIMEOUT_S = 240.0  # per script: a peer that hangs costs 4 minutes, not the run


def headline_columns(with_peers: bool) -> list[Column]:
    ours = HERE / "bench_subagents.py"
    columns = [
        Column("store off", sys.executable, ours, (("BENCH_STORE", "off"),)),
        Column("store on (default)", sys.executable, ours, (("BENCH_STORE", "on"),)),
        Column(DURABLE_FLOOR, sys.executable, HERE / "floor_durable.py"),
    ]
    if not with_peers:
        return columns
    peer_python = peers_python()
    columns += [
        Column(name, peer_python, PEER_BENCH / script, fanout_shim=True)
        for name, script in PEERS.items()
    ]
    return [*columns, Column(DURABLE_PEER, peer_python, HERE / "peer_langgraph_durable.py")]


def headline_rows(quick: bool) -> list[HeadlineRow]:
    w1, w1_warm, w2, w2_warm, w3, w3_500 = (30, 5, 30, 5, 3, 2) if quick else (60, 6, 100, 10, 5, 3)
    return [
        HeadlineRow(
            "W1 CPU µs / model turn",
            "w1",
            None,
            "cpu_per_model_turn_us",
            0,
            ("--iters", str(w1), "--warmup", str(w1_warm)),
            f"W1 {w1} timed runs after {w1_warm} warm-up, 21 model turns each",
        ),
        HeadlineRow(
            "W2 CPU ms / delegation",
            "w2",
            None,
            "cpu_median_ms",
            2,
            ("--iters", str(w2), "--warmup", str(w2_warm)),
            f"W2 {w2} after {w2_warm}",
        ),
        HeadlineRow(
            "W3 wall ms, 100 subagents",
            "w3",
            100,
            "median_ms",
            0,
            ("--iters", str(w3)),
            f"W3 at 100 {w3} after 1",
        ),
        HeadlineRow(
            "W3 wall ms, 500 subagents",
            "w3",
            500,
            "median_ms",
            0,
            ("--iters", str(w3_500)),
            f"W3 at 500 {w3_500} after 1",
        ),
    ]


def headline_cell(value: float | str, digits: int) -> str:
    return value if isinstance(value, str) else f"{value:,.{digits}f}"


def headline_ratio(ours: float | str, theirs: float | str) -> str:
    if isinstance(ours, str) or isinstance(theirs, str) or ours <= 0:
        return "-"
    share = theirs / ours
    return f"{share:.2f}x" if share < 1 else f"{share:.1f}x"


def measure_headline(
    rows: list[HeadlineRow], columns: list[Column]
) -> dict[str, dict[str, float | str]]:
    """Each row's figure for each column (a number, or "failed: <error>")."""
    table: dict[str, dict[str, float | str]] = {}
    for spec in rows:
        cells = table.setdefault(spec.label, {})
        for column in columns:
            env = {"BENCH_TOOL": "default", **dict(column.env)}
            if spec.fanout is not None:
                env["W3_FANOUT"] = str(spec.fanout)
            started = time.perf_counter()
            try:
                result = run_json(
                    column.python,
                    column.script,
                    spec.workload,
                    *spec.iters,
                    env=env,
                    timeout=HEADLINE_TIMEOUT_S,
                    fanout_shim=column.fanout_shim,
                )
                cells[column.name] = float(result[spec.field])
                outcome = "done"
            except (BenchFailed, KeyError, TypeError, ValueError) as error:
                summary = error.summary if isinstance(error, BenchFailed) else repr(error)
                outcome = "failed: " + summary.replace("|", "/")[:120]
                cells[column.name] = outcome
            elapsed = time.perf_counter() - started
            print(f"  {spec.label} {column.name}: {outcome} ({elapsed:.0f} s)", file=sys.stderr)
    return table


def calibration() -> str:
    """../shared/peer-bench/calibrate.py's line: a fixed loop's wall and CPU ms (~0.5 s)."""
    try:
        completed = subprocess.run(
            [sys.executable, str(PEER_BENCH / "calibrate.py")],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"failed: {error}"
    return completed.stdout.strip()


def load_average() -> str:
    return " / ".join(f"{load:.2f}" for load in os.getloadavg())


def source_of_subagents() -> str:
    completed = subprocess.run(
        [sys.executable, "-c", "import subagents; print(subagents.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    head = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h"],
        capture_output=True,
        text=True,
        check=False,
    )
    where = Path(completed.stdout.strip()).parent if completed.returncode == 0 else "?"
    return f"`subagents` from {where} (HEAD {head.stdout.strip() or '?'})"


def headline(with_peers: bool, quick: bool) -> list[str]:
    """Issue 14's table: W1-W3 with the store off and on, peers beside, in one run."""
    started = time.perf_counter()
    load_start, calibration_start = load_average(), calibration()
    rows, columns = headline_rows(quick), headline_columns(with_peers)
    table = measure_headline(rows, columns)
    load_end, calibration_end = load_average(), calibration()
    names = [column.name for column in columns]
    lines = [
        "## Headline (issue 14): store off / on, peers beside, one run",
        "",
        "`Runtime.run`, the tool a plain `def` under `@tool` (`BENCH_TOOL=default`), "
        "`BENCH_STORE=off|on` (on: a SQLite store, as `subagents run` has). The peers from "
        "../shared/peer-bench persist nothing; the last column is LangGraph with its SQLite "
        "checkpointer (`bench/peer_langgraph_durable.py`), the durable peer. The durable floor "
        "(`bench/floor_durable.py`) is a hand-written loop that writes only what a crash-safe "
        "run needs, one SQLite INSERT per write, as our store does: what any durable framework "
        "pays here. Medians; the "
        "ratio rows are each column / subagents with the store on (peer / ours: above 1, "
        "the peer costs more).",
        "",
        row("row", *names),
        "|---" * (len(names) + 1) + "|",
    ]
    for spec in rows:
        cells = table[spec.label]
        ours = cells["store on (default)"]
        lines.append(row(spec.label, *(headline_cell(cells[name], spec.digits) for name in names)))
        lines.append(
            row("  ÷ subagents (store on)", *(headline_ratio(ours, cells[name]) for name in names))
        )
    elapsed = time.perf_counter() - started
    lines += [
        "",
        f"- Iterations: {'; '.join(spec.runs for spec in rows)}.",
        f"- Load average (1 / 5 / 15 min) on {os.cpu_count()} cores: "
        f"start {load_start}, end {load_end}.",
        f"- Calibration (../shared/peer-bench/calibrate.py): start: {calibration_start}; "
        f"end: {calibration_end}.",
        f"- {source_of_subagents()}; {len(rows) * len(columns)} scripts in {elapsed:.0f} s.",
        "",
    ]
    return lines


def sdk_path(quick: bool) -> list[str]:
    """W1 through the OpenAI SDK against a local server (bench_sdk_path.py), 20 tool rounds."""
    iters, warmup = ("8", "2") if quick else ("20", "3")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "sdk.json"
        try:
            completed = subprocess.run(
                [
                    sys.executable,
                    str(HERE / "bench_sdk_path.py"),
                    "--turns",
                    "20",
                    "--iters",
                    iters,
                    "--warmup",
                    warmup,
                    "--json",
                    str(out),
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            if completed.returncode != 0:
                failure = _error_line(completed.stderr, completed.returncode)
            else:
                results = json.loads(out.read_text(encoding="utf-8"))["20"]
                failure = ""
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as error:
            failure = repr(error)
    lines = [
        "## W1 through the OpenAI SDK (bench/bench_sdk_path.py): CPU µs per model turn",
        "",
        "A local Chat Completions server in its own process, 20 tool rounds, "
        f"{iters} timed runs after {warmup} warm-up, the clients taking turns run by run.",
        "",
    ]
    if failure:
        return [*lines, f"failed: {failure}", ""]
    lines += ["| client | CPU µs / turn | ÷ bare post |", "|---|---|---|"]
    bare = float(results["bare post"])
    for name, value in results.items():
        lines.append(row(name, f"{float(value):,.0f}", f"{float(value) / bare:.2f}x"))
    return [*lines, ""]


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
    if "headline" in wanted:
        wanted.add("sdk")
    RESULTS.mkdir(exist_ok=True)
    lines: list[str] = []
    if "headline" in wanted:
        lines += headline(args.peers, args.quick)
    if "sdk" in wanted:
        lines += sdk_path(args.quick)
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
