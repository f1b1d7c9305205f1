"""`make demo`: a main agent delegates to two subagents in parallel on the example project.

This is a SCRIPTED demo: the three "models" below are small functions that decide each turn
from what the tools really returned, so it runs anywhere with no API key. Everything else is
the real library: agent discovery from `examples/demo-project/.claude/agents` and the built-in
`Explore`, the Task tool, isolated subagent sessions with their own tools, the built-in Read /
Glob / Grep tools on real files, and the event stream that prints progress.

To run the same request on a real model:

    cd examples/demo-project
    subagents run "Map this project and review stock.py" --model openai:gpt-4o-mini
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from subagents.cli.trace import render_tree
from subagents.cli.ui.progress import progress_printer
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import (
    FunctionModel,
    text_response,
    tool_call_response,
    tool_calls_response,
)
from subagents.tracing.view import build_trace

PROJECT = Path(__file__).resolve().parent / "demo-project"
REQUEST = "Map this project and review src/inventory_app/stock.py for bugs."


def tool_results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, ToolResultMessage)]


def main_agent(request: ModelRequest) -> ModelResponse:
    results = tool_results(request)
    if not results:
        return tool_calls_response(
            [
                (
                    "Task",
                    {
                        "description": "Map the project",
                        "prompt": "List the Python modules of this project and find every "
                        "place where stock quantities change.",
                        "subagent_type": "Explore",
                    },
                ),
                (
                    "Task",
                    {
                        "description": "Review stock.py",
                        "prompt": "Review src/inventory_app/stock.py for bugs.",
                        "subagent_type": "code-reviewer",
                    },
                ),
            ],
            text="I'll map the project and review stock.py in parallel.",
        )
    explore, review = (re.sub(r"\n\nagent_id: .*", "", r, flags=re.S) for r in results)
    return text_response(
        f"Here is what the team found.\n\n## Project map (Explore)\n{explore}\n\n"
        f"## Review of stock.py (code-reviewer)\n{review}"
    )


def explore_agent(request: ModelRequest) -> ModelResponse:
    results = tool_results(request)
    if len(results) == 0:
        return tool_call_response("Glob", {"pattern": "**/*.py"})
    if len(results) == 1:
        return tool_call_response(
            "Grep",
            {"pattern": r"self\.quantities\[", "output_mode": "content", "-n": True},
        )
    files = [line for line in results[0].splitlines() if line.endswith(".py")]
    changes = [line for line in results[1].splitlines() if "quantities[" in line]
    return text_response(
        f"{len(files)} Python files: "
        + ", ".join(sorted(files))
        + f".\nStock quantities change in {len(changes)} places:\n"
        + "\n".join(f"- {line.strip()}" for line in changes)
    )


def reviewer_agent(request: ModelRequest) -> ModelResponse:
    results = tool_results(request)
    if not results:
        return tool_call_response("Read", {"file_path": "src/inventory_app/stock.py"})
    if len(results) == 1:
        return tool_call_response(
            "Grep",
            {
                "pattern": "def ship",
                "path": "src/inventory_app/stock.py",
                "output_mode": "content",
                "-n": True,
                "-A": 3,
            },
        )
    ship = results[1]
    line = re.search(r"(\d+)[:-]\s*def ship", ship)
    checks_stock = "quantity >" in ship or "< 0" in ship or "negative" in ship.split("BUG")[0]
    if checks_stock:
        return text_response("No critical findings: ship() validates the quantity.")
    where = f"stock.py:{line.group(1)}" if line else "stock.py"
    return text_response(
        f"**Critical** ({where}): `Stock.ship` subtracts without checking the quantity held, "
        "so stock can go negative. Fix: raise ValueError when `quantity <= 0` or when "
        "`quantity > self.quantities[sku]`, and add a test for both cases."
    )


def main() -> None:
    console = Console()
    console.rule("[bold]subagents demo[/] - scripted models, real tools, real agent files")
    console.print(f"Project: {PROJECT}\nRequest: {REQUEST}\n")
    # Every run is a durable task; the demo keeps its store in a temporary folder.
    with tempfile.TemporaryDirectory() as folder, open_store(Path(folder) / "state.db") as store:
        runtime = Runtime(
            cwd=PROJECT,
            model=FunctionModel(main_agent, name="scripted:main"),
            agent_models={
                "explore": FunctionModel(explore_agent, name="scripted:explore"),
                "code-reviewer": FunctionModel(reviewer_agent, name="scripted:code-reviewer"),
            },
            events=EventBus([progress_printer(console)]),
            store=store,
        )
        result = runtime.run_sync(REQUEST)
        trace = build_trace(store, result.task_id or "")
    console.rule("Final answer")
    console.print(result.output, markup=False, highlight=False)
    table = Table(title="Subagents")
    for column in ("agent", "agent_id", "model", "status", "tool calls", "duration"):
        table.add_column(column)
    for spawn in result.subagents:
        table.add_row(
            spawn.subagent_type,
            spawn.agent_id[:8],
            spawn.resolved_model,
            "ok" if spawn.success else spawn.status,
            str(spawn.tool_use_count),
            f"{spawn.duration_ms:.0f} ms",
        )
    console.print(table)
    console.rule("Trace of the run (what `subagents trace TASK` shows)")
    console.print(render_tree(trace))
    console.print(
        "\n[dim]This was a scripted demo (no API key needed). To run it on a real model:\n"
        f"  cd {PROJECT.relative_to(Path.cwd()) if PROJECT.is_relative_to(Path.cwd()) else PROJECT}"
        '\n  subagents run "Map this project and review stock.py" --model openai:gpt-4o-mini[/]'
    )
    if not result.success:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
