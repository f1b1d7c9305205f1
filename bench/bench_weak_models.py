"""Delegation on weak models: the success rate of a suite of delegation tasks, before and after.

    python bench/bench_weak_models.py                       # scripted weak models, old vs new
    python bench/bench_weak_models.py --tree new=.          # the current tree only
    python bench/bench_weak_models.py --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-1.5b-instruct --tool-calls schema   # a real endpoint

The suite (``bench/weak_models/tasks.py``) is eight delegation tasks: a workspace whose file
holds a secret word drawn afresh each run, agent files in ``.claude/agents/``, and a prompt
such as "Use the notes-reader subagent to find the secret word in notes.txt, then tell me the
word." A run succeeds when a subagent of the right type was started (its session is in the
store) and the final answer holds the secret.

The model is an OpenAI-compatible server on 127.0.0.1. By default it is scripted: one
policy per misbehaviour of small local models (``bench/weak_models/policies.py``), each
deciding from the request alone (tools offered, errors and notes returned), never from the
version of the code. With ``--base-url`` the same server relays every request to a real
endpoint (Ollama ``http://127.0.0.1:11434/v1``, llama.cpp ``llama-server``
``http://127.0.0.1:8080/v1``, vLLM ``http://127.0.0.1:8000/v1``, LM Studio
``http://127.0.0.1:1234/v1``, OpenAI ``https://api.openai.com/v1`` with ``--api-key-env
OPENAI_API_KEY``) and counts its turns the same way; ``--tool-calls`` sets ``[providers.weak]
tool_calls`` (native, text, schema, auto), ``--tool-descriptions compact`` the short tool
descriptions.

Each tree runs in its own interpreter with ``PYTHONPATH=<tree>/src``: by default "before" is
``--before`` (the commit before issue 10, checked out with ``git worktree add --detach`` into a
temporary folder and removed afterwards) and "after" is this checkout. ``--tree LABEL=PATH``
(repeatable) names the trees instead. Runs go through ``Runtime.run`` with the store on, as
``subagents run`` does; a config key a tree does not know is left out and the row says so.

Results: ``bench/results/weak_models.json`` (every run: success, turns, requests, wall time,
error, and the model's side of the transcript) and a Markdown summary on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
BEFORE_ISSUE_10 = "ca52a202a73d03a1725e2fc3a9b6819c79d395f1"

sys.path.insert(0, str(HERE))

from weak_models.policies import POLICIES, policy_named  # noqa: E402
from weak_models.tasks import TASKS  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH")
    parser.add_argument("--before", default=BEFORE_ISSUE_10, help="commit of the 'before' tree")
    parser.add_argument("--policies", help="comma-separated policy names (default: all)")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument("--base-url", help="a real OpenAI-compatible endpoint instead")
    parser.add_argument("--model", default="weak-model", help="model name at the endpoint")
    parser.add_argument("--api-key-env", help="variable holding the endpoint's API key")
    parser.add_argument("--tool-calls", choices=("native", "text", "schema", "auto"))
    parser.add_argument("--tool-descriptions", choices=("full", "compact"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per task")
    parser.add_argument(
        "--no-stream",
        action="store_true",
        help="ask for whole answers (as `subagents run --json` does); default: streamed, "
        "as `subagents run` does",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "weak_models.json")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.base_url and args.policies:
        parser.error("--policies are scripted models; with --base-url the model is real")
    return args


def driver(args: argparse.Namespace) -> None:
    """Inside one tree's interpreter: run the suite and print the rows as one JSON line."""
    import subagents
    from weak_models.driver import Endpoint, run_suite

    tasks = [task for task in TASKS if not args.tasks or task.name in args.tasks.split(",")]
    common: dict[str, Any] = {
        "model": args.model,
        "tool_calls": args.tool_calls,
        "tool_descriptions": args.tool_descriptions,
        "timeout_seconds": args.timeout,
        "stream": not args.no_stream,
    }
    if args.base_url:
        endpoints = [
            Endpoint(base_url=args.base_url, api_key_env=args.api_key_env, **common),
        ]
    else:
        names = args.policies.split(",") if args.policies else [p.name for p in POLICIES]
        endpoints = [Endpoint(policy=policy_named(name), **common) for name in names]
    rows = run_suite(endpoints, tasks)
    print(json.dumps({"subagents": str(Path(subagents.__file__).parent), "rows": rows}))


