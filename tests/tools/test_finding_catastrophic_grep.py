"""Finding 4: a catastrophic regex in Grep kept its worker thread busy after the tool timed out;
six such calls filled the executor and the next Read waited a minute.

Patterns now run on the ``regex`` package with one time budget per call, so the search itself
stops, frees its thread, and tells the model what to do.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from types import FrameType

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin._files import Deadline
from subagents.tools.builtin._matcher import LineMatcher, split_lines
from subagents.tools.builtin.glob import make_glob_tool
from subagents.tools.builtin.grep import grep_tool, make_grep_tool
from subagents.tools.builtin.read import read_tool
from subagents.tools.execution import execute_tool_call

CATASTROPHIC = r"(a|a)+$"  # 2**n ways to fail on n a's followed by a b, even for `regex`
SEARCH_CODE = ("_matcher.py", "grep.py", "glob.py")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "attack.txt").write_text("a" * 40 + "b\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    return tmp_path


def threads_inside_search_code() -> list[str]:
    """Names of the threads (other than this one) whose stack is inside Grep or Glob."""
    busy: list[str] = []
    for thread_id, frame in sys._current_frames().items():
        if thread_id == threading.get_ident():
            continue
        stack: list[str] = []
        current: FrameType | None = frame
        while current is not None:
            stack.append(current.f_code.co_filename)
            current = current.f_back
        if any(name.endswith(SEARCH_CODE) for name in stack):
            busy.append(str(thread_id))
    return busy


async def test_finding_4_six_catastrophic_greps_stop_and_the_next_read_is_served(
    workspace: Path,
) -> None:
    grep = make_grep_tool(time_budget_seconds=0.5)
    assert (
        grep.timeout_seconds is not None and grep.timeout_seconds > 60
    )  # only the search's own budget can end these calls
    registry = ToolRegistry([grep, read_tool])
    ctx = ToolContext(workspace=workspace)
    calls = [
        ToolCall(f"g{index}", "Grep", {"pattern": CATASTROPHIC, "output_mode": "content"})
        for index in range(6)
    ]

    outcomes = await asyncio.gather(*(execute_tool_call(c, registry, ctx) for c in calls))

    for outcome in outcomes:
        # "error", not "timeout": the Grep function raised its own ToolError, so it returned.
        assert outcome.status == "error", outcome.message.content
        assert "Grep stopped after 0.5 s" in outcome.message.content
        assert "catastrophic backtracking?" in outcome.message.content
        assert "(a+)+" in outcome.message.content
    assert threads_inside_search_code() == []
    read = await execute_tool_call(ToolCall("r", "Read", {"file_path": "notes.txt"}), registry, ctx)
    assert read.status == "ok" and "hello" in read.message.content


async def test_finding_4_the_budget_covers_every_file_of_a_call(workspace: Path) -> None:
    for index in range(20):
        (workspace / f"more_{index}.txt").write_text("a" * 40 + "b\n")
    grep = make_grep_tool(time_budget_seconds=0.3)
    outcome = await execute_tool_call(
        ToolCall("g", "Grep", {"pattern": CATASTROPHIC}),
        ToolRegistry([grep]),
        ToolContext(workspace=workspace),
    )
    # One budget for the call: the first catastrophic file uses it up, and the call ends
    # there, instead of spending 0.3 s on each of the 21 files.
    assert outcome.status == "error"
    assert "stopped after 0.3 s" in outcome.message.content
    assert threads_inside_search_code() == []


@pytest.mark.parametrize("tool_name", ["Grep", "Glob"])
async def test_an_exhausted_budget_is_a_tool_error_for_any_pattern(
    workspace: Path, tool_name: str
) -> None:
    tool = (make_grep_tool if tool_name == "Grep" else make_glob_tool)(time_budget_seconds=1e-9)
    outcome = await execute_tool_call(
        ToolCall("t", tool_name, {"pattern": "*.txt" if tool_name == "Glob" else "hello"}),
        ToolRegistry([tool]),
        ToolContext(workspace=workspace),
    )
    assert outcome.status == "error"
    assert f"{tool_name} stopped after" in outcome.message.content


async def test_the_reported_pattern_is_harmless_to_regex(workspace: Path) -> None:
    """The issue's ``(a+)+$`` on 30 a's and a b: ``regex`` fails it without backtracking."""
    (workspace / "thirty.txt").write_text("a" * 30 + "b\n")
    outcome = await execute_tool_call(
        ToolCall("g", "Grep", {"pattern": r"(a+)+$", "path": "thirty.txt"}),
        ToolRegistry([grep_tool]),
        ToolContext(workspace=workspace),
    )
    assert outcome.status == "ok"
    assert outcome.message.content == "No matches for '(a+)+$' in thirty.txt."


async def test_globs_with_many_stars_do_not_backtrack(workspace: Path) -> None:
    """``*a*a*a...*b`` took Python's re 25 s per 40-character name at ten stars."""
    (workspace / ("a" * 40)).write_text("")
    outcome = await execute_tool_call(
        ToolCall("g", "Glob", {"pattern": "*a" * 12 + "*b"}),
        ToolRegistry([make_glob_tool(time_budget_seconds=5)]),
        ToolContext(workspace=workspace),
    )
    assert outcome.status == "ok"
    assert outcome.message.content.startswith("No files match")


