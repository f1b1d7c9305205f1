"""What a model is told about the Task tools: their inputs and schemas, the Task tool's
description with the agents on offer (full, or compact for small models), and the answer to a
TaskOutput or TaskCancel call with no background subagent to act on.
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from subagents.tools.schema import input_schema

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition
    from subagents.inventory import Inventory

__all__ = [
    "COMPACT_LISTING_CHARS",
    "NONE_AVAILABLE",
    "TASK_BACKGROUND_PARAMETERS",
    "TaskCancelInput",
    "TaskInput",
    "TaskOutputInput",
    "TaskToolDescriptions",
    "input_schema_of",
    "no_background",
    "task_schema",
    "task_tool_description",
]


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="A short (3-5 word) description of the task")
    prompt: str = Field(description="The complete task for the agent, with all context it needs")
    # Required, as the schema shown to models says (see task_schema); the default only lets
    # the tool itself answer a call without it, with the agent types to choose from.
    subagent_type: str = Field(
        default="",
        description="The type of agent to use, from the list in this tool's description "
        "(with resume: the type of the agent being resumed)",
    )
    model: str | None = Field(
        default=None, description="Optional model for this run: an alias or provider:model"
    )
    run_in_background: bool = Field(
        default=False, description="Return at once; you are notified when the agent finishes"
    )
    resume: str | None = Field(
        default=None,
        description="Only to continue an earlier subagent with its history: its agent_id "
        "(give its subagent_type too); leave out to start a new one",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="Optional: a JSON Schema the agent's final answer must match; you then "
        "get that JSON",
    )
    fork: bool = Field(
        default=False,
        description="Start the agent with a copy of your conversation so far, so that it "
        "knows all you know; the prompt then only says what it should do",
    )
    max_budget_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Optional: the most input + output tokens the agent may spend (never "
        "more than you have left)",
    )


class TaskOutputInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(description="The agent_id returned when the agent was started")
    block: bool = Field(default=True, description="Wait for the agent to finish")
    timeout: float = Field(default=300.0, ge=0, le=3600, description="Seconds to wait at most")


class TaskCancelInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(description="The agent_id of the background agent to stop")


class TaskToolDescriptions:
    """The Task tool's description and its compact form for an inventory's active agents,
    made again only when the inventory is reloaded (a run builds the Task tool per session)."""

    def __init__(self) -> None:
        self._made: tuple[int, str, str] | None = None

    def of(self, inventory: Inventory, *, compact: bool = False) -> str:
        made = self._made
        if made is None or made[0] != inventory.generation:
            active = [record.definition for record in inventory.active()]
            made = self._made = (
                inventory.generation,
                task_tool_description(active),
                task_tool_description(active, compact=True),
            )
        return made[2] if compact else made[1]


def task_tool_description(active: list[AgentDefinition], *, compact: bool = False) -> str:
    """What the model is told about the Task tool: how to use it and the agents on offer.

    ``compact`` (the compact description profile, see :mod:`subagents.runtime.tool_menu`):
    one sentence on use, and each agent's first sentence while they fit in
    :data:`COMPACT_LISTING_CHARS`; the agents after that by name only, as many as fit, then
    how many more there are. A small model's whole first request must stay small (a project
    with the 158 agents of a public collection listed 16 kB of them); an agent the person
    names is pointed out to the model anyway (:mod:`subagents.runtime.mentions`).
    """
    if compact:
        return "\n".join([_TASK_USE_COMPACT, "", _AGENTS_HEADING, *_compact_listing(active)])
    lines = [_TASK_USE, "", _AGENTS_HEADING]
    for definition in active:
        lines.append(f"- {definition.name}: {definition.description.strip()}")
    return "\n".join(lines)


COMPACT_LISTING_CHARS = 1_600
"""The characters of the compact Task description's agent listing."""
_SUMMARIES_SHARE = 0.6  # of the listing given to agents with their first sentence


