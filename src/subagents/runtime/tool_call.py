"""The durable rules of a tool call, the same for a session's tool step and a workflow's tool node.

- A call of a tool that is not read-only is **in the ledger**: a 'started' entry is durable
  before it runs, and a closing entry ('completed' or 'failed', with its result) after.
- When a task resumes, a call met again is settled by its entry (:func:`after_crash`): one that
  finished gives its stored result and does not run again; one that started and never reported
  runs again when that is safe (the tool is idempotent), and otherwise follows
  ``[subagents] interrupted_tool_calls``: ask a person, run it again, or answer that it did not
  complete.

The two callers differ only in what they do with the answer: a session hands the model a tool
result and pauses for a person at the call; a workflow stops or pauses at the node. Where they
wait is keyed differently on purpose: the keys are stored in tasks already paused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from subagents.store.records import ToolLedgerEntry
    from subagents.tools.base import Tool

__all__ = [
    "INTERRUPTED_TEXT",
    "InterruptedPolicy",
    "Recovery",
    "after_crash",
    "in_ledger",
]

InterruptedPolicy = Literal["ask", "rerun", "fail"]
"""What a resumed run does with a side-effecting call that started and never reported:
ask a person, run it again, or answer that it did not complete."""

Recovery = Literal["run", "settled", "ask", "fail"]
"""What to do with a call met again on resumption (see :func:`after_crash`)."""

INTERRUPTED_TEXT = (
    "This call was started before the process stopped and did not report back, so it may or "
    "may not have taken effect. Check its effect before you try it again."
)


def in_ledger(tool: Tool) -> bool:
    """Whether calls of ``tool`` are written to the ledger (every tool that is not read-only)."""
    return not tool.read_only


def after_crash(entry: ToolLedgerEntry | None, tool: Tool, policy: InterruptedPolicy) -> Recovery:
    """What a resumed run does with a call of ``tool`` whose ledger entry is ``entry``.

    ``"settled"``: it finished before; its stored result is the answer. ``"run"``: it never
    started, or running it again is safe or wanted. ``"ask"`` / ``"fail"``: it started and
    never reported; a person decides, or the caller answers that it did not complete.
    """
    if entry is None:
        return "run"
    if entry.status != "started":
        return "settled"
    if tool.read_only or tool.idempotent or policy == "rerun":
        return "run"
    return policy
