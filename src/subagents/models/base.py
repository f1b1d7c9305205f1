"""The Model protocol: what the agent loop asks of every provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from subagents.messages import Message, ToolCall, Usage

__all__ = [
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ResponseCompleted",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "ToolSpec",
    "close_model",
]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "other"]


@dataclass(slots=True, frozen=True)
class ToolSpec:
    """What a model is told about one tool: its name, description and JSON Schema input;
    ``parallel``: several calls of it in one answer are worth making (delegations), which a
    schema-constrained turn offers a form for (:mod:`subagents.models.schema_turns`)."""

    name: str
    description: str
    parameters: dict[str, Any]
    parallel: bool = False


@dataclass(slots=True, frozen=True)
class ModelSettings:
    """Per-request settings. ``effort`` (``low``, ``medium``, ``high``, ``max``; from an agent
    file's ``effort``) asks for the provider's reasoning control: OpenAI's ``reasoning_effort``,
    Anthropic's extended thinking budget (see each provider's model class).
    ``frequency_penalty`` (OpenAI's range, -2 to 2) is sent where the API takes one: a turn
    asked again after a loop sets it (see :mod:`subagents.runtime.answer_check`).
    ``tool_choice="none"``: the model must answer without calling a tool this turn, though the
    tools stay described (the loop guard asks it of a model that keeps making the same call);
    each provider says it in its own way (OpenAI's and Anthropic's ``tool_choice``, a schema
    or grammar that allows a reply only, a line in a text-mode prompt)."""

    temperature: float | None = None
    max_tokens: int | None = None
    timeout_seconds: float | None = None
    effort: str | None = None
    frequency_penalty: float | None = None
    tool_choice: Literal["none"] | None = None
    reply_schema: str | None = None
    """The JSON Schema (as JSON text) a final answer must match (an agent's ``outputSchema``):
    a schema-constrained turn constrains its reply to it, which a small model needs to write
    a typed result at all (:mod:`subagents.runtime.typed_result`)."""


@dataclass(slots=True)
class ModelRequest:
    """One turn's input: the system prompt, the history so far and the tools on offer."""

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)

    @property
    def callable_tools(self) -> Sequence[ToolSpec]:
        """The tools the model may call this turn: none when it must answer
        (``tool_choice="none"``)."""
        return () if self.settings.tool_choice == "none" else self.tools


@dataclass(slots=True)
class ModelResponse:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "end_turn"
    model_name: str = ""
    reasoning: tuple[dict[str, Any], ...] = ()  # see AssistantMessage.reasoning
    tool_calls_from_text: dict[str, Any] | None = None
    """Set when the tool calls were read from the text (see models.text_tools): the forms
    found and any names mapped to an offered tool's; or why the text was not searched."""
    response_id: str = ""
    """The provider's id of this response ("" when it gave none)."""
    response_model: str = ""
    """The model that answered, as the provider names it (e.g. a dated version)."""
    finish_reason: str = ""
    """Why it stopped, in the provider's own words (``stop_reason`` is ours)."""
    usage_estimated: bool = False
    """The server reported no token counts (llama-cpp-python's server does not in a stream):
    ``usage`` is an estimate from the request's and the answer's length (see
    :func:`subagents.models.openai.estimated_usage`), so that budgets and figures still count
    the call."""


@dataclass(slots=True, frozen=True)
class TextDelta:
    """A piece of streamed text."""

    text: str


@dataclass(slots=True, frozen=True)
class ResponseCompleted:
    """The last event of a stream: the whole response, assembled."""

    response: ModelResponse


StreamEvent = TextDelta | ResponseCompleted


@runtime_checkable
class Model(Protocol):
    """A language model the agent loop can talk to.

    ``name`` is the ``provider:model`` string it was resolved from (e.g. ``openai:gpt-4o``).
    ``stream`` yields :class:`TextDelta` events and ends with exactly one
    :class:`ResponseCompleted`. ``aclose`` releases what the model holds (its HTTP
    connections); the model may be used again after it. Whoever builds a model closes it
    (the runtime closes those it built from model strings), through :func:`close_model`.
    """

    @property
    def name(self) -> str: ...

    async def request(self, request: ModelRequest) -> ModelResponse: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


async def close_model(model: object) -> None:
    """``model.aclose()``, for a model that has one: a model written before ``aclose`` was
    part of :class:`Model` holds nothing to close."""
    close = getattr(model, "aclose", None)
    if close is not None:
        await close()
