"""Glob, Grep and LS on a real temporary project."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin.glob import MAX_GLOB_RESULTS
from subagents.tools.execution import ToolOutcome, execute_tool_call

Run = Callable[..., Awaitable[ToolOutcome]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files = {
        "README.md": "# Demo\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    # todo: more\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    return 42\n",
        "src/web/index.ts": "export const x = 1; // TODO\n",
        "src/web/view.tsx": "export default function View() { return null }\n",
        ".git/config": "TODO in git internals\n",
        "notes/old.txt": "TODO old note\n",
    }
    for index, (name, text) in enumerate(files.items()):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (1_000_000 + index * 100, 1_000_000 + index * 100))
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0TODO")
    return tmp_path


@pytest.fixture
def run(project: Path) -> Run:
    registry = ToolRegistry(builtin_tools())
    ctx = ToolContext(workspace=project)

    async def call(name: str, **arguments: Any) -> ToolOutcome:
        return await execute_tool_call(ToolCall("call-1", name, arguments), registry, ctx)

    return call


def lines(outcome: ToolOutcome) -> list[str]:
    assert outcome.status == "ok", outcome.message.content
    return outcome.message.content.splitlines()


# --- Glob -------------------------------------------------------------------------------------


async def test_glob_lists_matches_newest_first(run: Run) -> None:
    assert lines(await run("Glob", pattern="**/*.py")) == [
        "src/util.py",
        "src/app.py",
        "(2 files in .)",
    ]


async def test_glob_braces_and_path(run: Run) -> None:
    found = lines(await run("Glob", pattern="*.{ts,tsx}", path="src/web"))
    assert found[:2] == ["src/web/view.tsx", "src/web/index.ts"]


async def test_glob_star_stays_in_one_folder_and_names_what_subfolders_hold(run: Run) -> None:
    assert lines(await run("Glob", pattern="*.md")) == ["README.md", "(1 file in .)"]
    assert lines(await run("Glob", pattern="*.py")) == [
        "No files match '*.py' in ..",
        "(`*` stays within one folder: 2 files in subfolders match '**/*.py': src/app.py, "
        "src/util.py)",
    ]
    assert lines(await run("Glob", pattern="src/*.ts*")) == [
        "No files match 'src/*.ts*' in ..",
        "(`*` stays within one folder: 2 files in subfolders match 'src/**/*.ts*': "
        "src/web/index.ts, src/web/view.tsx)",
    ]
    # a pattern that already reaches down, or names one file, has no such note
    assert lines(await run("Glob", pattern="src/**/*.py"))[-1] == "(2 files in .)"
    assert lines(await run("Glob", pattern="app.py")) == ["No files match 'app.py' in .."]


async def test_glob_accepts_an_absolute_pattern_inside(run: Run, project: Path) -> None:
    found = lines(await run("Glob", pattern=f"{project}/src/**/*.ts"))
    assert found[0] == "src/web/index.ts"


async def test_glob_skips_vcs_folders(run: Run) -> None:
    found = lines(await run("Glob", pattern="**/config"))
    assert found == ["No files match '**/config' in .."]


async def test_glob_caps_results_honestly(run: Run, project: Path) -> None:
    for index in range(MAX_GLOB_RESULTS + 5):
        (project / "many" / f"f{index:03}.txt").parent.mkdir(exist_ok=True)
        (project / "many" / f"f{index:03}.txt").write_text("x")
    found = lines(await run("Glob", pattern="many/*.txt"))
    assert len(found) == MAX_GLOB_RESULTS + 1
    assert f"showing the first {MAX_GLOB_RESULTS} of {MAX_GLOB_RESULTS + 5}" in found[-1]


async def test_glob_errors(run: Run) -> None:
    outside = await run("Glob", pattern="*", path="..")
    not_dir = await run("Glob", pattern="*", path="README.md")
    assert outside.status == "error" and "outside the workspace" in outside.message.content
    assert not_dir.status == "error" and "not a directory" in not_dir.message.content


# --- Grep -------------------------------------------------------------------------------------


async def test_grep_files_with_matches_is_the_default(run: Run) -> None:
    assert lines(await run("Grep", pattern="TODO")) == [
        "Found 3 files",
        "notes/old.txt",
        "src/web/index.ts",
        "README.md",
    ]


async def test_grep_case_insensitive_uses_the_dash_i_key(run: Run) -> None:
    found = lines(await run("Grep", pattern="todo", **{"-i": True}))
    assert found[0] == "Found 4 files"
    assert "src/app.py" in found


async def test_grep_content_with_line_numbers_and_context(run: Run) -> None:
    found = lines(
        await run(
            "Grep", pattern="return", path="src", glob="*.py", output_mode="content", **{"-B": 1}
        )
    )
    assert found == [
        "src/app.py-4-    # todo: more",
        "src/app.py:5:    return os.getcwd()",
        "src/util.py-1-def helper():",
        "src/util.py:2:    return 42",
    ]


async def test_grep_context_groups_are_separated(run: Run, project: Path) -> None:
    (project / "gaps.txt").write_text("hit\na\nb\nc\nd\nhit\ne\n")
    found = lines(
        await run("Grep", pattern="hit", path="gaps.txt", output_mode="content", **{"-C": 1})
    )
    assert found == [
        "gaps.txt:1:hit",
        "gaps.txt-2-a",
        "--",
        "gaps.txt-5-d",
        "gaps.txt:6:hit",
        "gaps.txt-7-e",
    ]


async def test_grep_content_without_line_numbers(run: Run) -> None:
    found = lines(await run("Grep", pattern="helper", output_mode="content", **{"-n": False}))
    assert found == ["src/util.py:def helper():"]


async def test_grep_count_mode(run: Run) -> None:
    found = lines(
        await run("Grep", pattern="return|import", path="src", glob="*.py", output_mode="count")
    )
    assert found[0] == "Found 3 matches in 2 files"
    assert set(found[1:]) == {"src/app.py:2", "src/util.py:1"}


async def test_grep_glob_and_type_filters(run: Run) -> None:
    by_glob = lines(await run("Grep", pattern="export", glob="src/**/*.{ts,tsx}"))
    by_type = lines(await run("Grep", pattern="export", type="ts"))
    excluded = lines(await run("Grep", pattern="TODO", glob="!*.md"))
    assert by_glob[0] == by_type[0] == "Found 2 files"
    assert "README.md" not in excluded


async def test_grep_multiline(run: Run) -> None:
    found = lines(
        await run(
            "Grep", pattern=r"def main\(\):\n\s+# todo", multiline=True, output_mode="content"
        )
    )
    assert found == ["src/app.py:3:def main():", "src/app.py:4:    # todo: more"]


async def test_grep_head_limit_notes_what_was_left_out(run: Run) -> None:
    found = lines(await run("Grep", pattern="TODO", head_limit=1))
    assert found[:2] == ["Found 3 files", "notes/old.txt"]
    assert "showing the first 1 of 3 files because head_limit is 1" in found[2]


async def test_grep_skips_binary_and_vcs(run: Run) -> None:
    found = lines(await run("Grep", pattern="TODO", output_mode="content"))
    assert not any("logo.png" in line or ".git" in line for line in found)


async def test_grep_errors(run: Run) -> None:
    bad_regex = await run("Grep", pattern="(unclosed")
    bad_type = await run("Grep", pattern="x", type="no such type!")
    bad_mode = await run("Grep", pattern="x", output_mode="everything")
    outside = await run("Grep", pattern="x", path="/etc")
    assert bad_regex.status == "error"
    assert "Invalid regular expression '(unclosed': missing )" in bad_regex.message.content
    assert bad_type.status == "error" and "Unknown file type" in bad_type.message.content
    assert bad_mode.status == "error" and "output_mode" in bad_mode.message.content
    assert outside.status == "error" and "outside the workspace" in outside.message.content
    assert "looks like a pattern of file names" not in bad_regex.message.content


async def test_grep_given_a_file_name_pattern_says_glob_finds_files(run: Run) -> None:
    """A 1.5B model searched for a definition with Grep {"pattern": "src/**/*.py"}, three
    times, each time told only that the regular expression was invalid."""
    mixed_up = await run("Grep", pattern="src/**/*.py")
    assert mixed_up.status == "error"
    assert "'src/**/*.py' looks like a pattern of file names: Glob finds files by name" in (
        mixed_up.message.content
    )


async def test_grep_reads_a_pattern_ending_with_its_files_as_text_and_files(run: Run) -> None:
    """make eval: a 1.5B finder sent Grep {"pattern": "parse_invoice src/**/*.py"} (as one
    writes a grep command), was told the expression was invalid, sent it twice more and was
    stopped as a loop."""
    by_glob = await run("Grep", pattern="def (main|helper) src/**/*.py")
    assert by_glob.message.content.startswith(
        "(The pattern 'def (main|helper) src/**/*.py' was read as the text 'def (main|helper)' "
        "in the files src/**/*.py: give the text as `pattern` and the files as `glob`.)"
    )
    assert set(lines(by_glob)[2:]) == {"src/app.py", "src/util.py"}
    files_first = await run("Grep", pattern="src/**/*.py def helper")
    assert "was read as the text 'def helper' in the files src/**/*.py" in (
        files_first.message.content
    )
    assert lines(files_first)[-1] == "src/util.py"
    # a valid expression is searched as it is, and an invalid text is not split
    as_is = await run("Grep", pattern="helper src/*")
    still_bad = await run("Grep", pattern="(unclosed src/**/*.py")
    assert "was read as" not in as_is.message.content
    assert still_bad.status == "error"


async def test_walks_do_not_follow_links_out_of_the_workspace(run: Run, project: Path) -> None:
    outside = project.parent / f"{project.name}-outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "leak.txt").write_text("TODO secret\n")
    (outside / "sub" / "deep.txt").write_text("TODO secret\n")
    (project / "leak_file.txt").symlink_to(outside / "leak.txt")
    (project / "leak_dir").symlink_to(outside / "sub")
    (project / "inner_link.txt").symlink_to(project / "README.md")
    grep = await run("Grep", pattern="secret")
    glob = lines(await run("Glob", pattern="**/*.txt"))
    assert grep.message.content == "No matches for 'secret' in .."
    assert "inner_link.txt" in glob
    assert not any("leak" in line for line in glob)


async def test_grep_no_match(run: Run) -> None:
    assert lines(await run("Grep", pattern="zebra")) == ["No matches for 'zebra' in .."]


# --- LS ---------------------------------------------------------------------------------------


async def test_ls_marks_folders_and_lists_them_first(run: Run, project: Path) -> None:
    assert lines(await run("LS")) == [
        f"{project}/ (the workspace root) - 4 entries:",
        "  notes/",
        "  src/",
        "  logo.png",
        "  README.md",
        "(1 ignored or hidden entry skipped, e.g. .git/; pass include_ignored: true to list them)",
    ]
    assert lines(await run("LS", include_ignored=True)) == [
        f"{project}/ (the workspace root) - 5 entries:",
        "  .git/",
        "  notes/",
        "  src/",
        "  logo.png",
        "  README.md",
    ]


async def test_ls_path_and_ignore(run: Run) -> None:
    assert lines(await run("LS", path="src", ignore=["*.py"])) == ["src/ - 1 entry:", "  web/"]


async def test_ls_errors_and_empty(run: Run, project: Path) -> None:
    (project / "void").mkdir()
    empty = await run("LS", path="void")
    on_file = await run("LS", path="README.md")
    outside = await run("LS", path="../")
    assert empty.message.content == "void/ is empty."
    assert on_file.status == "error" and "use Read" in on_file.message.content
    assert outside.status == "error" and "outside the workspace" in outside.message.content
