"""What a finished session and a finished delegation report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from subagents.messages import Message, Usage
from subagents.status import RunStatus

if TYPE_CHECKING:
    from subagents.models.prices import Cost, ModelPrice
    from subagents.runtime.pause import HumanQuestion

__all__ = ["RunResult", "RunStatus", "SpawnResult"]


@dataclass(slots=True)
class RunResult:
    """The outcome of one session run.

    ``output`` is the final answer in full. When the run stopped early (``max_turns``,
    ``failed``), it holds the partial output so far and ``error`` says why. A run that waits
    for a person has status ``awaiting_human`` and says what it asks in ``question``;
    ``task_id`` names the stored task to resume (runs with a store only). The result of a
    run (:meth:`Runtime.run` / :meth:`Runtime.resume`) lists its ``subagents``: one
    :class:`SpawnResult` per subagent run, in the order they finished.
    """

    output: str
    status: RunStatus
    agent_id: str
    agent_type: str
    model_name: str
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0
    duration_ms: float = 0.0
    error: str | None = None
    task_id: str | None = None
    question: HumanQuestion | None = None
    # the run's subagents, one result each (every session's own result leaves it empty)
    subagents: tuple[SpawnResult, ...] = ()
    # a workflow run's final state and path (subagents.workflows.runner.WorkflowOutcome)
    workflow: Any = None
    # what this run's model calls used, every session of its tree, by model (``provider:model``)
    usage_by_model: dict[str, Usage] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status == "completed"

    @property
    def total_usage(self) -> Usage:
        """What this run's calls used, its subagents' included (``usage`` is the main
        session's alone)."""
        total = Usage()
        for used in self.usage_by_model.values():
            total.add(used)
        return total

    def cost(self, prices: Mapping[str, ModelPrice] | None = None) -> Cost:
        """What this run's calls cost in USD, by the price table and ``prices`` (a
        config's ``[prices]``: ``Config.model_prices()``); ``known`` is false when a model
        among them has no price. The table is read on the first call, not before."""
        from subagents.models.prices import cost_of, total_cost

        return total_cost(
            cost_of(model, used, prices) for model, used in self.usage_by_model.items()
        )


@dataclass(slots=True)
class SpawnResult:
    """The structured result of one Task delegation, for the API and the event stream."""

    success: bool
    subagent_type: str
    agent_id: str
    summary: str
    duration_ms: float
    input_tokens: int
    output_tokens: int
    tool_use_count: int
    resolved_model: str
    background: bool
    status: str
    error: str | None = None
    # isolation: worktree, when the subagent's worktree was kept because it holds changes
    worktree_path: str | None = None
    worktree_branch: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "subagent_type": self.subagent_type,
            "agent_id": self.agent_id,
            "summary": self.summary,
            "duration_ms": self.duration_ms,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_use_count": self.tool_use_count,
            "resolved_model": self.resolved_model,
            "background": self.background,
            "status": self.status,
            "error": self.error,
            "worktree_path": self.worktree_path,
            "worktree_branch": self.worktree_branch,
        }
