"""Runaway repetition (subagents.models.repetition): a passage repeated over and over is found
wherever a model writes it (its answer, one argument of a call, a stream as it comes), and
real text (this repository's sources, the corpus's agent files) is never taken for one."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paths import REPO
from subagents.models.repetition import (
    MAX_CHECKED_CHARS,
    MAX_PERIOD,
    MIN_LOOP_CHARS,
    MIN_REPEATS,
    RunawayWatch,
    find_repetition,
    find_repetition_in_arguments,
)
from subagents.runtime.answer_check import collapse_loop

ROOT = REPO
# the sentence the issue's 1.5B model repeated inside its Task call, until max_tokens
ASK_HUMAN = "Use this tool to ask the user a question when you need clarification. "

passages = st.text(min_size=1, max_size=200).filter(lambda p: p.strip() != "")


def looped(passage: str, prefix: str = "") -> str:
    times = max(MIN_REPEATS, -(-MIN_LOOP_CHARS // len(passage)))
    return prefix + passage * times


@given(st.text(max_size=3000))
@settings(max_examples=300)
def test_any_text_is_judged_without_error_and_a_finding_is_a_real_loop(text: str) -> None:
    found = find_repetition(text)
    if found is not None:
        assert found.repeats >= MIN_REPEATS
        assert found.chars >= MIN_LOOP_CHARS
        assert found.passage and found.passage in text


@given(passages, st.text(max_size=300), st.integers(min_value=0, max_value=3))
@settings(max_examples=200)
def test_a_passage_repeated_to_the_end_is_found_after_any_prefix(
    passage: str, prefix: str, extra: int
) -> None:
    text = looped(passage, prefix) + passage * extra
    found = find_repetition(text)
    assert found is not None
    # the passage found is the loop's shortest period: the passage, or a part it repeats
    assert len(passage) % len(found.passage) == 0
    assert found.chars >= len(text) - len(prefix)


@given(passages, st.integers(min_value=1, max_value=199))
def test_a_loop_cut_in_the_middle_of_a_repeat_is_still_found(passage: str, cut: int) -> None:
    text = looped(passage) + passage
    assert find_repetition(text[: len(text) - cut % len(passage)]) is not None


def test_the_issues_runaway_prompt_is_found_and_named() -> None:
    found = find_repetition("Read docs/notes.txt and report the code word. " + ASK_HUMAN * 30)
    assert found is not None and found.repeats == 30
    assert found.describe() == (
        "the answer repeats 'Use this tool to ask the user a question when you need "
        "clarification.' 30 times"
    )


def test_a_sentence_filling_most_of_an_answer_is_found_when_something_follows_it() -> None:
    text = (ASK_HUMAN + "\n") * 12 + "That is all I know about the release."
    found = find_repetition(text)
    assert found is not None and found.passage == ASK_HUMAN.strip() and found.repeats == 12


@pytest.mark.parametrize(
    "text",
    [
        "| name | size |\n|---|---|\n" + "".join(f"| file{i}.py | {i * 37} |\n" for i in range(60)),
        "\n".join(f"src/subagents/models/module_{i}.py" for i in range(80)),
        "=" * 80 + "\nTitle\n" + "=" * 80,
        "def test_a():\n    assert f(1) == 1\n\n\n" * 3,
        ("- [ ] review the code\n" * 5) + "- [x] ship it\n",
    ],
    ids=["table", "paths", "rules", "short-code-repeat", "short-list"],
)
def test_ordinary_answers_that_repeat_a_little_are_not_loops(text: str) -> None:
    assert find_repetition(text) is None


def _texts_of(folder: Path, pattern: str) -> list[Path]:
    return sorted(path for path in folder.rglob(pattern) if ".venv" not in path.parts)


def test_no_source_file_or_document_of_this_repository_is_a_loop() -> None:
    files = [*_texts_of(ROOT / "src", "*.py"), *_texts_of(ROOT, "*.md")]
    assert len(files) > 100
    looping = [str(path) for path in files if find_repetition(path.read_text()) is not None]
    assert looping == []


def test_no_agent_file_of_the_corpus_is_a_loop(corpus_dir: Path) -> None:
    files = _texts_of(corpus_dir, "*.md")
    assert len(files) >= 158
    assert [str(p) for p in files if find_repetition(p.read_text()) is not None] == []


def test_only_the_end_of_a_long_text_is_looked_at() -> None:
    loop_first = ASK_HUMAN * 40 + "".join(f"line {i}\n" for i in range(MAX_CHECKED_CHARS // 5))
    assert find_repetition(loop_first) is None
    assert find_repetition(loop_first + ASK_HUMAN * 40) is not None


def test_a_passage_longer_than_the_longest_period_is_left_to_the_sentence_count() -> None:
    paragraph = " ".join(f"word{i}" for i in range(MAX_PERIOD // 5))  # no sentence end
    assert len(paragraph) > MAX_PERIOD
    assert find_repetition(paragraph * MIN_REPEATS) is None
    assert find_repetition((paragraph + ".\n") * MIN_REPEATS) is not None


def test_arguments_are_searched_at_any_depth_and_the_place_is_named() -> None:
    arguments = {
        "description": "Find the code word",
        "edits": [{"old": "a", "new": "b"}, {"old": "c", "new": ASK_HUMAN * 20}],
    }
    found = find_repetition_in_arguments(arguments)
    assert found is not None and found.where == "edits[1].new"
    assert "argument 'edits[1].new' repeats" in found.describe()
    assert find_repetition_in_arguments({"file_path": "src/a.py", "limit": 40}) is None
    raw = find_repetition_in_arguments(ASK_HUMAN * 20)  # the text of unreadable arguments
    assert raw is not None and raw.describe().startswith("the call's arguments repeat 'Use")


@pytest.mark.slow
@given(passages, st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
@settings(max_examples=100)
def test_a_stream_is_stopped_soon_after_a_loop_starts(passage: str, sizes: list[int]) -> None:
    text = "I will read the file first. " + passage * 4000
    watch = RunawayWatch()
    position = 0
    turn = 0
    while position < len(text):
        size = sizes[turn % len(sizes)]
        turn += 1
        piece = text[position : position + size]
        position += size
        if watch.feed(piece) is not None:
            break
    else:
        pytest.fail("the loop was never noticed")
    # noticed within the text a loop needs, plus what is written between two looks
    assert position <= 28 + max(MIN_REPEATS * len(passage), MIN_LOOP_CHARS) + 256 + 40 + 200


def test_a_stream_of_ordinary_text_is_never_stopped() -> None:
    watch = RunawayWatch()
    text = (ROOT / "README.md").read_text()
    assert all(watch.feed(text[i : i + 7]) is None for i in range(0, len(text), 7))


def test_a_loop_at_the_end_of_an_answer_is_cut_back_to_one_pass() -> None:
    text = "The code word is PELICAN-42. " + "It is PELICAN-42. " * 40
    collapsed, found = collapse_loop(text)
    assert found is not None and found.repeats >= 40
    assert collapsed.startswith("The code word is PELICAN-42.")
    assert collapsed.count("It is PELICAN-42.") <= 2
    mark = f"[the passage above repeated {found.repeats} times; the repeats were cut]"
    assert collapsed.endswith(mark)
    assert collapse_loop("A short, ordinary answer.") == ("A short, ordinary answer.", None)
