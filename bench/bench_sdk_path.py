"""CPU per model turn through a provider SDK, on the path users take (issue 14).

A local server speaking OpenAI's Chat Completions API (and Anthropic's Messages API, at
``/v1/messages``) plays W1 in a separate process on 127.0.0.1, so its CPU is not counted:
while the conversation has fewer than N rounds of tool calls it asks for one call to the
``echo`` tool, then it answers "done". The number of rounds is in the model's name (``w1-20``),
so one server serves every length. The clients drive that conversation, each timed with
``time.process_time`` of this process, per model turn (N + 1 turns a run), taking turns run by
run so that a busy machine weighs on all of them alike:

- ``subagents``: ``Runtime.run`` with an ``OpenAIChatModel`` (``AnthropicModel``) at the
  server's URL and the tool declared as users declare it (``@tool`` on a plain ``def``), with
  a store, as ``subagents run`` has; its main agent sends a system prompt, ``echo`` and the
  Task tool. ``store off``: the same without a store (the store's own cost per turn is
  ``bench_durability.py``'s); ``model only``: our model alone, driven by a hand loop of
  ``model.request`` (``model.stream``) calls as the bare loops are, without a session;
- ``bare post``: the bare SDK client's low-level ``post`` with hand-built messages (the system
  prompt and tools that ours sends, copied from its first request), sent as JSON bytes, and
  the raw HTTP response read with ``json.loads``: the floor the SDK's transport allows (a
  ``body=`` dict would cost more with ``anthropic``, which copies it whole every request);
- ``SDK create``: the same loop through ``chat.completions.create`` (``messages.create``).

``--stream`` makes every request a stream (ours through ``Runtime(stream=True)`` with an event
listener, as the CLI's progress does); ``--provider anthropic`` measures Anthropic's SDK.

    python bench/bench_sdk_path.py [--provider openai|anthropic] [--turns 5,20,50]
                                   [--iters 20] [--warmup 3] [--stream] [--json FILE]

Prints the median CPU µs per model turn of each client at each length, and each of ours / bare.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx2

from local_server import AnswerHandler, serve, start_server

__all__ = ["main"]

PROMPT = "go"
API_KEY = "sk-bench-not-a-real-key"
MAX_TOKENS = 1024


# --- the server (its own process: `bench_sdk_path.py --serve`) ----------------------------


def _rounds_asked(model: str) -> int:
    return int(model.rsplit("-", 1)[1])


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    frames = (
        (f"event: {name}\n" if name else "")
        + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        for name, data in events
    )
    return "".join(frames).encode()


def _chat_completion(request: dict[str, Any]) -> tuple[bytes, str]:
    """The next W1 turn as a chat completion (or its chunks)."""
    messages = request["messages"]
    rounds = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    message: dict[str, Any] = {"role": "assistant", "content": "done"}
    if rounds < _rounds_asked(request["model"]):
        arguments = json.dumps({"x": f"item-{rounds}"})
        call = {
            "id": f"call_{rounds}",
            "type": "function",
            "function": {"name": "echo", "arguments": arguments},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    usage = {"prompt_tokens": 10 * len(messages), "completion_tokens": 9, "total_tokens": 99}
    base = {"id": "chatcmpl-bench", "created": 1700000000, "model": request["model"]}
    if not request.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish}
        body = {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        return json.dumps(body).encode(), "application/json"
    chunk = {**base, "object": "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
    chunks: list[tuple[str | None, Any]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return _sse(chunks), "text/event-stream"


def _anthropic_message(request: dict[str, Any]) -> tuple[bytes, str]:
    """The next W1 turn as an Anthropic message (or its events)."""
    messages = request["messages"]
    rounds = sum(
        1
        for m in messages
        if m["role"] == "assistant" and any(b.get("type") == "tool_use" for b in m["content"])
    )
    block: dict[str, Any] = {"type": "text", "text": "done"}
    stop_reason = "end_turn"
    if rounds < _rounds_asked(request["model"]):
        arguments = {"x": f"item-{rounds}"}
        block = {"type": "tool_use", "id": f"toolu_{rounds}", "name": "echo", "input": arguments}
        stop_reason = "tool_use"
    usage = {"input_tokens": 10 * len(messages), "output_tokens": 9}
    body = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": [block],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }
    if not request.get("stream"):
        return json.dumps(body).encode(), "application/json"
    if block["type"] == "text":
        opening, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
    else:
        opening = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {**body, "content": []}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": opening},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": usage},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events), "text/event-stream"


class _Handler(AnswerHandler):
    last_request: ClassVar[bytes] = b"{}"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        _Handler.last_request = raw
        answer = _anthropic_message if self.path.endswith("/messages") else _chat_completion
        self.send_answer(*answer(json.loads(raw)))

    def do_GET(self) -> None:
        """``GET /last``: the body of the last request (the bare loops copy its prompt)."""
        self.send_answer(_Handler.last_request, "application/json")


# --- the bare loops -----------------------------------------------------------------------

Run = Callable[[], Awaitable[None]]
Made = tuple[Run, Callable[[], Awaitable[None]]]


@dataclass(frozen=True, slots=True)
class Prompt:
    """The system prompt and tools ours sends (the bare loops send the same)."""

    system: str
    tools: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    arguments: dict[str, Any]


def _echo(x: str) -> str:
    """Echo the input."""
    return "ok:" + x


class OpenAIWire:
    """Chat Completions, by hand."""

    path = "/chat/completions"

    @staticmethod
    def client(url: str) -> Any:
        import openai

        return openai.AsyncOpenAI(api_key=API_KEY, base_url=f"{url}/v1")

    @staticmethod
    def start(prompt: Prompt) -> list[dict[str, Any]]:
        return [{"role": "system", "content": prompt.system}, {"role": "user", "content": PROMPT}]

    @staticmethod
    def spec(tool: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        function = tool["function"]
        return function["name"], function["description"], function["parameters"]

    @staticmethod
    def body(model: str, messages: list[dict[str, Any]], prompt: Prompt) -> dict[str, Any]:
        return {"model": model, "messages": messages, "tools": prompt.tools}

    @staticmethod
    def add_answer(messages: list[dict[str, Any]], answer: dict[str, Any]) -> list[Call]:
        """Append the assistant message of ``answer`` (a whole completion); its calls."""
        message = answer["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        entry: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if calls:
            entry["tool_calls"] = calls
        messages.append(entry)
        return [Call(c["id"], json.loads(c["function"]["arguments"])) for c in calls]

    @staticmethod
    def add_results(messages: list[dict[str, Any]], results: list[tuple[str, str]]) -> None:
        for call_id, result in results:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})

    @staticmethod
    def whole(events: list[dict[str, Any]]) -> dict[str, Any]:
        """The completion a W1 stream stands for (its call is whole in its first chunk)."""
        message: dict[str, Any] = {"content": None}
        for event in events:
            for choice in event.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    message["content"] = (message["content"] or "") + delta["content"]
                for piece in delta.get("tool_calls") or ():
                    call = {k: v for k, v in piece.items() if k != "index"}
                    message.setdefault("tool_calls", []).append(call)
        return {"choices": [{"message": message}]}

    @staticmethod
    async def create(client: Any, model: str, messages: Any, prompt: Prompt, stream: bool) -> Any:
        if stream:
            events = await client.chat.completions.create(
                model=model, messages=messages, tools=prompt.tools, stream=True
            )
            return OpenAIWire.whole([e.model_dump(exclude_none=True) async for e in events])
        completion = await client.chat.completions.create(
            model=model, messages=messages, tools=prompt.tools
        )
        return completion.model_dump(exclude_none=True)


class AnthropicWire:
    """The Messages API, by hand."""

    path = "/v1/messages"

    @staticmethod
    def client(url: str) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(api_key=API_KEY, base_url=url)

    @staticmethod
    def start(prompt: Prompt) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]

    @staticmethod
    def spec(tool: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        return tool["name"], tool["description"], tool["input_schema"]

    @staticmethod
    def body(model: str, messages: list[dict[str, Any]], prompt: Prompt) -> dict[str, Any]:
        return {
            "model": model,
            "messages": messages,
            "max_tokens": MAX_TOKENS,
            "system": prompt.system,
            "tools": prompt.tools,
        }

    @staticmethod
    def add_answer(messages: list[dict[str, Any]], answer: dict[str, Any]) -> list[Call]:
        blocks = answer["content"]
        messages.append({"role": "assistant", "content": blocks})
        return [Call(b["id"], b["input"]) for b in blocks if b["type"] == "tool_use"]

    @staticmethod
    def add_results(messages: list[dict[str, Any]], results: list[tuple[str, str]]) -> None:
        blocks = [
            {"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": False}
            for call_id, result in results
        ]
        messages.append({"role": "user", "content": blocks})

    @staticmethod
    def whole(events: list[dict[str, Any]]) -> dict[str, Any]:
        """The message a W1 stream stands for (one block, whole in one delta)."""
        blocks: list[dict[str, Any]] = []
        for event in events:
            if event["type"] == "content_block_start":
                blocks.append(dict(event["content_block"]))
            elif event["type"] == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    blocks[-1]["text"] += delta["text"]
                else:
                    blocks[-1]["input"] = json.loads(delta["partial_json"])
        return {"content": blocks}

    @staticmethod
    async def create(client: Any, model: str, messages: Any, prompt: Prompt, stream: bool) -> Any:
        kwargs = {"system": prompt.system, "tools": prompt.tools, "max_tokens": MAX_TOKENS}
        if stream:
            events = await client.messages.create(
                model=model, messages=messages, stream=True, **kwargs
            )
            return AnthropicWire.whole([e.model_dump(exclude_none=True) async for e in events])
        answer = await client.messages.create(model=model, messages=messages, **kwargs)
        return answer.model_dump(exclude_none=True)


Wire = type[OpenAIWire] | type[AnthropicWire]
WIRES: dict[str, Wire] = {"openai": OpenAIWire, "anthropic": AnthropicWire}


def _take_turn(wire: Wire, messages: list[dict[str, Any]], answer: dict[str, Any]) -> bool:
    """Append ``answer`` and the results of its tool calls; True when it is the last turn."""
    calls = wire.add_answer(messages, answer)
    if calls:
        wire.add_results(messages, [(call.id, _echo(**call.arguments)) for call in calls])
    return not calls


def bare_post(wire: Wire, url: str, rounds: int, stream: bool, prompt: Prompt) -> Made:
    """W1 through the client's ``post``: JSON bytes out, the raw response read with json."""
    client = wire.client(url)
    stream_class = type(client).__module__.split(".")[0]
    stream_type = sys.modules[stream_class].AsyncStream[object]

    async def run() -> None:
        messages = wire.start(prompt)
        done = False
        while not done:
            body = wire.body(f"w1-{rounds}", messages, prompt)
            if stream:
                body["stream"] = True
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
            if stream:
                events = await client.post(
                    wire.path, content=content, cast_to=object, stream=True, stream_cls=stream_type
                )
                answer = wire.whole([event async for event in events])
            else:
                response = await client.post(wire.path, content=content, cast_to=httpx2.Response)
                answer = json.loads(response.content)
            done = _take_turn(wire, messages, answer)

    return run, client.close