def run_tree(label: str, tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    forwarded = _without_tree_values(sys.argv[1:])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(HERE)])}
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--driver", *forwarded],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"the {label} tree ({tree}) failed:\n{completed.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {"label": label, "path": str(tree), "commit": commit, **result}


def _without_tree_values(argv: list[str]) -> list[str]:
    """``argv`` without ``--tree`` (and its value) and ``--driver``."""
    kept: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item == "--tree":
            skip = True
            continue
        if item.startswith("--tree=") or item == "--driver":
            continue
        kept.append(item)
    return kept


def rate(rows: list[dict[str, Any]]) -> str:
    won = sum(row["success"] for row in rows)
    return f"{won}/{len(rows)} ({100 * won / len(rows):.0f}%)" if rows else "-"


def mean(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(row[key] for row in rows) if rows else 0.0


def summary(trees: list[dict[str, Any]]) -> str:
    labels = [tree["label"] for tree in trees]
    policies = list(dict.fromkeys(row["policy"] for tree in trees for row in tree["rows"]))
    lines = [
        "| misbehaviour | "
        + " | ".join(f"{label}: success" for label in labels)
        + " | "
        + " | ".join(f"{label}: turns (mean)" for label in labels)
        + " | "
        + " | ".join(f"{label}: wall s (mean)" for label in labels)
        + " |",
        "|---" * (1 + 3 * len(labels)) + "|",
    ]

    def rows_of(tree: dict[str, Any], policy: str | None) -> list[dict[str, Any]]:
        return [r for r in tree["rows"] if policy is None or r["policy"] == policy]

    for policy in [*policies, None]:
        cells = [rate(rows_of(tree, policy)) for tree in trees]
        cells += [f"{mean(rows_of(tree, policy), 'turns'):.1f}" for tree in trees]
        cells += [f"{mean(rows_of(tree, policy), 'wall_s'):.3f}" for tree in trees]
        name = policy if policy is not None else "**all**"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    about = {policy.name: policy.about for policy in POLICIES}
    if any(name in about for name in policies):
        lines += ["", "What each scripted model does:", ""]
        lines += [f"- {name}: {about[name]}" for name in policies if name in about]
    for tree in trees:
        tasks = list(dict.fromkeys(row["task"] for row in tree["rows"]))
        lines += [
            "",
            f"{tree['label']} ({tree['commit']}), per task: ✓/✗ and model turns",
            "",
            "| misbehaviour | " + " | ".join(tasks) + " |",
            "|---" * (1 + len(tasks)) + "|",
        ]
        for policy in policies:
            by_task = {r["task"]: r for r in rows_of(tree, policy)}
            cells = [
                f"{'✓' if by_task[t]['success'] else '✗'} {by_task[t]['turns']}"
                if t in by_task
                else "-"
                for t in tasks
            ]
            lines.append(f"| {policy} | " + " | ".join(cells) + " |")
        dropped = sorted({d for r in tree["rows"] for d in r["config_dropped"]})
        if dropped:
            lines.append(f"\nLeft out of {tree['label']}'s config.toml: " + "; ".join(dropped))
    for tree in trees:
        for row in rows_of(tree, "looper-never")[:1]:
            lines.append(
                f"\nlooper-never on {tree['label']}, task {row['task']}: {row['turns']} turns, "
                f"status {row['status']}, {row['wall_s']:.2f} s; error: {row['error']}"
            )
    return "\n".join(lines)


def main() -> None:
    args = parse_args()
    if args.driver:
        driver(args)
        return
    trees = [_tree(spec) for spec in args.tree]
    made: Path | None = None
    if not trees:
        made = Path(tempfile.mkdtemp(prefix="wm-before-"))
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(made), args.before],
            check=True,
            capture_output=True,
        )
        trees = [("before", made), ("after", ROOT)]
    try:
        results = []
        for label, path in trees:
            print(f"  {label} ({path}): running", file=sys.stderr)
            results.append(run_tree(label, path, args))
    finally:
        if made is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(made)],
                check=False,
                capture_output=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"trees": results}, indent=1) + "\n")
    print(summary(results))
    print(f"\n(every run: {args.out})")


def _tree(spec: str) -> tuple[str, Path]:
    label, _, path = spec.rpartition("=")
    tree = Path(path).resolve()
    return label or tree.name, tree


if __name__ == "__main__":
    main()
