"""Loop guard: notices a session making the same tool call again and again, and stops a
failing loop before it spends the whole turn budget.

Small models get stuck. A 1.5B model called ``TaskCancel {"agent_id": "notes-reader"}`` 48
times in a row, got the same error each time, and stopped only at ``max_turns``. The guard
keeps a small window of a session's latest tool calls, compared by the tool's name, its
arguments (whatever their key order) and the error text (or, for a success, the result), and
answers:

- the same call failing the same way a second time: a corrective note appended to the result;
- the ``[subagents] max_repeated_failures``-th time (default 3): the session stops with a
  :class:`~subagents.errors.LoopDetectedError` that names the loop; the task stays resumable,
  and the resumed session is told why it stopped (:func:`resume_note`);
- the same call giving the same result a third time: a note, never a stop; from the fourth
  (the note did not help), the session's next turn must answer without calling a tool
  (:attr:`LoopFinding.asks_for_answer`; a 1.5B model read one file fifteen times in a row,
  each time told it had the result);
- a turn whose answer was caught in a loop and, asked again, still was
  (:mod:`subagents.runtime.answer_check`): counted, and the ``max_repeated_failures``-th
  such turn of the session stops it too.

A successful call of a side-effecting tool forgets the failures seen so far: the world may
have changed, so running a failing test again after an edit is work, not a loop.

The window holds hashes and references to the calls (which the session's history keeps anyway),
never copies of arguments or results.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from subagents._preview import preview, shorten
from subagents.errors import LoopDetectedError
from subagents.tools.names import DELEGATION_TOOL_NAMES, TASK_TOOL_NAME

if TYPE_CHECKING:
    from subagents.messages import ToolCall
    from subagents.runtime.recorder import Recorder
    from subagents.runtime.session import Session
    from subagents.store.records import RecordFields
    from subagents.tools.base import ToolRegistry
    from subagents.tools.execution import ToolOutcome

__all__ = [
    "ANSWER_NOW_AT",
    "DEFAULT_MAX_REPEATED_FAILURES",
    "LOOP_STOPPED_STEP",
    "LOOP_WARNING_STEP",
    "REPEATED_RESULT_NOTE_AT",
    "WINDOW",
    "FindingKind",
    "LoopFinding",
    "LoopGuard",
    "loop_trace",
    "resume_note",
]

DEFAULT_MAX_REPEATED_FAILURES = 3
"""Identical failures of one call after which the session stops (0: never stop)."""
REPEATED_RESULT_NOTE_AT = 3
"""Identical successful calls (same arguments, same result) from which the model is told."""
ANSWER_NOW_AT = REPEATED_RESULT_NOTE_AT + 1
"""Identical successful calls from which the next turn must answer without calling a tool."""
WINDOW = 20
"""Latest tool calls of a session the guard compares, the current one included."""
LOOP_WARNING_STEP = "loop_warning"
"""The trace step of a repeated call the model was told about."""
LOOP_STOPPED_STEP = "loop_detected"
"""The trace step of the repeated failure that stopped the session."""

_PREVIEW_CHARS = 120  # of the arguments, in notes, traces and the error
_ANSWERS_LOOPED = "answers of the model repeated one passage"  # in the error (errors.py)
_AGENT_ID_TRAILER = "\n\nagent_id: "  # how delegation's Task results end
_ERROR_CHARS = 200  # of the error's first line
_AGENT_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")

FindingKind = Literal["repeated_failure", "repeated_result", "loop_stopped", "answers_looped"]


@dataclass(slots=True, frozen=True)
class LoopFinding:
    """A repeated call the guard noticed, and the note the model gets with its result."""

    kind: FindingKind
    tool: str
    tool_call_id: str
    arguments_preview: str
    error: str | None  # the first line of the error (failures only)
    count: int  # how often the window holds this very call with this very outcome
    limit: int  # max_repeated_failures (0: never stops)
    note: str

    @property
    def stops(self) -> bool:
        return self.kind in ("loop_stopped", "answers_looped")

    @property
    def asks_for_answer(self) -> bool:
        """Whether the session's next turn must answer without calling a tool."""
        return self.kind == "repeated_result" and self.count >= ANSWER_NOW_AT

    @property
    def summary(self) -> str:
        """One line for the trace and the progress output."""
        if self.kind == "answers_looped":
            return f"{self.count} answers caught in a loop (the last: {self.error}); run stopped"
        call = f"{self.tool} {self.arguments_preview}"
        if self.kind == "repeated_result":
            then = "; its next turn must answer without a tool" if self.asks_for_answer else ""
            return f"{call} made {self.count} times with the same result{then}"
        verdict = "run stopped" if self.stops else "told to do something different"
        return f"{call} failed {self.count} times the same way ({self.error}); {verdict}"

    def error_for(self, task_id: str | None) -> LoopDetectedError:
        """The error the session stops with (``loop_stopped`` findings)."""
        looped = self.error if self.kind == "answers_looped" else None
        return LoopDetectedError(
            self.tool,
            self.arguments_preview,
            self.error or "",
            self.count,
            task_id=task_id,
            looped=looped,
        )


