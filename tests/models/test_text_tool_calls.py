"""Tool calls written as text by small local models: recognised, run, and traced.

The transcripts are shaped like what the models write when the server does not turn their
output into native calls: Qwen 2.5 / Hermes (``<tool_call>``), Mistral (``[TOOL_CALLS]``),
Llama 3.1 (``<|python_tag|>``, ``<function=...>``), Llama 3.2 (a bare JSON object), and the
fenced JSON block many instruct models fall back to.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes.openai_server import FakeOpenAIServer, chunk, usage
from subagents.definitions.model import AgentDefinition
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from subagents.models.base import (
    ModelRequest,
    ModelResponse,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from subagents.models.openai import OpenAIChatModel
from subagents.models.resolve import build_model, tool_call_mode
from subagents.models.settings import ProviderSettings
from subagents.models.text_calls import (
    MAX_SCANNED_CHARS,
    MAX_TEXT_CALLS,
    find_text_tool_calls,
)
from subagents.models.text_tools import (
    TextToolCallModel,
    read_text_tool_calls,
    text_mode_messages,
)
from subagents.models.tool_arguments import refuse_repairs_of_cut_calls
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel

OFFERED = ("Read", "Grep", "Task", "TodoWrite")
READ_NOTES = {"file_path": "notes.txt"}

# (form, answer text, the text kept once the call is taken out)
TRANSCRIPTS: list[tuple[str, str, str]] = [
    (
        "tool_call_tag",
        "I'll read the notes file first.\n<tool_call>\n"
        '{"name": "Read", "arguments": {"file_path": "notes.txt"}}\n</tool_call>',
        "I'll read the notes file first.",
    ),
    (  # Qwen stopped on its end token before writing the closing tag
        "tool_call_tag",
        '<tool_call>\n{"name": "Read", "arguments": {"file_path": "notes.txt"}}\n',
        "",
    ),
    (
        "fenced_json",
        "To find the word I need the file's contents:\n\n```json\n"
        '{\n  "name": "Read",\n  "parameters": {\n    "file_path": "notes.txt"\n  }\n}\n```',
        "To find the word I need the file's contents:",
    ),
    (
        "mistral",
        '[TOOL_CALLS][{"name": "Read", "arguments": {"file_path": "notes.txt"}}]',
        "",
    ),
    ("mistral", '[TOOL_CALLS]Read[ARGS]{"file_path": "notes.txt"}', ""),
    (
        "python_tag",
        '<|python_tag|>{"name": "Read", "parameters": {"file_path": "notes.txt"}}<|eom_id|>',
        "",
    ),
    (
        "bare_json",
        '{"type": "function", "name": "Read", "parameters": {"file_path": "notes.txt"}}',
        "",
    ),
    (
        "function_tag",
        'Reading it now. <function=Read>{"file_path": "notes.txt"}</function>',
        "Reading it now.",
    ),
    ("pythonic", '[Read(file_path="notes.txt")]', ""),  # Llama 3.2 1B/3B
    ("pythonic", 'Let me look.\n```tool_code\nRead(file_path="notes.txt")\n```', "Let me look."),
]


@pytest.mark.parametrize(("form", "answer", "kept"), TRANSCRIPTS)
def test_each_form_becomes_a_call_to_the_offered_tool(form: str, answer: str, kept: str) -> None:
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None
    assert [(c.name, c.arguments) for c in found.calls] == [("Read", READ_NOTES)]
    assert found.formats == (form,) and found.text == kept
    assert found.calls[0].id.startswith("call_text_") and found.calls[0].arguments_error is None


def test_several_calls_in_one_answer_keep_their_order_and_get_distinct_ids() -> None:
    answer = (
        '<tool_call>\n{"name": "Read", "arguments": {"file_path": "a.txt"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "Grep", "arguments": {"pattern": "secret"}}\n</tool_call>'
    )
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None
    assert [c.name for c in found.calls] == ["Read", "Grep"]
    assert len({c.id for c in found.calls}) == 2


def test_llama_separates_calls_with_semicolons_and_nests_them_under_function() -> None:
    answer = (
        '<|python_tag|>{"name": "Read", "parameters": {"file_path": "a"}}; '
        '{"type": "function", "function": {"name": "Grep", "arguments": {"pattern": "b"}}}'
    )
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None
    assert [(c.name, c.arguments) for c in found.calls] == [
        ("Read", {"file_path": "a"}),
        ("Grep", {"pattern": "b"}),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        '[Read(__import__("os").system("id"))]',
        '[Read(file_path=open("/etc/passwd").read())]',
        "[Read(file_path={1, 2})]",
        '[Read(file_path=float("nan"))]',
        "[Bash(command='ls')]",
        "[" + "(" * 300 + ")]",
        "[Read(x=" + "1+" * 30_000 + "1)]",
    ],
)
def test_python_style_calls_take_literal_json_values_only_and_run_nothing(answer: str) -> None:
    found = find_text_tool_calls(answer, OFFERED)
    assert found is None or found.calls == ()


def test_python_style_calls_may_be_several_and_tuples_become_lists() -> None:
    found = find_text_tool_calls(
        '[Read(file_path="a"), Grep(pattern="x", glob=("*.py",))]', OFFERED
    )
    assert found is not None
    assert [(c.name, c.arguments) for c in found.calls] == [
        ("Read", {"file_path": "a"}),
        ("Grep", {"pattern": "x", "glob": ["*.py"]}),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        '```json\n{"tool": "Read", "args": {"file_path": "notes.txt"}}\n```',
        '<tool_call>{"tool_name": "Read", "input": {"file_path": "notes.txt"}}</tool_call>',
    ],
)
def test_other_keys_models_use_for_the_name_and_arguments_are_read(answer: str) -> None:
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None and found.calls[0].arguments == READ_NOTES


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "Read", "tool": "Grep", "arguments": {}}',
        '{"name": "Read", "arguments": {}, "parameters": {}}',
        '{"name": "Read"}',
        '{"type": "object", "name": "Read", "arguments": {}}',
    ],
)
def test_objects_with_two_names_or_no_arguments_are_not_calls(answer: str) -> None:
    assert find_text_tool_calls(answer, OFFERED) is None


def test_arguments_written_as_json_text_are_decoded() -> None:
    answer = '{"name": "Read", "arguments": "{\\"file_path\\": \\"notes.txt\\"}"}'
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None and found.calls[0].arguments == READ_NOTES


def test_a_name_differing_in_case_or_underscores_maps_to_the_offered_tool() -> None:
    found = find_text_tool_calls(
        '<tool_call>{"name": "todo_write", "arguments": {"todos": []}}</tool_call>', OFFERED
    )
    assert found is not None
    assert found.calls[0].name == "TodoWrite" and found.renamed == (("todo_write", "TodoWrite"),)


@pytest.mark.parametrize(
    "answer",
    [
        'The config is ```json\n{"name": "Alice", "age": 3}\n``` as you asked.',
        'Use {"name": "Read", "arguments": {"file_path": "x"}} to read a file.',
        '```json\n{"name": "Read", "arguments": {"file_path": "x"}, "note": "an example"}\n```',
        '```python\n{"name": "Read", "arguments": {"file_path": "x"}}\n```',
        '```python\nRead(file_path="x")\n```',
        '<tool_call>{"name": "Bash", "arguments": {"command": "rm -rf ~"}}</tool_call>',
        '[TOOL_CALLS][{"name": "WebFetch", "arguments": {"url": "http://x"}}]',
        "The secret word is PINEAPPLE.",
    ],
)
def test_prose_and_calls_to_tools_not_offered_are_not_calls(answer: str) -> None:
    found = find_text_tool_calls(answer, OFFERED)
    assert found is None or (found.calls == () and found.text == answer)


def test_a_tag_naming_a_tool_not_offered_stays_the_answer_and_the_trace_says_why() -> None:
    answer = '<tool_call>\n{"name": "notes_reader", "arguments": {"prompt": "x"}}\n</tool_call>'
    response = read_text_tool_calls(ModelResponse(text=answer), [_spec("Read"), _spec("Task")])
    assert response.tool_calls == () and response.text == answer
    assert response.tool_calls_from_text == {
        "ignored": "a tool_call_tag block that is not a call to an offered tool ('notes_reader')"
    }


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "Read", "arguments": {"file_path": "notes.txt"}',  # no closing brace
        "{'name': 'read', 'arguments': {'file_path': 'notes.txt'}}",  # single quotes
        '{"name": "Read", "arguments": {"file_path": "notes.txt",},}',  # trailing commas
    ],
)
def test_invalid_json_in_a_call_to_an_offered_tool_is_repaired_and_said(body: str) -> None:
    found = find_text_tool_calls(f"<tool_call>\n{body}\n</tool_call>", OFFERED)
    assert found is not None
    (call,) = found.calls
    assert call.name == "Read" and call.arguments == {"file_path": "notes.txt"}
    assert call.arguments_error is None and call.raw_arguments == f"\n{body}\n"
    assert call.repairs == (
        "arguments were repaired from invalid JSON (a tool call written as text)",
    )


def test_a_repaired_text_call_cut_off_at_the_token_limit_is_refused() -> None:
    found = find_text_tool_calls(
        '<tool_call>{"name": "Read", "arguments": {"file_path": "no', OFFERED
    )
    assert found is not None
    (cut,) = refuse_repairs_of_cut_calls(found.calls, "max_tokens")
    assert cut.arguments == {} and cut.arguments_error is not None
    assert "cut off at the output token limit" in cut.arguments_error


def test_an_unreadable_call_to_an_offered_tool_becomes_a_tool_error_to_correct() -> None:
    answer = '<tool_call>\n{"name": "Read", "arguments": [1, 2\n</tool_call>'
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None
    (call,) = found.calls
    assert call.name == "Read" and call.arguments == {}
    assert call.arguments_error is not None and "not valid JSON" in call.arguments_error
    assert call.raw_arguments is not None and "[1, 2" in call.raw_arguments


def test_text_mode_shows_a_refused_call_as_the_model_wrote_it() -> None:
    broken = ToolCall("c1", "Read", raw_arguments='{"file_path": "a"', arguments_error="bad")
    history = text_mode_messages(
        [
            AssistantMessage("", (broken,)),
            ToolResultMessage("c1", "Read", "Error: bad", is_error=True),
        ]
    )
    said, answered = history
    assert isinstance(said, AssistantMessage) and not said.tool_calls
    assert json.loads(said.content.split("\n")[1])["arguments"] == '{"file_path": "a"'
    assert answered == UserMessage(
        '<tool_response name="Read" status="error">\nError: bad\n</tool_response>'
    )


def test_calls_mused_about_while_thinking_are_not_made() -> None:
    thinking = (
        '<think>\nMaybe <tool_call>{"name": "Grep", "arguments": {"pattern": "x"}}'
        "</tool_call>? No, reading is simpler.\n</think>"
    )
    answer = f'{thinking}\n\n<tool_call>{{"name": "Read", "arguments": {{"file_path": "a"}}}}'
    found = find_text_tool_calls(answer, OFFERED)
    assert found is not None and [c.name for c in found.calls] == ["Read"]
    assert found.text == thinking
    assert find_text_tool_calls(thinking, OFFERED) is None


def test_a_runaway_answer_with_too_many_calls_runs_none_and_says_so() -> None:
    block = '<tool_call>{"name": "Read", "arguments": {"file_path": "a"}}</tool_call>\n'
    most = find_text_tool_calls(block * MAX_TEXT_CALLS, OFFERED)
    assert most is not None and len(most.calls) == MAX_TEXT_CALLS
    found = find_text_tool_calls(block * (MAX_TEXT_CALLS + 1), OFFERED)
    assert found is not None and found.calls == ()
    assert found.ignored == f"{MAX_TEXT_CALLS + 1} calls in one answer, more than the 32 taken"


def test_an_answer_too_long_to_scan_stays_an_answer_and_says_why() -> None:
    text = "x" * MAX_SCANNED_CHARS + '<tool_call>{"name": "Read", "arguments": {}}</tool_call>'
    response = read_text_tool_calls(ModelResponse(text=text), [_spec("Read")])
    assert response.tool_calls == () and response.text == text
    assert response.tool_calls_from_text is not None
    assert "longer than" in response.tool_calls_from_text["not_scanned"]


def test_adversarial_markers_and_nesting_are_answered_not_raised() -> None:
    offered = ["Read"]
    for text in (
        "<tool_call>" * 5_000,
        "[TOOL_CALLS]" + "[" * 50_000,
        "```\n" * 10_000,
        "<function=" * 8_000,
        '<|python_tag|>{"name": "Read", "parameters": ' + "[" * 40_000,
        "{" * 60_000,
    ):
        found = find_text_tool_calls(text, offered)
        assert found is None or found.calls == ()


_FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "```json\n",
        "```",
        "[TOOL_CALLS]",
        "[ARGS]",
        "<|python_tag|>",
        "<function=",
        "</function>",
        ">",
        ";",
        '{"name": "Read", "arguments": {"file_path": "a"}}',
        '{"name": "Bash", "arguments": {"command": "ls"}}',
        '{"type": "function", "name": "grep", "parameters": {}}',
        '{"name": "Read"',
        "[",
        "]",
        "{",
        "}",
        '"',
        "Bash",
        "Read",
        " prose ",
        "\n",
        "```tool_code\n",
        'Read(file_path="a")',
        "[Read(",
        "Bash(command='x')",
        ")]",
    ]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_FRAGMENTS, st.text(max_size=12)), max_size=30).map("".join),
    st.lists(st.sampled_from(["Read", "Grep", "Task", "read_file"]), unique=True, max_size=3),
)
def test_parsing_never_raises_nor_calls_a_tool_not_offered(text: str, offered: list[str]) -> None:
    found = find_text_tool_calls(text, offered)
    if found is not None:
        assert bool(found.calls) != bool(found.ignored)
        assert all(call.name in offered for call in found.calls)
        assert all(isinstance(call.arguments, dict) for call in found.calls)
        assert len(found.text) <= len(text)


# -- through a session ------------------------------------------------------------------------


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name, f"The {name} tool.", {"type": "object", "properties": {}})


def reader_writing(answer: str) -> FunctionModel:
    """A small model that writes ``answer`` (a call as text), then reports the tool result."""

    def turn(request: ModelRequest) -> str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return answer
        return f"The secret word is {results[-1].content.split()[-1]}"

    return FunctionModel(turn, name="local:qwen2.5-1.5b-instruct")


@pytest.mark.parametrize(("form", "answer", "kept"), TRANSCRIPTS)
async def test_a_session_runs_the_call_written_as_text_and_traces_it(
    tmp_path: Path, form: str, answer: str, kept: str
) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is PINEAPPLE\n")
    model = TextToolCallModel(reader_writing(answer))
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(cwd=tmp_path, model=model, store=store)
        result = await runtime.run("Find the secret word in notes.txt.")
        assert result.status == "completed"
        assert result.output == "The secret word is PINEAPPLE"
        assistant = next(m for m in result.messages if isinstance(m, AssistantMessage))
        assert assistant.content == kept and [c.name for c in assistant.tool_calls] == ["Read"]
        assert result.task_id is not None
        traces = store.traces(result.task_id)
    model_call = next(t for t in traces if t.step_name == "model_call")
    assert model_call.data["tool_calls_from_text"] == {"formats": [form]}
    assert model_call.message == "1 tool calls written as text"
    assert any(t.kind == "tool_call" and t.step_name == "Read" for t in traces)


async def test_a_delegation_written_as_text_reaches_the_subagent(tmp_path: Path) -> None:
    """The issue's run: a small main model asks for the notes-reader in Hermes form."""
    (tmp_path / "notes.txt").write_text("the secret word is PINEAPPLE\n")
    task_call = {
        "name": "Task",
        "arguments": {
            "subagent_type": "notes-reader",
            "description": "find the word",
            "prompt": "Find the secret word in notes.txt.",
        },
    }
    main = reader_writing(f"<tool_call>\n{json.dumps(task_call)}\n</tool_call>")
    child = reader_writing("```json\n" + json.dumps({"name": "Read", "arguments": READ_NOTES}))
    child_answer = child._function  # the child ends its fence on the next line, as they do

    def child_turn(request: ModelRequest) -> str:
        answer = child_answer(request)
        assert isinstance(answer, str)  # reader_writing's turns answer text
        return answer + "\n```" if answer.startswith("```") else answer

    reader = AgentDefinition(
        name="notes-reader", description="Reads notes.", system_prompt="Read notes.", tools=["Read"]
    )
    runtime = Runtime(
        cwd=tmp_path,
        agents=[reader],
        model=TextToolCallModel(main),
        agent_models={"notes-reader": TextToolCallModel(FunctionModel(child_turn))},
    )
    result = await runtime.run("Use the notes-reader subagent to find the secret word.")
    assert result.status == "completed"
    task_result = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert task_result.tool_name == "Task" and "PINEAPPLE" in task_result.content


