"""A run's budget: every model call of the run, its subagents' included, draws from one pool
of tokens and of USD, and the pool is looked at before each call.

A run that has reached its budget pauses at that step boundary, as it does for a person:
nothing is lost, the question says what was spent on which agent, and
``subagents resume TASK --max-budget-tokens N`` (or ``--max-budget-usd X``) with a larger
limit goes on where it stopped. Calls already under way when the pool runs dry finish, so a
tree passes its budget by at most one call for each of its sessions asking at that moment.

A budget in USD prices each call as it is made (:mod:`subagents.models.prices`); a model with
no price cannot be held to one, so a run with a USD budget refuses to call it and says how to
give it a price.

An agent file's ``maxBudgetTokens`` / ``maxBudgetUsd`` give each of that agent's subagent
sessions a budget of its own, never more than what its parent has left (the parents' own
budgets up the tree, and the run's); every call counts against all of them. A subagent that
has spent its own ends as one that ran out of turns does: its parent gets what it wrote and
goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, TypeVar

from subagents.errors import ConfigError

if TYPE_CHECKING:
    from subagents.messages import Usage
    from subagents.models.prices import ModelPrice
    from subagents.runtime.services import Services
    from subagents.store.records import SessionRecord, TaskRecord

__all__ = [
    "BUDGET_KEY",
    "BUDGET_SETTING",
    "BUDGET_USD_SETTING",
    "Budget",
    "Limits",
    "budget_hint",
    "budget_setting",
    "call_cost",
    "check_priced",
    "dollars",
    "restored_budget",
    "run_limits",
    "usd",
]

BUDGET_KEY = "budget"
"""The wait point key of a session paused by its run's budget."""
BUDGET_SETTING = "max_budget_tokens"
"""Where a task keeps its token budget (``TaskRecord.settings``), for the resumes to come."""
BUDGET_USD_SETTING = "max_budget_usd"
"""Where a task keeps its USD budget, as a decimal string."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The most a budget allows (``None``: no limit of that kind)."""

    tokens: int | None = None
    usd: Decimal | None = None

    def __bool__(self) -> bool:
        return self.tokens is not None or self.usd is not None

    def to_state(self, tokens_key: str = "tokens", usd_key: str = "usd") -> dict[str, object]:
        """What a checkpoint (or, with a task's keys, a task's settings) keeps of these
        limits: the tokens as a number, the USD as a decimal string; empty for none."""
        kept: dict[str, object] = {}
        if self.tokens is not None:
            kept[tokens_key] = self.tokens
        if self.usd is not None:
            kept[usd_key] = str(self.usd)
        return kept

    @classmethod
    def from_state(cls, kept: object, tokens_key: str = "tokens", usd_key: str = "usd") -> Limits:
        """The limits :meth:`to_state` kept (none of a kind that is missing or not one)."""
        if not isinstance(kept, Mapping):
            return cls()
        tokens = kept.get(tokens_key)
        valid = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0
        return cls(tokens if valid else None, usd(kept.get(usd_key)))

    def within(self, tokens: int | None, usd: Decimal | None) -> Limits:
        """These limits, none larger than ``tokens`` / ``usd`` (what a parent has left); a
        kind with no limit here stays without one."""
        return Limits(_capped(self.tokens, tokens), _capped(self.usd, usd))


