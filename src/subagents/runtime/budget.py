"""A run's token budget: every model call of the run, its subagents' included, draws from one
pool, and the pool is looked at before each call.

A run that has reached its budget pauses at that step boundary, as it does for a person:
nothing is lost, the question says what was spent on which agent, and
``subagents resume TASK --max-budget-tokens N`` with a larger ``N`` goes on where it stopped.
Calls already under way when the pool runs dry finish, so a tree passes its budget by at most
one call for each of its sessions asking at that moment.

An agent file's ``maxBudgetTokens`` gives each of that agent's subagent sessions a budget of its
own, never more than what its parent has left (the parents' own budgets up the tree, and the
run's); every call counts against all of them. A subagent that has spent its own ends as one
that ran out of turns does: its parent gets what it wrote and goes on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from subagents.messages import Usage
    from subagents.runtime.services import Services
    from subagents.store.records import SessionRecord, TaskRecord

__all__ = [
    "BUDGET_KEY",
    "BUDGET_SETTING",
    "TokenBudget",
    "budget_hint",
    "budget_limit",
    "budget_setting",
    "restored_budget",
]

BUDGET_KEY = "budget"
"""The wait point key of a session paused by its run's budget."""
BUDGET_SETTING = "max_budget_tokens"
"""Where a task keeps its budget (``TaskRecord.settings``), for the resumes to come."""


@dataclass(slots=True)
class TokenBudget:
    """The input and output tokens a run may spend (``limit``, ``None``: no limit), and what
    it has spent, by agent."""

    limit: int | None = None
    spent: int = 0
    by_agent: dict[str, int] = field(default_factory=dict)

    @classmethod
    def after(cls, sessions: Iterable[SessionRecord], limit: int | None) -> TokenBudget:
        """The budget of a task resumed or continued: what its stored sessions spent so far
        counts against ``limit``."""
        budget = cls(limit)
        for record in sessions:
            tokens = record.usage.get("input_tokens", 0) + record.usage.get("output_tokens", 0)
            budget._add(record.agent_name, tokens)
        return budget

    def charge(self, agent: str, usage: Usage) -> None:
        """Count one model call of ``agent`` (its type: ``main`` or the agent's name)."""
        self._add(agent, usage.input_tokens + usage.output_tokens)

    def _add(self, agent: str, tokens: int) -> None:
        self.spent += tokens
        self.by_agent[agent] = self.by_agent.get(agent, 0) + tokens

    def reached(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def left(self) -> int | None:
        """The tokens still to spend (``None``: no limit)."""
        return None if self.limit is None else max(self.limit - self.spent, 0)

    def report(self) -> str:
        """What was spent of what, on which agent: ``6,240 of 6,000 tokens (main 1,200,
        worker 5,040)``."""
        agents = ", ".join(
            f"{agent} {tokens:,}"
            for agent, tokens in sorted(self.by_agent.items(), key=lambda item: -item[1])
        )
        limit = f" of {self.limit:,}" if self.limit is not None else ""
        return f"{self.spent:,}{limit} tokens" + (f" ({agents})" if agents else "")


def budget_limit(services: Services) -> int | None:
    """The budget of a run started on ``services``: the one given to the runtime, else
    ``[budget] max_tokens``."""
    given = services.max_budget_tokens
    return given if given is not None else services.config.budget.max_tokens


def restored_budget(
    task: TaskRecord, sessions: Iterable[SessionRecord], services: Services
) -> TokenBudget:
    """The budget of ``task`` going on: the one given to the runtime now (kept with the task
    from now on), else the task's own, else ``[budget] max_tokens``; what its sessions spent
    counts."""
    given = services.max_budget_tokens
    if given is not None:
        task.settings[BUDGET_SETTING] = given
    kept = task.settings.get(BUDGET_SETTING)
    limit = kept if isinstance(kept, int) else budget_limit(services)
    return TokenBudget.after(sessions, limit)


def budget_hint(task_id: str, spent: int) -> str:
    """How to go on with a task its budget stopped."""
    larger = max(spent * 2, 1000)
    return f"subagents resume {task_id} --max-budget-tokens {larger} (more than {spent:,})"


def budget_setting(limit: int | None) -> dict[str, int]:
    """What a task keeps of a budget it was given (nothing for none)."""
    return {BUDGET_SETTING: limit} if limit is not None else {}
