"""In-process local models: ``llamacpp:PATH.gguf`` runs a GGUF file through llama.cpp's Python
bindings (``pip install 'subagents[llamacpp]'``); there is no server to start.

Small local models seldom call tools reliably on their own, so each turn is schema-constrained
by default (:mod:`subagents.models.schema_turns`): llama.cpp's grammar sampler only lets the
model write one call of an offered tool or a reply. With ``[providers.llamacpp] tool_calls =
"text"`` (or ``"auto"``) the model writes freely and calls are read from its text instead;
``"native"`` is refused, since the bindings have no tool calls of their own.

A relative ``PATH`` is read from the current directory; ``~`` is expanded. The file is checked
when the model is built (it exists and starts with GGUF's magic bytes) and loaded on the first
request, once per process for each path and context size: every session and subagent naming
the same file shares it, and their turns take the model one at a time (a llama.cpp context is
not thread-safe).

Generation runs in a worker thread and streams token by token inside it, so a cancelled session
or a silence longer than ``[providers.llamacpp] timeout_seconds`` stops it at the next token
(reading the prompt before the first token cannot be interrupted), and so does a loop: an
answer that keeps repeating one passage (:class:`~subagents.models.repetition.RunawayWatch`)
ends there, as if cut off at its token limit.

Reading the prompt is most of a turn's time on a CPU (a 1.5B model reads about 30 tokens a
second on two cores), and a session's turns share all but their last messages. llama.cpp
reuses what it last read; a subagent's turns in between would make the parent read its whole
prompt again, so the state after each turn is kept in memory (:data:`STATE_CACHE_BYTES` per
model) and the turn that continues a kept one starts from it. Generation uses one thread per
physical core (:func:`generation_threads`). The context window is
``[providers.llamacpp] context_tokens`` (:data:`DEFAULT_CONTEXT_TOKENS` when unset); a history
that no longer fits is a :class:`~subagents.errors.ModelError` that names that setting.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import threading
import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subagents.errors import ModelConfigurationError, ModelError
from subagents.messages import Usage
from subagents.models import schema_turns
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from subagents.models.repetition import RunawayWatch
from subagents.models.settings import LOCAL_TIMEOUT_SECONDS

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "STATE_CACHE_BYTES",
    "LlamaCppModel",
    "generation_threads",
    "gguf_path",
    "grammar_schema",
]

DEFAULT_CONTEXT_TOKENS = 8192
"""The context window allocated when ``[providers.llamacpp] context_tokens`` is unset: enough
for an agent's system prompt, its tool list and a few dozen turns, small enough that a 7B
model's cache stays near 1 GiB."""
DEFAULT_MAX_OUTPUT_TOKENS = 2048
"""The longest answer written when a request sets no ``max_tokens``."""
STATE_CACHE_BYTES = 1 << 30
"""Memory for the states of earlier turns, per loaded model (the oldest go first)."""

_GGUF_MAGIC = b"GGUF"
_INSTALL_HINT = "run: pip install 'subagents[llamacpp]' (it builds llama.cpp when no wheel fits)"


def gguf_path(spec: str) -> Path:
    """The GGUF file ``spec`` (the part after ``llamacpp:``) names; raises
    :class:`ModelConfigurationError` when it is not a readable GGUF file."""
    if not spec.strip():
        raise ModelConfigurationError(
            "The model 'llamacpp:' names no file.",
            hint="write llamacpp:PATH, e.g. llamacpp:models/qwen2.5-1.5b-instruct-q4_k_m.gguf",
        )
    path = Path(spec.strip()).expanduser()
    shown = f"'llamacpp:{spec.strip()}'"
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(_GGUF_MAGIC))
    except FileNotFoundError:
        raise ModelConfigurationError(
            f"The model {shown} names {path}, which does not exist.",
            hint="give the path of a .gguf file (relative paths start from the current directory)",
        ) from None
    except OSError as exc:
        raise ModelConfigurationError(
            f"The model {shown} names {path}, which cannot be read: {exc.strerror or exc}.",
            hint="give the path of a readable .gguf file",
        ) from None
    if magic != _GGUF_MAGIC:
        raise ModelConfigurationError(
            f"The model {shown} names {path}, which is not a GGUF file.",
            hint="convert the model to GGUF (llama.cpp's convert_hf_to_gguf.py) or download "
            "a .gguf build of it",
        )
    return path.resolve()


