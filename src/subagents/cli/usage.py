"""What a task's sessions used: tokens by kind and the USD they cost (see
:mod:`subagents.models.prices`), per session and for the whole task, as ``tasks show`` prints
them and its ``--json`` gives them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from subagents.config import Config
    from subagents.models.prices import Cost, ModelPrice
    from subagents.runtime.runtime import Runtime
    from subagents.store.base import Store
    from subagents.store.records import SessionRecord

__all__ = [
    "TOKEN_KINDS",
    "UsageReport",
    "project_prices",
    "runtime_prices",
    "task_usage",
    "usage_by_agent",
    "usage_report",
]

TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True, slots=True)
class UsageReport:
    """A task's usage: its total, each session's (by session id), and the models that have no
    price (their calls count as 0)."""

    total: dict[str, Any]
    sessions: dict[str, dict[str, Any]]
    unpriced: tuple[str, ...]
    prompt_tokens: int = 0
    """Every input token, the cache's included, however each provider counts them."""

    def summary(self) -> dict[str, Any]:
        """The task's total, with its cache hit rate: what ``--json`` outputs give."""
        return {**self.total, "cache_hit_rate": self.cache_hit_rate}

    @property
    def cache_hit_rate(self) -> float | None:
        """The share of the input tokens read from the cache (``None``: no input, or no
        provider reported any cache tokens, which cannot tell a miss from silence)."""
        from subagents.models.prices import cache_hit_rate

        total = self.total
        read, written = total["cache_read_tokens"], total["cache_write_tokens"]
        return cache_hit_rate(read, written, self.prompt_tokens)

    def line(self, session_id: str | None = None, *, cost: bool = True) -> str:
        """``1,234 tokens, $0.0123`` for a session (the task's total without one)."""
        usage = self.total if session_id is None else self.sessions[session_id]
        tokens = f"{usage['input_tokens'] + usage['output_tokens']:,} tokens"
        if not cost:
            return tokens
        return tokens + (f", ${usage['cost_usd']:.4f}" if usage["cost_known"] else ", cost unknown")


def usage_report(
    sessions: Sequence[SessionRecord], prices: Mapping[str, ModelPrice], *, priced: bool = True
) -> UsageReport:
    """The usage of ``sessions``; without ``priced``, the tokens only (no price is looked up,
    which costs a first lookup in the table about 50 ms)."""
    from subagents.messages import Usage
    from subagents.models.prices import Cost, cost_of, prompt_tokens, total_cost

    costs: list[Cost] = []
    by_session: dict[str, dict[str, Any]] = {}
    unpriced: list[str] = []
    totals = dict.fromkeys(TOKEN_KINDS, 0)
    prompted = 0
    for record in sessions:
        counts = {kind: int(record.usage.get(kind, 0)) for kind in TOKEN_KINDS}
        used = Usage(**counts)
        prompted += prompt_tokens(record.model, used)
        cost = cost_of(record.model, used, prices) if priced else Cost(known=False)
        costs.append(cost)
        if not cost.known and record.model not in unpriced:
            unpriced.append(record.model)
        by_session[record.session_id] = _shown(counts, cost)
        for kind in TOKEN_KINDS:
            totals[kind] += counts[kind]
    total = _shown(totals, total_cost(costs))
    return UsageReport(total, by_session, tuple(unpriced), prompted)


def _shown(counts: Mapping[str, int], cost: Cost) -> dict[str, Any]:
    return {**counts, "cost_usd": round(float(cost.usd), 6), "cost_known": cost.known}


def project_prices(cwd: Path | None) -> dict[str, ModelPrice]:
    """The ``[prices]`` of the project at ``cwd`` (default: here); ConfigError on a bad
    config."""
    from pathlib import Path

    from subagents.config import load_config

    return load_config(cwd or Path.cwd()).model_prices()


def runtime_prices(runtime: Runtime) -> dict[str, ModelPrice] | None:
    """The ``[prices]`` of ``runtime``'s config; ``None`` when the config cannot be read (the
    run reports that itself, and a display then prices nothing)."""
    from subagents.errors import SubagentsError

    try:
        return runtime.config.model_prices()
    except SubagentsError:
        return None


def task_usage(
    store: Store | None, task_id: str | None, config: Config, *, priced: bool = True
) -> UsageReport | None:
    """What the task ``task_id`` used so far, priced by the table and ``config``'s ``[prices]``
    (see :func:`usage_report`); ``None`` without a store, or when it cannot be read (the run's
    own outcome comes first)."""
    from subagents.errors import SubagentsError

    if store is None or task_id is None:
        return None
    prices = config.model_prices()
    try:
        return usage_report(store.sessions(task_id), prices, priced=priced)
    except SubagentsError:
        return None


def usage_by_agent(
    sessions: Sequence[SessionRecord], prices: Mapping[str, ModelPrice]
) -> list[dict[str, Any]]:
    """One row for each agent and model: its sessions, model calls, tokens and cost, most
    tokens first."""
    groups: dict[tuple[str, str], list[SessionRecord]] = {}
    for record in sessions:
        groups.setdefault((record.agent_name, record.model), []).append(record)
    rows = []
    for (agent, model), members in groups.items():
        total = usage_report(members, prices).total
        calls = sum(int(record.usage.get("requests", 0)) for record in members)
        rows.append({"agent": agent, "model": model, "sessions": len(members), "requests": calls})
        rows[-1].update(total)
    return sorted(rows, key=lambda row: -(row["input_tokens"] + row["output_tokens"]))
