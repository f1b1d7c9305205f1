"""The CLI on the paths users take, each a fresh process as a user runs it (issue 14):

- ``subagents run --yes "hi"`` against a local OpenAI-compatible server (a separate process on
  127.0.0.1 that answers one text completion), next to a bare SDK script that imports
  ``openai``, makes the same completion and prints it; the goal is on the difference;
- ``subagents agents list`` on the 158 real agent files of the shared corpus (copied into a
  temporary project's ``.claude/agents/``);
- ``subagents tasks list`` on a store of 1,000 tasks (made with the library's own store API);
- ``subagents --help``.

    python bench/bench_cli_paths.py [--runs 9] [--only run,agents,tasks,help] [--json FILE]
        [--before SRC]

Prints the median and p90 of each, against its goal. ``--before SRC`` also times the CLI from
another source tree (``git archive REV src | tar -x -C /tmp/before``, then ``--before
/tmp/before/src``), its runs interleaved with this tree's so that both see the same load.
Everything happens in a temporary directory with its own HOME; the corpus is never copied
into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_server import AnswerHandler, serve, start_server

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(
    os.environ.get("AGENT_CORPUS", ROOT.parent / "shared" / "corpus" / "claude-code-agents")
)
ANSWER = "Hello from the bench server."
MODEL = "bench-model"
TASKS = 1_000

GOALS_MS = {"run overhead": 100.0, "agents list": 250.0, "tasks list": 200.0, "--help": 300.0}

BARE_SCRIPT = """
import openai

client = openai.OpenAI()
reply = client.chat.completions.create(
    model="bench-model", messages=[{"role": "user", "content": "hi"}]
)
print(reply.choices[0].message.content)
"""


# --- the local server (run in its own process: `bench_cli_paths.py --serve`) -------------


def _completion(stream: bool) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-bench", "created": 0, "model": MODEL}
    usage = {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}
    if not stream:
        message = {"role": "assistant", "content": ANSWER}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return [{**base, "object": "chat.completion", "choices": [choice], "usage": usage}]
    chunk = {**base, "object": "chat.completion.chunk"}
    delta = {"role": "assistant", "content": ANSWER}
    return [
        {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**chunk, "choices": [], "usage": usage},
    ]


class _Handler(AnswerHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        stream = bool(request.get("stream"))
        chunks = _completion(stream)
        if stream:
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self.send_answer(body.encode(), "text/event-stream")
        else:
            self.send_answer(json.dumps(chunks[0]).encode(), "application/json")


# --- timing -------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    command: list[str]
    cwd: Path
    expect: str = ""  # text the output must hold (checked once, before timing)
    # a project of its own per environment: another tree may not read this one's store
    cwds: dict[str, Path] = field(default_factory=dict)


def _subagents() -> list[str]:
    script = Path(sys.executable).with_name("subagents")
    return [str(script)] if script.exists() else [sys.executable, "-m", "subagents"]


def _run_once(case: Case, label: str, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall-clock and CPU (user + system) seconds of one run in environment ``label``, and
    its output."""
    cwd = case.cwds.get(label, case.cwd)
    cpu_before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        case.command, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{case.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed, _children_cpu() - cpu_before, done.stdout


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)  # ms
    cpu: list[float] = field(default_factory=list)  # ms


def time_case(case: Case, envs: dict[str, dict[str, str]], runs: int) -> dict[str, Samples]:
    """Each of ``runs`` fresh processes per environment (after two warm-up runs each), the
    environments taking turns."""
    for label, env in envs.items():
        output = _run_once(case, label, env)[2]
        if case.expect not in output:
            raise RuntimeError(f"{case.name}: {case.expect!r} not in the output:\n{output[-2000:]}")
        _run_once(case, label, env)
    samples = {label: Samples() for label in envs}
    for _ in range(runs):
        for label, env in envs.items():
            wall, cpu, _ = _run_once(case, label, env)
            samples[label].wall.append(wall * 1e3)
            samples[label].cpu.append(cpu * 1e3)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# --- set-up -------------------------------------------------------------------------------


def _project(root: Path, name: str) -> Path:
    project = root / name
    (project / ".git").mkdir(parents=True)  # the project root: discovery stops here
    # the bench server answers as a hosted API does (a server on 127.0.0.1 would otherwise
    # get schema-constrained turns)
    (project / ".subagents").mkdir()
    (project / ".subagents" / "config.toml").write_text(
        '[providers.openai]\ntool_calls = "native"\n', encoding="utf-8"
    )
    return project


def _environment(home: Path, port: int) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE would make every process compile what changed since the last
    # .pyc was written: users' processes read their .pyc files
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SUBAGENTS_", "OPENAI_", "ANTHROPIC_"))
        and key != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        HOME=str(home),
        COLUMNS="120",
        OPENAI_API_KEY="sk-bench-not-a-real-key",
        OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
    )
    return env


def _copy_corpus(project: Path) -> int:
    target = project / ".claude" / "agents"
    target.mkdir(parents=True)
    files = sorted(CORPUS.rglob("*.md"))
    for path in files:
        if path.name.lower() != "readme.md":
            shutil.copy(path, target / path.name)
    return len(list(target.glob("*.md")))


