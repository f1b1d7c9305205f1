"""How well and how fast `subagents suggest` picks an agent for a prompt.

    python bench/bench_suggest.py [--tune] [--misses]

Over the 158 real Claude Code agents in ``../shared/corpus/claude-code-agents`` and the
hand-written prompts in ``bench/suggest/labelled.jsonl`` (each with the agent names that would
be right for it): top-1 and top-3 accuracy, how often :func:`subagents.suggest.standout` fires
and how often it is right when it does, and the time to rank one prompt (index cached, as in a
session) and to build the index (first prompt of an inventory).

``--tune`` prints the standout rule's precision and firing rate over a grid of its two
numbers; ``--misses`` lists the prompts whose right agent is not in the top 3.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from subagents.definitions import parse_agent_file
from subagents.definitions.model import AgentDefinition
from subagents.suggest import Suggestion, rank_agents, standout

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code-agents"
LABELLED = Path(__file__).resolve().parent / "suggest" / "labelled.jsonl"


@dataclass(frozen=True, slots=True)
class Case:
    prompt: str
    expected: frozenset[str]


def load_cases(path: Path = LABELLED) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            cases.append(Case(prompt=row["prompt"], expected=frozenset(row["expected"])))
    return cases


def load_corpus(folder: Path = CORPUS) -> list[AgentDefinition]:
    return [parse_agent_file(path) for path in sorted(folder.rglob("*.md"))]


def rule(ranked: Sequence[Suggestion], min_score: float, ratio: float) -> Suggestion | None:
    """The standout rule with its numbers as parameters, for the grid."""
    if not ranked or ranked[0].score < min_score:
        return None
    if len(ranked) > 1 and ranked[0].score < ratio * ranked[1].score:
        return None
    return ranked[0]


def report(cases: list[Case], agents: list[AgentDefinition], *, misses: bool) -> None:
    ranked = [rank_agents(case.prompt, agents, limit=5) for case in cases]
    top1 = sum(bool(r) and r[0].name in c.expected for c, r in zip(cases, ranked, strict=True))
    top3 = sum(any(s.name in c.expected for s in r[:3]) for c, r in zip(cases, ranked, strict=True))
    offers = [(c, standout(r)) for c, r in zip(cases, ranked, strict=True)]
    fired = [(c, s) for c, s in offers if s is not None]
    right = sum(s.name in c.expected for c, s in fired)
    n = len(cases)
    covered = len({name for case in cases for name in case.expected})
    print(f"agents: {len(agents)}  prompts: {n}  distinct expected agents: {covered}")
    print(f"top-1 accuracy: {top1}/{n} = {top1 / n:.1%}")
    print(f"top-3 accuracy: {top3}/{n} = {top3 / n:.1%}")
    precision = f"{right / len(fired):.1%}" if fired else "n/a"
    print(
        f"standout fires: {len(fired)}/{n} = {len(fired) / n:.1%}; right when it fires: "
        f"{right}/{len(fired)} = {precision}"
    )
    if misses:
        for case, r in zip(cases, ranked, strict=True):
            if not any(s.name in case.expected for s in r[:3]):
                got = ", ".join(f"{s.name} {s.score:.1f}" for s in r[:3])
                print(f"  miss: {case.prompt!r} want {sorted(case.expected)} got [{got}]")
        for case, s in fired:
            if s is not None and s.name not in case.expected:
                print(f"  wrong offer: {case.prompt!r} -> {s.name} {s.score:.1f}")


def tune(cases: list[Case], agents: list[AgentDefinition]) -> None:
    ranked = [rank_agents(case.prompt, agents, limit=5) for case in cases]
    print("min_score ratio  fires  right  precision")
    for min_score in (0.5, 0.7, 0.85, 1.0, 1.25, 1.5):
        for ratio in (1.0, 1.2, 1.35, 1.5, 1.75, 2.0):
            fired = [(c, rule(r, min_score, ratio)) for c, r in zip(cases, ranked, strict=True)]
            hits = [(c, s) for c, s in fired if s is not None]
            right = sum(s.name in c.expected for c, s in hits)
            precision = right / len(hits) if hits else 0.0
            print(f"{min_score:9.2f} {ratio:5.2f} {len(hits):6d} {right:6d} {precision:10.1%}")


def timing(cases: list[Case], agents: list[AgentDefinition]) -> None:
    from subagents import suggest

    builds = []
    for _ in range(20):
        suggest._cache.clear()
        start = time.perf_counter()
        rank_agents("warm up the index", agents)
        builds.append(time.perf_counter() - start)
    per_prompt = []
    for _ in range(20):
        for case in cases:
            start = time.perf_counter()
            rank_agents(case.prompt, agents)
            per_prompt.append(time.perf_counter() - start)
    long_prompt = " ".join(case.prompt for case in cases) * 20  # ~10k chars after the cap
    start = time.perf_counter()
    rank_agents(long_prompt, agents)
    long_time = time.perf_counter() - start
    per_prompt.sort()
    print(f"index build ({len(agents)} agents): median {statistics.median(builds) * 1e3:.2f} ms")
    print(
        f"rank one prompt (cached index): median {statistics.median(per_prompt) * 1e3:.3f} ms,"
        f" p99 {per_prompt[int(len(per_prompt) * 0.99)] * 1e3:.3f} ms"
    )
    print(f"rank a 10k-char prompt: {long_time * 1e3:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tune", action="store_true", help="print the standout rule grid")
    parser.add_argument("--misses", action="store_true", help="list the top-3 misses")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"agent corpus not found at {CORPUS}")
    agents = load_corpus()
    cases = load_cases()
    report(cases, agents, misses=args.misses)
    if args.tune:
        tune(cases, agents)
    timing(cases, agents)


if __name__ == "__main__":
    main()
