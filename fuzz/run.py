"""Fuzz every reader of outside input for a while; report counts and keep reproducers.

    python fuzz/run.py --seconds 600                 # all targets, the time shared equally
    python fuzz/run.py --seconds 60 --targets agent-file,mcp-file
    python fuzz/run.py --replay fuzz/failures/agent-file-0123abcd.md --targets agent-file

Inputs come from :mod:`fuzz.grammar`, seeded with the real agent files of the corpus (found at
``../shared/corpus/claude-code-agents`` beside the clone, or ``--corpus``) when present. A case
fails when the target's property breaks (see :mod:`fuzz.targets`), when it takes longer than
``--slow`` seconds, or, for alias bombs, when it allocates more than ``--max-mb``. Each failure
is written to ``--out`` (``fuzz/failures``): the input itself, and a ``.txt`` with the target,
the seed and the traceback. ``make fuzz FUZZ_SECONDS=600`` runs it.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fuzz.targets import TARGETS, Case, Target  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code-agents"
HANG_SECONDS = 120


class _HangError(Exception):
    pass


@dataclass(slots=True)
class _Tally:
    tried: int = 0
    failures: list[Path] = field(default_factory=list)
    slowest: float = 0.0


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    names = args.targets.split(",") if args.targets else list(TARGETS)
    unknown = [name for name in names if name not in TARGETS]
    if unknown:
        print(f"unknown targets: {', '.join(unknown)} (known: {', '.join(TARGETS)})")
        return 2
    if args.replay:
        return _replay(TARGETS[names[0]], Path(args.replay))
    seeds = _seeds(Path(args.corpus))
    print(f"{len(seeds)} corpus files as seeds; {args.seconds:g} s over {len(names)} targets")
    master = random.Random(args.seed)
    tallies = {name: _Tally() for name in names}
    share = args.seconds / len(names)
    signal.signal(signal.SIGALRM, _on_alarm)
    with tempfile.TemporaryDirectory(prefix="subagents-fuzz-") as scratch:
        for name in names:
            _fuzz(TARGETS[name], seeds, master, share, Path(scratch) / name, args, tallies[name])
    _report(tallies)
    return 1 if any(tally.failures for tally in tallies.values()) else 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=60.0, help="total time budget")
    parser.add_argument("--targets", default="", help=f"comma-separated: {', '.join(TARGETS)}")
    parser.add_argument("--seed", type=int, default=None, help="master seed (default: random)")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="agent files to mutate")
    parser.add_argument("--out", default=str(ROOT / "fuzz" / "failures"), help="reproducers")
    parser.add_argument("--slow", type=float, default=10.0, help="seconds a case may take")
    parser.add_argument("--max-mb", type=float, default=50.0, help="MB an alias bomb may take")
    parser.add_argument("--replay", default="", help="run one saved input against --targets")
    return parser.parse_args(argv)


def _seeds(corpus: Path) -> list[bytes]:
    if not corpus.is_dir():
        return []
    return [path.read_bytes() for path in sorted(corpus.rglob("*.md"))]


def _fuzz(
    target: Target,
    seeds: list[bytes],
    master: random.Random,
    seconds: float,
    workdir: Path,
    args: argparse.Namespace,
    tally: _Tally,
) -> None:
    workdir.mkdir(parents=True)
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        seed = master.getrandbits(64)
        case = target.make(random.Random(seed), seeds)
        problem, elapsed = _run_case(target, case, workdir, args)
        tally.tried += 1
        tally.slowest = max(tally.slowest, elapsed)
        if problem is not None:
            tally.failures.append(_save(Path(args.out), target, case, seed, problem))
            print(f"  {target.name}: FAILURE ({problem.splitlines()[-1][:120]})")
    print(f"{target.name}: {tally.tried} inputs, {len(tally.failures)} failures")


def _run_case(
    target: Target, case: Case, workdir: Path, args: argparse.Namespace
) -> tuple[str | None, float]:
    if case.bomb:
        tracemalloc.start()
    started = time.monotonic()
    signal.alarm(HANG_SECONDS)
    problem: str | None = None
    try:
        target.check(case, workdir)
    except _HangError:
        problem = f"still running after {HANG_SECONDS} s"
    except Exception:
        problem = traceback.format_exc()
    finally:
        signal.alarm(0)
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1] if case.bomb else 0
        if case.bomb:
            tracemalloc.stop()
    if problem is None and elapsed > args.slow:
        problem = f"took {elapsed:.1f} s (more than --slow {args.slow:g} s)"
    if problem is None and peak > args.max_mb * 1e6:
        problem = f"an alias bomb took {peak / 1e6:.0f} MB (more than --max-mb {args.max_mb:g})"
    return problem, elapsed


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _HangError


def _save(out: Path, target: Target, case: Case, seed: int, problem: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(case.data).hexdigest()[:12]
    suffix = case.suffix if case.suffix.startswith(".") else ".bin"
    path = out / f"{target.name}-{digest}{suffix}"
    path.write_bytes(case.data)
    path.with_suffix(path.suffix + ".txt").write_text(
        f"target: {target.name}\nseed: {seed}\ncase suffix: {case.suffix}\n"
        f"replay: python fuzz/run.py --replay {path} --targets {target.name}\n\n{problem}\n"
    )
    return path


def _replay(target: Target, path: Path) -> int:
    suffix = path.suffix if target.name != "export-reader" else _export_suffix(path)
    case = Case(suffix, path.read_bytes(), bomb=b"&b0" in path.read_bytes())
    workdir = Path(tempfile.mkdtemp(prefix="subagents-replay-"))
    try:
        target.check(case, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{target.name}: {path} passes")
    return 0


def _export_suffix(path: Path) -> str:
    details = path.with_suffix(path.suffix + ".txt")
    for line in details.read_text().splitlines():
        if line.startswith("case suffix: "):
            return line.removeprefix("case suffix: ")
    return "task.json"


def _report(tallies: dict[str, _Tally]) -> None:
    print("\ntarget           inputs  failures  slowest")
    for name, tally in tallies.items():
        print(f"{name:<16} {tally.tried:>6}  {len(tally.failures):>8}  {tally.slowest:6.2f} s")
    for tally in tallies.values():
        for path in tally.failures:
            print(f"reproducer: {path}")


if __name__ == "__main__":
    sys.exit(main())
