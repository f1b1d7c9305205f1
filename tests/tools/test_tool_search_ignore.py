"""Glob, Grep and LS skip what .gitignore, .ignore, info/exclude and hidden-file rules exclude,
as ripgrep does, in a real git repository built in a temporary folder."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin._ignore import MAX_IGNORE_PATTERNS
from subagents.tools.execution import ToolOutcome, execute_tool_call

Run = Callable[..., Coroutine[Any, Any, ToolOutcome]]

_FILES = {
    ".gitignore": "*.log\n.venv/\nbuild/\n/secret_top.py\n*.py[co]\n",
    ".ignore": "generated/\n",
    "app.py": "print('app')  # needle\n",
    "debug.log": "needle in a log\n",
    "keep.log": "needle kept\n",
    "secret_top.py": "needle anchored\n",
    "docs/secret_top.py": "needle not anchored here\n",
    "lib/util.py": "needle util\n",
    "lib/util.pyc": "needle compiled\n",
    "lib/.gitignore": "*.py\n!keep.py\n",
    "lib/keep.py": "needle keep\n",
    "lib/drop.py": "needle drop\n",
    "lib/deep/more.py": "needle deep\n",
    "build/out.py": "needle build\n",
    "generated/gen.py": "needle generated\n",
    ".venv/lib/python3.11/site-packages/pkg/mod.py": "needle venv\n",
    ".env": "needle=hidden\n",
    ".github/workflows/ci.yml": "needle: ci\n",
    "docs/guide.md": "needle docs\n",
    "local_only.txt": "needle excluded\n",
}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, text in _FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "keep.log").touch()
    _git(root, "init", "-q")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("local_only.txt\n")
    # ripgrep's negation: a .gitignore line re-includes what a shallower rule excluded
    with (root / ".gitignore").open("a") as handle:
        handle.write("!keep.log\n")
    return root


def runner(workspace: Path) -> Run:
    registry = ToolRegistry(builtin_tools())
    ctx = ToolContext(workspace=workspace)

    async def call(name: str, **arguments: Any) -> ToolOutcome:
        return await execute_tool_call(ToolCall("call-1", name, arguments), registry, ctx)

    return call


@pytest.fixture
def run(repo: Path) -> Run:
    return runner(repo)


def listed(outcome: ToolOutcome) -> set[str]:
    """The paths a Glob or Grep (files_with_matches) answer names."""
    assert outcome.status == "ok", outcome.message.content
    return {
        line
        for line in outcome.message.content.splitlines()
        if line and not line.startswith(("(", "Found ", "No "))
    }


_VISIBLE = {
    "app.py",
    "keep.log",
    "docs/secret_top.py",
    "lib/keep.py",
    "docs/guide.md",
}


async def test_glob_leaves_out_ignored_and_hidden_files(run: Run) -> None:
    assert listed(await run("Glob", pattern="**/*")) == _VISIBLE


async def test_glob_python_files_leaves_the_venv_out(run: Run) -> None:
    assert listed(await run("Glob", pattern="**/*.py")) == {
        "app.py",
        "docs/secret_top.py",
        "lib/keep.py",
    }


async def test_include_ignored_brings_everything_back_but_git(run: Run, repo: Path) -> None:
    found = listed(await run("Glob", pattern="**/*", include_ignored=True))
    assert found == set(_FILES)
    assert not any(path.startswith(".git/") for path in found)
    venv = ".venv/lib/python3.11/site-packages/pkg/mod.py"
    assert venv in listed(await run("Glob", pattern="**/*.py", include_ignored=True))


async def test_the_result_is_what_git_itself_keeps(run: Run, repo: Path) -> None:
    """Cross-check with git: untracked and not ignored, minus hidden paths and what .ignore
    (which git does not read) leaves out."""
    kept_by_git = set(_git(repo, "ls-files", "--others", "--exclude-standard").splitlines())
    not_hidden = {
        path for path in kept_by_git if not any(p.startswith(".") for p in path.split("/"))
    }
    assert "generated/gen.py" in not_hidden
    assert listed(await run("Glob", pattern="**/*")) == not_hidden - {"generated/gen.py"}


async def test_grep_skips_the_same_files(run: Run) -> None:
    assert listed(await run("Grep", pattern="needle")) == _VISIBLE
    everything = listed(await run("Grep", pattern="needle", include_ignored=True))
    assert everything == set(_FILES) - {".gitignore", ".ignore", "lib/.gitignore"}


async def test_grep_content_mode_shows_no_ignored_line(run: Run) -> None:
    outcome = await run("Grep", pattern="needle", output_mode="content")
    text = outcome.message.content
    assert "needle util" not in text and "needle venv" not in text
    assert "lib/keep.py:1:needle keep" in text


async def test_a_path_the_model_names_is_searched_even_if_ignored(run: Run) -> None:
    venv = await run("Grep", pattern="needle", path=".venv")
    assert listed(venv) == {".venv/lib/python3.11/site-packages/pkg/mod.py"}
    assert listed(await run("Grep", pattern="needle", path="debug.log")) == {"debug.log"}
    github = await run("Glob", pattern=".github/**/*.yml")
    assert listed(github) == {".github/workflows/ci.yml"}
    in_build = await run("Glob", pattern="*.py", path="build")
    assert listed(in_build) == {"build/out.py"}
    venv = await run("LS", path=".venv")
    assert venv.message.content.splitlines() == [".venv/ - 1 entry:", "  lib/"]


async def test_an_empty_answer_says_what_was_skipped(run: Run) -> None:
    outcome = await run("Glob", pattern="**/*.yml")
    text = outcome.message.content
    assert text.startswith("No files match '**/*.yml' in ..")
    assert "ignored or hidden entries skipped, e.g." in text
    assert "include_ignored: true" in text
    grep = await run("Grep", pattern="needle: ci")
    assert "include_ignored: true" in grep.message.content


async def test_ls_leaves_out_ignored_and_hidden_entries_and_counts_them(run: Run) -> None:
    outcome = await run("LS")
    entries = [line.strip() for line in outcome.message.content.splitlines()[1:-1]]
    assert entries == ["docs/", "lib/", "app.py", "keep.log"]
    note = outcome.message.content.splitlines()[-1]
    assert note.startswith("(11 ignored or hidden entries skipped, e.g. ")
    everything = await run("LS", include_ignored=True)
    assert "  .venv/" in everything.message.content.splitlines()
    assert "  .git/" in everything.message.content.splitlines()
    lib = await run("LS", path="lib")
    assert [line.strip() for line in lib.message.content.splitlines()[1:-1]] == [
        "deep/",
        "keep.py",
    ]


async def test_ignored_folders_are_never_entered(
    run: Run, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_scandir = os.scandir

    def recording_scandir(path: Any = ".") -> Any:
        opened.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording_scandir)
    await run("Glob", pattern="**/*.py")
    await run("Grep", pattern="needle")
    assert opened, "the walk did not go through os.scandir"
    entered = {Path(path).relative_to(repo).as_posix() for path in opened}
    assert not {p for p in entered if p.startswith((".venv", "build", "generated", ".git"))}
    assert {"lib", "lib/deep", "docs"} <= entered


async def test_gitignore_applies_outside_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text(".venv/\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "site.py").write_text("x\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "m.py").write_text("x\n")
    (tmp_path / ".ignore").write_text("node_modules\n")
    (tmp_path / "main.py").write_text("x\n")
    outcome = await runner(tmp_path)("Glob", pattern="**/*.py")
    assert listed(outcome) == {"main.py"}


async def test_ignore_files_above_the_workspace_apply_inside_the_repository(
    repo: Path,
) -> None:
    (repo / "lib" / "deep" / "debug.log").write_text("needle\n")  # *.log, from the root
    (repo / "lib" / "deep" / "notes.txt").write_text("needle\n")
    inner = runner(repo / "lib")
    assert listed(await inner("Glob", pattern="**/*")) == {"keep.py", "deep/notes.txt"}


async def test_dot_ignore_overrides_gitignore_in_the_same_folder(repo: Path) -> None:
    (repo / "docs" / ".gitignore").write_text("*.md\n")
    (repo / "docs" / ".ignore").write_text("!guide.md\n")
    (repo / "docs" / "other.md").write_text("x\n")
    found = listed(await runner(repo)("Glob", pattern="docs/*"))
    assert found == {"docs/guide.md", "docs/secret_top.py"}
    (repo / "docs" / ".rgignore").write_text("guide.md\n!other.md\n")  # ripgrep's own, first
    found = listed(await runner(repo)("Glob", pattern="docs/*"))
    assert found == {"docs/other.md", "docs/secret_top.py"}


async def test_a_worktree_reads_the_exclude_file_of_its_repository(repo: Path) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    tree = repo.parent / "tree"
    _git(repo, "worktree", "add", "-q", str(tree))
    (tree / "local_only.txt").write_text("x\n")  # excluded by the main repo's info/exclude
    (tree / "new.txt").write_text("x\n")
    found = listed(await runner(tree)("Glob", pattern="*.txt"))
    assert found == {"new.txt"}


@pytest.mark.slow
async def test_bad_and_oversized_ignore_files_are_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("[z-a]\n*.tmp\n")
    (tmp_path / "a.tmp").write_text("x\n")
    (tmp_path / "b.txt").write_text("x\n")
    outcome = await runner(tmp_path)("Glob", pattern="*")
    assert outcome.status == "ok"
    assert "b.txt" in listed(outcome) and "a.tmp" not in listed(outcome)
    assert "line 1 of .gitignore is not a valid pattern" in outcome.message.content

    (tmp_path / ".gitignore").write_text("".join(f"p{i}\n" for i in range(MAX_IGNORE_PATTERNS + 5)))
    many = await runner(tmp_path)("Glob", pattern="*")
    assert f"only the first {MAX_IGNORE_PATTERNS} apply" in many.message.content


# --- the same answer as git, for any rules --------------------------------------------------------

_TREE = [
    "a.py",
    "b.log",
    "x/a.py",
    "x/b.log",
    "x/y/c.txt",
    "x/build/f.py",
    "y/a.py",
    "y/x/d.md",
    "build/e.py",
    "z/q/r/s.md",
]
_PATTERNS = st.sampled_from(
    [
        "*.py",
        "*.log",
        "!a.py",
        "!*.md",
        "*.md",
        "x/",
        "/x",
        "x",
        "build",
        "build/",
        "/build/",
        "y/**/d.md",
        "**/c.txt",
        "x/*.log",
        "!x/b.log",
        "/a.py",
        "y/x/",
        "x/y/",
        "z/**",
        "!z/q/",
        "**/r",
        "?.py",
        "[ab].*",
        "x/**/c.txt",
        "*.log   ",
        "\\!a.py",
        "!**/f.py",
        "*/build/",
        "**/y",
        "!x/y/",
        "!x/y/c.txt",
        "# comment",
        "",
    ]
)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    root_rules=st.lists(_PATTERNS, max_size=6),
    nested_rules=st.lists(_PATTERNS, max_size=4),
)
def test_glob_keeps_exactly_what_git_keeps(
    tmp_path_factory: pytest.TempPathFactory, root_rules: list[str], nested_rules: list[str]
) -> None:
    root = tmp_path_factory.mktemp("prop")
    for name in _TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    (root / ".gitignore").write_text("\n".join(root_rules) + "\n")
    (root / "x" / ".gitignore").write_text("\n".join(nested_rules) + "\n")
    _git(root, "init", "-q")
    by_git = set(_git(root, "ls-files", "--others", "--exclude-standard").splitlines())
    expected = {path for path in by_git if not any(p.startswith(".") for p in path.split("/"))}
    outcome = asyncio.run(runner(root)("Glob", pattern="**/*"))
    assert outcome.status == "ok"
    assert listed(outcome) == expected, (root_rules, nested_rules)


async def test_an_ignore_file_that_is_a_fifo_or_a_link_outside_is_not_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    os.mkfifo(workspace / ".gitignore")  # opening it would block the walk for ever
    outside = tmp_path / "outside-rules"
    outside.write_text("*.txt\n")
    (workspace / "sub" / ".gitignore").symlink_to(outside)
    (workspace / "a.txt").write_text("x\n")
    (workspace / "sub" / "b.txt").write_text("x\n")
    outcome = await runner(workspace)("Glob", pattern="**/*.txt")
    assert listed(outcome) == {"a.txt", "sub/b.txt"}
    assert ".gitignore is not a regular file inside the project" in outcome.message.content
    assert "sub/.gitignore is not a regular file" in outcome.message.content


async def test_windows_line_ends_and_a_byte_order_mark_are_read_as_git_reads_them(
    tmp_path: Path,
) -> None:
    (tmp_path / ".gitignore").write_bytes(b"\xef\xbb\xbf*.log\r\nbuild/\r\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "x.txt").write_text("x\n")
    (tmp_path / "a.log").write_text("x\n")
    (tmp_path / "b.txt").write_text("x\n")
    assert listed(await runner(tmp_path)("Glob", pattern="**/*")) == {"b.txt"}