@dataclass(slots=True)
class Budget:
    """What a run (or one subagent session) may spend (``limits``), and what it has spent:
    input and output tokens, by agent, and USD (counted only where a USD limit asks for it)."""

    limits: Limits = field(default_factory=Limits)
    spent: int = 0
    spent_usd: Decimal = Decimal(0)
    by_agent: dict[str, int] = field(default_factory=dict)

    @property
    def priced(self) -> bool:
        """Whether its calls must be priced (it has a limit in USD)."""
        return self.limits.usd is not None

    @classmethod
    def after(
        cls,
        sessions: Iterable[SessionRecord],
        limits: Limits,
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> Budget:
        """The budget of a task resumed or continued: what its stored sessions spent so far
        counts against ``limits``."""
        from subagents.messages import Usage

        budget = cls(limits)
        for record in sessions:
            used = Usage(**{kind: int(record.usage.get(kind, 0)) for kind in _TOKEN_KINDS})
            cost = call_cost(record.model, used, prices) if budget.priced else None
            budget.charge(record.agent_name, used, cost)
        return budget

    @classmethod
    def asked(cls, arguments: Mapping[str, object]) -> Budget:
        """The budget a budget question says was reached (see :meth:`arguments`)."""
        tokens, spent = arguments.get("max_budget_tokens"), arguments.get("spent_tokens")
        return cls(
            Limits(
                tokens if isinstance(tokens, int) else None, usd(arguments.get("max_budget_usd"))
            ),
            spent if isinstance(spent, int) else 0,
            usd(arguments.get("spent_usd")) or Decimal(0),
        )

    def charge(self, agent: str, usage: Usage, cost: Decimal | None = None) -> None:
        """Count one model call of ``agent`` (its type: ``main`` or the agent's name), and
        its ``cost`` when it was priced."""
        tokens = usage.input_tokens + usage.output_tokens
        self.spent += tokens
        self.by_agent[agent] = self.by_agent.get(agent, 0) + tokens
        if cost is not None:
            self.spent_usd += cost

    def reached(self) -> bool:
        tokens, usd = self.limits.tokens, self.limits.usd
        return (tokens is not None and self.spent >= tokens) or (
            usd is not None and self.spent_usd >= usd
        )

    def left(self) -> int | None:
        """The tokens still to spend (``None``: no token limit)."""
        limit = self.limits.tokens
        return None if limit is None else max(limit - self.spent, 0)

    def left_usd(self) -> Decimal | None:
        """The USD still to spend (``None``: no USD limit)."""
        limit = self.limits.usd
        return None if limit is None else max(limit - self.spent_usd, Decimal(0))

    def report(self) -> str:
        """What was spent of what, on which agent: ``6,240 of 6,000 tokens, $0.0210 of
        $0.0200 (main 1,200, worker 5,040)``."""
        agents = ", ".join(
            f"{agent} {tokens:,}"
            for agent, tokens in sorted(self.by_agent.items(), key=lambda item: -item[1])
        )
        tokens = self.limits.tokens
        text = f"{self.spent:,}" + (f" of {tokens:,}" if tokens is not None else "") + " tokens"
        if self.limits.usd is not None:
            text += f", {dollars(self.spent_usd)} of {dollars(self.limits.usd)}"
        return text + (f" ({agents})" if agents else "")

    def arguments(self) -> dict[str, object]:
        """What a budget question carries: what was spent of which limit."""
        shown: dict[str, object] = {
            "spent_tokens": self.spent,
            "max_budget_tokens": self.limits.tokens,
        }
        if self.limits.usd is not None:
            shown["spent_usd"] = str(self.spent_usd)
            shown["max_budget_usd"] = str(self.limits.usd)
        return shown


_TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def dollars(amount: Decimal) -> str:
    return f"${amount:,.4f}"


def usd(value: object) -> Decimal | None:
    """A USD amount given as a number or a decimal string (``None``: none or not one)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    return amount if amount.is_finite() and amount > 0 else None


def call_cost(model: str, usage: Usage, prices: Mapping[str, ModelPrice] | None) -> Decimal:
    """What one call of ``model`` cost in USD (0 for a model with no price: a run with a USD
    budget does not call one, see :func:`check_priced`)."""
    from subagents.models.prices import cost_of

    return cost_of(model, usage, prices).usd


def check_priced(model: str, prices: Mapping[str, ModelPrice] | None) -> None:
    """ConfigError when ``model`` has no price, so that a USD budget cannot be kept."""
    from subagents.messages import Usage
    from subagents.models.prices import cost_of

    if cost_of(model, Usage(input_tokens=1_000_000), prices).known:
        return
    raise ConfigError(
        f"The run has a budget in USD, and the model {model} has no known price, so what its "
        "calls cost cannot be counted.",
        hint=f'give it one in the config ([prices."{model}"] input_per_mtok and '
        "output_per_mtok), or budget in tokens with --max-budget-tokens",
    )


def run_limits(services: Services) -> Limits:
    """The budget of a run started on ``services``: the limits given to the runtime, else
    ``[budget]``'s, each kind on its own."""
    config = services.config.budget
    given = services.budget_limits
    return Limits(
        given.tokens if given.tokens is not None else config.max_tokens,
        given.usd if given.usd is not None else usd(config.max_usd),
    )


def restored_budget(
    task: TaskRecord, sessions: Iterable[SessionRecord], services: Services
) -> Budget:
    """The budget of ``task`` going on: the limits given to the runtime now (kept with the
    task from now on), else the task's own, else ``[budget]``'s; what its sessions spent
    counts."""
    task.settings.update(budget_setting(services.budget_limits))
    kept = Limits.from_state(task.settings, BUDGET_SETTING, BUDGET_USD_SETTING)
    default = run_limits(services)
    limits = Limits(
        kept.tokens if kept.tokens is not None else default.tokens,
        kept.usd if kept.usd is not None else default.usd,
    )
    return Budget.after(sessions, limits, services.config.model_prices())


def budget_hint(task_id: str, budget: Budget) -> str:
    """How to go on with a task its budget stopped: a larger value for each limit reached."""
    flags = []
    tokens, limit_usd = budget.limits.tokens, budget.limits.usd
    if tokens is not None and budget.spent >= tokens:
        flags.append(f"--max-budget-tokens {max(budget.spent * 2, 1000)}")
    if limit_usd is not None and budget.spent_usd >= limit_usd:
        flags.append(f"--max-budget-usd {max(budget.spent_usd * 2, Decimal('0.01')):.2f}")
    return f"subagents resume {task_id} " + " ".join(flags or ["--max-budget-tokens N"])


def budget_setting(limits: Limits) -> dict[str, object]:
    """What a task keeps of the limits it was given (nothing for none)."""
    return limits.to_state(BUDGET_SETTING, BUDGET_USD_SETTING)


_Amount = TypeVar("_Amount", int, Decimal)


def _capped(mine: _Amount | None, room: _Amount | None) -> _Amount | None:
    if mine is None or room is None:
        return mine
    return min(mine, room)
