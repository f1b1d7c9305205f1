"""Repair before refusal: the malformed argument JSON and misspelled tool names that small
models send are mended (and the repair recorded) when that can be done safely, through real
runs with FunctionModel, the real openai SDK against a local server, and a real store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rich.console import Console

from fakes.openai_server import FakeOpenAIServer, chunk, usage
from subagents.cli.trace import render_tree
from subagents.cli.ui.blocks import BlockTree
from subagents.definitions.model import AgentDefinition
from subagents.messages import (
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from subagents.models.argument_repair import MAX_REPAIR_CHARS, repair_arguments
from subagents.models.base import ModelRequest, ModelResponse, ModelSettings, ResponseCompleted
from subagents.models.openai import OpenAIChatModel
from subagents.models.tool_arguments import (
    MAX_ARGUMENT_DEPTH,
    parse_tool_arguments,
    refuse_repairs_of_cut_calls,
)
from subagents.runtime.events import EventBus
from subagents.runtime.result import RunResult
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.decorator import tool
from subagents.tools.name_repair import repaired_tool_name
from subagents.tracing.otel import export_task
from subagents.tracing.view import build_trace, trace_to_json

NOTES = "the secret word is PELICAN\n"

# Argument text as small instruct models (1.5B-8B, llama.cpp / Ollama) write it.
MALFORMED: dict[str, str] = {
    "single quotes": "{'file_path': 'notes.txt'}",
    "trailing comma": '{"file_path": "notes.txt",}',
    "unquoted key": '{file_path: "notes.txt"}',
    "missing closing brace": '{"file_path": "notes.txt"',
    "code fence": '```json\n{"file_path": "notes.txt"}\n```',
    "leading prose": 'Sure! I will read the file: {"file_path": "notes.txt"}',
    "prose with an apostrophe": 'Here\'s the call:\n{"file_path": "notes.txt"}',
    "xml wrapper": '<tool_call>{"file_path": "notes.txt"}</tool_call>',
    "extra closing brace": '{"file_path": "notes.txt"}}',
    "trailing comment": '{"file_path": "notes.txt"} // read it',
    "mixed quotes": "{\"file_path\": 'notes.txt'}",
    "python literals": '{"file_path": "notes.txt", "offset": None, "limit": 5, "x": True}',
}
EXPECTED: dict[str, dict[str, Any]] = {
    "python literals": {"file_path": "notes.txt", "offset": None, "limit": 5, "x": True},
}


def call_from_text(name: str, raw: str, call_id: str = "call_1") -> ModelResponse:
    """A turn whose tool call is decoded from raw text exactly as the providers decode it."""
    call = parse_tool_arguments(call_id, name, raw)
    return ModelResponse(text="", tool_calls=(call,), stop_reason="tool_use")


# -- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize("form", list(MALFORMED))
def test_each_malformed_form_is_repaired_and_recorded(form: str) -> None:
    raw = MALFORMED[form]
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    call = parse_tool_arguments("c1", "Read", raw)
    assert call.arguments_error is None
    assert call.arguments == EXPECTED.get(form, {"file_path": "notes.txt"})
    assert call.raw_arguments == raw  # what the model really sent stays on the call
    assert len(call.repairs) == 1
    assert call.repairs[0].startswith("arguments were repaired from invalid JSON (")


@pytest.mark.parametrize(
    "raw",
    [
        "notes.txt",  # no object at all
        '["notes.txt"]',  # valid JSON, but not an object: no repair is tried
        '{"file_path": "a.txt"} {"file_path": "b.txt"}',  # which one? not guessed
        "{}}}",  # nothing in it
        "{" * (MAX_ARGUMENT_DEPTH + 1) + "'a': 1",  # deeper than any tool takes
    ],
)
def test_text_with_no_single_object_in_it_stays_a_tool_error(raw: str) -> None:
    call = parse_tool_arguments("c1", "Read", raw)
    assert call.arguments == {}
    assert call.arguments_error is not None
    assert call.repairs == ()


def test_valid_json_is_not_marked_repaired() -> None:
    call = parse_tool_arguments("c1", "Read", '{"file_path": "notes.txt"}')
    assert call.repairs == () and call.raw_arguments is None


def test_text_longer_than_the_repair_cap_is_refused_as_it_is() -> None:
    raw = "{'content': '" + "x" * MAX_REPAIR_CHARS + "'}"
    assert repair_arguments(raw[:MAX_REPAIR_CHARS], max_depth=MAX_ARGUMENT_DEPTH) is not None
    call = parse_tool_arguments("c1", "Write", raw)
    assert call.arguments_error is not None and "not valid JSON" in call.arguments_error
    assert call.repairs == ()


@pytest.mark.parametrize(
    "raw",
    [
        "{]}" * 7_000,  # many top-level values: json-repair rescans the rest for each
        '{"k":' + "{]}" * 6_000,  # the same inside one object
        "{" * 10_000,
        "[" * 10_000,
    ],
)
def test_pathological_text_is_turned_away_by_its_shape(raw: str) -> None:
    # These took json-repair from 20 s to a minute, or past the recursion limit; the shape
    # check refuses them before the library sees them.
    assert repair_arguments(raw, max_depth=MAX_ARGUMENT_DEPTH) is None
    assert parse_tool_arguments("c1", "Read", raw).arguments_error is not None


def _content_size(value: object) -> int:
    """Characters of text and scalars in a decoded value, each container counting one."""
    if isinstance(value, dict):
        return 1 + sum(_content_size(k) + _content_size(v) for k, v in value.items())
    if isinstance(value, list):
        return 1 + sum(_content_size(item) for item in value)
    if isinstance(value, str):
        return len(value)
    return 1


JSONISH = st.text(alphabet=st.sampled_from(list("{}[]\"':,\\ \n`-.eE0123456789abnTFNul")))


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSONISH, st.text(max_size=300), st.sampled_from(["{}", "", " ", "{'a':1}"])))
def test_repair_never_raises_and_its_output_is_bounded_by_its_input(text: str) -> None:
    result = repair_arguments(text, max_depth=MAX_ARGUMENT_DEPTH)
    assert result is None or (isinstance(result, dict) and result)
    if result is not None:
        assert _content_size(result) <= 2 * len(text) + 2
    call = parse_tool_arguments("c", "T", text)
    if call.arguments_error is not None:
        assert call.arguments == {} and call.repairs == ()
    elif call.repairs:
        assert call.arguments == result and call.raw_arguments == text
    json.dumps(call.arguments)  # whatever came out can be sent back to a provider


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=20), min_size=1))
def test_single_quoted_objects_come_back_as_they_were_meant(arguments: dict[str, str]) -> None:
    """Python's repr of a dict of plain words is what models write; the repair reads it back."""
    plain = {
        k: v
        for k, v in arguments.items()
        if k.isalnum() and (v.isalnum() or not v) and k.isascii() and v.isascii()
    }
    if not plain:
        return
    call = parse_tool_arguments("c", "T", repr(plain))
    assert call.arguments == plain