def sdk_create(wire: Wire, url: str, rounds: int, stream: bool, prompt: Prompt) -> Made:
    """W1 through the SDK's typed method (``chat.completions.create``, ``messages.create``)."""
    client = wire.client(url)

    async def run() -> None:
        messages = wire.start(prompt)
        done = False
        while not done:
            answer = await wire.create(client, f"w1-{rounds}", messages, prompt, stream)
            done = _take_turn(wire, messages, answer)

    return run, client.close


# --- ours ---------------------------------------------------------------------------------


def _ours_model(wire: Wire, url: str, rounds: int) -> Any:
    if wire is AnthropicWire:
        from subagents.models.anthropic import AnthropicModel

        return AnthropicModel(f"w1-{rounds}", base_url=url, api_key=API_KEY, max_tokens=MAX_TOKENS)
    from subagents.models.openai import OpenAIChatModel

    return OpenAIChatModel(f"w1-{rounds}", base_url=f"{url}/v1", api_key=API_KEY)


def ours_runtime(
    wire: Wire,
    url: str,
    rounds: int,
    stream: bool,
    prompt: Prompt | None = None,
    *,
    store: bool = True,
) -> Made:
    """W1 through ``Runtime.run``, with a store as ``subagents run`` has (or none)."""
    from subagents.config import Config, SubagentsSettings
    from subagents.runtime.events import EventBus
    from subagents.runtime.runtime import Runtime
    from subagents.store.sqlite import open_store
    from subagents.tools.decorator import tool

    model = _ours_model(wire, url, rounds)
    folder = Path(tempfile.mkdtemp(prefix="bench-sdk-"))
    runtime = Runtime(
        cwd=tempfile.gettempdir(),
        model=model,
        tools=[tool(name="echo")(_echo)],
        builtin_tools=False,
        permission_mode="bypassPermissions",
        config=Config(subagents=SubagentsSettings(max_turns=rounds + 10)),
        store=open_store(folder / "state.db") if store else None,
        events=EventBus([lambda event: None]) if stream else None,
        stream=stream,
    )

    async def run() -> None:
        result = await runtime.run(PROMPT)
        assert result.output == "done", result

    return run, model.aclose


