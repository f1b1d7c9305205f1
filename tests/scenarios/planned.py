"""A scripted model that follows a plan of tool calls, one per turn, then reports every result
(the durable-run and store tests drive their runs with it)."""

from __future__ import annotations

from typing import Any

from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.testing import FunctionModel, text_response, tool_call_response

__all__ = ["Plan", "planner"]

Plan = list[tuple[str, dict[str, Any]]]


def planner(name: str, plan: Plan) -> FunctionModel:
    """A model that follows ``plan`` one tool call per turn, then reports every result."""

    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if len(results) < len(plan):
            tool_name, arguments = plan[len(results)]
            return tool_call_response(tool_name, arguments)
        return text_response(f"{name}: " + " | ".join(r.content for r in results))

    return FunctionModel(turn, name=f"scripted:{name}")
