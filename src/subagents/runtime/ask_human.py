"""AskHuman: the tool that pauses a durable run until a person answers.

Offered when someone can answer (see :func:`~subagents.runtime.tool_menu.someone_can_answer`);
the session that calls it raises :class:`~subagents.runtime.pause.RunPaused` with the question.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field

from subagents.runtime.session import Session
from subagents.tools.base import Tool, ToolContext
from subagents.tools.names import ASK_HUMAN_TOOL_NAME
from subagents.tools.schema import input_schema

__all__ = ["ASK_HUMAN_TOOL_NAME", "AskHumanInput", "ask_human_tool"]


class AskHumanInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question, with the context a person needs to answer")


async def _ask_human(*, ctx: ToolContext, question: str) -> str:
    session = ctx.session
    if not isinstance(session, Session):
        raise RuntimeError("AskHuman only works inside a subagents session")
    raise session.ask(ctx.tool_call_id, ASK_HUMAN_TOOL_NAME, {"question": question}, "ask_human")


@functools.cache
def ask_human_tool() -> Tool:
    """AskHuman: pause the run until a person answers (offered when someone can answer:
    see :func:`~subagents.runtime.tool_menu.someone_can_answer`)."""
    return Tool(
        name=ASK_HUMAN_TOOL_NAME,
        description="Ask the person running this task a question and wait for the answer. "
        "The run pauses until they reply; use it only when you cannot go on without them.",
        parameters=input_schema(AskHumanInput),
        function=_ask_human,
        input_model=AskHumanInput,
        takes_context=True,
        read_only=True,
    )
