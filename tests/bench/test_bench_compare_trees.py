"""bench/compare_trees.py, the tool that puts two versions of subagents side by side on a
bench workload: it exports each revision's own sources, runs each tree's bench against that
tree's code, and says clearly what it cannot do. It needs ../shared/peer-bench's harness
(beside the clone) and a git checkout; it skips where either is absent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED
from paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "bench"))

import compare_trees  # noqa: E402


def _needs_git_and_peer_bench() -> None:
    if not (SHARED / "peer-bench" / "common.py").is_file():
        pytest.skip(f"peer-bench harness not found at {SHARED / 'peer-bench'}")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: revisions cannot be exported")


def test_a_revision_is_exported_with_its_own_sources(tmp_path: Path) -> None:
    _needs_git_and_peer_bench()
    tree = compare_trees.export("HEAD", tmp_path / "a")
    committed = subprocess.run(
        ["git", "-C", str(ROOT), "show", "HEAD:src/subagents/__init__.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (tree / "src" / "subagents" / "__init__.py").read_text() == committed
    assert (tree / "bench" / "bench_subagents.py").is_file()


def test_the_working_tree_is_copied_as_it_is(tmp_path: Path) -> None:
    tree = compare_trees.export(".", tmp_path / "b")
    here = (ROOT / "src" / "subagents" / "store" / "group.py").read_text()
    assert (tree / "src" / "subagents" / "store" / "group.py").read_text() == here
    assert not list(tree.rglob("__pycache__"))


def test_a_revision_git_does_not_know_is_said_so(tmp_path: Path) -> None:
    _needs_git_and_peer_bench()
    with pytest.raises(compare_trees.CompareError, match="git archive no-such-revision"):
        compare_trees.export("no-such-revision", tmp_path / "a")


def test_a_tree_runs_its_own_subagents(tmp_path: Path) -> None:
    tree = compare_trees.export(".", tmp_path / "b")
    done = subprocess.run(
        [sys.executable, "-c", "import subagents; print(subagents.__file__)"],
        cwd=tree,
        env=compare_trees.bench_env(tree, {}),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(done.stdout.strip()).is_relative_to(tree / "src")


@pytest.mark.slow
def test_two_trees_compared_by_cpu_give_a_figure_each_and_their_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _needs_git_and_peer_bench()
    argv = ["HEAD", ".", "--workload", "w2", "--measure", "cpu", "--rounds", "1", "--iters", "3"]
    assert compare_trees.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    figure = r"median [0-9.]+ ms \(range [0-9.]+-[0-9.]+, 1 rounds\)$"
    assert re.match(r"before \(HEAD\): " + figure, out[0]), out
    assert re.match(r"after \(\.\): " + figure, out[1]), out
    assert re.match(r"after / before: [+-][0-9.]+%$", out[2]), out


def test_a_bad_env_pair_is_refused_with_the_form_it_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert compare_trees.main(["HEAD", ".", "--measure", "cpu", "--env", "NOVALUE"]) == 1
    assert "--env takes NAME=VALUE, not 'NOVALUE'" in capsys.readouterr().err


def test_the_instruction_runs_freeze_the_heap_when_the_bench_collects(tmp_path: Path) -> None:
    """The runner callgrind starts: the script runs as `python SCRIPT ARGS` would (its own
    arguments, its folder first on the path), and its gc.collect() freezes the heap."""
    (tmp_path / "helper.py").write_text("VALUE = 'found'\n")
    script = tmp_path / "script.py"
    script.write_text(
        "import gc, sys\n"
        "from helper import VALUE\n"
        "before = gc.get_freeze_count()\n"
        "gc.collect()\n"
        "print(before, gc.get_freeze_count() > 0, VALUE, sys.argv[1:])\n"
    )
    elsewhere = tmp_path / "elsewhere"  # not the script's folder: that one must be on the path
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", compare_trees._FROZEN_START, str(script), "w2", "--iters", "3"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["0", "True", "found", "['w2',", "'--iters',", "'3']"]