class LoopGuard:
    """One session's memory of its latest tool calls.

    The common case must cost next to nothing: each call is first reduced to a hash of its
    tool's name and its result (or error) text, with the lowest bit set for a failure, and
    only when that hash is already in the window are the arguments compared. The window
    keeps those ints and references to the calls, which the session's history holds anyway.
    """

    __slots__ = ("_calls", "_keys", "_looped_answers", "limit")

    def __init__(self, limit: int = DEFAULT_MAX_REPEATED_FAILURES, window: int = WINDOW) -> None:
        self.limit = limit
        self._keys: deque[int] = deque(maxlen=window)
        self._calls: deque[ToolCall] = deque(maxlen=window)
        self._looped_answers = 0

    def looped_answer(self, description: str) -> LoopFinding | None:
        """Count an answer caught in a loop (``description``: how); at the limit, the
        finding that stops the session."""
        self._looped_answers += 1
        count = self._looped_answers
        if not self.limit or count < self.limit:
            return None
        note = "[loop guard] Your answers keep repeating themselves, so the run stops here."
        return LoopFinding("answers_looped", "", "", "", description, count, self.limit, note)

    def observe(
        self, call: ToolCall, outcome: ToolOutcome, tools: ToolRegistry | None = None
    ) -> LoopFinding | None:
        """Remember ``call`` and what came of it; a finding when it repeats an earlier one.

        ``tools`` tells which tools have side effects (without it, none has).
        """
        found = self.watch((call,), (outcome,), tools)
        return found[0][1] if found else None

    def watch(
        self,
        calls: Sequence[ToolCall],
        outcomes: Sequence[ToolOutcome],
        tools: ToolRegistry | None = None,
    ) -> list[tuple[int, LoopFinding]]:
        """:meth:`observe` each call of a turn in order; the findings, by the call's index."""
        found: list[tuple[int, LoopFinding]] = []
        keys, calls_seen = self._keys, self._calls
        for index, call in enumerate(calls):
            message = outcomes[index].message
            failed = message.is_error
            if not failed and tools is not None:
                tool = tools.get(call.name)
                if tool is not None and not tool.read_only:
                    self._forget_failures()
            key = hash((call.name, _comparable(call.name, message.content))) << 1 | failed
            keys.append(key)  # first, so that the window is this call and the ones before
            calls_seen.append(call)
            count = 1
            if keys.count(key) > 1:  # this tool gave this very result before: same arguments?
                arguments = _arguments_key(call)
                count = sum(
                    1
                    for seen_key, seen in zip(keys, calls_seen, strict=True)
                    if seen_key == key and _arguments_key(seen) == arguments
                )
            if count > 1:
                finding = self._judge(call, failed, count, message.content)
                if finding is not None:
                    found.append((index, finding))
        return found

    def _judge(self, call: ToolCall, failed: bool, count: int, content: str) -> LoopFinding | None:
        if failed:
            if self.limit and count >= self.limit:
                return self._finding("loop_stopped", call, count, content)
            return self._finding("repeated_failure", call, count, content)
        if count >= REPEATED_RESULT_NOTE_AT:
            return self._finding("repeated_result", call, count, None)
        return None

    def _forget_failures(self) -> None:
        """A side effect happened: earlier failures may not repeat, so they do not count."""
        keys, calls = self._keys, self._calls
        if not any(key & 1 for key in keys):
            return
        kept = [(key, call) for key, call in zip(keys, calls, strict=True) if not key & 1]
        keys.clear()
        calls.clear()
        for key, call in kept:
            keys.append(key)
            calls.append(call)

    def _finding(
        self, kind: FindingKind, call: ToolCall, count: int, error_text: str | None
    ) -> LoopFinding:
        arguments = _arguments_preview(call)
        error = _first_line(error_text) if error_text is not None else None
        return LoopFinding(
            kind,
            call.name,
            call.id,
            arguments,
            error,
            count,
            self.limit,
            _note(kind, count, self.limit, error),
        )


