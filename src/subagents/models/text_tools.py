"""A model whose tool calls may be written as text: ``[providers.NAME] tool_calls``.

:class:`TextToolCallModel` wraps any :class:`~subagents.models.base.Model`:

- ``"auto"``: the request goes out as it is (tools sent natively); an answer with no native
  tool call is searched for calls written as text (:mod:`subagents.models.text_calls`).
- ``"text"``: no ``tools`` are sent at all. The system prompt describes them and the form to
  write a call in (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), earlier calls
  are shown to the model in that form and their results as ``<tool_response>`` blocks in user
  turns, and every answer is searched for calls. For servers whose chat template knows nothing
  of tools, or mangles them.

A response whose calls came from its text says so in ``tool_calls_from_text`` (the forms
found, and any tool name mapped to an offered one); the trace records it. Streamed text is
passed on as the model writes it, calls included.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, Literal

from subagents.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from subagents.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ResponseCompleted,
    StreamEvent,
    ToolSpec,
    close_model,
)
from subagents.models.text_calls import (
    MAX_SCANNED_CHARS,
    find_text_tool_calls,
    render_text_tool_call,
    render_tool_response,
)

__all__ = [
    "TextToolCallModel",
    "read_text_tool_calls",
    "text_mode_instructions",
    "text_mode_messages",
    "text_mode_request",
]

TextMode = Literal["auto", "text"]


def text_mode_instructions(tools: Sequence[ToolSpec]) -> str:
    """What the system prompt says about the tools in text mode."""
    lines = [
        "# Tools",
        "",
        "You can call the tools below. To call one, write exactly this, with the arguments as "
        "a JSON object:",
        "<tool_call>",
        '{"name": "TOOL_NAME", "arguments": {"PARAMETER": "VALUE"}}',
        "</tool_call>",
        "Write one such block per call, then stop: the results come back to you in "
        "<tool_response> blocks. When you need no tool, answer in plain text, without "
        "<tool_call>.",
    ]
    for tool in tools:
        parameters = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
        lines += ["", f"## {tool.name}", tool.description.strip(), f"Parameters: {parameters}"]
    return "\n".join(lines)


def text_mode_messages(messages: Sequence[Message]) -> list[Message]:
    """The history with no native tool calls in it: calls written into the assistant's text,
    the results of consecutive calls gathered into one user turn."""
    converted: list[Message] = []
    results: list[str] = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            results.append(render_tool_response(message))
            continue
        if results:
            converted.append(UserMessage("\n".join(results)))
            results = []
        if isinstance(message, AssistantMessage) and message.tool_calls:
            written = [render_text_tool_call(call) for call in message.tool_calls]
            content = "\n".join([message.content, *written] if message.content else written)
            converted.append(AssistantMessage(content, reasoning=message.reasoning))
        else:
            converted.append(message)
    if results:
        converted.append(UserMessage("\n".join(results)))
    return converted


def text_mode_request(request: ModelRequest) -> ModelRequest:
    """``request`` as text mode sends it: no tools, which the system prompt describes instead
    (or, on a turn that must answer, says cannot be called now), and a history without native
    tool calls."""
    if not request.tools:
        return request
    instructions = (
        text_mode_instructions(request.tools)
        if request.callable_tools
        else "No tool can be called now: answer in plain text, without <tool_call>."
    )
    system = "\n\n".join(part for part in (request.system, instructions) if part)
    return ModelRequest(system, text_mode_messages(request.messages), (), request.settings)


def read_text_tool_calls(response: ModelResponse, tools: Sequence[ToolSpec]) -> ModelResponse:
    """``response`` with the tool calls written in its text made into ordinary calls, when it
    has no native ones and its text holds calls to offered tools; else ``response`` as is."""
    if response.tool_calls or not tools or not response.text:
        return response
    if len(response.text) > MAX_SCANNED_CHARS:
        too_long = f"the answer is longer than {MAX_SCANNED_CHARS} characters"
        return replace(response, tool_calls_from_text={"not_scanned": too_long})
    found = find_text_tool_calls(response.text, (tool.name for tool in tools))
    if found is None:
        return response
    if not found.calls:  # e.g. a <tool_call> naming a tool not offered: an answer, traced
        return replace(response, tool_calls_from_text={"ignored": found.ignored})
    note: dict[str, Any] = {"formats": list(found.formats)}
    if found.renamed:
        note["renamed"] = dict(found.renamed)
    # an answer cut at the token limit stays cut: its calls' arguments may be cut short
    cut = response.stop_reason == "max_tokens"
    return replace(
        response,
        text=found.text,
        tool_calls=found.calls,
        stop_reason="max_tokens" if cut else "tool_use",
        tool_calls_from_text=note,
    )


class TextToolCallModel:
    """``inner`` with its tool calls read from text too (``mode="auto"``) or only from text
    (``mode="text"``); see the module docstring. Anything else is ``inner``'s."""

    def __init__(self, inner: Model, mode: TextMode = "auto") -> None:
        self.inner = inner
        self.mode = mode

    @property
    def name(self) -> str:
        return self.inner.name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)

    def _outgoing(self, request: ModelRequest) -> ModelRequest:
        return text_mode_request(request) if self.mode == "text" else request

    async def request(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.request(self._outgoing(request))
        return read_text_tool_calls(response, request.tools)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        async for event in self.inner.stream(self._outgoing(request)):
            if isinstance(event, ResponseCompleted):
                yield ResponseCompleted(read_text_tool_calls(event.response, request.tools))
            else:
                yield event

    async def aclose(self) -> None:
        await close_model(self.inner)
