"""The tool menu: which tools a session's model is offered on each turn, and how they read.

A session may call every tool in its registry (that is its allowed set); the menu is the part
of it the model is *shown*, because small models choose worse from long menus:

- ``TaskOutput`` and ``TaskCancel`` are offered only while the session has a background
  subagent that is running or whose result it has not seen; a call to them at any other time
  is answered with a tool error saying so (see :mod:`subagents.runtime.delegation`).
- ``SendMessage`` and ``ListAgents`` are offered only while the session has someone to
  message: a background subagent of its own that runs, or an agent that messaged it.
- ``AskHuman`` is offered only when someone can answer (:func:`someone_can_answer`).
- The description profile (``[providers.NAME] tool_descriptions``) is ``"full"`` or
  ``"compact"``: each tool's short description (its own ``compact_description``, else the
  first sentence of its description) and only its required parameters. Optional parameters are
  left out of the schema the model sees, not out of validation: a model that passes one anyway
  is served as before. Unset, it follows the server (:mod:`subagents.models.server`): compact
  for a local server and a model run in this process, full for hosted APIs and other servers.
- The compact profile is for small models, which read a long prompt slowly (a 1.5B model on
  two CPU cores reads about 30 tokens a second) and choose worse from a long menu. An agent
  that does not list its tools (the main agent, a subagent inheriting its parent's) is shown
  the tools the work needs and not those other tools do better or it seldom needs
  (:data:`LEFT_OUT_OF_SMALL_MENUS`: ``MultiEdit``, ``LS``, ``TodoWrite``, the web tools);
  they stay callable. An agent file that lists a tool is shown it.

Both lists of specs are built once per session; a turn only picks one of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from subagents.tools.names import (
    MESSAGE_TOOL_NAMES,
    TASK_BATCH_TOOL_NAME,
    TASK_CANCEL_TOOL_NAME,
    TASK_OUTPUT_TOOL_NAME,
)

if TYPE_CHECKING:
    from subagents.models.base import ToolSpec
    from subagents.models.settings import ProviderSettings
    from subagents.runtime.services import Services
    from subagents.tools.base import Tool, ToolRegistry

__all__ = [
    "BACKGROUND_TOOL_NAMES",
    "COMPACT_DESCRIPTION_LIMIT",
    "LEFT_OUT_OF_SMALL_MENUS",
    "DescriptionProfile",
    "ToolMenu",
    "asks_for_background",
    "asks_for_work_at_once",
    "compact_spec",
    "default_profile",
    "description_profile",
    "first_sentence",
    "someone_can_answer",
]

DescriptionProfile = Literal["full", "compact"]

# Offered only while the session has a background subagent running or unread.
BACKGROUND_TOOL_NAMES = frozenset({TASK_OUTPUT_TOOL_NAME, TASK_CANCEL_TOOL_NAME})
# The tools offered at times: the background tools, and SendMessage / ListAgents while the
# session has someone to message (runtime/messaging.py).
_AT_TIMES = BACKGROUND_TOOL_NAMES | frozenset(MESSAGE_TOOL_NAMES)

LEFT_OUT_OF_SMALL_MENUS = frozenset(
    {"MultiEdit", "LS", "TodoWrite", "WebFetch", "WebSearch", "NotebookEdit", "TaskBatch"}
)
"""Tools the compact profile does not show an agent that does not list its tools: Edit does
what MultiEdit does, Glob what LS does, Task what TaskBatch does; a to-do list and the web are
seldom what a small model's task needs. (Each stays callable.) An agent file that lists its
tools is shown them, but TaskBatch, which comes with Task unasked."""

COMPACT_DESCRIPTION_LIMIT = 240
"""The longest short description the compact profile shows (longer ones end with "...")."""

# A sentence ends at . ! or ? followed by whitespace or the end, but not after "e.g" / "i.e".
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s|$)")


@dataclass(slots=True, frozen=True)
class ToolMenu:
    """A session's tool specs: ``everything``; ``quiet``, without the tools offered only at
    times (the background tools, the message tools); and the two menus between."""

    everything: tuple[ToolSpec, ...]
    quiet: tuple[ToolSpec, ...]
    with_mail: tuple[ToolSpec, ...] = ()  # quiet and the message tools
    with_background: tuple[ToolSpec, ...] = ()  # quiet and the background tools

    @classmethod
    def of(
        cls,
        tools: ToolRegistry,
        profile: DescriptionProfile = "full",
        *,
        chosen: bool = False,
        background: bool = False,
        at_once: bool = False,
    ) -> ToolMenu:
        """The menu of ``tools`` in ``profile``; ``chosen``: the agent's file lists them, so
        the compact profile shows them all; ``background``: the session's prompt asks for
        work in the background (:func:`asks_for_background`); ``at_once``: for work at the
        same time (:func:`asks_for_work_at_once`)."""
        if profile == "compact":
            specs = tuple(
                compact_spec(tool, background=background, at_once=at_once)
                for tool in tools
                if (chosen and tool.name != TASK_BATCH_TOOL_NAME)
                or tool.name not in LEFT_OUT_OF_SMALL_MENUS
            )
        else:
            specs = tuple(tool.spec for tool in tools)
        quiet = tuple(spec for spec in specs if spec.name not in _AT_TIMES)
        if len(quiet) == len(specs):
            return cls(specs, specs)
        # the tools offered at times go last, mail before background, so that the quiet menu
        # is a prefix of the others and a provider's prompt cache survives them coming and
        # going
        mail = tuple(spec for spec in specs if spec.name in MESSAGE_TOOL_NAMES)
        late = tuple(spec for spec in specs if spec.name in BACKGROUND_TOOL_NAMES)
        return cls(quiet + mail + late, quiet, quiet + mail, quiet + late)

    @property
    def varies(self) -> bool:
        """Whether tools offered at times are in it, so that the turn decides."""
        return self.quiet is not self.everything

    def for_turn(self, *, background: bool, mail: bool = False) -> tuple[ToolSpec, ...]:
        if background:
            return self.everything if mail else self.with_background
        return self.with_mail if mail else self.quiet


def description_profile(
    model_name: str,
    providers: Mapping[str, ProviderSettings],
    env: Mapping[str, str] | None = None,
) -> DescriptionProfile:
    """The profile configured for the provider of ``model_name``, else the default of the
    server it runs on (:func:`subagents.models.server.default_description_profile`).

    The provider is the part of the model's name before ``:`` (``ollama:qwen2.5`` ->
    ``[providers.ollama]``); to use another profile for some models of a server only, give
    that server a second provider name with the same ``base_url``. ``env`` (default
    ``os.environ``) holds ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``.
    """
    from subagents.models.server import default_description_profile

    provider = _provider_of(model_name)
    settings = providers.get(provider)
    if settings is not None and settings.tool_descriptions is not None:
        return settings.tool_descriptions
    return default_description_profile(provider, settings, os.environ if env is None else env)


def default_profile(model_name: str) -> DescriptionProfile:
    """The profile of ``model_name`` when no setting chooses one."""
    return description_profile(model_name, {})


def _provider_of(model_name: str) -> str:
    return model_name.partition(":")[0].strip().lower()


def someone_can_answer(runtime: Services) -> bool:
    """Whether AskHuman is offered: someone can answer a question of this run.

    AskHuman pauses the run until a person answers (``subagents resume TASK --set answer=...``
    or the UI), so the run must be durable (a store); and it must not be a run that said nobody
    will be asked: ``headless="allow"`` (``subagents run --yes``) approves everything unattended.
    A run without a store cannot pause, so nobody could ever answer there.
    """
    return runtime.store is not None and runtime.permissions.headless != "allow"


def compact_spec(tool: Tool, *, background: bool = False, at_once: bool = False) -> ToolSpec:
    """``tool``'s spec in the compact profile: short description, required parameters only
    (and its ``background_parameters`` when ``background``: the prompt asks for them);
    several calls at once only when ``at_once`` (the prompt asks for work at the same time)."""
    from subagents.models.base import ToolSpec

    description = tool.compact_description or first_sentence(tool.description)
    shown = tool.background_parameters if background else ()
    parameters = _required_only(tool.parameters, shown)
    return ToolSpec(tool.name, description, parameters, tool.parallel and at_once)


def asks_for_background(prompt: str) -> bool:
    """Whether ``prompt`` speaks of work in the background (``run_in_background`` included).

    Shown ``run_in_background``, a 1.5B model constrained to the compact schema set it unasked
    (``make eval``: 3 runs of 12 in process), then answered before the subagent had, and
    started it again when its result came; without it, it cannot start one in the background
    when asked to. So the compact profile offers it to a session whose prompt asks.
    """
    return _BACKGROUND.search(prompt[:_MAX_PROMPT_CHARS]) is not None


_BACKGROUND = re.compile(r"background", re.IGNORECASE)


def asks_for_work_at_once(prompt: str) -> bool:
    """Whether ``prompt`` asks for work done at the same time (several subagents at once).

    Offered several Task calls in one answer, a 1.5B model used the form for every
    delegation: two alike (run once), or a start in the background paired with a second
    agent asked to "get the result of" the first (``make eval``, background). So the compact
    profile offers it to a session whose prompt asks for it.
    """
    return _AT_ONCE.search(prompt[:_MAX_PROMPT_CHARS]) is not None


_AT_ONCE = re.compile(r"same time|at once|parallel|concurrent|simultaneous", re.IGNORECASE)
_MAX_PROMPT_CHARS = 100_000


def first_sentence(text: str, limit: int = COMPACT_DESCRIPTION_LIMIT) -> str:
    """The first sentence of ``text``'s first paragraph, at most ``limit`` characters (a longer
    one is cut at a word and ends with "...", so the cut shows)."""
    paragraph = text.strip().split("\n\n", 1)[0].strip()
    end = _SENTENCE_END.search(paragraph)
    sentence = paragraph[: end.end()] if end is not None else paragraph
    sentence = " ".join(sentence.split())
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 3].rsplit(" ", 1)[0].rstrip(" ,;:")
    return f"{cut}..."


def _required_only(schema: dict[str, Any], also: tuple[str, ...] = ()) -> dict[str, Any]:
    """``schema`` with only required properties (at every level; at the top, those in
    ``also`` too), no titles, and each description cut to its first sentence."""
    compact: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key == "description" and isinstance(value, str):
            compact[key] = first_sentence(value)
        elif key == "properties" and isinstance(value, dict):
            shown = {*schema.get("required", ()), *also}
            compact[key] = {
                name: _compact_node(prop) for name, prop in value.items() if name in shown
            }
        elif key in ("items", "additionalProperties", "not"):
            compact[key] = _compact_node(value)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
            compact[key] = [_compact_node(item) for item in value]
        elif key == "$defs" and isinstance(value, dict):
            compact[key] = {name: _compact_node(item) for name, item in value.items()}
        else:
            compact[key] = value
    if isinstance(compact.get("properties"), dict) and "required" in compact:
        compact["required"] = [
            name for name in compact["required"] if name in compact["properties"]
        ]
    return compact


def _compact_node(node: Any) -> Any:
    return _required_only(node) if isinstance(node, dict) else node
