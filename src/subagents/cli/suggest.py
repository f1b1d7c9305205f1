"""`subagents suggest "PROMPT"`: which agents fit a prompt, and the offer made before a run.

Only typer is imported at module level; the inventory and the ranking come in inside the
command so that ``subagents --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from subagents._preview import shorten
from subagents.cli.common import user_errors
from subagents.cli.options import CwdOption, JsonOption

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.inventory import Inventory
    from subagents.suggest import Suggestion

__all__ = ["offer_agent", "suggest_command"]

_YES = frozenset({"", "y", "yes"})
# Columns of the table: name, score, matched words; 32 + 2 + 7 + 2 + 37 = 80.
_NAME_WIDTH = 32
_SCORE_WIDTH = 7
_MATCHED_WIDTH = 37

PromptArgument = Annotated[
    str, typer.Argument(help="The prompt to match against the agents; '-' reads standard input.")
]
LimitOption = Annotated[
    int, typer.Option("--limit", "-n", min=1, max=50, help="How many matches to show.")
]


def suggest_command(
    prompt: PromptArgument,
    cwd: CwdOption = None,
    limit: LimitOption = 5,
    as_json: JsonOption = False,
) -> None:
    """Rank the active agents against PROMPT by their names and descriptions (no model)."""
    from subagents.inventory import Inventory
    from subagents.suggest import PROMPT_CHARS, rank_agents, standout

    if prompt == "-":
        prompt = sys.stdin.read(PROMPT_CHARS)
    with user_errors():
        inventory = Inventory.discover(cwd)
    # standout compares the first with the second, so rank at least two even for --limit 1
    ranked = rank_agents(prompt, inventory.active(), limit=max(limit, 2))
    chosen = standout(ranked)
    ranked = ranked[:limit]
    if as_json:
        _print_json(ranked, chosen)
    else:
        _print_table(ranked, chosen, active=len(inventory.active()))


def _print_json(ranked: list[Suggestion], chosen: Suggestion | None) -> None:
    import json

    data = {
        "matches": [{"name": s.name, "score": s.score, "matched": list(s.matched)} for s in ranked],
        "standout": chosen.name if chosen is not None else None,
    }
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _print_table(ranked: list[Suggestion], chosen: Suggestion | None, *, active: int) -> None:
    """Plain fixed-width lines: they fit 80 columns wherever the output goes."""
    if not ranked:
        typer.echo(f"No agent matches this prompt ({active} active agents).")
        return
    typer.echo(f"{'Agent':<{_NAME_WIDTH}}  {'Score':>{_SCORE_WIDTH}}  Matched")
    for s in ranked:
        name = shorten(s.name, _NAME_WIDTH)
        matched = shorten(", ".join(dict.fromkeys(s.matched)), _MATCHED_WIDTH)
        typer.echo(f"{name:<{_NAME_WIDTH}}  {s.score:>{_SCORE_WIDTH}.2f}  {matched}")
    if chosen is not None:
        typer.echo(f"\n{chosen.name} stands out: it would be offered before a run.")
    else:
        typer.echo("\nNo agent stands out: none would be offered before a run.")


def offer_agent(
    console: Console, inventory: Inventory, prompt: str, ask: Callable[[str], str]
) -> str | None:
    """The agent to run ``prompt`` with, when one stands out and the person says yes.

    Asks "Use NAME for this? [Y/n]" through ``ask`` only when an agent stands out; an empty
    answer or y/yes accepts it. No standout, any other answer, or no answer at all (end of
    input, Ctrl-C) gives None, and the main agent runs as usual.
    """
    from subagents.suggest import rank_agents, standout

    # the built-in agents are what the main agent delegates to anyway: not worth a question
    own = [record for record in inventory.active() if record.scope != "builtin"]
    chosen = standout(rank_agents(prompt, own, limit=2))
    if chosen is None:
        return None
    matched = ", ".join(dict.fromkeys(chosen.matched))
    console.print(f"[dim]{chosen.name} matches: {shorten(matched, 60)}[/]", highlight=False)
    try:
        answer = ask(f"Use {chosen.name} for this? [Y/n]")
    except (EOFError, KeyboardInterrupt):
        return None
    return chosen.name if answer.strip().lower() in _YES else None
