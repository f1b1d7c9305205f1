"""Against llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``),
as its users run it, with the small model the suite installs, and ``OPENAI_BASE_URL`` set as
its guide says.

``make eval`` found what no fake server had: the server refuses an assistant turn whose
``content`` is ``null`` (HTTP 500), so the history of a call read from a model's text failed
every request after the first tool call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from small_models import SKIP_REASON, shipped_gguf
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelSettings, ToolSpec
from subagents.models.openai import OpenAIChatModel
from subagents.models.text_tools import TextToolCallModel

GGUF = shipped_gguf()
HAS_SERVER = importlib.util.find_spec("uvicorn") is not None
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(GGUF is None, reason=SKIP_REASON),
    pytest.mark.skipif(not HAS_SERVER, reason="needs llama-cpp-python[server] (from .[dev])"),
]
STARTUP_SECONDS = 300  # loading a 98 MB model on a busy 2-core machine; the wait ends early


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    ready = threading.Event()
    lines: list[str] = []

    def read_log() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "Uvicorn running on" in line:
                ready.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        if not ready.wait(STARTUP_SECONDS):
            log_path.write_text("".join(lines))
            pytest.fail(f"llama_cpp.server did not start; its output: {''.join(lines)[-2000:]}")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


READ = ToolSpec(
    "Read",
    "Read a file.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


async def test_the_history_of_a_call_read_from_text_is_taken_by_the_server(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    inner = OpenAIChatModel("smollm2", tool_calls="auto")
    model = TextToolCallModel(inner, mode="auto")
    call = ToolCall("call_text_1", "Read", {"file_path": "notes.txt"})
    request = ModelRequest(
        "You read files.",
        [
            UserMessage("What does notes.txt say?"),
            AssistantMessage("", tool_calls=(call,)),  # what a <tool_call> answer became
            ToolResultMessage("call_text_1", "Read", "1\tThe code word is PELICAN."),
        ],
        tools=(READ,),
        settings=ModelSettings(max_tokens=16),
    )
    try:
        response = await model.request(request)
    finally:
        await model.aclose()
    assert response.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert inner.server.kind == "local"


async def test_two_agents_streaming_at_once_both_get_their_answers(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This server stops a stream when another request comes in (``interrupt_requests``, on
    by default): a subagent in the background and its parent stopped each other's streamed
    schema turns until both gave up (``make eval``). The model learns from the first cut
    stream that the server serves one request at a time, and sends them so."""
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    model = OpenAIChatModel("smollm2", tool_calls="schema", max_retries=3)
    settings = ModelSettings(max_tokens=48, temperature=0)

    def ask(question: str) -> ModelRequest:
        return ModelRequest("Answer briefly.", [UserMessage(question)], (READ,), settings)

    try:
        first, second = await asyncio.gather(
            model.request(ask("Tell me about the sea.")),
            model.request(ask("Tell me about the mountains.")),
        )
    finally:
        await model.aclose()
    for response in (first, second):
        assert response.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert model._one_at_a_time is not None  # a stream was cut, and the lesson kept
