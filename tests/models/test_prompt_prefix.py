"""Requests that automatic prefix caching can serve (vLLM, llama.cpp, OpenAI): what a session
sent stays the same bytes at the head of its next request, and two subagents of one type start
with the same system prompt and tools. Real openai SDK, a local Chat Completions server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAIServer
from subagents.definitions.model import AgentDefinition
from subagents.models.openai import OpenAIChatModel
from subagents.runtime.runtime import Runtime


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def task_call(call_id: str, prompt: str) -> tuple[str, str, str]:
    arguments = {"description": "look", "prompt": prompt, "subagent_type": "worker"}
    return (call_id, "Task", json.dumps(arguments))


def head(body: dict[str, Any], messages: int) -> str:
    """The bytes a prefix cache keys on: the tools, then the first ``messages`` messages."""
    return json.dumps([body.get("tools"), body["messages"][:messages]], sort_keys=True)


async def test_turns_and_same_type_subagents_share_their_prefix(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.reply_tool_calls([task_call("call_a", "Look at a.py.")])  # main, turn 1
    server.reply_text("a.py is fine.")  # the first worker
    server.reply_tool_calls([task_call("call_b", "Look at b.py.")])  # main, turn 2
    server.reply_text("b.py is fine.")  # the second worker
    server.reply_text("Both are fine.")  # main, turn 3
    model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k", timeout_seconds=5)
    worker = AgentDefinition(name="worker", description="Looks.", system_prompt="You look.")
    runtime = Runtime(cwd=tmp_path, agents=[worker], model=model, agent_models={"worker": model})
    try:
        result = await runtime.run("Check a.py and b.py, one after the other.")
    finally:
        await runtime.aclose()
    assert result.status == "completed", result.error

    main_1, worker_a, main_2, worker_b, main_3 = (r.json() for r in server.requests)
    # each main turn starts with every byte of the one before
    assert head(main_2, len(main_1["messages"])) == head(main_1, len(main_1["messages"]))
    assert head(main_3, len(main_2["messages"])) == head(main_2, len(main_2["messages"]))
    # two sessions of one agent type: the same system prompt and tools, byte for byte
    assert worker_a["messages"][0]["role"] == "system"
    assert head(worker_a, 1) == head(worker_b, 1)
    assert worker_a["messages"][1] != worker_b["messages"][1]  # their own tasks after it
