"""Cold discovery + validation of 1,000 agent files.

Generates a temporary project holding N realistic agent files (YAML frontmatter in the styles
real files use, a few KB of Markdown body; some nested, some TOML and JSON, spread over the
agent folders), then runs a fresh Python process per sample. Each child imports the library,
then times one ``Inventory.discover()`` in-process; the figures reported are the median and p90
of that in-process time (goal: < 100 ms for 1,000 files), plus the child's import time.

    python bench/bench_discovery.py [--files 1000] [--samples 15]

"Cold" means a new process (no parser or validation caches); the OS file cache is warm after
the first sample, as it is for a user who runs the command twice.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["generate_project", "main"]

GOAL_MS = 100.0

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from subagents.inventory import Inventory
t1 = time.perf_counter()
inventory = Inventory.discover(Path(sys.argv[1]), home=Path(sys.argv[2]))
t2 = time.perf_counter()
print(json.dumps({
    "import_s": t1 - t0,
    "discover_s": t2 - t1,
    "records": len(inventory.records),
    "active": len(inventory.active()),
    "definitions": len(inventory.definitions),
}))
"""

_TOOL_SETS = [
    "Read, Grep, Glob",
    "Read, Write, Edit, Bash, Glob, Grep",
    "Read, Grep, Glob, WebFetch, WebSearch",
    None,
    "[Read, Edit, Bash]",
]
_MODELS = ["sonnet", "haiku", "opus", "inherit", None, "openai:gpt-4o-mini"]
_COLORS = ["red", "blue", "green", "purple", "orange", None]
_WORDS = [
    "review",
    "code",
    "quality",
    "security",
    "performance",
    "tests",
    "refactor",
    "architecture",
    "database",
    "api",
    "frontend",
    "backend",
    "deploy",
    "monitor",
    "logging",
    "errors",
    "types",
    "docs",
    "schema",
    "migration",
    "cache",
    "queue",
    "latency",
    "throughput",
    "coverage",
    "lint",
    "style",
    "naming",
    "boundaries",
    "contracts",
    "invariants",
]


def _paragraphs(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    total = 0
    while total < size:
        heading = " ".join(rng.choice(_WORDS) for _ in range(3)).title()
        bullets = "\n".join(
            "- " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14)))
            for _ in range(rng.randint(3, 7))
        )
        prose = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(30, 60))) + "."
        block = f"## {heading}\n\n{prose}\n\n{bullets}\n"
        parts.append(block)
        total += len(block)
    return "\n".join(parts)


def _markdown(rng: random.Random, name: str) -> str:
    lines = ["---", f"name: {name}"]
    description = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(12, 30)))
    if rng.random() < 0.5:
        lines.append(f'description: "Use this agent for {description}. Use PROACTIVELY."')
    else:
        lines.append(f"description: Use this agent for {description}.")
    tools = rng.choice(_TOOL_SETS)
    if tools is not None:
        lines.append(f"tools: {tools}")
    model = rng.choice(_MODELS)
    if model is not None:
        lines.append(f"model: {model}")
    color = rng.choice(_COLORS)
    if color is not None:
        lines.append(f"color: {color}")
    lines += [
        "---",
        "",
        f"You are {name}, a specialist.",
        "",
        _paragraphs(rng, rng.randint(2000, 5000)),
    ]
    return "\n".join(lines)


def _codex_toml(rng: random.Random, name: str) -> str:
    body = _paragraphs(rng, rng.randint(1500, 3000)).replace('"""', "'''")
    return (
        f'name = "{name}"\ndescription = "Codex agent for {rng.choice(_WORDS)}."\n'
        f'model = "inherit"\ndeveloper_instructions = """\n{body}\n"""\n'
    )


def _json(rng: random.Random, name: str) -> str:
    return json.dumps(
        {
            "name": name,
            "description": f"JSON agent for {rng.choice(_WORDS)}.",
            "prompt": _paragraphs(rng, rng.randint(1500, 3000)),
            "tools": ["Read", "Grep"],
        }
    )


def generate_project(root: Path, count: int, seed: int = 7) -> Path:
    """Write ``count`` agent files under ``root/project`` (a git repository); return it."""
    rng = random.Random(seed)
    project = root / "project"
    (project / ".git").mkdir(parents=True)
    for index in range(count):
        name = f"agent-{index:04d}"
        roll = rng.random()
        if roll < 0.03:
            path = project / ".codex" / "agents" / f"{name}.toml"
            text = _codex_toml(rng, name)
        elif roll < 0.05:
            path = project / ".subagents" / "agents" / f"{name}.json"
            text = _json(rng, name)
        else:
            folder = ".claude/agents" if roll < 0.85 else ".subagents/agents"
            group = f"group-{index % 10}" if rng.random() < 0.5 else ""
            path = project / folder / group / f"{name}.md"
            text = _markdown(rng, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return project


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="subagents-bench-") as tmp:
        root = Path(tmp)
        project = generate_project(root, args.files)
        home = root / "home"
        home.mkdir()
        size = sum(p.stat().st_size for p in project.rglob("*") if p.is_file())
        discover_ms: list[float] = []
        import_ms: list[float] = []
        result: dict[str, int] = {}
        for _ in range(args.samples + 1):  # the first run warms the file cache; not counted
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(project), str(home)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            data = json.loads(out)
            discover_ms.append(data["discover_s"] * 1e3)
            import_ms.append(data["import_s"] * 1e3)
            result = {k: v for k, v in data.items() if not k.endswith("_s")}
        discover_ms, import_ms = discover_ms[1:], import_ms[1:]

    expected = args.files + 3  # plus the built-ins
    if result.get("active") != expected:
        print(f"unexpected result: {result} (expected {expected} active)", file=sys.stderr)
        return 2
    median = statistics.median(discover_ms)
    verdict = "OK" if median < GOAL_MS * args.files / 1000 else "OVER GOAL"
    print(f"files: {args.files} ({size / 1e6:.1f} MB), samples: {args.samples}, {result}")
    print(
        f"cold Inventory.discover(): median {median:.1f} ms, p90 "
        f"{_percentile(discover_ms, 0.9):.1f} ms, min {min(discover_ms):.1f} ms "
        f"(goal < {GOAL_MS:.0f} ms per 1,000 files) -> {verdict}"
    )
    print(
        f"per file: {median * 1e3 / args.files:.0f} us; child import of subagents.inventory: "
        f"median {statistics.median(import_ms):.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
