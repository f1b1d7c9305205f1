"""Pausing a run for a person, and the decision that resumes it.

A run pauses when a tool needs approval in a headless durable run, when an agent calls
``AskHuman``, or when crash recovery finds a side-effecting tool call that may or may not have
run. The session that asked writes an ``awaiting_human`` checkpoint and raises
:class:`RunPaused`, which travels up through every parent (each one checkpoints too) to
:meth:`Runtime.run`, which returns a result with status ``awaiting_human``. The process may then
exit; :meth:`Runtime.resume` with a :class:`HumanDecision` continues exactly there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["HumanDecision", "HumanQuestion", "QuestionKind", "RunPaused"]

QuestionKind = Literal["approval", "ask_human", "crash_recovery"]


@dataclass(slots=True)
class HumanQuestion:
    """What a paused run asks, and where: the session path from the main session down."""

    kind: QuestionKind
    task_id: str
    session_id: str
    session_path: list[str]
    agent_type: str
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "task_id": self.task_id,
            "session_id": self.session_id,
            "session_path": list(self.session_path),
            "agent_type": self.agent_type,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HumanQuestion:
        return cls(
            kind=data["kind"],
            task_id=str(data.get("task_id", "")),
            session_id=str(data["session_id"]),
            session_path=[str(part) for part in data.get("session_path", [])],
            agent_type=str(data.get("agent_type", "")),
            tool_call_id=str(data["tool_call_id"]),
            tool_name=str(data.get("tool_name", "")),
            arguments=dict(data.get("arguments") or {}),
            text=str(data.get("text", "")),
        )


@dataclass(slots=True)
class HumanDecision:
    """A person's answer. ``modify`` runs the call with ``arguments`` instead of the model's;
    ``values`` carries ``--set key=value`` pairs (``answer`` is what ``AskHuman`` returns)."""

    action: Literal["approve", "reject", "modify"]
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    values: dict[str, str] = field(default_factory=dict)


class RunPaused(BaseException):
    """Raised through the sessions of a run when it must wait for a person.

    It derives from BaseException so that no tool's or the loop's ``except Exception`` turns a
    pause into a failure.
    """

    def __init__(self, question: HumanQuestion) -> None:
        super().__init__(question.text)
        self.question = question