# -- the whole-text search gives exactly the per-line answer -----------------------------------

ATOMS = [
    "a", "b", " ", "x", ".", r"\s", r"\S", r"\w", r"\W", r"\d", r"\n", "[^a]", "[ab]", "^", "$",
    r"\b", r"\B", "(?:a|b)", "(a)", r"\1", "(?i)A", "(?=a)", "(?!b)", "(?<=a)", r"\A", r"\Z",
    "a++", "(?>a|ab)", "(?s).", r"\X",
]  # fmt: skip
QUANTIFIERS = ["", "*", "+", "?", "*?", "+?", "{0,2}"]
patterns = st.lists(
    st.tuples(st.sampled_from(ATOMS), st.sampled_from(QUANTIFIERS)).map("".join),
    min_size=1,
    max_size=4,
).map("".join)
texts = st.lists(st.sampled_from([*"ab x1\r\n", "ab\n", "\n\n", "é"]), max_size=30).map("".join)


@pytest.mark.slow
@given(pattern=patterns, text=texts, ignore_case=st.booleans())
@settings(max_examples=400, deadline=None)
def test_whole_text_search_finds_exactly_the_lines_a_line_by_line_search_finds(
    pattern: str, text: str, ignore_case: bool
) -> None:
    flags = regex.IGNORECASE if ignore_case else 0
    try:
        matcher = LineMatcher.compile(pattern, flags, Deadline.after("Grep", 30))
    except regex.error:
        return
    lines = split_lines(text)
    expected = [index for index, line in enumerate(lines) if matcher.per_line.search(line)]
    assert matcher.matching_lines(text, lines) == expected
    assert matcher.matching_lines(text, lines, first_only=True) == expected[:1]


def test_line_local_patterns_take_the_whole_text_path() -> None:
    deadline = Deadline.after("Grep", 30)
    for pattern in ["TODO", r"(?i)def \w+\(", r"^\s*return None$", r"(?P<x>a)(?P=x)", "a{2,}"]:
        assert LineMatcher.compile(pattern, 0, deadline).whole_text is not None, pattern
    for pattern in [r"(?<=x)a", r"a(?=b)", r"\Aa", r"a\Z", "a++", "(?>ab)", r"(?r)a"]:
        assert LineMatcher.compile(pattern, 0, deadline).whole_text is None, pattern


@pytest.mark.parametrize("pattern", ["x{1000000}", "(?:x{65535}){65535}", "((a{100}){100}){100}"])
async def test_counted_repeats_that_would_exhaust_memory_are_refused(
    workspace: Path, pattern: str
) -> None:
    """``regex`` expands counted repeats when compiling: a million items take 270 MB."""
    outcome = await execute_tool_call(
        ToolCall("g", "Grep", {"pattern": pattern}),
        ToolRegistry([grep_tool]),
        ToolContext(workspace=workspace),
    )
    assert outcome.status == "error"
    assert "is too complex: its counted repeats stand for about" in outcome.message.content
    assert "the limit is 100,000" in outcome.message.content


@pytest.mark.parametrize(
    ("pattern", "items"),
    [("abc", 3), (r"\d{4}-\d{2}", 7), ("(a|b){3}", 6), (".{121,}", 121), ("[a{]{5}", 5),
     (r"\p{Lu}{3}", 3), ("a{" + "9" * 5_000 + "}", 10**12)],
)  # fmt: skip
def test_expansion_is_estimated_without_compiling(pattern: str, items: int) -> None:
    from subagents.tools.builtin._matcher import expansion

    assert expansion(pattern) == items


async def test_usual_counted_repeats_still_work(workspace: Path) -> None:
    (workspace / "long.txt").write_text("short\n" + "y" * 3_000 + "\n")
    outcome = await execute_tool_call(
        ToolCall("g", "Grep", {"pattern": r"^.{2001,}$", "output_mode": "count"}),
        ToolRegistry([grep_tool]),
        ToolContext(workspace=workspace),
    )
    assert outcome.status == "ok"
    assert outcome.message.content.splitlines()[1] == "long.txt:1"
