"""What a session was asked, in the asker's own words, for small models to keep in view.

A 1.5B main agent is a lossy relay: it handed a notes-reader "report the total number of
words" for the user's "tell me the total it reports", and a scribe the Write tool's own
description for "create notes/todo.txt containing exactly: buy milk" (``make eval``). And told
after a subagent's answer to "reply if it answers the user's request", it replied after the
first step of a two-step request every time. Two lines of the harness help, for sessions on
the compact profile (small local models; hosted ones keep Claude Code's behaviour):

- a subagent's first message carries the user's own words beside its Task prompt
  (:func:`with_users_words`): the scribe then wrote the right file in 4 samples of 4 (0 of 4
  without);
- the end of a subagent's result says again what its parent was asked
  (:func:`reminder`): the main agent of the two-step request started its second step in 4 of
  4 (0 of 4 without), and the one-step requests of the eval still replied, 28 of 28.

The words are the harness's quote, bounded (:data:`MAX_QUOTED_CHARS`); the whole request stays
in the history.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from subagents.runtime.session import Session

__all__ = ["MAX_QUOTED_CHARS", "own_words", "reminder", "users_words", "with_users_words"]

MAX_QUOTED_CHARS = 600
_HARNESS_LINE = re.compile(r"\n\n\(subagents: [^\n]*\)\s*$")


def own_words(prompt: str) -> str:
    """``prompt`` without the lines the harness added at its end ("(subagents: ...)")."""
    text = prompt
    while (match := _HARNESS_LINE.search(text)) is not None:
        text = text[: match.start()]
    return text.strip()


def users_words(session: Session) -> str:
    """What the person asked the run: the main session's latest request."""
    root = session
    while root.parent is not None:
        root = root.parent
    return root.request


def with_users_words(prompt: str, words: str) -> str:
    """A subagent's first message: its Task ``prompt``, and the user's own ``words`` for
    context unless the prompt already holds them."""
    if not words or _plain(words) in _plain(prompt):
        return prompt
    return f"{prompt}\n\n(subagents: for context, the user's own words: {_quoted(words)})"


def reminder(session: Session) -> str:
    """What ``session`` was asked and what to do next, for the end of a subagent's result."""
    words = session.request
    if not words:
        return "If it answers the user's request, reply to the user now."
    if session.parent is None:
        asked, reply = "The user asked", "reply to the user"
    else:
        asked, reply = "You were asked", "give your answer"
    return (
        f"{asked}: {_quoted(words)} If a step of that is still to do, do it now; otherwise {reply}."
    )


def _quoted(words: str) -> str:
    words = " ".join(words.split())  # on one line, as the harness's lines are
    if len(words) <= MAX_QUOTED_CHARS:
        return f'"{words}"'
    return f'"{words[:MAX_QUOTED_CHARS]}..." (its first {MAX_QUOTED_CHARS} characters)'


def _plain(text: str) -> str:
    return " ".join(text.lower().split())
