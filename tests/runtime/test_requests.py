"""What a session was asked, kept in view for small models (subagents.runtime.requests): the
user's words quoted to a subagent, and what its parent was asked at the end of its result."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from subagents.runtime.mentions import subagent_opening, with_mentions
from subagents.runtime.requests import MAX_QUOTED_CHARS, own_words, reminder, with_users_words
from subagents.runtime.session import Session
from subagents.testing import ScriptedModel
from subagents.tools.base import ToolRegistry

ASKED = "Ask the scribe agent to create notes/todo.txt containing: buy milk"


def test_the_harness_lines_at_the_end_of_a_prompt_are_not_the_users_words() -> None:
    prompt = with_mentions(ASKED, ["scribe"], pass_words_on=True)
    assert prompt != ASKED and own_words(prompt) == ASKED
    opening = subagent_opening("Find it.", "Start the notes-reader agent.", ["notes-reader"])
    assert own_words(with_users_words(opening, ASKED)) == "Find it."
    # a line of the person's own in that form, inside the text, stays
    assert own_words("(subagents: mine)\n\nand more") == "(subagents: mine)\n\nand more"


@given(st.text(max_size=300), st.text(max_size=MAX_QUOTED_CHARS + 20))
def test_own_words_is_a_prefix_of_the_prompt_and_takes_off_what_the_harness_adds(
    text: str, users: str
) -> None:
    words = own_words(text)
    assert text.strip().startswith(words)
    task = f"{text}\n\ntask"
    assert own_words(with_users_words(task, users)) == own_words(task)
    assert own_words(with_mentions(text, ["scribe"])) == own_words(text)


def test_the_users_words_are_quoted_once_and_a_long_request_says_it_is_cut() -> None:
    assert with_users_words(f"Do this: {ASKED.upper()}", ASKED) == f"Do this: {ASKED.upper()}"
    assert with_users_words("Write the file.", "") == "Write the file."
    long = "x" * (MAX_QUOTED_CHARS + 50)
    quoted = with_users_words("Write the file.", long)
    assert quoted.endswith(f'{"x" * 10}..." (its first {MAX_QUOTED_CHARS} characters))')
    assert len(quoted) < len(long) + 100


def _session(tmp_path: Path, parent: Session | None = None) -> Session:
    return Session(ScriptedModel([]), "", ToolRegistry([]), tmp_path, parent=parent)


def test_the_reminder_names_who_asked(tmp_path: Path) -> None:
    main = _session(tmp_path)
    assert reminder(main) == "If it answers the user's request, reply to the user now."
    main.request = with_mentions(ASKED, ["scribe"])
    assert reminder(main) == (
        f'The user asked: "{ASKED}" If a step of that is still to do, do it now; otherwise '
        "reply to the user."
    )
    lead = _session(tmp_path, parent=main)
    lead.request = "Find the code word."
    assert reminder(lead).startswith('You were asked: "Find the code word." If a step')
    assert reminder(lead).endswith("otherwise give your answer.")
