"""What model calls cost (models/prices.py): the genai-prices table for hosted models, with
Anthropic's cache tokens added back to its input count; ``[prices]`` for the models it does not
know; and an unknown price said to be unknown, never guessed."""

from __future__ import annotations

from decimal import Decimal

from genai_prices import Usage as TableUsage
from genai_prices import calc_price
from hypothesis import given
from hypothesis import strategies as st

from subagents.messages import Usage
from subagents.models.prices import Cost, ModelPrice, cost_of, total_cost

OWN = ModelPrice(Decimal("0.5"), Decimal("2"), cache_read_per_mtok=Decimal("0.05"))


def test_a_hosted_openai_model_is_priced_by_the_table() -> None:
    usage = Usage(input_tokens=120_000, output_tokens=8_000, cache_read_tokens=20_000)
    expected = calc_price(
        TableUsage(input_tokens=120_000, output_tokens=8_000, cache_read_tokens=20_000),
        "gpt-4o",
        provider_id="openai",
    ).total_price
    cost = cost_of("openai:gpt-4o", usage)
    assert cost.known and cost.usd == Decimal(expected) > 0


def test_an_anthropic_calls_cache_tokens_are_added_back_to_its_input() -> None:
    # Anthropic reports the uncached input apart from what was read from or written to the cache
    usage = Usage(input_tokens=1_000, output_tokens=100, cache_read_tokens=50_000)
    whole = TableUsage(input_tokens=51_000, output_tokens=100, cache_read_tokens=50_000)
    expected = calc_price(whole, "claude-sonnet-4-5", provider_id="anthropic").total_price
    assert cost_of("anthropic:claude-sonnet-4-5", usage).usd == Decimal(expected)


def test_a_model_without_a_price_is_unknown_and_counts_0() -> None:
    usage = Usage(input_tokens=5_000, output_tokens=500)
    for model in ("openai:qwen2.5-coder-1.5b", "ollama:llama3", "llamacpp:/m.gguf", "scripted:x"):
        assert cost_of(model, usage) == Cost(Decimal(0), known=False), model
    assert total_cost([cost_of("openai:gpt-4o", usage), cost_of("ollama:llama3", usage)]).known is (
        False
    )


def test_a_price_from_config_wins_and_is_exact() -> None:
    # OpenAI counts the cache read within the input: 1 M plain, 1 M read, 1 M out
    usage = Usage(input_tokens=2_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000)
    prices = {"openai:gpt-4o": OWN}
    assert cost_of("openai:gpt-4o", usage, prices) == Cost(Decimal("2.55"))


def test_no_tokens_cost_nothing_whatever_the_model() -> None:
    assert cost_of("ollama:llama3", Usage()) == Cost()


counts = st.integers(min_value=0, max_value=10**9)


@given(counts, counts, counts, counts, counts, counts)
def test_a_priced_models_cost_adds_up_call_by_call(
    in_a: int, out_a: int, read_a: int, in_b: int, out_b: int, read_b: int
) -> None:
    first = Usage(input_tokens=in_a + read_a, output_tokens=out_a, cache_read_tokens=read_a)
    second = Usage(input_tokens=in_b + read_b, output_tokens=out_b, cache_read_tokens=read_b)
    prices = {"openai:mine": OWN}
    apart = cost_of("openai:mine", first, prices) + cost_of("openai:mine", second, prices)
    together = cost_of("openai:mine", first + second, prices)
    assert apart == together and together.usd >= 0


def test_every_prompt_token_counts_however_the_provider_reports_them() -> None:
    from subagents.models.prices import prompt_tokens

    usage = Usage(input_tokens=1_000, cache_read_tokens=4_000, cache_write_tokens=500)
    assert prompt_tokens("anthropic:claude-haiku-4-5", usage) == 5_500
    assert prompt_tokens("openai:gpt-4o", usage) == 1_000  # its input holds the cache reads