# -- names --------------------------------------------------------------------------------------

OFFERED = ["Read", "Write", "WebFetch", "Task", "TodoWrite", "mcp__notes__search_notes"]


@pytest.mark.parametrize(
    ("called", "meant"),
    [
        ("read", "Read"),
        ("READ", "Read"),
        ("web_fetch", "WebFetch"),
        ("web-fetch", "WebFetch"),
        ("webFetch", "WebFetch"),
        ("task", "Task"),
        ("todo_write", "TodoWrite"),
        ("mcp__Notes__Search_Notes", "mcp__notes__search_notes"),
    ],
)
def test_a_name_differing_in_case_or_separators_means_the_offered_tool(
    called: str, meant: str
) -> None:
    assert repaired_tool_name(called, OFFERED) == meant


@pytest.mark.parametrize("called", ["Read", "bash", "Bash", "", "  ", "reader", "web fetcher"])
def test_names_that_are_offered_or_match_nothing_are_left_alone(called: str) -> None:
    assert repaired_tool_name(called, OFFERED) is None


def test_an_ambiguous_name_is_not_repaired() -> None:
    assert repaired_tool_name("web_fetch", ["WebFetch", "Web_Fetch"]) is None


# -- whole runs -------------------------------------------------------------------------------


def _run(
    tmp_path: Path, model: Any, *, agents: list[AgentDefinition] | None = None, **kwargs: Any
) -> tuple[RunResult, Path]:
    workspace = tmp_path / "work"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text(NOTES)
    store_path = tmp_path / "state.db"

    async def run() -> RunResult:
        with open_store(store_path) as store:
            runtime = Runtime(
                cwd=workspace,
                agents=agents or [],
                model=model,
                store=store,
                permission_mode="bypassPermissions",
                **kwargs,
            )
            return await runtime.run("find the secret word in notes.txt")

    return asyncio.run(run()), store_path