def _compact_listing(active: list[AgentDefinition]) -> list[str]:
    """The lines of the compact agent listing (see :func:`task_tool_description`)."""
    from subagents.runtime.tool_menu import first_sentence

    lines: list[str] = []
    used = 0
    for index, definition in enumerate(active):
        line = f"- {definition.name}: {first_sentence(definition.description)}"
        if used + len(line) > COMPACT_LISTING_CHARS * _SUMMARIES_SHARE and index:
            return lines + _names_only(active[index:], COMPACT_LISTING_CHARS - used)
        lines.append(line)
        used += len(line) + 1
    return lines


def _names_only(rest: list[AgentDefinition], room: int) -> list[str]:
    names: list[str] = []
    for definition in rest:
        room -= len(definition.name) + 2
        if room < 0:
            break
        names.append(definition.name)
    lines = [f"- also: {', '.join(names)}"] if names else []
    unlisted = len(rest) - len(names)
    if unlisted:
        lines.append(f"- and {unlisted} more agents, not listed here")
    return lines


_TASK_USE = (
    "Launch a subagent to handle a task on its own: give `subagent_type` (one of the agents "
    "below), a short `description` and the complete `prompt`. The subagent starts with a fresh "
    "context: put everything it needs in `prompt`. It returns its final answer, followed by its "
    "agent_id. To continue that same subagent later, with its history, call Task with `resume` "
    "set to its agent_id and `subagent_type` set to its type; without `resume` a new subagent "
    "starts. Launch several at once by making several Task calls in one turn."
)
_TASK_USE_COMPACT = (
    "Start a subagent: give subagent_type (one of the agents below), a short description and "
    "the complete prompt; it returns its answer (with run_in_background: at once, and "
    "TaskOutput gets the answer later)."
)
TASK_BACKGROUND_PARAMETERS = ("run_in_background",)
_AGENTS_HEADING = "Available agents (subagent_type: what it is for):"
NONE_AVAILABLE = "\n- (none of the agents this agent may start is available here)"


def no_background(tool: str, agent_id: str, types: list[str]) -> str:
    """The answer to TaskOutput / TaskCancel when there is no background subagent."""
    from subagents.definitions.validate import normalise_name

    text = (
        f"{tool} cannot be used now: you have no background subagent (one started with "
        "Task and run_in_background=true that is still running or whose result you have not "
        "seen)."
    )
    named = normalise_name(agent_id)
    kind = next((t for t in types if normalise_name(t) == named), None)
    if kind is not None:
        return (
            f"{text} {agent_id!r} is an agent type: to run that agent, call Task with "
            f'subagent_type="{kind}", a short description and the complete prompt.'
        )
    return f"{text} To get work done by a subagent, call Task; otherwise answer yourself."


@functools.lru_cache(maxsize=32)
def task_schema(types: tuple[str, ...], *, budgeted: bool = False) -> dict[str, Any]:
    """The Task tool's schema: ``subagent_type`` required (resuming names the agent's type too)
    and one of ``types`` (a model that decodes under the schema can only name a real agent;
    others are told the choices by the tool), ``description`` and ``prompt`` not empty.
    ``max_budget_tokens`` only for a run with a token budget (``budgeted``): elsewhere it is a
    knob with nothing to share out, and words in every request."""
    schema = copy.deepcopy(input_schema_of(TaskInput))
    if not budgeted:
        del schema["properties"]["max_budget_tokens"]
    required: list[str] = schema["required"]
    if "subagent_type" not in required:
        required.insert(required.index("prompt") + 1, "subagent_type")
    for name in ("description", "prompt", "subagent_type"):
        schema["properties"][name]["minLength"] = 1
    schema["properties"]["subagent_type"].pop("default", None)
    if types:
        schema["properties"]["subagent_type"]["enum"] = list(types)
    return schema


@functools.cache
def input_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema shown to models, as for every tool; built once per input model."""
    return input_schema(model)
