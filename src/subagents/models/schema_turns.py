"""Schema-constrained turns: tool calls for servers that have no native tool calls but can
constrain an answer to a JSON schema (``response_format`` of type ``json_schema``: llama.cpp's
server, vLLM, Ollama, LM Studio).

Selected per provider with ``[providers.NAME] tool_calls = "schema"``. Each turn, the request
carries no ``tools``; instead its ``response_format`` allows exactly one JSON object of one of
these forms::

    {"tool": "Read", "arguments": {...the Read tool's input...}}   # call one offered tool
    {"reply": "..."}                                               # answer in text

so a grammar-constrained server cannot produce anything else. The system prompt lists the
tools (name, description, arguments schema) and says how to answer, since the model never sees
``response_format`` itself. :func:`read_turn` turns the answer back into ordinary
:class:`~subagents.messages.ToolCall`\\ s or text; an answer that is not one of the forms
becomes a nameless call with an ``arguments_error``, which the session answers with a tool error
the model sees (never a crash). A tool that was not offered is passed on as a call of that name:
the session refuses any tool outside the agent's set, as for native calls.

One call per turn: the schema offers no list of calls, which keeps the grammar small and small
models on track. :func:`read_turn` still accepts ``{"calls": [{"tool": ..., "arguments": ...},
...]}`` from a server that does not enforce the schema.

The history goes back in the same form, since such servers' chat templates often know nothing
of tool messages: the model's calls as the JSON it wrote, tool results as user messages in
``<tool_response>`` blocks (:func:`~subagents.models.text_calls.render_tool_response`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from subagents.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
)
from subagents.models.text_calls import render_tool_response
from subagents.models.tool_arguments import (
    arguments_text,
    bound_tool_call,
    parse_tool_arguments,
    tool_call_from_object,
)

if TYPE_CHECKING:
    from subagents.models.base import ModelResponse

__all__ = [
    "MAX_CALLS_AT_ONCE",
    "SCHEMA_NAME",
    "finished_reply",
    "history_messages",
    "read_response",
    "read_turn",
    "response_format",
    "turn_instructions",
    "turn_schema",
]

SCHEMA_NAME = "agent_turn"
_REF_PREFIX = "#/$defs/"
_ARGUMENT_KEYS = ("arguments", "parameters", "input")
_THINKING = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)  # reasoning models' preamble
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_REPLY_OPENING = re.compile(r'\{\s*"reply"\s*:\s*"')
_LONGEST_ESCAPE = 6
_WHITESPACE_RUN = 64  # trailing whitespace of a reply that means the model had nothing more
_TRAILING_BLANKS = re.compile(r"(?:\s|\\[nrt])+\Z")  # raw, or escaped in the JSON string
_MAX_SHOWN_CHOICES = 12
MAX_CALLS_AT_ONCE = 4
"""The most calls one schema-constrained answer may make."""
_FORMS = (
    'answer with exactly one JSON object: {"tool": "<tool name>", "arguments": {...}} to call '
    'one of the tools listed in the instructions, or {"reply": "<text>"} to answer'
)


def turn_schema(tools: Sequence[Any], reply: str | None = None) -> dict[str, Any]:
    """The JSON schema of one answer: a call of one of ``tools`` (``ToolSpec``\\ s) or a reply
    (text, or JSON matching ``reply``, a JSON Schema as JSON text, when given).

    Each tool's ``$defs`` move to the root under a prefixed name (references inside an
    ``anyOf`` branch resolve against the root), so two tools' definitions never clash. The
    prefix uses only letters, digits and ``-``: llama.cpp's schema-to-grammar converter loses
    a recursive reference whose name holds other characters.
    """
    definitions: dict[str, Any] = {}
    branches: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        arguments = _hoist_definitions(tool.parameters, f"t{index}-", definitions)
        branches.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "const": tool.name},
                    "arguments": arguments,
                },
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    several = [branch for branch, tool in zip(branches, tools, strict=True) if tool.parallel]
    if several:
        branches.append(_several_calls(several))
    shape = {"type": "string"}
    if reply is not None:
        shape = _hoist_definitions(json.loads(reply), "reply-", definitions)
    branches.append(
        {
            "type": "object",
            "properties": {"reply": shape},
            "required": ["reply"],
            "additionalProperties": False,
        }
    )
    schema: dict[str, Any] = {"anyOf": branches}
    if definitions:
        schema["$defs"] = definitions
    return schema


def _several_calls(branches: list[dict[str, Any]]) -> dict[str, Any]:
    """The form of an answer making several calls of the tools worth calling at once: two
    to :data:`MAX_CALLS_AT_ONCE` (one call has its own form)."""
    call = branches[0] if len(branches) == 1 else {"anyOf": branches}
    return {
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "items": call,
                "minItems": 2,
                "maxItems": MAX_CALLS_AT_ONCE,
            }
        },
        "required": ["calls"],
        "additionalProperties": False,
    }


def response_format(tools: Sequence[Any], reply: str | None = None) -> dict[str, Any]:
    """The Chat Completions ``response_format`` that constrains one answer."""
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": turn_schema(tools, reply)},
    }


def turn_instructions(tools: Sequence[Any]) -> str:
    """What the system prompt adds: how to answer, and each tool with its arguments."""
    lines = [
        "# How to answer",
        f"{_FORMS[:1].upper()}{_FORMS[1:]}.",
        "Call one tool per answer; its result comes back in the next message. When the task "
        'is done, give the final answer as {"reply": "..."}.',
    ]
    several = [tool.name for tool in tools if tool.parallel]
    if several:
        example = ", ".join(f'{{"tool": "{several[0]}", "arguments": {{...}}}}' for _ in "ab")
        lines.append(
            f"To start several {' or '.join(several)} calls at once (different work that can "
            f'go on at the same time), answer {{"calls": [{example}]}}.'
        )
    if tools:
        lines += ["", "# Tools"]
        for tool in tools:
            lines += [f"## {tool.name}", tool.description.strip(), *_argument_lines(tool)]
    else:
        lines.append("No tools are available now: answer with a reply.")
    return "\n".join(lines)


def _argument_lines(tool: Any) -> list[str]:
    """The tool's arguments, one line each (the schema itself, in ``response_format``, holds
    the model to them; listing them short leaves small context windows room for the task)."""
    parameters = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = parameters.get("properties")
    if not isinstance(properties, dict) or not properties:
        return ["Arguments: none, send {}."]
    required = parameters.get("required") or []
    lines = ["Arguments:"]
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        need = "required" if name in required else "optional"
        description = spec.get("description")
        about = f": {description}" if isinstance(description, str) and description else ""
        lines.append(f"- {name} ({_kind(spec)}, {need}){about}")
    return lines


def _choices(values: list[Any]) -> str:
    """An enum in words; a long one (the agents of a large collection) by its first values,
    since the schema holds the model to the rest anyway."""
    shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values[:_MAX_SHOWN_CHOICES])
    more = len(values) - _MAX_SHOWN_CHOICES
    return f"one of {shown}" + (f" and {more} more" if more > 0 else "")


def _kind(spec: Any, depth: int = 0) -> str:
    """A property's type in a few words."""
    if not isinstance(spec, dict) or depth > 2:
        return "any"
    if "enum" in spec and isinstance(spec["enum"], list):
        return _choices(spec["enum"])
    for choice in ("anyOf", "oneOf"):
        if isinstance(spec.get(choice), list):
            return " or ".join(_kind(branch, depth + 1) for branch in spec[choice])
    kind = spec.get("type")
    if kind == "array":
        return f"array of {_kind(spec.get('items'), depth + 1)}"
    properties = spec.get("properties")
    if kind == "object" and isinstance(properties, dict) and properties:
        return f"object with {', '.join(properties)}"
    return kind if isinstance(kind, str) else "object" if "$ref" in spec else "any"


