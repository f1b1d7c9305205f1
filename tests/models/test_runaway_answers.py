"""What the providers do for answers that run away or are cut off, through the real SDKs and
local HTTP servers speaking each provider's protocol:

- a streamed answer caught in a loop is stopped there (the connection closed, so the server
  stops writing) and finished as cut off; the session asks the turn again;
- an answer cut at the token limit stays cut when it holds tool calls (servers and older
  code said ``tool_use``), so a repaired, cut-short call is never run;
- a turn asked again after a loop carries ``frequency_penalty``, which a server that refuses
  it (HTTP 400 naming it) is sent again without;
- a local server is asked for ``max_tokens`` when the request sets none, not left to write
  until its context is full.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from fakes.anthropic_server import FakeAnthropicServer, stream_events, tool_use_block
from fakes.http_server import PlannedReply
from fakes.openai_server import FakeOpenAIServer, chunk, completion
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.anthropic import AnthropicModel
from subagents.models.base import ModelRequest, ModelSettings, ResponseCompleted, ToolSpec
from subagents.models.openai import OpenAIChatModel
from subagents.models.server import LOCAL_MAX_OUTPUT_TOKENS
from subagents.runtime.answer_check import LOOP_PENALTY
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime

LOOP = "Use this tool to ask the user a question when you need clarification. "
WRITE = ToolSpec(
    "Write",
    "Write a file.",
    {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def local(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel("qwen", base_url=server.base_url, timeout_seconds=10, max_retries=0)
    yield model
    await model.aclose()


def streaming_runtime(tmp_path: Path, model: OpenAIChatModel) -> Runtime:
    """A runtime that streams, as the CLI's progress display makes it."""
    events = EventBus()
    events.subscribe(lambda event: None)
    return Runtime(cwd=tmp_path, model=model, stream=True, events=events)


def endless_loop_stream(repeats: int) -> list[dict[str, object]]:
    return [chunk({"content": LOOP}) for _ in range(repeats)]  # and never a finish_reason


async def test_a_streamed_loop_is_stopped_early_and_finished_as_cut_off(
    server: FakeOpenAIServer, local: OpenAIChatModel
) -> None:
    server.reply_stream([chunk({"content": "I will ask. "}), *endless_loop_stream(20_000)])
    request = ModelRequest("system", [UserMessage("go")])
    events = [event async for event in local.stream(request)]
    (completed,) = [e for e in events if isinstance(e, ResponseCompleted)]
    response = completed.response
    assert response.stop_reason == "max_tokens" and response.finish_reason == "length"
    # 20,000 repeats were on offer (1.4 MB); reading stopped once the loop was certain
    assert response.text.startswith("I will ask. " + LOOP)
    assert len(response.text) < 2_000


async def test_the_session_asks_a_turn_again_after_a_streamed_loop(
    tmp_path: Path, server: FakeOpenAIServer, local: OpenAIChatModel
) -> None:
    server.reply_stream(endless_loop_stream(20_000))
    server.reply_stream([chunk({"content": "The answer is 42."}), chunk(finish_reason="stop")])
    result = await streaming_runtime(tmp_path, local).run("what is it?")
    assert result.status == "completed" and result.output == "The answer is 42."
    first, again = (request.json() for request in server.requests)
    assert "frequency_penalty" not in first
    assert again["frequency_penalty"] == LOOP_PENALTY
    assert "repeats 'Use this tool" in again["messages"][-1]["content"]
    assert again["messages"][:-1] == first["messages"]


async def test_a_server_that_refuses_the_penalty_is_asked_again_without_it(
    server: FakeOpenAIServer, local: OpenAIChatModel
) -> None:
    server.reply_error(400, "Unrecognized request argument supplied: frequency_penalty")
    server.reply_text("fine")
    settings = ModelSettings(frequency_penalty=LOOP_PENALTY)
    response = await local.request(ModelRequest("", [UserMessage("go")], (), settings))
    assert response.text == "fine"
    assert "frequency_penalty" in server.requests[0].json()
    assert "frequency_penalty" not in server.requests[1].json()
    server.reply_text("again")
    await local.request(ModelRequest("", [UserMessage("go")], (), settings))
    assert "frequency_penalty" not in server.requests[2].json()  # not sent to it again


