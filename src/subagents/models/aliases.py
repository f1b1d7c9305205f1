"""The one table of model tier aliases (``haiku``, ``sonnet``, ``opus``, ``fable``, ...).

Agent files written for Claude Code name a tier, not a model: ``model: sonnet``. This table says
which model each tier means by default; ``[models]`` in config.toml overrides any entry (and
may add new names), e.g. ``sonnet = "openai:gpt-4o"`` to run Claude Code's files elsewhere.

The ids follow what Claude Code's aliases resolve to on the Anthropic API (its model
configuration page and Anthropic's models overview, late 2026). They move every few months:
update this table, nothing else, when they do.
"""

from __future__ import annotations

__all__ = [
    "CONTEXT_1M_SUFFIX",
    "DEFAULT_ALIASES",
    "TIER_ALIASES",
    "split_context_suffix",
]

TIER_ALIASES: dict[str, str] = {
    "haiku": "anthropic:claude-haiku-5-5",
    "sonnet": "anthropic:claude-sonnet-5-5",
    "opus": "anthropic:claude-opus-5-5",
    "fable": "anthropic:claude-fable-5-2",  # the tier above opus
}
"""Each tier and the model it means unless ``[models]`` says otherwise."""

DEFAULT_ALIASES: dict[str, str] = {
    **TIER_ALIASES,
    "best": "fable",  # the top tier; follows a [models] mapping of `fable`
    # Claude Code plans with opus and executes with sonnet under `opusplan`; plan-mode
    # switching is not modelled here, so the whole session runs on opus.
    "opusplan": "opus",
}
"""Every built-in alias: the tiers, and names that point at a tier (followed like any alias)."""

CONTEXT_1M_SUFFIX = "[1m]"
"""``sonnet[1m]``: the same model, asked for with its 1M-token context window."""


def split_context_suffix(spec: str) -> tuple[str, bool]:
    """``("sonnet", True)`` for ``"sonnet[1m]"``; the text unchanged and ``False`` otherwise."""
    text = spec.strip()
    if text.lower().endswith(CONTEXT_1M_SUFFIX):
        return text[: -len(CONTEXT_1M_SUFFIX)].strip(), True
    return text, False
