"""What model calls cost in USD.

Prices come from the ``genai-prices`` table (hosted models of the known providers), or from
``[prices."PROVIDER:MODEL"]`` in config, which wins: a local or private model has a price only
when someone gives it one. A model with neither is *unknown*: its cost counts as 0 and is said
to be unknown, never guessed.

Providers count input tokens differently: Anthropic's ``input_tokens`` leave out the tokens read
from or written to the cache, OpenAI's include them. The table wants them included, so an
Anthropic call's cache tokens are added back before it is priced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from subagents.messages import Usage

__all__ = ["Cost", "ModelPrice", "cache_hit_rate", "cost_of", "prompt_tokens", "total_cost"]

_PER_MILLION = Decimal(1_000_000)
# our provider prefix -> the table's provider id, for the prefixes whose models it prices
_TABLE_PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens of one model (``[prices."PROVIDER:MODEL"]``)."""

    input_per_mtok: Decimal = Decimal(0)
    output_per_mtok: Decimal = Decimal(0)
    cache_read_per_mtok: Decimal | None = None  # None: as input
    cache_write_per_mtok: Decimal | None = None  # None: as input


@dataclass(frozen=True, slots=True)
class Cost:
    """The USD some calls cost; ``known`` is false when a model among them has no price
    (its calls count as 0)."""

    usd: Decimal = Decimal(0)
    known: bool = True

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.usd + other.usd, self.known and other.known)


def cost_of(model: str, usage: Usage, prices: Mapping[str, ModelPrice] | None = None) -> Cost:
    """What ``usage`` of ``model`` (``provider:model``) cost."""
    if not (usage.input_tokens or usage.output_tokens):
        return Cost()
    provider, _, name = model.partition(":")
    total_input = prompt_tokens(model, usage)
    own = (prices or {}).get(model)
    if own is not None:
        return Cost(_priced(own, usage, total_input))
    table_provider = _TABLE_PROVIDERS.get(provider)
    if table_provider is None or not name:
        return Cost(known=False)
    return _from_table(name, table_provider, usage, total_input)


def prompt_tokens(model: str, usage: Usage) -> int:
    """Every input token of ``usage``, those read from and written to the cache included,
    whichever way ``model``'s provider counts them."""
    if model.partition(":")[0] == "anthropic":
        return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return usage.input_tokens


def cache_hit_rate(read: int, written: int, prompted: int) -> float | None:
    """The share of ``prompted`` (every input token, see :func:`prompt_tokens`) that was
    ``read`` from a cache; ``None`` with no input, or when no provider reported any cache
    tokens (``read`` and ``written`` both 0), which cannot tell a miss from silence."""
    if not prompted or not (read or written):
        return None
    return read / prompted


def total_cost(costs: Iterable[Cost]) -> Cost:
    return sum(costs, Cost())


def _priced(price: ModelPrice, usage: Usage, total_input: int) -> Decimal:
    read = usage.cache_read_tokens
    write = usage.cache_write_tokens
    plain = max(total_input - read - write, 0)
    read_price = price.cache_read_per_mtok
    write_price = price.cache_write_per_mtok
    usd = plain * price.input_per_mtok + usage.output_tokens * price.output_per_mtok
    usd += read * (price.input_per_mtok if read_price is None else read_price)
    usd += write * (price.input_per_mtok if write_price is None else write_price)
    return usd / _PER_MILLION


def _from_table(name: str, provider: str, usage: Usage, total_input: int) -> Cost:
    from genai_prices import Usage as TableUsage
    from genai_prices import calc_price

    counted = TableUsage(
        input_tokens=total_input,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens or None,
        cache_write_tokens=usage.cache_write_tokens or None,
    )
    try:
        calculated = calc_price(counted, name, provider_id=provider)
    except LookupError:  # a model the table does not know (a local server's, say)
        return Cost(known=False)
    return Cost(Decimal(calculated.total_price))
