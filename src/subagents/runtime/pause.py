"""Pausing a run for a person, and the decision that resumes it.

A run pauses when a tool needs approval in a headless durable run, when an agent calls
``AskHuman``, or when crash recovery finds a side-effecting tool call that may or may not have
run. The session that asked writes an ``awaiting_human`` checkpoint and raises
:class:`RunPaused`, which travels up through every parent (each one checkpoints too) to
:meth:`Runtime.run`, which returns a result with status ``awaiting_human``. The process may then
exit; :meth:`Runtime.resume` with a :class:`HumanDecision` continues exactly there.

Where a run waits is a :class:`WaitPoint`: the task, the session path from the main session
down, and a key (a tool call's id today; a workflow node's tomorrow). The pause records it in
its checkpoint and in the trace; the decision that resumes it is handed to exactly that wait
point, and recorded in the checkpoint and the trace of the session that asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from subagents.tools.names import ASK_HUMAN_TOOL_NAME

__all__ = [
    "WAIT_POINT_VERSION",
    "DeliveredDecision",
    "HumanDecision",
    "HumanQuestion",
    "QuestionKind",
    "RunPaused",
    "WaitPoint",
]

QuestionKind = Literal["approval", "ask_human", "crash_recovery", "workflow", "budget"]
"""``workflow``: a human node or a checkpoint of a workflow asks to go on; ``budget``: the run
reached its token budget (:mod:`subagents.runtime.budget`), and goes on with a larger one."""

WAIT_POINT_VERSION = 1


@dataclass(frozen=True, slots=True)
class WaitPoint:
    """Where a run waits for a person: ``key`` in the session at the end of ``session_path``
    (``key``: the id of the tool call that asked)."""

    task_id: str
    session_path: tuple[str, ...]
    key: str

    @property
    def session_id(self) -> str:
        return self.session_path[-1] if self.session_path else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": WAIT_POINT_VERSION,
            "task_id": self.task_id,
            "session_path": list(self.session_path),
            "key": self.key,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WaitPoint:
        path = tuple(str(part) for part in data.get("session_path", ()))
        return cls(str(data.get("task_id", "")), path, str(data["key"]))


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

    @property
    def wait_point(self) -> WaitPoint:
        return WaitPoint(self.task_id, tuple(self.session_path), self.tool_call_id)

    def reason(self) -> str:
        """Why the run stopped, as its task's error says it: a budget reached is no question
        to a person."""
        if self.kind == "budget":
            return f"budget reached: {self.text}"
        return f"waiting for a person: {self.text}"

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

    def what(self, tool_name: str) -> str:
        """What the person did: approve, reject or modify; ``answer`` to an AskHuman call."""
        if tool_name == ASK_HUMAN_TOOL_NAME and self.action != "reject":
            return "answer"
        return self.action


@dataclass(frozen=True, slots=True)
class DeliveredDecision:
    """A person's decision as it reached the wait point it resumes (about a call of
    ``tool_name``): what the checkpoint and the trace record of it."""

    wait_point: WaitPoint
    decision: HumanDecision
    tool_name: str

    def to_dict(self) -> dict[str, Any]:
        decision = self.decision
        return {
            "schema_version": WAIT_POINT_VERSION,
            "what": decision.what(self.tool_name),
            "action": decision.action,
            "wait_point": self.wait_point.to_dict(),
            "tool_name": self.tool_name,
            "reason": decision.reason,
            "arguments": decision.arguments,
            "values": dict(decision.values),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeliveredDecision:
        arguments = data.get("arguments")
        decision = HumanDecision(
            action=data["action"],
            reason=data.get("reason"),
            arguments=dict(arguments) if arguments is not None else None,
            values={str(k): str(v) for k, v in (data.get("values") or {}).items()},
        )
        return cls(WaitPoint.from_dict(data["wait_point"]), decision, str(data["tool_name"]))


class RunPaused(BaseException):
    """Raised through the sessions of a run when it must wait for a person.

    It derives from BaseException so that no tool's or the loop's ``except Exception`` turns a
    pause into a failure.
    """

    def __init__(self, question: HumanQuestion) -> None:
        super().__init__(question.text)
        self.question = question