def _reader(name: str, raw: str) -> FunctionModel:
    """Calls ``name`` with ``raw`` argument text once, then answers with the tool's result."""

    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return call_from_text(name, raw)
        return text_response(f"answer: {results[-1].content}")

    return FunctionModel(turn, name="small-model")


@pytest.mark.parametrize("form", list(MALFORMED)[:-1])  # python literals pass extra arguments
def test_a_run_completes_through_malformed_arguments(tmp_path: Path, form: str) -> None:
    result, store_path = _run(tmp_path, _reader("Read", MALFORMED[form]))
    assert result.status == "completed", result.error
    assert "PELICAN" in result.output
    assert "arguments were repaired from invalid JSON" in result.output  # the model is told
    with open_store(store_path) as store:
        trace = build_trace(store, result.task_id or "")
    (call,) = trace.roots[0].tool_calls
    assert not call.failed
    assert call.repairs and call.repairs[0].startswith("arguments were repaired")
    assert trace_to_json(trace)["tool_calls"][0]["repairs"] == list(call.repairs)
    console = Console(width=200, record=True)
    console.print(render_tree(trace))
    assert "repaired: arguments were repaired from invalid JSON" in console.export_text()


def test_a_misspelled_tool_name_runs_the_offered_tool_and_the_trace_says_so(
    tmp_path: Path,
) -> None:
    result, store_path = _run(tmp_path, _reader("read", '{"file_path": "notes.txt"}'))
    assert result.status == "completed", result.error
    assert "PELICAN" in result.output
    assert "tool name 'read' was read as Read" in result.output
    with open_store(store_path) as store:
        trace = build_trace(store, result.task_id or "")
        messages = [message_from_dict(m) for m in store.messages(trace.roots[0].session_id)]
    (call,) = trace.roots[0].tool_calls
    assert call.name == "Read" and call.repairs == ("tool name 'read' was read as Read",)
    # the history the provider is sent names the real tool
    assistant = next(m for m in messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert assistant.tool_calls[0].name == "Read"
    assert assistant.tool_calls[0].repairs == ("tool name 'read' was read as Read",)


def test_both_repairs_on_one_call_are_recorded(tmp_path: Path) -> None:
    result, store_path = _run(tmp_path, _reader("READ", "{'file_path': 'notes.txt',}"))
    assert result.status == "completed", result.error
    with open_store(store_path) as store:
        (call,) = build_trace(store, result.task_id or "").roots[0].tool_calls
    assert len(call.repairs) == 2
    assert call.repairs[0].startswith("arguments were repaired from invalid JSON")
    assert call.repairs[1] == "tool name 'READ' was read as Read"


def test_no_repair_reaches_a_tool_outside_the_subagents_allowed_set(tmp_path: Path) -> None:
    """A reader subagent without Bash calls ``bash``: the name is NOT read as Bash (which the
    main agent has); the call fails as unknown and nothing runs."""
    reader = AgentDefinition(
        name="notes-reader",
        description="Reads notes.",
        system_prompt="You read notes.",
        tools=["Read"],
    )

    def child(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return call_from_text("bash", '{"command": "touch ran.txt"}')
        if len(results) == 1:
            return call_from_text("BASH", "{'command': 'touch ran.txt'}", call_id="call_2")
        return text_response("\n".join(m.content for m in results))

    def main(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            prompt = (
                '{"description": "read", "prompt": "read notes", "subagent_type": "notes-reader"}'
            )
            return call_from_text("task", prompt)
        return text_response(results[-1].content)

    result, store_path = _run(
        tmp_path,
        FunctionModel(main, name="main"),
        agents=[reader],
        agent_models={"notes-reader": FunctionModel(child, name="child")},
    )
    assert result.status == "completed", result.error
    assert not (tmp_path / "work" / "ran.txt").exists()
    assert result.output.count("is not available to this agent; available: Read") == 2
    with open_store(store_path) as store:
        trace = build_trace(store, result.task_id or "")
    main_session = trace.roots[0]
    (task_call,) = main_session.tool_calls
    assert task_call.name == "Task" and task_call.repairs == ("tool name 'task' was read as Task",)
    (child_session,) = main_session.children
    assert [c.name for c in child_session.tool_calls] == ["bash", "BASH"]
    assert all(c.failed for c in child_session.tool_calls)
    assert [len(c.repairs) for c in child_session.tool_calls] == [0, 1]  # only the JSON


def test_a_secret_in_repaired_arguments_stays_out_of_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "tok-repair-secret-0123456789"
    monkeypatch.setenv("NOTES_API_TOKEN", secret)
    result, store_path = _run(
        tmp_path, _reader("Read", "{'file_path': 'notes.txt', 'token': '" + secret + "'}")
    )
    assert result.status == "completed", result.error
    assert secret.encode() not in store_path.read_bytes()


# -- the real openai SDK against a local server -------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.mark.slow
@pytest.mark.parametrize("form", list(MALFORMED)[:-1])
def test_malformed_arguments_from_an_openai_compatible_server_are_repaired(
    tmp_path: Path, server: FakeOpenAIServer, form: str
) -> None:
    server.reply_tool_calls([("call_a", "read_file", MALFORMED[form])])
    server.reply_text("The word is PELICAN.")
    model = OpenAIChatModel("small-local", base_url=server.base_url, api_key="none")

    @tool
    async def ReadFile(file_path: str) -> str:
        """Read a file of the workspace."""
        return (tmp_path / "work" / file_path).read_text()

    result, store_path = _run(tmp_path, model, tools=[ReadFile])
    assert result.status == "completed", result.error
    second = json.loads(server.requests[1].body)
    sent_back = next(m for m in second["messages"] if m.get("tool_calls"))
    function = sent_back["tool_calls"][0]["function"]
    assert function["name"] == "ReadFile"  # read_file was read as ReadFile
    assert json.loads(function["arguments"]) == {"file_path": "notes.txt"}  # valid JSON now
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert "PELICAN" in tool_message["content"]
    assert "arguments were repaired from invalid JSON" in tool_message["content"]
    with open_store(store_path) as store:
        (call,) = build_trace(store, result.task_id or "").roots[0].tool_calls
    assert len(call.repairs) == 2 and not call.failed


async def test_malformed_arguments_streamed_in_pieces_are_repaired(
    server: FakeOpenAIServer,
) -> None:

    def piece(arguments: str, name: str | None = None) -> dict[str, Any]:
        call: dict[str, Any] = {"index": 0, "function": {"arguments": arguments}}
        if name is not None:
            call.update(id="t0", type="function")
            call["function"]["name"] = name
        return {"tool_calls": [call]}

    server.reply_stream(
        [
            chunk(piece("```json\n{'file_", "Read")),
            chunk(piece("path': 'notes.txt',")),
            chunk(piece("\n```")),
            chunk(finish_reason="tool_calls"),
            chunk(usage_body=usage()),
        ]
    )
    model = OpenAIChatModel("small-local", base_url=server.base_url, api_key="none")
    try:
        request = ModelRequest("Be terse.", [UserMessage("read it")], (), ModelSettings())
        events = [event async for event in model.stream(request)]
    finally:
        await model.aclose()
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    (call,) = final.response.tool_calls
    assert call.arguments == {"file_path": "notes.txt"} and call.arguments_error is None
    assert call.raw_arguments == "```json\n{'file_path': 'notes.txt',\n```"
    assert call.repairs and "repaired from invalid JSON" in call.repairs[0]


def test_repairs_survive_the_store_round_trip_and_plain_calls_stay_as_they_were() -> None:
    repaired = parse_tool_arguments("c1", "Read", MALFORMED["single quotes"])
    plain = parse_tool_arguments("c2", "Read", '{"file_path": "notes.txt"}')
    message = AssistantMessage("", (repaired, plain))
    data = message_to_dict(message)
    assert data["tool_calls"][0]["repairs"] == list(repaired.repairs)
    assert "repairs" not in data["tool_calls"][1]
    assert message_from_dict(json.loads(json.dumps(data))) == message


def test_the_interactive_view_marks_a_repaired_call(tmp_path: Path) -> None:
    tree = BlockTree()
    result, _ = _run(
        tmp_path, _reader("read", "{'file_path': 'notes.txt'}"), events=EventBus([tree])
    )
    assert result.status == "completed", result.error
    main = tree.main
    assert main is not None
    (shown,) = [m.text for m in main.messages if m.kind == "tool"]
    assert shown.startswith('Read {"file_path": "notes.txt"} (repaired: arguments were repaired')
    assert "tool name 'read' was read as Read" in shown


def test_arguments_cut_off_at_the_token_limit_are_not_repaired_into_a_short_write(
    tmp_path: Path,
) -> None:
    """A Write whose JSON ends mid-string because the model hit max_tokens would "repair" into
    a file holding half the content; it is refused instead, and the model writes it again."""

    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            cut = call_from_text("Write", '{"file_path": "out.txt", "content": "first half of')
            return ModelResponse(text="", tool_calls=cut.tool_calls, stop_reason="max_tokens")
        if len(results) == 1:
            whole = '{"file_path": "out.txt", "content": "first half of it, then the rest"}'
            return call_from_text("Write", whole, call_id="call_2")
        return text_response("\n---\n".join(m.content for m in results))

    result, store_path = _run(tmp_path, FunctionModel(turn, name="small-model"))
    assert result.status == "completed", result.error
    refusal = result.output.split("\n---\n")[0]
    assert "cut off at the output token limit" in refusal and "nothing was run" in refusal
    assert (tmp_path / "work" / "out.txt").read_text() == "first half of it, then the rest"
    with open_store(store_path) as store:
        first, second = build_trace(store, result.task_id or "").roots[0].tool_calls
    assert first.failed and first.repairs == ()
    assert not second.failed


def test_a_cut_off_response_keeps_calls_that_needed_no_argument_repair() -> None:
    whole = parse_tool_arguments("c1", "Read", '{"file_path": "notes.txt"}')
    cut = parse_tool_arguments("c2", "Write", '{"file_path": "out.txt", "content": "ab')
    calls = (whole, cut)
    assert refuse_repairs_of_cut_calls(calls, "tool_use") is calls
    kept, refused = refuse_repairs_of_cut_calls(calls, "max_tokens")
    assert kept is whole
    assert refused.arguments == {} and refused.arguments_error is not None
    assert refused.raw_arguments == '{"file_path": "out.txt", "content": "ab'


def test_an_opentelemetry_export_names_the_repairs(tmp_path: Path) -> None:
    result, store_path = _run(tmp_path, _reader("read", "{'file_path': 'notes.txt'}"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with open_store(store_path) as store:
        export_task(store, result.task_id or "", tracer_provider=provider)
    provider.shutdown()
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool Read"]
    assert span.attributes is not None
    repairs = span.attributes["subagents.tool.repairs"]
    assert isinstance(repairs, tuple) and len(repairs) == 2
    assert repairs[1] == "tool name 'read' was read as Read"


def test_a_deny_rule_holds_against_a_repaired_call(tmp_path: Path) -> None:
    """``bash`` read as Bash is checked against Bash's rules like any Bash call."""
    result, _ = _run(
        tmp_path,
        _reader("bash", "{'command': 'touch ran.txt'}"),
        disallowed_tools=["Bash(touch *)"],
    )
    assert result.status == "completed", result.error
    assert "denied" in result.output.lower()
    assert "tool name 'bash' was read as Bash" in result.output
    assert not (tmp_path / "work" / "ran.txt").exists()
