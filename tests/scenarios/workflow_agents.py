"""Scripted models for the agents of `examples/workflow-project`, shared by the workflow tests
and the workflow scenario process.

Each model is a function of what its session has seen, as a real model's next step is: a
session resumed after a crash continues the same plan. The tester really runs the cart's code
through Bash, so "PASS" means the fixer's edit worked.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.testing import FunctionModel, text_response, tool_call_response

BUG = "sum(line.price_cents for line in self.lines)"
FIX = "sum(line.price_cents * line.quantity for line in self.lines)"
CHECK = (
    "python3 -c \"import sys; sys.path.insert(0, 'src'); from shop.cart import Cart; "
    "c = Cart(); c.add('apple', 50, 3); c.add('pear', 70); print('total', c.total_cents())\""
)

BLOCK_ENV = "WORKFLOW_BLOCK_MARKER"
"""When set, the fixer's second turn creates this file and then hangs (to be SIGKILLed)."""


def results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, ToolResultMessage)]


def prompt_of(request: ModelRequest) -> str:
    return next((m.content for m in request.messages if isinstance(m, UserMessage)), "")


def reviewer(request: ModelRequest) -> ModelResponse:
    seen = results(request)
    if not seen:
        return tool_call_response("Read", {"file_path": "src/shop/cart.py"})
    if BUG in seen[0]:
        return text_response("src/shop/cart.py:25: total_cents ignores quantity; multiply.")
    return text_response("No bugs found.")


def fixer(request: ModelRequest) -> ModelResponse:
    seen = results(request)
    if not seen:
        arguments = {"file_path": "src/shop/cart.py", "old_string": BUG, "new_string": FIX}
        return tool_call_response("Edit", arguments)
    marker = os.environ.get(BLOCK_ENV)
    if marker and not Path(marker).exists():
        Path(marker).write_text("fixer edited, about to answer")
        time.sleep(600)  # the test SIGKILLs the process here
    return text_response(f"fixed: total_cents multiplies by quantity ({seen[-1][:40]})")


def tester(request: ModelRequest) -> ModelResponse:
    seen = results(request)
    if not seen:
        return tool_call_response("Bash", {"command": CHECK})
    return text_response(f"{seen[-1].strip()}\n" + ("PASS" if "total 220" in seen[-1] else "FAIL"))


def writer(request: ModelRequest) -> ModelResponse:
    prompt = prompt_of(request)
    if "example" in prompt.lower():
        return text_response("Cart.total_cents() sums price times quantity. Example: 3 x 50 = 150.")
    return text_response("Cart.total_cents() returns the total.")


def critic(request: ModelRequest) -> ModelResponse:
    return text_response("APPROVED" if "Example:" in prompt_of(request) else "Add an example.")


def never_satisfied(request: ModelRequest) -> ModelResponse:
    return text_response("Add an example, and more detail.")


def reviewer_named(label: str, gate: Callable[[], Awaitable[None]] | None = None) -> FunctionModel:
    """A reviewer that answers ``label: ...`` at once, or after ``gate`` lets it."""

    async def turn(request: ModelRequest) -> ModelResponse:
        if gate is not None:
            await gate()
        await asyncio.sleep(0)
        return text_response(f"{label}: reviewed {len(prompt_of(request))} characters")

    return FunctionModel(turn, name=f"scripted:{label}")


def lead(request: ModelRequest) -> ModelResponse:
    prompt = prompt_of(request)
    order = [label for label in ("correctness", "security", "style") if label in prompt]
    return text_response("merged: " + ", ".join(order))


def models() -> dict[str, FunctionModel]:
    """A model for every agent of the example project (the parallel reviewers answer at once)."""
    return {
        "reviewer": FunctionModel(reviewer, name="scripted:reviewer"),
        "fixer": FunctionModel(fixer, name="scripted:fixer"),
        "tester": FunctionModel(tester, name="scripted:tester"),
        "writer": FunctionModel(writer, name="scripted:writer"),
        "critic": FunctionModel(critic, name="scripted:critic"),
        "security-reviewer": reviewer_named("security"),
        "style-reviewer": reviewer_named("style"),
        "lead": FunctionModel(lead, name="scripted:lead"),
    }