@pytest.mark.parametrize(
    "runaway",
    [
        pytest.param(" ", id="whitespace"),
        pytest.param(LOOP, id="a sentence"),
    ],
)
async def test_a_schema_turn_that_runs_away_is_stopped_early_and_asked_again(
    tmp_path: Path, server: FakeOpenAIServer, runaway: str
) -> None:
    """A grammar keeps a small model inside JSON, not out of a loop: whitespace forever
    after a call, or one passage forever inside a string. The turn is streamed so that it is
    stopped (not waited out to ``max_tokens`` while the server serves no one else)."""
    call = '{"tool": "Read", "arguments": {"file_path": "notes.txt"}}'
    opening = call if runaway == " " else '{"reply": "'
    server.reply_stream([chunk({"content": opening}), *[chunk({"content": runaway})] * 20_000])
    server.reply_text('{"reply": "done"}')
    model = OpenAIChatModel(
        "qwen", base_url=server.base_url, tool_calls="schema", timeout_seconds=10, max_retries=0
    )
    try:
        result = await streaming_runtime(tmp_path, model).run("read notes.txt")
    finally:
        await model.aclose()
    assert result.status == "completed" and result.output == "done"
    first, again = (request.json() for request in server.requests)
    assert first["stream"] is True and server.unused_replies == 0
    if runaway == " ":  # the call was whole before the whitespace: it ran
        assert again["messages"][-1]["content"].startswith('<tool_response name="Read"')
    else:  # the loop is named and the turn asked again with a penalty
        assert again["frequency_penalty"] == LOOP_PENALTY
        assert "repeats 'Use this tool" in again["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("opening", "runaway"),
    [
        pytest.param('{"reply": "The bug: add subtracts.\\n```', "\\n", id="inside the string"),
        pytest.param('{"reply": "The bug: add subtracts.\\n```"', " ", id="after the string"),
    ],
)
async def test_a_reply_written_whole_then_whitespace_until_stopped_is_the_answer(
    tmp_path: Path, server: FakeOpenAIServer, opening: str, runaway: str
) -> None:
    """Recorded (corpus-agent, server, eval c2): the main agent wrote its whole answer, then
    newlines inside the reply's string until the watch stopped it; read as cut off, the run
    failed with the right answer in it. Whitespace is no more of an answer."""
    server.reply_stream([chunk({"content": opening}), *[chunk({"content": runaway})] * 20_000])
    model = OpenAIChatModel(
        "qwen", base_url=server.base_url, tool_calls="schema", timeout_seconds=10, max_retries=0
    )
    try:
        result = await streaming_runtime(tmp_path, model).run("what is the bug?")
    finally:
        await model.aclose()
    assert result.status == "completed", result.error
    assert result.output == "The bug: add subtracts.\n```"
    assert len(server.requests) == 1


async def test_a_local_server_is_asked_for_a_bounded_answer(
    server: FakeOpenAIServer, local: OpenAIChatModel
) -> None:
    server.reply_text("a")
    server.reply_text("b")
    await local.request(ModelRequest("", [UserMessage("go")]))
    await local.request(ModelRequest("", [UserMessage("go")], (), ModelSettings(max_tokens=77)))
    assert server.requests[0].json()["max_tokens"] == LOCAL_MAX_OUTPUT_TOKENS
    assert server.requests[1].json()["max_tokens"] == 77


async def test_an_openai_answer_cut_inside_a_native_call_stays_cut_and_never_writes(
    tmp_path: Path, server: FakeOpenAIServer, local: OpenAIChatModel
) -> None:
    cut_arguments = '{"file_path": "half.txt", "content": "the first half of'
    for _ in range(2):  # the turn, and the turn asked again, both cut
        server.plan(
            PlannedReply(
                json_body=completion(
                    tool_calls=[("call_1", "Write", cut_arguments)], finish_reason="length"
                )
            )
        )
    server.reply_text("I will write it in two steps.")
    result = await Runtime(cwd=tmp_path, model=local, permission_mode="bypassPermissions").run(
        "write half.txt"
    )
    assert result.output == "I will write it in two steps."
    assert not (tmp_path / "half.txt").exists()
    last = server.requests[-1].json()["messages"][-1]
    assert last["role"] == "tool" and "cut off at the output token limit" in last["content"]


