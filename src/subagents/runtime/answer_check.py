"""Answers not to take as they came: cut off inside a tool call, or caught in a loop.

Small models fail in two ways a harness can see. An answer stops at the output token limit
in the middle of a tool call (``finish_reason: length``), and an answer, or one argument of a
call, repeats one passage over and over (:mod:`subagents.models.repetition`); often both,
since a loop runs until the limit stops it. :func:`check_answer` names the problem; the model
step (:func:`subagents.runtime.steps.model_step`) then asks the turn again, once, with a
short note saying what went wrong:

- a cut call: ``max_tokens`` doubled when the request set one, and the note "your answer was
  cut off inside a tool call; nothing was run; write the call again, shorter";
- a loop: a ``frequency_penalty`` (where the server takes one) and the note naming the passage.

The note goes with the second request only: the history keeps the answer that is used, never
the discarded one. What the second answer holds is taken as it is: its cut calls are refused
with a tool error the model reads (``refuse_repairs_of_cut_calls`` in
:mod:`subagents.models.tool_arguments`), a loop at the end of a final answer is cut back to
one pass with a note (:func:`collapse_loop`), and a loop the second answer is still caught
in counts toward the session's loop guard, which stops the session at its limit.

A cut call whose arguments could be repaired is run when that is safe with arguments that
may be cut short: a read-only tool's (:func:`cut_call_may_run`). A delegation is not: a cut
prompt would be a cut instruction to a subagent. A final answer cut at the limit is not asked
again (a long answer would be cut again): it ends the session as before, the cut said in its
output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from subagents.models.repetition import (
    Repetition,
    find_repetition,
    find_repetition_in_arguments,
)
from subagents.tools.names import ASK_HUMAN_TOOL_NAME, DELEGATION_TOOL_NAMES

if TYPE_CHECKING:
    from subagents.messages import ToolCall
    from subagents.models.base import ModelResponse, ModelSettings
    from subagents.tools.base import ToolRegistry

__all__ = [
    "CUT_OFF_MARK",
    "LOOP_PENALTY",
    "AnswerProblem",
    "check_answer",
    "collapse_loop",
    "cut_call_may_run",
    "retry_settings",
]

LOOP_PENALTY = 0.5
"""The ``frequency_penalty`` of a turn asked again after a loop (OpenAI's range is -2..2)."""
CUT_OFF_MARK = "[cut off: the model reached its output token limit here]"
"""Ends the output of a session whose final answer was cut off."""
_LOOP_MARK = "[the passage above repeated {repeats} times; the repeats were cut]"


@dataclass(frozen=True, slots=True)
class AnswerProblem:
    """Why an answer is asked again: ``kind``, one line for the trace and the progress
    output (``summary``) and what the model is told (``note``)."""

    kind: Literal["cut_off_call", "repetition"]
    summary: str
    note: str
    repetition: Repetition | None = None


def check_answer(response: ModelResponse, calls: tuple[ToolCall, ...]) -> AnswerProblem | None:
    """What is wrong with ``response`` (its cleaned-up ``calls``), if it must be asked again."""
    cut = response.stop_reason == "max_tokens"
    repetition = find_repetition(response.text) or _repeating_call(calls, cut=cut)
    if repetition is not None:
        return AnswerProblem(
            "repetition",
            repetition.describe(),
            f"Your last answer was discarded: {repetition.describe()}. Answer again, "
            "briefly, without repeating yourself.",
            repetition,
        )
    broken = next((call for call in calls if call.arguments_error), None) if cut else None
    if broken is not None:
        return AnswerProblem(
            "cut_off_call",
            f"the answer was cut off at the output token limit inside a {broken.name} call",
            f"Your last answer was cut off at the output token limit in the middle of a "
            f"{broken.name} call, so nothing was run. Make the call again with short arguments.",
        )
    return None


def retry_settings(settings: ModelSettings, problem: AnswerProblem) -> ModelSettings:
    """The settings of the turn asked again: more room for a cut call, a penalty on loops."""
    if problem.kind == "repetition":
        penalty = settings.frequency_penalty
        return replace(settings, frequency_penalty=max(penalty or 0.0, LOOP_PENALTY))
    if settings.max_tokens is not None:
        return replace(settings, max_tokens=settings.max_tokens * 2)
    return settings


def cut_call_may_run(name: str, tools: ToolRegistry) -> bool:
    """Whether a call to ``name`` whose arguments were cut off and repaired may run: only a
    read-only tool's, and never a delegation (its prompt would be cut short)."""
    tool = tools.get(name)
    return (
        tool is not None
        and tool.read_only
        and name not in DELEGATION_TOOL_NAMES
        and name != ASK_HUMAN_TOOL_NAME
    )


def collapse_loop(text: str) -> tuple[str, Repetition | None]:
    """``text`` with a loop at its end cut back to its first pass and a note saying so."""
    found = find_repetition(text)
    if found is None or not _at_end(text, found):
        return text, None
    start = len(text) - found.chars
    first = text.find(found.passage, start)  # the passage as quoted, whole, once
    end = start + len(found.passage) if first == -1 else first + len(found.passage)
    return f"{text[:end].rstrip()}\n\n{_LOOP_MARK.format(repeats=found.repeats)}", found


def _at_end(text: str, found: Repetition) -> bool:
    """Whether ``found`` is the loop ``text`` ends in (not a line repeated here and there)."""
    period = len(found.passage)
    tail = text[-found.chars :]
    return found.chars >= 2 * period and tail[period:] == tail[:-period]


def _repeating_call(calls: tuple[ToolCall, ...], *, cut: bool) -> Repetition | None:
    """A loop in the arguments of a call: of one that would run, or of one the token limit
    cut (a loop runs until the limit stops it). A call refused for other reasons (arguments
    too deep, say) tells the model so itself."""
    for call in calls:
        if call.arguments_error is None:
            found = find_repetition_in_arguments(call.arguments)
        elif cut and call.raw_arguments is not None:
            found = find_repetition_in_arguments(call.raw_arguments)
        else:
            continue
        if found is not None:
            return found
    return None
