"""Fuzzing in the normal suite: every reader of outside input, on generated and mutated input.

The generators and properties are the ones ``make fuzz`` runs for longer (``fuzz/``): each
target must return or raise its documented error (ConfigError, StoreError...), never anything
else, and keep its messages short. Here hypothesis draws the seeds, with few examples so the
suite stays fast, a bound on the CPU time each input takes (CPU, not wall time: a loaded
machine must not fail the suite, while a reader that spins still does), and tracemalloc
bounding the memory an alias bomb may take. Agent files are also covered by
test_definitions_properties.py and test_inventory_hypothesis.py (arbitrary text and bytes);
these add the grammar: anchors and aliases, merge keys, deep nesting, numbers PyYAML cannot
convert, mutated real files.
"""

from __future__ import annotations

import random
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from paths import REPO

ROOT = REPO
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fuzz import grammar  # noqa: E402
from fuzz.targets import TARGETS, Case  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code-agents"
# The real corpus beside the clone; the demo project's agents where it is absent.
SEED_FILES = sorted(CORPUS.rglob("*.md"))[:40] or sorted((ROOT / "examples").rglob("agents/*.md"))
SEEDS = [path.read_bytes() for path in SEED_FILES]
BOMB_PEAK_BYTES = 20_000_000

FUZZ = settings(
    max_examples=40,
    deadline=None,  # wall time depends on the machine's load; see cpu_bounded
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # A failure is reported as found, not shrunk nor explained: those run a slow input
    # hundreds of times, under a tracer (one full run spent over ten minutes shrinking a
    # skill file); `make fuzz` is the place to take a found input apart.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
CPU_SECONDS_PER_INPUT = 10.0


@contextmanager
def cpu_bounded(seconds: float = CPU_SECONDS_PER_INPUT) -> Iterator[None]:
    """Fail when the block takes more than ``seconds`` of this thread's CPU time."""
    started = time.thread_time()
    yield
    spent = time.thread_time() - started
    assert spent < seconds, f"one input took {spent:.1f} s of CPU"


def run_target(name: str, rng: random.Random, workdir: Path) -> Case:
    target = TARGETS[name]
    case = target.make(rng, SEEDS)
    if not case.bomb:
        with cpu_bounded():
            target.check(case, workdir)
        return case
    tracemalloc.start()
    try:
        with cpu_bounded():
            target.check(case, workdir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BOMB_PEAK_BYTES, f"an alias bomb took {peak:,} bytes"
    return case


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
@given(rng=st.randoms(use_true_random=False))
@FUZZ
def test_generated_input_never_escapes_the_documented_errors(
    tmp_path: Path, name: str, rng: random.Random
) -> None:
    run_target(name, rng, tmp_path)


@given(rng=st.randoms(use_true_random=False))
@FUZZ
def test_alias_bombs_in_agent_files_take_bounded_memory(tmp_path: Path, rng: random.Random) -> None:
    front = grammar.alias_bomb(rng)
    case = Case(".md", f"---\nname: a\ndescription: d\n{front}\n---\nbody\n".encode(), bomb=True)
    tracemalloc.start()
    try:
        TARGETS["agent-file"].check(case, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BOMB_PEAK_BYTES


@given(rng=st.randoms(use_true_random=False), index=st.integers(0, 39))
@FUZZ
def test_mutated_corpus_files_never_raise(tmp_path: Path, rng: random.Random, index: int) -> None:
    assert SEEDS
    data = grammar.mutate(rng, SEEDS[index % len(SEEDS)])
    TARGETS["agent-file"].check(Case(".md", data), tmp_path)


@given(text=st.text(max_size=300))
@settings(max_examples=150, deadline=None)
def test_arbitrary_text_as_tool_arguments(text: str) -> None:
    with cpu_bounded(5.0):
        TARGETS["tool-arguments"].check(
            Case(".json", text.encode("utf-8", "surrogatepass")), Path()
        )