def ours_model(wire: Wire, url: str, rounds: int, stream: bool, prompt: Prompt) -> Made:
    """W1 through our model alone, driven by a hand loop as the bare ones are (no session)."""
    from subagents.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
    from subagents.models.base import ModelRequest, ResponseCompleted, ToolSpec

    model = _ours_model(wire, url, rounds)
    tools = tuple(ToolSpec(*wire.spec(tool)) for tool in prompt.tools)

    async def answer(request: ModelRequest) -> Any:
        if not stream:
            return await model.request(request)
        async for event in model.stream(request):
            if isinstance(event, ResponseCompleted):
                return event.response
        raise AssertionError("a stream without its response")

    async def run() -> None:
        messages: list[Message] = [UserMessage(PROMPT)]
        while True:
            response = await answer(ModelRequest(prompt.system, messages, tools))
            messages.append(AssistantMessage(response.text, response.tool_calls))
            if not response.tool_calls:
                assert response.text == "done", response
                return
            for call in response.tool_calls:
                result = _echo(**call.arguments)
                messages.append(ToolResultMessage(call.id, call.name, result))

    return run, model.aclose


Client = Callable[[Wire, str, int, bool, Prompt], Made]
CLIENTS: dict[str, Client] = {
    "subagents": ours_runtime,
    "store off": functools.partial(ours_runtime, store=False),
    "model only": ours_model,
    "bare post": bare_post,
    "SDK create": sdk_create,
}