@dataclass
class _Loaded:
    """One GGUF file loaded into memory, and the lock its turns take one at a time."""

    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


_loaded: dict[tuple[Path, int], _Loaded] = {}
_loading = threading.Lock()


def _load(path: Path, context_tokens: int) -> _Loaded:
    with _loading:
        key = (path, context_tokens)
        if key not in _loaded:
            from llama_cpp import Llama

            threads = generation_threads()
            try:
                llama = Llama(
                    model_path=str(path),
                    n_ctx=context_tokens,
                    n_threads=threads,
                    n_threads_batch=threads,
                    seed=0,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(
                    f"llama.cpp could not load {path}: {exc}.",
                    hint="check that the file is a complete GGUF model that this version of "
                    "llama.cpp supports (a partial download or a newer architecture fails here)",
                ) from None
            from llama_cpp.llama_cache import LlamaRAMCache

            llama.set_cache(LlamaRAMCache(capacity_bytes=STATE_CACHE_BYTES))
            if not _loaded:
                atexit.register(_close_all)
            _loaded[key] = _Loaded(llama)
        return _loaded[key]


def generation_threads() -> int:
    """One thread per physical core this process may run on: llama.cpp's own default. (The
    bindings' default, half the logical CPUs, leaves a 2-vCPU machine a single thread and
    halves its speed.)"""
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
    cores = set()
    for cpu in cpus:
        siblings = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        try:
            cores.add(siblings.read_text().strip())
        except OSError:
            cores.add(str(cpu))
    return max(1, len(cores))


def _close_all() -> None:
    """Free the models while the bindings still work (at interpreter exit they are torn down
    before the models' own finalisers run, which then fail)."""
    with _loading:
        while _loaded:
            _, loaded = _loaded.popitem()
            loaded.llama.close()


@dataclass
class _Generation:
    """What one turn wrote."""

    text: str
    finish_reason: str | None
    output_tokens: int
    context_tokens_used: int
    reused_tokens: int = 0
    """The prompt tokens llama.cpp did not evaluate again: the start of the prompt it still
    held (from the turn before, or a state it kept for another session), as a provider's
    prefix cache reports its hits."""


class _Stopped(Exception):
    """A turn stopped before it ended: its session was cancelled or the model fell silent."""


class LlamaCppModel:
    """A GGUF model run in this process by llama.cpp; see the module docstring.

    ``tool_calls`` is ``"schema"`` (the default: grammar-constrained turns) or ``"plain"``
    (no grammar, for :class:`~subagents.models.text_tools.TextToolCallModel` to read calls
    from the text; :class:`~subagents.models.providers.LlamaCppProvider` wraps it so).
    """

    def __init__(
        self,
        path: Path,
        *,
        spec: str | None = None,
        context_tokens: int | None = None,
        timeout_seconds: float | None = None,
        tool_calls: str = "schema",
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelConfigurationError(
                f"The model 'llamacpp:{spec or path}' needs llama.cpp's Python bindings "
                "(llama-cpp-python), which are not installed.",
                hint=_INSTALL_HINT,
            )
        self.path = path
        self.model_name = spec or str(path)
        self.context_tokens = context_tokens or DEFAULT_CONTEXT_TOKENS
        self.timeout_seconds = timeout_seconds or LOCAL_TIMEOUT_SECONDS
        self.tool_calls = tool_calls

    @property
    def name(self) -> str:
        return f"llamacpp:{self.model_name}"

    async def request(self, request: ModelRequest) -> ModelResponse:
        typed = request.settings.reply_schema is not None
        constrained = self.tool_calls == "schema" and (bool(request.tools) or typed)
        messages = self._messages(request, constrained)
        tools = request.callable_tools if constrained else None  # (): a reply only
        stop = threading.Event()
        sampling = {**_sampling(request.settings), "seed": _seed_of(messages)}
        try:
            generation = await asyncio.to_thread(
                self._generate, messages, tools, sampling, stop, request.settings.reply_schema
            )
        finally:
            stop.set()  # a cancelled turn ends at its next token and frees the model
        return self._response(generation, constrained)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._whole(request)

    async def aclose(self) -> None:
        """Nothing of this model's own to release: the loaded file is shared by every model
        naming it, and freed when the process exits."""

    async def _whole(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        response = await self.request(request)
        if response.text:
            yield TextDelta(response.text)
        yield ResponseCompleted(response)

    def _messages(self, request: ModelRequest, constrained: bool) -> list[dict[str, Any]]:
        system = request.system
        if constrained:
            parts = (request.system, schema_turns.turn_instructions(request.callable_tools))
            system = "\n\n".join(part for part in parts if part)
        return schema_turns.history_messages(system, request.messages)

    def _generate(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[ToolSpec] | None,
        sampling: dict[str, Any],
        stop: threading.Event,
        reply: str | None = None,
    ) -> _Generation:
        loaded = _load(self.path, self.context_tokens)
        with loaded.lock:
            if stop.is_set():
                raise _Stopped("cancelled")
            options: dict[str, Any] = {**sampling, "stream": True}
            if tools is not None:
                options["grammar"] = _grammar(loaded.llama, tools, reply)
            try:
                return self._collect(loaded.llama, messages, options, stop)
            except ValueError as exc:
                if "exceed context window" in str(exc):
                    raise ModelError(
                        f"The conversation no longer fits {self.name}'s context window "
                        f"({self.context_tokens} tokens): {exc}.",
                        hint="raise [providers.llamacpp] context_tokens in config.toml (the "
                        "model's own limit is the most it can use), or start a new task",
                    ) from None
                raise

    def _collect(
        self,
        llama: Any,
        messages: list[dict[str, Any]],
        options: dict[str, Any],
        stop: threading.Event,
    ) -> _Generation:
        pieces: list[str] = []
        finish_reason: str | None = None
        chunks = 0
        last = time.monotonic()
        runaway = RunawayWatch()
        held = _held_prefixes(llama)
        stream = llama.create_chat_completion(messages=messages, **options)
        try:
            for chunk in stream:
                if stop.is_set():
                    raise _Stopped("cancelled")
                now = time.monotonic()
                if now - last > self.timeout_seconds:
                    raise ModelError(
                        f"{self.name} wrote nothing for over {self.timeout_seconds:g} s.",
                        hint="raise [providers.llamacpp] timeout_seconds in config.toml, or "
                        "use a smaller model",
                    )
                last = now
                choice = chunk["choices"][0]
                content = choice.get("delta", {}).get("content")
                if content:
                    pieces.append(content)
                    chunks += 1
                    if runaway.feed(content) is not None:
                        finish_reason = "length"  # a loop: what follows is more of it
                        break
                finish_reason = choice.get("finish_reason") or finish_reason
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        used = int(llama.n_tokens)
        prompt = llama.input_ids[: max(used - chunks, 0)].tolist()
        reused = _reused(llama, held, prompt)
        return _Generation("".join(pieces), finish_reason, chunks, used, reused)

    def _response(self, generation: _Generation, constrained: bool) -> ModelResponse:
        truncated = generation.finish_reason == "length"
        stop_reason: StopReason = "max_tokens" if truncated else "end_turn"
        usage = Usage(
            input_tokens=max(generation.context_tokens_used - generation.output_tokens, 0),
            output_tokens=generation.output_tokens,
            cache_read_tokens=generation.reused_tokens,
            requests=1,
        )
        response = ModelResponse(
            text=generation.text, usage=usage, stop_reason=stop_reason, model_name=self.name
        )
        if constrained:
            schema_turns.read_response(response)
        return response


def _held_prefixes(llama: Any) -> list[list[int]]:
    """The token sequences llama.cpp may start a prompt from: what its context holds now,
    and the states its cache kept (read before the call: the call adds its own)."""
    held = [llama.input_ids[: llama.n_tokens].tolist()]
    cache = getattr(llama, "cache", None)
    states = getattr(cache, "cache_state", None)
    if isinstance(states, Mapping):
        held += [list(key) for key in states]
    return held


def _reused(llama: Any, held: list[list[int]], prompt: list[int]) -> int:
    """How much of ``prompt`` llama.cpp took from what it held (the longest common start, as
    llama.cpp measures it; a prompt held whole still has its last token evaluated again, for
    fresh logits)."""
    best = max((llama.longest_token_prefix(tokens, prompt) for tokens in held), default=0)
    return best - 1 if prompt and best == len(prompt) else best


def _seed_of(messages: list[dict[str, Any]]) -> int:
    """The sampling seed of a turn, from what it reads: the same request is answered the same
    way (a replay after a crash finds the same calls), and a different one is sampled anew.
    (With the bindings' one seed for every turn, a small model that once made a call again
    kept making it: the same near-even choice, sampled the same way each time.)"""
    text = json.dumps(messages[-2:], ensure_ascii=False, sort_keys=True)
    return zlib.crc32(f"{len(messages)}:{text}".encode())


def _sampling(settings: ModelSettings) -> dict[str, Any]:
    """The generation options of ``settings``: a frequency penalty also sets llama.cpp's own
    repeat penalty (which looks at the last 64 tokens), the lever that works for loops."""
    options: dict[str, Any] = {"max_tokens": settings.max_tokens or DEFAULT_MAX_OUTPUT_TOKENS}
    if settings.temperature is not None:
        options["temperature"] = settings.temperature
    if settings.frequency_penalty is not None:
        options["frequency_penalty"] = settings.frequency_penalty
        options["repeat_penalty"] = 1.0 + settings.frequency_penalty / 2
    return options


_BOUNDS = frozenset(
    {
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    }
)
"""Schema keywords left out of the grammar: long bounds (a prompt's ``maxLength``) expand into
rules llama.cpp refuses, and the tool checks every one of them when it is called anyway."""
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")


def grammar_schema(schema: Any) -> Any:
    """``schema`` without the keywords of :data:`_BOUNDS`, at every level that is a schema
    (a property *named* ``pattern`` stays)."""
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _BOUNDS:
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            kept[key] = {name: grammar_schema(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            kept[key] = [grammar_schema(sub) for sub in value]
        elif key in ("items", "additionalProperties", "not"):
            kept[key] = grammar_schema(value)
        else:
            kept[key] = value
    return kept


def _loose_turn_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """A call of one of ``tools`` with any object for arguments, or a reply: the fallback when
    the tools' own schemas (or a typed reply's) make a grammar llama.cpp refuses (the tool
    checks its arguments, the session a typed reply)."""
    names = [tool.name for tool in tools]
    call = {
        "type": "object",
        "properties": {"tool": {"enum": names}, "arguments": {"type": "object"}},
        "required": ["tool", "arguments"],
    }
    reply = {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}
    return {"anyOf": [call, reply]}


_grammar_checks: dict[str, bool] = {}


def _accepted(llama: Any, grammar: str) -> bool:
    """Whether llama.cpp parses ``grammar`` (a grammar it refuses would crash the sampler)."""
    if grammar not in _grammar_checks:
        import llama_cpp

        sampler = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar.encode("utf-8"), b"root"
        )
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
        _grammar_checks[grammar] = bool(sampler)
    return _grammar_checks[grammar]


def _grammar(llama: Any, tools: Sequence[ToolSpec], reply: str | None = None) -> Any:
    """The grammar of one turn: the full turn schema (a typed ``reply`` in it, when given)
    where llama.cpp takes it, else the loose one; ``None`` (unconstrained, read as text) if
    neither converts."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    full = grammar_schema(schema_turns.turn_schema(tools, reply))
    for schema in (full, _loose_turn_schema(tools)):
        try:
            grammar = json_schema_to_gbnf(json.dumps(schema))
        except Exception:  # the converter raises bare exceptions on schemas it cannot express
            continue
        if _accepted(llama, grammar):
            return LlamaGrammar.from_string(grammar, verbose=False)
    return None