def _note(kind: FindingKind, count: int, limit: int, error: str | None) -> str:
    if kind == "repeated_result":
        then = (
            " Your next answer must be your reply: no tool can be called in it."
            if count >= ANSWER_NOW_AT
            else ""
        )
        return (
            f"[loop guard] You have made this exact call {count} times and got the same "
            "result each time. Calling it again will not tell you anything new: use the "
            f"result you already have and take the next step, or give your answer.{then}"
        )
    if kind == "loop_stopped":
        return (
            f"[loop guard] This exact call has now failed {count} times the same way, so the "
            "run stops here. Do not make this call again: the arguments or the tool are wrong "
            "for what you want."
        )
    warning = f" The run stops if it fails this way {limit} times." if limit else ""
    return (
        f"[loop guard] You have made this exact call {count} times and it failed the same way "
        f"each time: {error}\nDo something different: read the error and the tool's "
        "description, change the arguments or use another tool, or answer with what you "
        f"know.{warning}"
    )


def resume_note(error: str) -> str | None:
    """What a session resumed after a loop stop is told first (``None`` for other errors)."""
    if not error.startswith(LoopDetectedError.PREFIX):
        return None
    if _ANSWERS_LOOPED in error:
        return (
            f"The run was stopped because your answers kept repeating themselves ({error}). "
            "It is resumed now. Answer briefly, and do not repeat yourself."
        )
    return (
        f"The run was stopped because you repeated a failing tool call ({error}). It is "
        "resumed now. Do not make that call again: do something different to finish the task."
    )


def loop_trace(recorder: Recorder, session: Session, finding: LoopFinding) -> RecordFields:
    """A warning in ``session``'s trace: the repeated call, redacted."""
    redact = recorder.redactor.text
    data = {
        "kind": finding.kind,
        "tool": finding.tool,
        "tool_call_id": finding.tool_call_id,
        "arguments_preview": redact(finding.arguments_preview),
        "error": redact(finding.error) if finding.error is not None else None,
        "count": finding.count,
        "limit": finding.limit,
    }
    return recorder.trace(
        session.agent_id,
        session.agent_type,
        "session",
        LOOP_STOPPED_STEP if finding.stops else LOOP_WARNING_STEP,
        redact(finding.summary),
        data,
        status="warning",
    )


def _comparable(tool: str, content: str) -> str:
    """``content`` as two results of ``tool`` are compared: a subagent's answer without its
    agent_id (the trailer of its answer, or in the text of a start in the background), which
    differs for every subagent, so that the same Task started again and answering the same
    is seen as a repeat."""
    if tool not in DELEGATION_TOOL_NAMES:
        return content
    if tool == TASK_TOOL_NAME:
        # the same delegation started again is the repeat, whatever the subagent answered:
        # a small model's subagent words the same finding differently each time (make eval:
        # a main agent started one reader with one prompt until the time ran out)
        return ""
    answer = content.rpartition(_AGENT_ID_TRAILER)[0] or content
    return _AGENT_ID.sub("<agent_id>", answer)


def _arguments_key(call: ToolCall) -> object:
    """The arguments in a form where equal means the same call (key order does not count)."""
    if call.arguments_error is not None:  # the same malformed text, sent again
        return call.raw_arguments
    try:
        return tuple(sorted(call.arguments.items()))  # flat arguments, the usual case
    except TypeError:  # keys of mixed types
        return _canonical_json(call.arguments)


def _canonical_json(arguments: dict[str, Any]) -> str:
    try:
        return json.dumps(
            arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
        )
    except (TypeError, ValueError):  # keys of mixed types (a library caller's call)
        return repr(sorted(arguments.items(), key=lambda item: str(item[0])))


def _arguments_preview(call: ToolCall) -> str:
    if call.arguments_error is not None:
        return shorten(call.raw_arguments or "", _PREVIEW_CHARS)
    return preview(call.arguments, _PREVIEW_CHARS, style="json")


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return shorten(line, _ERROR_CHARS)