# --- timing -------------------------------------------------------------------------------


async def cpu_per_turn_us(
    runs: dict[str, Run], turns: int, warmup: int, iters: int
) -> dict[str, float]:
    """The median CPU µs per model turn of each of ``runs`` over ``iters`` runs, after
    ``warmup`` runs. The clients take turns run by run, so that a busy machine weighs on all
    of them alike."""
    for run in runs.values():
        for _ in range(warmup):
            await run()
    gc.collect()
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(iters):
        for name, run in runs.items():
            start = time.process_time()
            await run()
            samples[name].append((time.process_time() - start) / turns * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def _last_request(url: str) -> Any:
    with urllib.request.urlopen(f"{url}/last") as answer:
        return json.loads(answer.read())


async def ours_prompt(wire: Wire, url: str) -> Prompt:
    """The system prompt and tools of our first request, as the server received them."""
    run, close = ours_runtime(wire, url, 0, False)
    try:
        await run()
    finally:
        await close()
    sent = await asyncio.to_thread(_last_request, url)
    system = sent["system"] if wire is AnthropicWire else sent["messages"][0]["content"]
    return Prompt(system=system, tools=sent["tools"])


async def measure(wire: Wire, url: str, args: argparse.Namespace) -> dict[int, dict[str, float]]:
    prompt = await ours_prompt(wire, url)
    results: dict[int, dict[str, float]] = {}
    for rounds in (int(part) for part in args.turns.split(",")):
        clients = {
            name: make(wire, url, rounds, args.stream, prompt) for name, make in CLIENTS.items()
        }
        try:
            runs = {name: run for name, (run, _) in clients.items()}
            results[rounds] = await cpu_per_turn_us(runs, rounds + 1, args.warmup, args.iters)
        finally:
            for _, close in clients.values():
                await close()
    return results


def report(results: dict[int, dict[str, float]], provider: str, stream: bool) -> None:
    names = list(CLIENTS)
    streamed = " (streamed)" if stream else ""
    print(f"W1 through the {provider} SDK{streamed}: CPU µs per model turn")
    header = f"{'tool rounds':>11} | " + " | ".join(f"{name:>10}" for name in names)
    ratios = ("subagents", "store off", "model only")
    print(header + " | " + " | ".join(f"{name + ' / bare':>17}" for name in ratios))
    print("-" * len(header) + "-|" + "|".join("-" * 19 for _ in ratios))
    for rounds, row in results.items():
        cells = " | ".join(f"{row[name]:>10.0f}" for name in names)
        shares = " | ".join(f"{row[name] / row['bare post']:>16.2f}x" for name in ratios)
        print(f"{rounds:>11} | {cells} | {shares}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--provider", choices=sorted(WIRES), default="openai")
    parser.add_argument("--turns", default="5,20,50", help="tool rounds per run (comma list)")
    parser.add_argument("--iters", type=int, default=20, help="timed runs per client and length")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--stream", action="store_true", help="stream every answer")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(_Handler)
        return 0
    server, port = start_server(__file__)
    url = f"http://127.0.0.1:{port}"
    try:
        results = asyncio.run(measure(WIRES[args.provider], url, args))
    finally:
        server.terminate()
        server.wait()
    report(results, args.provider, args.stream)
    if args.json is not None:
        rows = {str(rounds): row for rounds, row in results.items()}
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