async def test_an_unreadable_call_gets_a_tool_error_and_the_model_corrects_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is PINEAPPLE\n")
    broken = '<tool_call>\n{"name": "Read", "arguments": ["notes.txt"\n</tool_call>'  # no repair
    fixed = '<tool_call>\n{"name": "Read", "arguments": {"file_path": "notes.txt"}}\n</tool_call>'

    def turn(request: ModelRequest) -> str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return broken
        if results[-1].is_error:
            return fixed
        return f"The secret word is {results[-1].content.split()[-1]}"

    runtime = Runtime(cwd=tmp_path, model=TextToolCallModel(FunctionModel(turn)))
    result = await runtime.run("Find the secret word in notes.txt.")
    assert result.status == "completed" and result.output == "The secret word is PINEAPPLE"
    first = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert first.is_error and "<tool_call>" in first.content


async def test_text_mode_sends_no_tools_and_shows_calls_and_results_as_text(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is PINEAPPLE\n")

    def turn(request: ModelRequest) -> str:
        """A model that sees results only as text, as a server without tools shows them."""
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content.startswith("<tool_response"):
            return f"The secret word is {last.content.split()[-2]}"
        return TRANSCRIPTS[0][1]

    inner = FunctionModel(turn)
    runtime = Runtime(cwd=tmp_path, model=TextToolCallModel(inner, "text"))
    result = await runtime.run("Find the secret word in notes.txt.")
    assert result.status == "completed" and result.output == "The secret word is PINEAPPLE"
    first, second = inner.requests
    assert first.tools == () and second.tools == ()
    assert "## Read" in first.system and "<tool_call>" in first.system
    assert not any(isinstance(m, ToolResultMessage) for m in second.messages)
    assert not any(isinstance(m, AssistantMessage) and m.tool_calls for m in second.messages)
    said, answered = second.messages[-2:]
    assert isinstance(said, AssistantMessage) and '"name": "Read"' in said.content
    assert isinstance(answered, UserMessage)
    assert answered.content.startswith('<tool_response name="Read">')
    assert "PINEAPPLE" in answered.content


async def test_the_wrapper_streams_the_text_and_ends_with_the_calls() -> None:
    inner = FunctionModel(lambda request: TRANSCRIPTS[0][1])
    model = TextToolCallModel(inner, "text")
    request = ModelRequest("sys", [UserMessage("find the word")], [READ_SPEC])
    events = [event async for event in model.stream(request)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == TRANSCRIPTS[0][1]
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert [(c.name, c.arguments) for c in final.response.tool_calls] == [("Read", READ_NOTES)]
    assert inner.requests[0].tools == () and "## Read" in inner.requests[0].system


def test_a_response_with_native_calls_or_no_tools_offered_is_left_alone() -> None:
    written = '<tool_call>{"name": "Read", "arguments": {}}</tool_call>'
    native = ModelResponse(text=written, tool_calls=(ToolCall("c1", "Grep", {"pattern": "x"}),))
    assert read_text_tool_calls(native, [_spec("Read"), _spec("Grep")]) is native
    plain = ModelResponse(text=written)
    assert read_text_tool_calls(plain, []) is plain  # no tools offered: nothing to call
    prose = ModelResponse(text="The JSON form is ```json\n{}\n```")
    assert read_text_tool_calls(prose, [_spec("Read")]) is prose


# -- through the openai SDK against a local server --------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def local_model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    settings = _local(server, tool_calls="auto")  # a local server's default is schema
    model = build_model("local:qwen2.5", providers={"local": settings}, env={})
    assert isinstance(model, OpenAIChatModel) and model.tool_calls == "auto"
    yield model
    await model.aclose()


def _local(server: FakeOpenAIServer, **settings: Any) -> ProviderSettings:
    return ProviderSettings(base_url=server.base_url, timeout_seconds=5, max_retries=0, **settings)


READ_SPEC = ToolSpec(
    "Read",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


@pytest.mark.parametrize(("form", "answer", "kept"), TRANSCRIPTS)
async def test_auto_mode_reads_each_form_from_a_compatible_server(
    server: FakeOpenAIServer, local_model: OpenAIChatModel, form: str, answer: str, kept: str
) -> None:
    server.reply_text(answer)
    request = ModelRequest("sys", [UserMessage("find the word")], [READ_SPEC])
    response = await local_model.request(request)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("Read", READ_NOTES)]
    assert response.text == kept and response.stop_reason == "tool_use"
    assert response.tool_calls_from_text == {"formats": [form]}
    assert server.requests[0].json()["tools"][0]["function"]["name"] == "Read"


async def test_auto_mode_reads_a_streamed_call_split_across_chunks(
    server: FakeOpenAIServer, local_model: OpenAIChatModel
) -> None:
    pieces = ["<tool", '_call>\n{"name": "Re', 'ad", "arguments": {"file_path": ', '"notes.txt"}}']
    frames = [chunk({"content": piece}) for piece in pieces]
    server.reply_stream([*frames, chunk(finish_reason="stop"), chunk(usage_body=usage())])
    request = ModelRequest("sys", [UserMessage("find the word")], [READ_SPEC])
    events: list[StreamEvent] = [event async for event in local_model.stream(request)]
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == "".join(pieces)
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert [(c.name, c.arguments) for c in final.response.tool_calls] == [("Read", READ_NOTES)]


async def test_native_mode_leaves_text_alone(server: FakeOpenAIServer) -> None:
    model = build_model(
        "local:qwen2.5", providers={"local": _local(server, tool_calls="native")}, env={}
    )
    server.reply_text(TRANSCRIPTS[0][1])
    request = ModelRequest("sys", [UserMessage("find the word")], [READ_SPEC])
    response = await model.request(request)
    assert response.tool_calls == () and response.text == TRANSCRIPTS[0][1]


async def test_a_run_in_text_mode_through_the_sdk_sends_no_tools(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is PINEAPPLE\n")
    model = build_model(
        "local:qwen2.5", providers={"local": _local(server, tool_calls="text")}, env={}
    )
    server.reply_text(TRANSCRIPTS[0][1])
    server.reply_text("The secret word is PINEAPPLE.")
    result = await Runtime(cwd=tmp_path, model=model).run("Find the secret word in notes.txt.")
    assert result.status == "completed" and result.output == "The secret word is PINEAPPLE."
    first, second = (recorded.json() for recorded in server.requests)
    assert "tools" not in first and "tools" not in second
    system = first["messages"][0]
    assert system["role"] == "system" and "## Read" in system["content"]
    assert "<tool_call>" in system["content"]
    roles = [message["role"] for message in second["messages"]]
    assert "tool" not in roles and roles[-2:] == ["assistant", "user"]
    assert "<tool_call>" in second["messages"][-2]["content"]
    assert "PINEAPPLE" in second["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("provider", "settings", "mode"),
    [
        ("openai", None, "native"),
        ("anthropic", None, "native"),
        ("openai", ProviderSettings(base_url="http://127.0.0.1:1/v1"), "schema"),
        ("ollama", None, "schema"),
        ("local", ProviderSettings(base_url="http://127.0.0.1:1/v1"), "schema"),
        ("local", ProviderSettings(base_url="https://models.example.com/v1"), "auto"),
        ("anthropic", ProviderSettings(base_url="http://127.0.0.1:1"), "auto"),
        ("local", ProviderSettings(base_url="http://x/v1", tool_calls="native"), "native"),
        ("anthropic", ProviderSettings(tool_calls="text"), "text"),
    ],
)
def test_the_mode_is_native_on_the_hosted_apis_schema_on_local_servers_else_auto(
    provider: str, settings: ProviderSettings | None, mode: str
) -> None:
    assert tool_call_mode(provider, settings) == mode


def test_an_anthropic_model_set_to_text_mode_is_wrapped() -> None:
    model = build_model(
        "anthropic:claude-sonnet-4-5",
        providers={"anthropic": ProviderSettings(tool_calls="text")},
        env={"ANTHROPIC_API_KEY": "sk-ant-test"},
    )
    assert isinstance(model, TextToolCallModel) and model.mode == "text"
    assert model.name == "anthropic:claude-sonnet-4-5"


# -- through the CLI, set in config.toml --------------------------------------------------------


def test_the_issue_run_in_text_mode_from_config_reaches_the_subagent(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """``subagents run`` with ``tool_calls = "text"``: the 1.5B model writes every call as
    text, the server sees no ``tools``, and the delegation completes."""
    from typer.testing import CliRunner

    from subagents.cli.app import app

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".subagents").mkdir()
    (repo / ".subagents" / "config.toml").write_text(
        f'[providers.local]\nbase_url = "{server.base_url}"\nmax_retries = 0\ntool_calls = "text"\n'
    )
    (repo / "notes.txt").write_text("the secret word is PINEAPPLE\n")
    task = {
        "name": "Task",
        "arguments": {
            "subagent_type": "notes-reader",
            "description": "find the word",
            "prompt": "Find the secret word in notes.txt.",
        },
    }
    for answer in (
        f"<tool_call>\n{json.dumps(task)}\n</tool_call>",
        TRANSCRIPTS[0][1],
        "The word is PINEAPPLE.",
        "The secret word is PINEAPPLE.",
    ):  # the CLI streams: each answer comes in two chunks
        half = len(answer) // 2
        pieces = [chunk({"content": answer[:half]}), chunk({"content": answer[half:]})]
        server.reply_stream([*pieces, chunk(finish_reason="stop"), chunk(usage_body=usage())])
    reader = {"description": "Reads notes", "prompt": "You read notes.", "tools": ["Read"]}
    result = CliRunner().invoke(
        app,
        [
            "run",
            "Use the notes-reader subagent to find the secret word in notes.txt.",
            "--cwd",
            str(repo),
            "--model",
            "local:qwen2.5-1.5b-instruct",
            "--agents",
            json.dumps({"notes-reader": reader}),
            "--no-store",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "The secret word is PINEAPPLE." in result.stdout
    bodies = [recorded.json() for recorded in server.requests]
    assert len(bodies) == 4 and not any("tools" in body for body in bodies)
    assert "## Task" in bodies[0]["messages"][0]["content"]
    child_system = bodies[1]["messages"][0]["content"]
    assert "## Read" in child_system and "## Task" not in child_system
    assert "PINEAPPLE" in bodies[2]["messages"][-1]["content"]  # the child saw the file
    assert "The word is PINEAPPLE." in bodies[3]["messages"][-1]["content"]  # the Task result


def test_a_bad_tool_calls_value_in_config_names_the_key_and_the_choices(tmp_path: Path) -> None:
    from subagents.config import load_config
    from subagents.errors import ConfigError

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".subagents").mkdir()
    (project / ".subagents" / "config.toml").write_text(
        '[providers.local]\nbase_url = "http://127.0.0.1:1/v1"\ntool_calls = "json"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(project, home=tmp_path / "home")
    message = str(caught.value)
    assert "providers.local.tool_calls" in message and "'text'" in message