async def test_an_anthropic_answer_cut_inside_a_call_stays_cut() -> None:
    with FakeAnthropicServer() as claude:
        pieces = ['{"file_path": "half.txt", ', '"content": "the first half of']
        claude.reply_stream(
            stream_events(
                [{"type": "tool_use", "id": "toolu_1", "name": "Write", "json_pieces": pieces}],
                stop_reason="max_tokens",
            )
        )
        claude.reply_message(
            [tool_use_block("toolu_2", "Write", {"file_path": "a", "content": "b"})],
            stop_reason="max_tokens",
        )
        model = AnthropicModel("claude-test", base_url=claude.base_url, api_key="k" * 20)
        try:
            request = ModelRequest("", [UserMessage("go")], (WRITE,))
            events = [event async for event in model.stream(request)]
            whole = await model.request(request)
        finally:
            await model.aclose()
    (completed,) = [e for e in events if isinstance(e, ResponseCompleted)]
    assert completed.response.stop_reason == "max_tokens"
    assert completed.response.tool_calls[0].name == "Write"
    assert whole.stop_reason == "max_tokens" and whole.tool_calls


@pytest.mark.slow
async def test_a_tool_result_after_a_loop_is_what_the_model_reads_next(
    tmp_path: Path, server: FakeOpenAIServer, local: OpenAIChatModel
) -> None:
    """The turn asked again is a request like any other: its calls run and the history holds
    them, not the discarded loop."""
    (tmp_path / "a.txt").write_text("alpha\n")
    server.reply_stream(endless_loop_stream(20_000))
    call = json.dumps({"file_path": "a.txt"})
    server.reply_stream(
        [
            chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "Read"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": call}}]}),
            chunk(finish_reason="tool_calls"),
        ]
    )
    server.reply_stream([chunk({"content": "It says alpha."}), chunk(finish_reason="stop")])
    result = await streaming_runtime(tmp_path, local).run("read a.txt")
    assert result.output == "It says alpha."
    assert [type(m).__name__ for m in result.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    assert isinstance(result.messages[2], ToolResultMessage)
    assert all(LOOP not in json.dumps(r.json()["messages"]) for r in server.requests[1:])


# --- a turn that must answer (the loop guard's), as each provider says it ---------------------


def answer_now(*tools: ToolSpec) -> ModelRequest:
    settings = ModelSettings(tool_choice="none")
    return ModelRequest("system", [UserMessage("go")], tools or (WRITE,), settings)


@pytest.mark.parametrize("mode", ["native", "auto"])
async def test_openai_is_sent_tool_choice_none_with_its_tools(
    server: FakeOpenAIServer, mode: str
) -> None:
    server.reply_text("my answer")
    model = OpenAIChatModel("qwen", base_url=server.base_url, tool_calls=mode)  # type: ignore[arg-type]
    try:
        await model.request(answer_now())
    finally:
        await model.aclose()
    body = server.requests[0].json()
    assert body["tool_choice"] == "none" and body["tools"][0]["function"]["name"] == "Write"


async def test_a_schema_turn_that_must_answer_allows_a_reply_only(server: FakeOpenAIServer) -> None:
    server.reply_text('{"reply": "my answer"}')
    model = OpenAIChatModel("qwen", base_url=server.base_url, tool_calls="schema")
    try:
        response = await model.request(answer_now())
    finally:
        await model.aclose()
    assert response.text == "my answer"
    body = server.requests[0].json()
    branches = body["response_format"]["json_schema"]["schema"]["anyOf"]
    assert branches == [
        {
            "type": "object",
            "properties": {"reply": {"type": "string"}},
            "required": ["reply"],
            "additionalProperties": False,
        }
    ]
    assert "No tools are available now" in body["messages"][0]["content"]


async def test_a_text_mode_turn_that_must_answer_is_told_so(server: FakeOpenAIServer) -> None:
    server.reply_text("my answer")
    model = OpenAIChatModel("qwen", base_url=server.base_url, tool_calls="text")
    try:
        await model.request(answer_now())
    finally:
        await model.aclose()
    body = server.requests[0].json()
    assert "tools" not in body and "tool_choice" not in body
    system = body["messages"][0]["content"]
    assert "No tool can be called now" in system and "## Write" not in system


async def test_anthropic_is_sent_tool_choice_none() -> None:
    with FakeAnthropicServer() as claude:
        claude.reply_message([{"type": "text", "text": "my answer"}])
        model = AnthropicModel("claude-test", base_url=claude.base_url, api_key="k" * 20)
        try:
            await model.request(answer_now())
        finally:
            await model.aclose()
        body = claude.requests[0].json()
    assert body["tool_choice"] == {"type": "none"} and body["tools"][0]["name"] == "Write"
