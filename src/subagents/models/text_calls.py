"""Tool calls a model wrote as text, for models and servers without native tool calling.

Small local models (and servers whose chat template does not parse their output) write their
calls into the answer's text. :func:`find_text_tool_calls` recognises the usual forms:

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen, Hermes; the closing tag
  may be missing at the end of the text);
- a fenced block, ````json {"name": ..., "arguments" | "parameters": {...}}```` (or a list of
  such objects);
- ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` and ``[TOOL_CALLS]NAME[ARGS]{...}``
  (Mistral);
- ``<|python_tag|>{"name": ..., "parameters": {...}}`` and a whole answer that is only such an
  object, possibly with ``"type": "function"`` (Llama 3.x), or starts as one and was cut off
  (``{"tool": "Task", "arguments": {"prompt": "...``: repaired, or reported to the model);
- ``<function=NAME>{...}</function>`` (Llama 3.1's custom-tool form);
- Python-style calls, ``[Read(file_path="a")]`` as a whole answer (Llama 3.2) or in a
  ````tool_code```` fence (Gemma): keyword arguments with literal values only, parsed with
  :mod:`ast` and never run.

Only a tool that was offered counts (a name differing in case, ``_`` or ``-`` maps to the
offered one), and only an object shaped like a call (one name: ``name``, ``tool`` or
``tool_name``; one set of arguments: ``arguments``, ``parameters``, ``args`` or ``input``; no
other keys but ``type`` and ``id``): prose that merely contains JSON is no call. The text
around the calls is kept as the assistant's text.

A reasoning model's ``<think>...</think>`` opening is not searched.

Bounded: an answer longer than :data:`MAX_SCANNED_CHARS` is not scanned and one with more than
:data:`MAX_TEXT_CALLS` calls runs none (it stays a plain answer, and the response says so);
every form is found with ``str.find`` and decoded with the JSON decoder from a known start, so
the work is linear in the text's length.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.argument_repair import repair_arguments
from subagents.models.tool_arguments import (
    MAX_ARGUMENT_DEPTH,
    MAX_RAW_ARGUMENTS_CHARS,
    parse_tool_arguments,
    tool_call_from_object,
)

__all__ = [
    "MAX_PYTHONIC_CHARS",
    "MAX_SCANNED_CHARS",
    "MAX_TEXT_CALLS",
    "TextToolCalls",
    "find_text_tool_calls",
    "render_text_tool_call",
    "render_tool_response",
]

MAX_SCANNED_CHARS = 100_000
"""The longest answer searched for tool calls; a longer one is taken as a plain answer."""

MAX_TEXT_CALLS = 32
"""The most calls taken from one answer; an answer with more is a runaway, taken as text."""
MAX_PYTHONIC_CHARS = 20_000
"""The longest text read as Python-style calls (parsed into a syntax tree, never run)."""

_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_CALL_KEYS = frozenset({*_NAME_KEYS, *_ARGUMENT_KEYS, "type", "id"})
_DECODER = json.JSONDecoder()
# how a call object written as the whole answer starts: its name first, as models write it
_CALL_OPENING = re.compile(r'\[?\s*\{\s*"(?:name|tool|tool_name)"\s*:\s*"')
_NOT_JSON = "it is not valid JSON"


@dataclass(slots=True, frozen=True)
class TextToolCalls:
    """What :func:`find_text_tool_calls` found: the calls, the text without them, and for the
    trace the forms they were written in, any names mapped to an offered tool's, and what was
    passed over when a block was no usable call (then ``calls`` is empty)."""

    calls: tuple[ToolCall, ...]
    text: str
    formats: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...] = ()
    ignored: str | None = None


@dataclass(slots=True, frozen=True)
class _Malformed:
    """A block that can only be a call (a ``<tool_call>`` tag, ``[TOOL_CALLS]``) but does not
    decode: when it names an offered tool, the model gets a tool error to correct."""

    body: str
    reason: str
    name: str | None = None


@dataclass(slots=True, frozen=True)
class _Span:
    """A stretch of the text ``[start, end)`` that held ``objects`` written in ``form``."""

    start: int
    end: int
    form: str
    objects: tuple[Any, ...]


def find_text_tool_calls(text: str, offered: Iterable[str]) -> TextToolCalls | None:
    """The tool calls written in ``text`` to tools named in ``offered``; ``None`` when the
    text holds nothing in a form calls are written in.

    Never raises. All calls of one answer must be usable: when a recognised block holds
    something that is not a call to an offered tool, no call is taken (a half-understood
    answer is not run piecemeal) and the result has no calls but says, in ``ignored``, what
    was passed over.
    """
    if not text or len(text) > MAX_SCANNED_CHARS:
        return None
    names = _NameTable(offered)
    if not names:
        return None
    thought, answer = _split_thinking(text)
    spans = _spans(answer)
    if not spans:
        return None
    formats = tuple(dict.fromkeys(span.form for span in spans))
    calls: list[ToolCall] = []
    for span in spans:
        for item in span.objects:
            call = _call_from_object(item, names)
            if call is None:
                ignored = f"a {span.form} block that is not a call to an offered tool"
                written = _written(item)
                if written:
                    ignored += f" ({written[:80]!r})"
                return TextToolCalls((), text, formats, ignored=ignored)
            calls.append(call)
    if not calls:
        return None
    if len(calls) > MAX_TEXT_CALLS:
        ignored = f"{len(calls)} calls in one answer, more than the {MAX_TEXT_CALLS} taken"
        return TextToolCalls((), text, formats, ignored=ignored)
    kept = "\n\n".join(part for part in (thought, _remaining_text(answer, spans)) if part)
    return TextToolCalls(
        calls=tuple(calls),
        text=kept,
        formats=formats,
        renamed=tuple(names.renamed),
    )


def _split_thinking(text: str) -> tuple[str, str]:
    """``(thinking, answer)``: a reasoning model's ``<think>...</think>`` opening (left in the
    text by servers that do not separate it) is not searched, since calls it muses about are
    not calls it makes."""
    start = _skip_space(text, 0)
    if not text.startswith("<think>", start):
        return "", text
    close = text.find("</think>", start)
    if close == -1:
        return "", text
    end = close + len("</think>")
    return text[:end].strip(), text[end:]


def _written(item: Any) -> str | None:
    """The tool name a passed-over block gave, for the trace."""
    if isinstance(item, _Malformed):
        return item.name if item.name is not None else _written_name(item.body)
    parts = _call_parts(item)
    return parts[0] if parts is not None else None


def render_tool_response(message: ToolResultMessage) -> str:
    """A tool's result as a model that calls tools in text reads it: in a ``<tool_response>``
    block, the form Qwen's and Hermes' chat templates give tool results (a 1.5B model asked
    once with ``[Read result]`` instead made the same call again half the time)."""
    status = ' status="error"' if message.is_error else ""
    return (
        f'<tool_response name="{message.tool_name}"{status}>\n{message.content}\n</tool_response>'
    )


def render_text_tool_call(call: ToolCall) -> str:
    """``call`` in the form text mode asks models to use (``<tool_call>`` with JSON)."""
    arguments: Any = call.arguments
    if call.arguments_error is not None and call.raw_arguments is not None:
        arguments = call.raw_arguments  # what the model wrote, which its error result explains
    body = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


# -- names ------------------------------------------------------------------------------------


def _loose(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


class _NameTable:
    """Offered tool names, looked up exactly or loosely (case, ``_`` and ``-`` ignored) when
    the loose form is unambiguous."""

    def __init__(self, offered: Iterable[str]) -> None:
        self.exact = set(offered)
        loose: dict[str, str | None] = {}
        for name in self.exact:
            key = _loose(name)
            loose[key] = None if key in loose and loose[key] != name else name
        self.loose = loose
        self.renamed: list[tuple[str, str]] = []

    def __bool__(self) -> bool:
        return bool(self.exact)

    def lookup(self, written: str) -> str | None:
        if written in self.exact:
            return written
        offered = self.loose.get(_loose(written))
        if offered is not None:
            self.renamed.append((written, offered))
        return offered


# -- finding the blocks -----------------------------------------------------------------------


def _spans(text: str) -> list[_Span]:
    """Every recognised block, in order, not overlapping; the first form that finds any wins
    (a Hermes answer's ``<tool_call>`` bodies are not also read as bare JSON)."""
    for finder in (_hermes, _mistral, _python_tag, _function_tags, _fenced):
        spans = list(finder(text))
        if spans:
            return spans
    whole = _whole_answer(text)
    if whole is not None:
        return [whole]
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith(")]"):
        calls = _pythonic_calls(stripped)
        if calls:
            return [_Span(0, len(text), "pythonic", calls)]
    return []


def _decode(text: str, start: int) -> tuple[Any, int] | None:
    """The JSON value starting at ``start`` (after whitespace) and where it ends, else None."""
    length = len(text)
    while start < length and text[start].isspace():
        start += 1
    try:
        return _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None


def _objects(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list) else (value,)


def _hermes(text: str) -> Iterator[_Span]:
    open_tag, close_tag = "<tool_call>", "</tool_call>"
    position = 0
    while (start := text.find(open_tag, position)) != -1:
        body_start = start + len(open_tag)
        close = text.find(close_tag, body_start)
        body_end = len(text) if close == -1 else close
        end = len(text) if close == -1 else close + len(close_tag)
        yield _Span(start, end, "tool_call_tag", _tag_body(text[body_start:body_end]))
        position = end


def _tag_body(body: str) -> tuple[Any, ...]:
    """The call objects inside a tag that can only hold calls; a body that is not one JSON
    value is kept as :class:`_Malformed`, for the model to hear about."""
    decoded = _decode(body, 0)
    if decoded is None:
        return (_Malformed(body, _NOT_JSON),)
    if body[decoded[1] :].strip():
        return (_Malformed(body, "text follows its JSON"),)
    return _objects(decoded[0])


def _mistral(text: str) -> Iterator[_Span]:
    marker = "[TOOL_CALLS]"
    start = text.find(marker)
    if start == -1:
        return
    body = start + len(marker)
    args_marker = text.find("[ARGS]", body)
    if args_marker != -1 and not text[body:args_marker].strip().startswith(("[", "{")):
        # the v11 form: [TOOL_CALLS]NAME[ARGS]{...}, possibly repeated
        yield from _mistral_named(text, start)
        return
    decoded = _decode(text, body)
    if decoded is None:
        yield _Span(start, len(text), "mistral", (_Malformed(text[body:], _NOT_JSON),))
    else:
        yield _Span(start, decoded[1], "mistral", _objects(decoded[0]))


def _mistral_named(text: str, position: int) -> Iterator[_Span]:
    marker = "[TOOL_CALLS]"
    while (start := text.find(marker, position)) != -1:
        name_start = start + len(marker)
        args_marker = text.find("[ARGS]", name_start)
        if args_marker == -1:
            return
        decoded = _decode(text, args_marker + len("[ARGS]"))
        if decoded is None:
            return
        name = text[name_start:args_marker].strip()
        yield _Span(start, decoded[1], "mistral", ({"name": name, "arguments": decoded[0]},))
        position = decoded[1]


def _python_tag(text: str) -> Iterator[_Span]:
    marker = "<|python_tag|>"
    start = text.find(marker)
    if start == -1:
        return
    position = start + len(marker)
    objects: list[Any] = []
    while (decoded := _decode(text, position)) is not None:
        objects.extend(_objects(decoded[0]))
        position = _skip_space(text, decoded[1])
        if not text.startswith(";", position):  # Llama separates several calls with ';'
            position = decoded[1]
            break
        position += 1
    if objects:
        end = position
        for tail in ("<|eom_id|>", "<|eot_id|>"):
            if text.startswith(tail, _skip_space(text, end)):
                end = _skip_space(text, end) + len(tail)
        yield _Span(start, end, "python_tag", tuple(objects))


def _function_tags(text: str) -> Iterator[_Span]:
    open_tag, close_tag = "<function=", "</function>"
    position = 0
    while (start := text.find(open_tag, position)) != -1:
        name_end = text.find(">", start)
        close = text.find(close_tag, name_end + 1) if name_end != -1 else -1
        if close == -1:
            return
        name = text[start + len(open_tag) : name_end].strip()
        body = text[name_end + 1 : close]
        end = close + len(close_tag)
        item: Any = {"name": name, "arguments": {}}
        if body.strip():
            decoded = _decode(body, 0)
            if decoded is None or body[decoded[1] :].strip():
                item = _Malformed(body, "its arguments are not one JSON object", name)
            else:
                item["arguments"] = decoded[0]
        yield _Span(start, end, "function_tag", (item,))
        position = end


def _fenced(text: str) -> Iterator[_Span]:
    fence = "```"
    position = 0
    while (start := text.find(fence, position)) != -1:
        line_end = text.find("\n", start)
        close = text.find(fence, line_end) if line_end != -1 else -1
        if close == -1:
            return
        language = text[start + len(fence) : line_end].strip().lower()
        body = text[line_end + 1 : close]
        end = close + len(fence)
        position = end
        if language not in ("", "json", "tool_call", "tool_code"):
            continue
        pythonic = _pythonic_calls(body) if language == "tool_code" else None
        if pythonic:
            yield _Span(start, end, "pythonic", pythonic)
            continue
        decoded = _decode(body, 0)
        if decoded is None or body[decoded[1] :].strip():
            continue
        objects = _objects(decoded[0])
        if objects and all(_looks_like_call(item) for item in objects):
            yield _Span(start, end, "fenced_json", objects)


def _whole_answer(text: str) -> _Span | None:
    """An answer that is nothing but a call object (or a list of them), as Llama 3.2 writes;
    or one that starts as a call object and does not decode (cut off at the token limit, or
    invalid JSON), which is repaired or reported like a broken ``<tool_call>``."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    decoded = _decode(stripped, 0)
    if decoded is None:
        if _CALL_OPENING.match(stripped) is None:
            return None
        return _Span(0, len(text), "bare_json", (_Malformed(stripped, _NOT_JSON),))
    if stripped[decoded[1] :].strip():
        return None
    objects = _objects(decoded[0])
    if not objects or not all(_looks_like_call(item) for item in objects):
        return None
    return _Span(0, len(text), "bare_json", objects)


def _pythonic_calls(source: str) -> tuple[dict[str, Any], ...]:
    """``[Read(file_path="a"), Grep(pattern="b")]`` or ``Read(file_path="a")`` (Llama 3.2's
    and Gemma's form) as call objects: keyword arguments with literal values only, read with
    :mod:`ast` (never run). Anything else, or a longer text, gives ``()``."""
    if len(source) > MAX_PYTHONIC_CHARS:
        return ()
    try:
        tree = ast.parse(source.strip(), mode="eval")
        body = tree.body
        nodes = body.elts if isinstance(body, ast.List) else [body]
        calls: list[dict[str, Any]] = []
        for node in nodes:
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                return ()
            if node.args or any(keyword.arg is None for keyword in node.keywords):
                return ()
            arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
            # JSON values only (tuples become lists; sets, bytes, complex, NaN are refused)
            arguments = json.loads(json.dumps(arguments, allow_nan=False))
            calls.append({"name": node.func.id, "arguments": arguments})
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return ()
    return tuple(calls)


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


# -- from objects to calls --------------------------------------------------------------------


def _looks_like_call(item: Any) -> bool:
    return _call_parts(item) is not None


def _call_parts(item: Any) -> tuple[str, Any] | None:
    """The name and arguments of a JSON object shaped like a call, else ``None``.

    The name is under ``name`` (or ``tool``, ``tool_name``), the arguments under ``arguments``
    (or ``parameters``, ``args``, ``input``); besides them only ``type`` (``"function"``) and
    ``id`` may be present. The call may sit under ``function``
    (``{"type": "function", "function": {...}}``)."""
    if not isinstance(item, dict):
        return None
    inner = item.get("function")
    if isinstance(inner, dict) and set(item) <= {"type", "id", "function"}:
        item = inner
    if not set(item) <= _CALL_KEYS or item.get("type", "function") != "function":
        return None
    names = [item[key] for key in _NAME_KEYS if key in item]
    arguments = [item[key] for key in _ARGUMENT_KEYS if key in item]
    if len(names) != 1 or not isinstance(names[0], str) or len(arguments) != 1:
        return None
    return names[0], arguments[0]


def _call_from_object(item: Any, names: _NameTable) -> ToolCall | None:
    if isinstance(item, _Malformed):
        return _malformed_call(item, names)
    parts = _call_parts(item)
    if parts is None:
        return None
    name = names.lookup(parts[0].strip())
    if name is None:
        return None
    arguments = parts[1]
    call_id = _new_call_id()
    if arguments is None:
        return ToolCall(id=call_id, name=name)
    if isinstance(arguments, str):  # some models write the arguments as JSON text
        return parse_tool_arguments(call_id, name, arguments)
    return tool_call_from_object(call_id, name, arguments)


def _malformed_call(item: _Malformed, names: _NameTable) -> ToolCall | None:
    """The call a block that could not be read was meant to be, when its JSON can be repaired
    as native arguments are (the repair is noted on the call); else a tool error for a block
    naming an offered tool; else None."""
    repaired = _repaired_call(item, names)
    if repaired is not None:
        return repaired
    written = item.name if item.name is not None else _written_name(item.body)
    name = names.lookup(written.strip()) if written else None
    if name is None:
        return None
    error = (
        f"the tool call written in your text could not be read: {item.reason}. Write each "
        'call as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> with valid JSON'
    )
    return ToolCall(
        id=_new_call_id(),
        name=name,
        raw_arguments=item.body[:MAX_RAW_ARGUMENTS_CHARS],
        arguments_error=error,
    )


def _repaired_call(item: _Malformed, names: _NameTable) -> ToolCall | None:
    """The call to an offered tool that the invalid JSON of ``item`` was meant to be (single
    quotes, a trailing comma, a missing closing brace, Python ``True``), else None. Noted
    as a repair of its arguments, so that a call cut off at the token limit is still refused
    (see :func:`~subagents.models.tool_arguments.refuse_repairs_of_cut_calls`)."""
    if item.reason != _NOT_JSON:
        return None
    decoded = repair_arguments(item.body, max_depth=MAX_ARGUMENT_DEPTH)
    parts = _call_parts(decoded) if decoded is not None else None
    if parts is None:
        return None
    name = names.lookup(parts[0].strip())
    if name is None or not isinstance(parts[1], dict):
        return None
    call = tool_call_from_object(_new_call_id(), name, parts[1])
    if call.arguments_error is not None:
        return None
    note = "arguments were repaired from invalid JSON (a tool call written as text)"
    return replace(call, raw_arguments=item.body[:MAX_RAW_ARGUMENTS_CHARS], repairs=(note,))


def _written_name(body: str) -> str | None:
    """The string after the first ``"name":`` (or ``"tool":``, ``"tool_name":``) in a broken
    call, if there is one."""
    for key in _NAME_KEYS:
        quoted = f'"{key}"'
        at = body.find(quoted)
        if at == -1:
            continue
        colon = _skip_space(body, at + len(quoted))
        if body.startswith(":", colon):
            decoded = _decode(body, colon + 1)
            if decoded is not None and isinstance(decoded[0], str):
                return decoded[0]
    return None


def _new_call_id() -> str:
    return f"call_text_{uuid.uuid4().hex[:12]}"


def _remaining_text(text: str, spans: list[_Span]) -> str:
    pieces: list[str] = []
    position = 0
    for span in spans:
        pieces.append(text[position : span.start])
        position = span.end
    pieces.append(text[position:])
    kept = [piece.strip() for piece in pieces]
    return "\n\n".join(piece for piece in kept if piece)