def history_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history in Chat Completions form without tool messages: the model's calls as the
    JSON it answers with, tool results as user messages (adjacent user messages merged, for
    chat templates that insist on alternating roles)."""
    converted: list[dict[str, Any]] = []
    if system:
        converted.append({"role": "system", "content": system})
    for message in messages:
        if isinstance(message, AssistantMessage):
            converted.append({"role": "assistant", "content": _answer_text(message)})
        elif isinstance(message, ToolResultMessage):
            _add_user(converted, render_tool_response(message))
        elif isinstance(message, SystemMessage):
            converted.append({"role": "system", "content": message.content})
        else:
            _add_user(converted, message.content)
    return converted


def read_response(response: ModelResponse, offered: Sequence[str] = ()) -> None:
    """``response``, a schema-constrained answer, made the reply or call(s) it stands for
    (:func:`read_turn`); a reply cut at the limit whose words all came
    (:func:`finished_reply`) is taken as finished."""
    truncated = response.stop_reason == "max_tokens"
    text, calls = read_turn(response.text, truncated=truncated, offered=offered)
    if calls:
        response.stop_reason = "tool_use"
    elif truncated and finished_reply(response.text):
        response.stop_reason = "end_turn"
        text = text.rstrip()
    response.text, response.tool_calls = text, calls


def read_turn(
    text: str, *, truncated: bool = False, offered: Sequence[str] = ()
) -> tuple[str, tuple[ToolCall, ...]]:
    """The reply text and tool calls an answer stands for; never raises.

    An answer that is not one of the forms gives one nameless call whose ``arguments_error``
    says what was wrong, keeping the answer as ``raw_arguments`` for the history.
    """
    body = _body(text)
    if body and not body.startswith(("{", "[")) and not truncated:
        written = _calls_written_as_text(body, offered)
        if written is not None:
            return written
    try:
        decoded = json.loads(body, strict=False)  # a raw tab or newline in a string is fine
    except json.JSONDecodeError as exc:
        reply = _cut_reply(body) if truncated else None
        if reply is not None:
            return reply, ()
        cut = " (it was cut off at the token limit)" if truncated else ""
        return "", (_refused(text, f"your answer was not valid JSON{cut}: {exc.msg}"),)
    except RecursionError:
        return "", (_refused(text, "your answer was nested too deeply"),)
    if isinstance(decoded, dict):
        if isinstance(decoded.get("reply"), str) and "tool" not in decoded:
            return decoded["reply"], ()
        if "reply" in decoded and len(decoded) == 1:  # a typed reply: the JSON itself
            return json.dumps(decoded["reply"], ensure_ascii=False), ()
        if "tool" in decoded or isinstance(decoded.get("name"), str):
            return "", (_call(decoded, text),)
        calls = decoded.get("calls")
        if isinstance(calls, list) and calls and all(isinstance(c, dict) for c in calls):
            if len(calls) > MAX_CALLS_AT_ONCE:
                problem = f"you made {len(calls)} calls at once; make at most {MAX_CALLS_AT_ONCE}"
                return "", (_refused(text, problem),)
            return "", tuple(_call(call, text) for call in calls)
    return "", (_refused(text, "your answer was JSON but not one of the accepted forms"),)


def _body(text: str) -> str:
    """An answer without its thinking and the code fence around it."""
    body = _THINKING.sub("", text, count=1).strip()
    fenced = _FENCE.match(body)
    return fenced.group(1).strip() if fenced else body


def finished_reply(text: str) -> bool:
    """Whether a reply stopped at the token limit, or by a stream's runaway watch, holds all
    its words: its string ended and only the object's close is missing, or it ends in a run
    of whitespace the model wrote until it was stopped (eval c2: a main agent wrote its
    whole answer, then newlines inside the string for 48 s, and the run failed as cut off)."""
    body = _body(text)
    opening = _REPLY_OPENING.match(body)
    if opening is None:
        return False
    rest = body[opening.end() :]
    try:
        json.JSONDecoder(strict=False).raw_decode('"' + rest)
    except json.JSONDecodeError:
        blanks = _TRAILING_BLANKS.search(text)
        return blanks is not None and len(blanks.group()) >= _WHITESPACE_RUN
    return True


def _cut_reply(body: str) -> str | None:
    """The text of a reply cut off at the token limit (``{"reply": "as far as it got``),
    so that it is judged as any cut answer is (a loop in it asked again, a cut final answer
    said to be cut); ``None`` for another form."""
    opening = _REPLY_OPENING.match(body)
    if opening is None:
        return None
    rest = body[opening.end() :]
    try:
        whole, _ = json.JSONDecoder(strict=False).raw_decode('"' + rest)
    except json.JSONDecodeError:
        pass
    else:
        return str(whole)  # the string ended; the object around it did not
    for unfinished in range(_LONGEST_ESCAPE):  # the cut may fall inside an escape
        try:
            return str(json.loads('"' + rest[: len(rest) - unfinished] + '"', strict=False))
        except json.JSONDecodeError:
            continue
    return None


def _calls_written_as_text(
    body: str, offered: Sequence[str]
) -> tuple[str, tuple[ToolCall, ...]] | None:
    """The calls of an answer that is not JSON at all, written in one of the text forms
    (``<tool_call>...``): the server did not hold the model to the schema (some ignore
    ``response_format``). ``None`` when it holds none: it is refused like any other form."""
    from subagents.models.text_calls import find_text_tool_calls

    found = find_text_tool_calls(body, offered) if offered else None
    if found is None or not found.calls:
        return None
    return found.text, found.calls


def _call(decoded: dict[str, Any], text: str) -> ToolCall:
    """One call; without a schema enforcing the form, small models also write the function
    format's ``name`` / ``parameters`` and arguments as JSON text: those are read too."""
    name = decoded.get("tool", decoded.get("name"))
    if not isinstance(name, str) or not name.strip():
        return _refused(text, '"tool" must be the name of a tool')
    arguments = next((decoded[key] for key in _ARGUMENT_KEYS if key in decoded), None)
    if arguments is None or isinstance(arguments, str):
        return parse_tool_arguments("", name, arguments)
    return tool_call_from_object("", name, arguments)


def _refused(text: str, problem: str) -> ToolCall:
    refused = ToolCall(id="", name="", raw_arguments=text, arguments_error=f"{problem}; {_FORMS}")
    return bound_tool_call(refused)  # cuts a long answer, saying so


def _answer_text(message: AssistantMessage) -> str:
    """An answer as the model would have written it in a schema turn."""
    calls = message.tool_calls
    if len(calls) > 1 and not message.content and all(call.name for call in calls):
        return json.dumps({"calls": [_call_object(call) for call in calls]}, ensure_ascii=False)
    parts = [json.dumps({"reply": message.content}, ensure_ascii=False)] if message.content else []
    for call in calls:
        if call.arguments_error is not None and not call.name and call.raw_arguments:
            parts.append(call.raw_arguments)  # the answer that was refused, as written
            continue
        parts.append(json.dumps(_call_object(call), ensure_ascii=False))
    return "\n".join(parts) or json.dumps({"reply": ""})


def _call_object(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = json.loads(arguments_text(call))
    except json.JSONDecodeError:
        arguments = call.raw_arguments
    return {"tool": call.name, "arguments": arguments}


def _add_user(converted: list[dict[str, Any]], content: str) -> None:
    if converted and converted[-1]["role"] == "user":
        converted[-1]["content"] += f"\n\n{content}"
    else:
        converted.append({"role": "user", "content": content})


def _hoist_definitions(schema: dict[str, Any], prefix: str, into: dict[str, Any]) -> Any:
    """``schema`` without its ``$defs`` (added to ``into`` under ``prefix``) and with its
    references renamed to match."""
    local = schema.get("$defs")
    if not isinstance(local, dict) or not local:
        return schema
    renamed = {name: f"{prefix}{name}" for name in local}

    def rename(node: Any) -> Any:
        if isinstance(node, dict):
            result = {key: rename(value) for key, value in node.items() if key != "$defs"}
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
                target = ref[len(_REF_PREFIX) :]
                result["$ref"] = _REF_PREFIX + renamed.get(target, target)
            return result
        if isinstance(node, list):
            return [rename(item) for item in node]
        return node

    for name, definition in local.items():
        into[renamed[name]] = rename(definition)
    return rename(schema)