def _fill_store_as(env: dict[str, str], project: Path, count: int) -> None:
    """:func:`_fill_store` by the tree ``env`` imports (a store its CLI can read)."""
    command = [sys.executable, __file__, "--fill", str(project), str(count)]
    subprocess.run(command, env=env, check=True)


def _fill_store(project: Path, count: int) -> None:
    from subagents.store import TaskRecord
    from subagents.store.open import open_store

    store = open_store(project / ".subagents" / "state.db")
    try:
        with store.transaction() as tx:
            for index in range(count):
                task = TaskRecord(
                    description=f"Task {index}: review module {index % 37} for bugs",
                    prompt=f"Review src/module_{index % 37}.py and report what you find.",
                    status="completed" if index % 5 else "failed",
                    assigned_agent=None if index % 3 else "code-reviewer",
                    model="openai:gpt-4o-mini",
                    workspace=str(project),
                    result="Looked at it; two issues found.",
                )
                store.create_task(task, tx=tx)
    finally:
        store.close()


def _cases(root: Path, only: set[str], envs: dict[str, dict[str, str]]) -> list[Case]:
    cli = _subagents()
    cases: list[Case] = []
    if "help" in only:
        cases.append(Case("--help", [*cli, "--help"], root, "Usage"))
    if "run" in only:
        project = _project(root, "run")
        (root / "bare.py").write_text(BARE_SCRIPT, encoding="utf-8")
        cases.append(
            Case("bare SDK script", [sys.executable, str(root / "bare.py")], project, ANSWER)
        )
        run = [*cli, "run", "--yes", "--model", f"openai:{MODEL}", "hi"]
        own = {label: _project(root, f"run-{label}") for label in envs}
        cases.append(Case("run", run, project, ANSWER, own))
    if "agents" in only:
        project = _project(root, "agents")
        copied = _copy_corpus(project)
        cases.append(Case(f"agents list ({copied} files)", [*cli, "agents", "list"], project))
    if "tasks" in only:
        own = {label: _project(root, f"tasks-{label}") for label in envs}
        for label, env in envs.items():
            _fill_store_as(env, own[label], TASKS)
        listing = [*cli, "tasks", "list"]
        cases.append(Case(f"tasks list ({TASKS} tasks)", listing, own["now"], "Task", own))
    return cases


# --- report -------------------------------------------------------------------------------


def _goal_line(name: str, value: float) -> str:
    goal = GOALS_MS[name]
    verdict = "OK" if value <= goal else "OVER GOAL"
    return f"goal {name}: {value:.0f} ms <= {goal:.0f} ms -> {verdict}"


def _goal_of(case: str) -> str | None:
    return next((name for name in GOALS_MS if case.startswith(name)), None)


def _medians(results: dict[str, Samples], kind: str) -> dict[str, float]:
    medians = {name: statistics.median(getattr(s, kind)) for name, s in results.items()}
    if "run" in medians and "bare SDK script" in medians:
        medians["run overhead"] = medians["run"] - medians["bare SDK script"]
    return medians


def report(results: dict[str, dict[str, Samples]]) -> dict[str, dict[str, dict[str, float]]]:
    """Print each case's wall-clock median and p90 and its CPU median, per tree, then the
    goals (for this tree); return the medians by tree and kind (wall, cpu)."""
    labels = list(next(iter(results.values())))
    by_label = {label: {case: s[label] for case, s in results.items()} for label in labels}
    medians = {
        label: {kind: _medians(cases, kind) for kind in ("wall", "cpu")}
        for label, cases in by_label.items()
    }
    print(f"{'(ms)':<26}" + "".join(f"{label:>10} wall   p90   cpu" for label in labels))
    for case in [*results, "run overhead"]:
        if case not in medians[labels[0]]["wall"]:
            continue
        cells = []
        for label in labels:
            samples = by_label[label].get(case)
            p90 = f"{percentile(samples.wall, 0.9):6.0f}" if samples else " " * 6
            wall, cpu = medians[label]["wall"][case], medians[label]["cpu"][case]
            cells.append(f"{wall:15.0f}{p90}{cpu:6.0f}")
        print(f"{case:<26}" + "".join(cells))
    for case, value in medians["now"]["wall"].items():
        goal = _goal_of(case)
        if goal is not None:
            print(_goal_line(goal, value))
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9, help="fresh processes per case (>= 7)")
    parser.add_argument("--only", default="help,run,agents,tasks")
    parser.add_argument("--before", type=Path, help="also time the CLI of this source tree")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fill", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fill:
        _fill_store(Path(args.fill[0]), int(args.fill[1]))
        return 0
    if args.serve:
        serve(_Handler)
        return 0
    only = set(args.only.split(","))
    server, port = start_server(__file__)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
            root = Path(tmp)
            (root / "home").mkdir()
            envs = {"now": _environment(root / "home", port)}
            if args.before is not None:
                envs = {"before": {**envs["now"], "PYTHONPATH": str(args.before)}, **envs}
            cases = _cases(root, only, envs)
            results = {case.name: time_case(case, envs, args.runs) for case in cases}
    finally:
        server.terminate()
        server.wait()
    medians = report(results)
    if args.json is not None:
        args.json.write_text(json.dumps(medians, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
