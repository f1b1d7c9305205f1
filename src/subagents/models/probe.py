"""What a model's endpoint can do, found by asking it (``subagents models check``).

Five small requests, each bounded by a timeout and none retried:

1. reachable: a one-line question; if this fails nothing else is tried;
2. native tool calls: one tool offered with ``tools``, and a question only it answers;
3. parallel tool calls: the same tool, asked for two cities at once;
4. JSON schema: ``response_format`` with a schema the question does not hint at (an object
   with an integer ``probe``, for "Say hello."): a server that enforces it answers with that
   object, one that ignores it says hello;
5. schema tool call: a turn in schema mode (:mod:`subagents.models.schema_turns`), read back
   into a tool call.

From the results, :func:`recommend` picks ``[providers.NAME] tool_calls``: ``native`` when the
model calls tools natively, else ``schema`` when the server enforces JSON schemas and a schema
turn gave a valid call, else ``text`` (the model writes its calls in its answer). On a local
server ``schema`` comes first when it works, as it does by default there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from subagents.errors import SubagentsError
from subagents.messages import UserMessage
from subagents.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ToolSpec,
    close_model,
)
from subagents.models.settings import ToolCallMode
from subagents.status import ProbeStatus

__all__ = [
    "PROBE_TOOL",
    "ModelCheck",
    "ProbeResult",
    "check_in_process_model",
    "check_model",
    "recommend",
]


PROBE_TOOL = ToolSpec(
    "get_weather",
    "Get the current weather in a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name."}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
_ENFORCED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"probe": {"type": "integer"}},
    "required": ["probe"],
    "additionalProperties": False,
}
_SYSTEM = "You are a helpful assistant. Keep answers short."
_MAX_TOKENS = 200
_SHOWN_CHARS = 80


@dataclass(slots=True, frozen=True)
class ProbeResult:
    """One ability: ``yes``, ``no`` (``detail`` says what happened) or ``skipped``."""

    check: str
    status: ProbeStatus
    detail: str = ""


@dataclass(slots=True)
class ModelCheck:
    model: str
    results: list[ProbeResult] = field(default_factory=list)
    recommendation: ToolCallMode | None = None

    def status(self, check: str) -> ProbeStatus:
        return next((r.status for r in self.results if r.check == check), "skipped")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "results": [asdict(result) for result in self.results],
            "recommendation": self.recommendation,
        }


def recommend(check: ModelCheck, *, local: bool = False) -> ToolCallMode | None:
    """The ``tool_calls`` setting the results call for; ``None`` when unreachable.

    ``local``: the server is on this machine or its network, where small models run: schema
    turns come first when they work (the default there, see
    :attr:`~subagents.models.server.Server.default_tool_calls`), native calls next."""
    if check.status("reachable") != "yes":
        return None
    schema = check.status("JSON schema") == "yes" and check.status("schema tool call") == "yes"
    if local and schema:
        return "schema"
    if check.status("native tool calls") == "yes":
        return "native"
    return "schema" if schema else "text"


async def check_model(
    build: Callable[[ToolCallMode], Model], *, timeout_seconds: float, local: bool = False
) -> ModelCheck:
    """Probe the model ``build(mode)`` makes; ``build`` is called once per mode needed;
    ``local`` as :func:`recommend` takes it."""
    native = build("native")
    check = ModelCheck(native.name)
    try:
        await _probe_all(check, native, build, timeout_seconds)
    finally:
        await close_model(native)
    check.recommendation = recommend(check, local=local)
    return check


async def check_in_process_model(
    build: Callable[[ToolCallMode], Model], *, timeout_seconds: float
) -> ModelCheck:
    """Probe a model run in this process (``llamacpp:``): it has no server and no native tool
    calls, and its answers are constrained by llama.cpp's grammar sampler, so two probes tell
    what matters: it loads and answers, and a schema turn gives a valid call. The setting to
    use is ``schema`` whenever it loads: text mode would only loosen what the grammar keeps
    well-formed; a model that answers instead of calling the tool is a weak tool user in
    either mode (the "schema tool call" row says so)."""
    model = build("schema")
    check = ModelCheck(model.name)
    settings = ModelSettings(max_tokens=_MAX_TOKENS, temperature=0)
    reply = ModelRequest(_SYSTEM, [UserMessage("Say OK.")], (), settings)
    check.results.append(await _run("reachable", model.request(reply), _answered, timeout_seconds))
    if check.status("reachable") != "yes":
        for name in ("native tool calls", "parallel tool calls", "JSON schema", "schema tool call"):
            check.results.append(ProbeResult(name, "skipped", "the first probe failed"))
        return check
    for name in ("native tool calls", "parallel tool calls"):
        check.results.append(ProbeResult(name, "skipped", "run in-process: no native tool calls"))
    check.results.append(
        ProbeResult("JSON schema", "yes", "enforced by llama.cpp's grammar, in this process")
    )
    weather = ModelRequest(
        _SYSTEM, [UserMessage("What is the weather in Paris?")], (PROBE_TOOL,), settings
    )
    check.results.append(
        await _run("schema tool call", model.request(weather), _called_once, timeout_seconds)
    )
    check.recommendation = "schema"
    return check


async def _probe_all(
    check: ModelCheck,
    native: Model,
    build: Callable[[ToolCallMode], Model],
    timeout_seconds: float,
) -> None:
    def ask(question: str, *tools: ToolSpec) -> ModelRequest:
        settings = ModelSettings(max_tokens=_MAX_TOKENS, temperature=0)
        return ModelRequest(_SYSTEM, [UserMessage(question)], tools, settings)

    async def probe(name: str, call: Awaitable[ModelResponse], judge: _Judge) -> None:
        check.results.append(await _run(name, call, judge, timeout_seconds))

    await probe("reachable", native.request(ask("Say OK.")), _answered)
    if check.status("reachable") != "yes":
        for name in ("native tool calls", "parallel tool calls", "JSON schema", "schema tool call"):
            check.results.append(ProbeResult(name, "skipped", "the first probe failed"))
        return
    weather = ask("What is the weather in Paris? Use the get_weather tool.", PROBE_TOOL)
    await probe("native tool calls", native.request(weather), _called_once)
    if check.status("native tool calls") == "yes":
        both = ask(
            "Get the weather in Paris and in London: call get_weather for both cities at once, "
            "in one answer.",
            PROBE_TOOL,
        )
        await probe("parallel tool calls", native.request(both), _called_twice)
    else:
        check.results.append(ProbeResult("parallel tool calls", "skipped", "no native calls"))
    request_json = getattr(native, "request_json", None)
    if request_json is None:
        reason = f"{native.name} takes no response_format (not an OpenAI-compatible server)"
        check.results.append(ProbeResult("JSON schema", "skipped", reason))
        check.results.append(ProbeResult("schema tool call", "skipped", reason))
        return
    await probe("JSON schema", request_json(ask("Say hello."), _ENFORCED_SCHEMA), _obeyed)
    schema_model = build("schema")
    try:
        weather = ask("What is the weather in Paris?", PROBE_TOOL)
        await probe("schema tool call", schema_model.request(weather), _called_once)
    finally:
        await close_model(schema_model)


_Judge = Callable[[ModelResponse], ProbeResult]


async def _run(
    name: str, call: Awaitable[ModelResponse], judge: _Judge, timeout_seconds: float
) -> ProbeResult:
    try:
        async with asyncio.timeout(timeout_seconds):
            response = await call
    except TimeoutError:
        return ProbeResult(name, "no", f"no answer within {timeout_seconds:g} s")
    except SubagentsError as error:  # messages are already free of keys
        return ProbeResult(name, "no", error.message)
    except Exception as error:  # a probe reports what went wrong, whatever it was
        return ProbeResult(name, "no", f"{type(error).__name__}: {_shown(str(error))}")
    result = judge(response)
    return ProbeResult(name, result.status, result.detail)


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= _SHOWN_CHARS:
        return repr(flat)
    return f"{flat[:_SHOWN_CHARS]!r}... ({len(flat):,} characters)"


def _answered(response: ModelResponse) -> ProbeResult:
    return ProbeResult("", "yes", f"answered {_shown(response.text)}")


def _valid_calls(response: ModelResponse) -> int:
    return sum(
        1
        for call in response.tool_calls
        if call.name == PROBE_TOOL.name
        and call.arguments_error is None
        and isinstance(call.arguments.get("city"), str)
    )


def _called_once(response: ModelResponse) -> ProbeResult:
    if _valid_calls(response) >= 1:
        call = next(c for c in response.tool_calls if c.name == PROBE_TOOL.name)
        return ProbeResult("", "yes", f"called {call.name}({json.dumps(call.arguments)})")
    return _no_call(response)


def _called_twice(response: ModelResponse) -> ProbeResult:
    count = _valid_calls(response)
    if count >= 2:
        return ProbeResult("", "yes", f"{count} calls in one answer")
    return ProbeResult("", "no", f"{count} valid call(s) in one answer")


def _no_call(response: ModelResponse) -> ProbeResult:
    if response.tool_calls:
        call = response.tool_calls[0]
        problem = call.arguments_error or f"arguments {json.dumps(call.arguments)}"
        problem = problem.partition("; answer with")[0]  # not the instructions again
        return ProbeResult("", "no", f"a call of {call.name or '(no name)'!r}: {problem}")
    return ProbeResult("", "no", f"answered in text instead: {_shown(response.text)}")


def _obeyed(response: ModelResponse) -> ProbeResult:
    try:
        decoded = json.loads(response.text)
    except (json.JSONDecodeError, RecursionError):
        decoded = None
    if (
        isinstance(decoded, dict)
        and set(decoded) == {"probe"}
        and isinstance(decoded["probe"], int)
        and not isinstance(decoded["probe"], bool)
    ):
        return ProbeResult("", "yes", "response_format accepted and obeyed")
    return ProbeResult("", "no", f"accepted but not obeyed: answered {_shown(response.text)}")
