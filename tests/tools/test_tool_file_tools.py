"""Read, Write and Edit on real files in a temporary workspace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin.read import MAX_READ_OUTPUT_CHARS
from subagents.tools.execution import ToolOutcome, execute_tool_call
from subagents.tools.names import BUILTIN_TOOL_NAMES

Run = Callable[..., Awaitable[ToolOutcome]]


@pytest.fixture
def run(tmp_path: Path) -> Run:
    registry = ToolRegistry(builtin_tools())
    ctx = ToolContext(workspace=tmp_path)

    async def call(name: str, **arguments: Any) -> ToolOutcome:
        return await execute_tool_call(ToolCall("call-1", name, arguments), registry, ctx)

    return call


def test_builtin_tools_have_claude_code_names_and_flags() -> None:
    tools = {t.name: t for t in builtin_tools()}
    assert list(tools) == list(BUILTIN_TOOL_NAMES)
    assert list(tools)[:7] == ["Read", "Write", "Edit", "Glob", "Grep", "LS", "Bash"]
    assert {"MultiEdit", "TodoWrite", "WebFetch", "WebSearch"} <= set(tools)
    read_only = {n for n, t in tools.items() if t.read_only}
    asking = {n for n, t in tools.items() if t.requires_approval}
    assert {"Read", "Glob", "Grep", "LS"} <= read_only
    assert {"Write", "Edit", "MultiEdit", "Bash"} <= asking
    assert not {"Write", "Edit", "MultiEdit", "Bash"} & read_only
    assert read_only & asking == {"WebFetch"}  # changes nothing here, but sends data out
    assert tools["Read"].parameters["required"] == ["file_path"]
    assert tools["Edit"].parameters["required"] == ["file_path", "old_string", "new_string"]
    assert set(tools["Grep"].parameters["properties"]) >= {"-i", "-n", "-A", "-B", "-C", "type"}
    assert all(t.description for t in tools.values())


# --- Read -------------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(run: Run, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n\tgamma\n")
    outcome = await run("Read", file_path="a.txt")
    assert outcome.status == "ok"
    assert outcome.message.content == "     1\talpha\n     2\tbeta\n     3\t\tgamma"


async def test_read_offset_and_limit_say_how_to_read_on(run: Run, tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    outcome = await run("Read", file_path=str(tmp_path / "n.txt"), offset=3, limit=2)
    lines = outcome.message.content.splitlines()
    assert lines[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "showing lines 3-4 of 10" in outcome.message.content
    assert "offset=5" in outcome.message.content


async def test_read_default_limit_is_2000_lines(run: Run, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x\n" * 2500)
    content = (await run("Read", file_path="big.txt")).message.content
    assert "  2000\tx" in content
    assert "  2001\t" not in content
    assert "showing lines 1-2000 of 2500" in content
    assert "offset=2001" in content


async def test_read_cuts_long_lines_with_a_note(run: Run, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("y" * 5000 + "\nshort\n")
    content = (await run("Read", file_path="long.txt")).message.content
    first = content.splitlines()[0]
    assert first.startswith("     1\t" + "y" * 2000 + "...")
    assert "line cut: 5000 chars" in first
    assert "y" * 2001 not in first
    assert "     2\tshort" in content


async def test_read_caps_total_output_and_says_where_to_go_on(run: Run, tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("z" * 1900 + "\n") * 300)
    content = (await run("Read", file_path="wide.txt")).message.content
    assert len(content) < MAX_READ_OUTPUT_CHARS + 500
    assert f"the output reached {MAX_READ_OUTPUT_CHARS} characters" in content
    assert "offset=" in content


async def test_read_empty_file_is_noted(run: Run, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    outcome = await run("Read", file_path="empty.txt")
    assert outcome.status == "ok"
    assert "exists but is empty" in outcome.message.content


async def test_read_refuses_binary_files_and_directories(run: Run, tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x89PNG\0\0\x01")
    (tmp_path / "folder").mkdir()
    binary = await run("Read", file_path="blob.bin")
    folder = await run("Read", file_path="folder")
    assert binary.status == "error" and "binary file" in binary.message.content
    assert folder.status == "error" and "is a directory" in folder.message.content
    assert "LS" in folder.message.content


async def test_read_errors_for_missing_file_and_offset_past_end(run: Run, tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    missing = await run("Read", file_path="nope.txt")
    past = await run("Read", file_path="short.txt", offset=9)
    assert missing.status == "error" and "nope.txt does not exist" in missing.message.content
    assert past.status == "error" and "has only 2 lines" in past.message.content


async def test_read_refuses_paths_outside_the_workspace(run: Run, tmp_path: Path) -> None:
    outcome = await run("Read", file_path="../../etc/passwd")
    assert outcome.status == "error"
    assert "outside the workspace" in outcome.message.content


async def test_read_handles_crlf_and_undecodable_bytes(run: Run, tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo \xff\r\n")
    content = (await run("Read", file_path="dos.txt")).message.content
    assert content == "     1\tone\n     2\ttwo \ufffd"


# --- Write ------------------------------------------------------------------------------------


async def test_write_creates_parents_and_reports_size(run: Run, tmp_path: Path) -> None:
    outcome = await run("Write", file_path="deep/er/new.py", content="print('é')\nx = 1\n")
    assert outcome.status == "ok"
    assert (tmp_path / "deep/er/new.py").read_text(encoding="utf-8") == "print('é')\nx = 1\n"
    assert outcome.message.content == "Created deep/er/new.py: wrote 18 bytes (2 lines)."


async def test_write_overwrites(run: Run, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old")
    outcome = await run("Write", file_path="f.txt", content="new")
    assert outcome.message.content == "Overwrote f.txt: wrote 3 bytes (1 line)."
    assert (tmp_path / "f.txt").read_text() == "new"


async def test_write_errors(run: Run, tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "plain").write_text("x")
    on_dir = await run("Write", file_path="dir", content="x")
    under_file = await run("Write", file_path="plain/child.txt", content="x")
    outside = await run("Write", file_path="/tmp/../etc/evil.txt", content="x")
    assert on_dir.status == "error" and "is a directory" in on_dir.message.content
    assert under_file.status == "error" and "Could not write" in under_file.message.content
    assert outside.status == "error" and "outside the workspace" in outside.message.content


async def test_write_through_symlink_leaving_the_workspace_is_refused(
    run: Run, tmp_path: Path
) -> None:
    target = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    (tmp_path / "sneaky").symlink_to(target)
    outcome = await run("Write", file_path="sneaky", content="x")
    assert outcome.status == "error"
    assert not target.exists()


# --- Edit -------------------------------------------------------------------------------------


async def test_edit_replaces_one_exact_match(run: Run, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    outcome = await run("Edit", file_path="m.py", old_string="return 1", new_string="return 2")
    assert outcome.status == "ok"
    assert outcome.message.content == "Edited m.py: replaced 1 occurrence."
    assert (tmp_path / "m.py").read_text() == "def f():\n    return 2\n"


async def test_edit_refuses_ambiguous_match_unless_replace_all(run: Run, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 1\nc = 1\n")
    ambiguous = await run("Edit", file_path="m.py", old_string="= 1", new_string="= 2")
    assert ambiguous.status == "error"
    assert "occurs 3 times" in ambiguous.message.content
    assert "replace_all" in ambiguous.message.content
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 1\nc = 1\n"
    everywhere = await run(
        "Edit", file_path="m.py", old_string="= 1", new_string="= 2", replace_all=True
    )
    assert everywhere.message.content == "Edited m.py: replaced 3 occurrences."
    assert (tmp_path / "m.py").read_text() == "a = 2\nb = 2\nc = 2\n"


async def test_edit_errors(run: Run, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "b.bin").write_bytes(b"\0\0")
    cases = {
        "not found": {"file_path": "m.py", "old_string": "y = 1", "new_string": "y = 2"},
        "are the same": {"file_path": "m.py", "old_string": "x", "new_string": "x"},
        "old_string is empty": {"file_path": "m.py", "old_string": "", "new_string": "z"},
        "binary file": {"file_path": "b.bin", "old_string": "a", "new_string": "b"},
        "does not exist": {"file_path": "none.py", "old_string": "a", "new_string": "b"},
    }
    for expected, arguments in cases.items():
        outcome = await run("Edit", **arguments)
        assert outcome.status == "error", expected
        assert expected in outcome.message.content
    assert (tmp_path / "m.py").read_text() == "x = 1\n"


async def test_edit_keeps_crlf_line_endings(run: Run, tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    outcome = await run("Edit", file_path="dos.txt", old_string="two", new_string="2")
    assert outcome.status == "ok"
    assert (tmp_path / "dos.txt").read_bytes() == b"one\r\n2\r\n"


async def test_edit_refuses_non_utf8(run: Run, tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    outcome = await run("Edit", file_path="latin.txt", old_string="caf", new_string="tea")
    assert outcome.status == "error"
    assert "not UTF-8" in outcome.message.content


async def test_edit_refuses_a_replacement_that_would_fill_the_memory(
    run: Run, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("a" * 1000)
    outcome = await run(
        "Edit", file_path="a.txt", old_string="a", new_string="b" * 100_000, replace_all=True
    )
    assert outcome.status == "error"
    assert "100,000,000 characters long, more than the limit" in outcome.message.content
    assert (tmp_path / "a.txt").read_text() == "a" * 1000
