"""Agents a user's prompt asks for by name: ``@notes-reader``, "the notes-reader agent",
"subagent plan".

Claude Code runs an @-mentioned agent for sure. Asked in plain words ("Use the notes-reader
agent to find ..."), a 1.5B model on two CPU cores did the work itself with its own Read in 7
samples of 8; with one line after the prompt saying which agent was asked for, it started that
agent in 8 of 8. So the main agent's prompt gets that line (:func:`with_mentions`), for the
agents it may start: the person's words stay as they were, and the line says it is the
harness's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["mentioned_agents", "subagent_opening", "with_mentions"]

_MAX_PROMPT_CHARS = 100_000  # a longer prompt is searched in its first part only


def mentioned_agents(prompt: str, names: Iterable[str]) -> list[str]:
    """The agents of ``names`` that ``prompt`` asks for, in the order it names them."""
    text = prompt[:_MAX_PROMPT_CHARS]
    found: list[tuple[int, str]] = []
    for name in names:
        match = _pattern(name).search(text)
        if match is not None:
            found.append((match.start(), name))
    return [name for _, name in sorted(found)]


def with_mentions(prompt: str, names: Iterable[str], *, pass_words_on: bool = False) -> str:
    """``prompt`` with a line naming the agents it asks for, when it asks for any;
    ``pass_words_on`` (small models) has the line ask for the user's words in the Task prompt:
    a 1.5B main agent turned "tell me the total it reports" into "report the total number
    of words" in 2 samples of 4, and in 1 of 4 when asked so."""
    asked = mentioned_agents(prompt, names)
    return _with_line(prompt, asked, "the user asked for", pass_words_on=pass_words_on)


def subagent_opening(prompt: str, instructions: str, names: Iterable[str]) -> str:
    """A subagent's first message: its Task ``prompt``, with a line naming the agents that
    prompt or the agent file's own ``instructions`` ask for ("start the notes-reader agent").

    A lead agent whose file said to start the notes-reader read the file itself (``make
    eval``, nested, in process); the same line the main agent gets makes it delegate.
    """
    names = list(names)
    asked = mentioned_agents(prompt, names)
    asked += [name for name in mentioned_agents(instructions, names) if name not in asked]
    return _with_line(prompt, asked, "your instructions ask for")


def _with_line(prompt: str, asked: list[str], who: str, *, pass_words_on: bool = False) -> str:
    if not asked:
        return prompt
    if len(asked) == 1:
        line = (
            f"(subagents: {who} the agent {asked[0]}: start it with the Task tool, "
            f'subagent_type "{asked[0]}"'
        )
        words = ", and pass the request on in the prompt, in the user's words"
    else:
        types = " / ".join(f'"{name}"' for name in asked)
        line = (
            f"(subagents: {who} the agents {', '.join(asked)}: start each with the Task "
            f"tool, subagent_type {types}"
        )
        words = ", and pass each its part of the request in the prompt, in the user's words"
    return f"{prompt}\n\n{line}{words if pass_words_on else ''}.)"


@functools.lru_cache(maxsize=1024)
def _pattern(name: str) -> re.Pattern[str]:
    agent = re.escape(name)
    edge_before, edge_after = r"(?<![\w@-])", r"(?![\w-])"
    return re.compile(
        rf"@{agent}{edge_after}"
        rf"|{edge_before}{agent}{edge_after}\s+(?:sub-?)?agent\b"
        rf"|\b(?:sub-?)?agent\s+(?:called\s+|named\s+)?{agent}{edge_after}",
        re.IGNORECASE,
    )
