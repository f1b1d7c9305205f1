"""Schema-constrained turns (``[providers.NAME] tool_calls = "schema"``): a run against a local
OpenAI-compatible server that has no tool calls but enforces ``response_format``, driven
through the real openai SDK; and the reading of such answers."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAIServer, chunk
from fakes.schema_server import SchemaEnforcingServer
from subagents.cli.app import app
from subagents.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from subagents.models.base import ModelRequest, ToolSpec
from subagents.models.openai import OpenAIChatModel
from subagents.models.schema_turns import (
    finished_reply,
    history_messages,
    read_turn,
    turn_instructions,
    turn_schema,
)
from subagents.runtime.requests import own_words

MODEL = "local:qwen2.5-1.5b-instruct"
runner = CliRunner()

NOTES_READER = """---
name: notes-reader
description: Reads notes files and reports what they say.
tools: Read
---
You read notes files and report exactly what was asked.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config(base_url: str) -> str:
    return f'[providers.local]\nbase_url = "{base_url}"\ntool_calls = "schema"\nmax_retries = 0\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(root / ".claude" / "agents" / "notes-reader.md", NOTES_READER)
    write(root / "notes.txt", "Shopping: milk.\nThe secret word is PAPAYA.\n")
    return root


@pytest.fixture
def server() -> Iterator[SchemaEnforcingServer]:
    with SchemaEnforcingServer() as fake:
        yield fake


def run(repo: Path, prompt: str) -> tuple[int, str, str]:
    result = runner.invoke(
        app, ["run", prompt, "--cwd", str(repo), "--model", MODEL, "--no-store", "--json"]
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, " ".join(result.stderr.split())


def offered(body: dict[str, Any]) -> list[str]:
    """The tool names a request's schema allows (the reply branch has no ``tool``)."""
    branches = body["response_format"]["json_schema"]["schema"]["anyOf"]
    return sorted(b["properties"]["tool"]["const"] for b in branches if "tool" in b["properties"])


def test_a_delegation_completes_in_schema_mode(repo: Path, server: SchemaEnforcingServer) -> None:
    write(repo / ".subagents" / "config.toml", config(server.base_url))
    task = {
        "description": "find the secret word",
        "prompt": "Read notes.txt and tell me the secret word.",
        "subagent_type": "notes-reader",
    }
    server.answer({"tool": "Task", "arguments": task})
    server.answer({"tool": "Read", "arguments": {"file_path": str(repo / "notes.txt")}})
    server.answer({"reply": "The secret word is PAPAYA."})
    server.answer({"reply": "The word is PAPAYA."})

    code, out, err = run(
        repo, "Use the notes-reader subagent to find the secret word in notes.txt."
    )

    assert code == 0, err
    assert json.loads(out)["output"] == "The word is PAPAYA."
    assert server.refused == [] and server.unused_answers == 0
    main, child, child_again, main_again = (request.json() for request in server.requests)
    assert "Task" in offered(main)
    assert offered(child) == ["Read"]
    assert "# How to answer" in child["messages"][0]["content"]
    # the child's Read really ran: its result came back as a user message, the call as JSON
    assistant, result = child_again["messages"][-2:]
    assert json.loads(assistant["content"])["tool"] == "Read"
    assert result["role"] == "user" and "PAPAYA" in result["content"]
    assert "The secret word is PAPAYA." in main_again["messages"][-1]["content"]


def test_two_delegations_from_one_answer_run_both(
    repo: Path, server: SchemaEnforcingServer
) -> None:
    """One call per answer left a small model no way to start two subagents at once, as a
    user asked (make eval: it gave one agent both files): Task calls may go together."""
    write(repo / ".subagents" / "config.toml", config(server.base_url))
    tasks = [
        {"description": f"read {name}", "prompt": f"Read {name}.", "subagent_type": "notes-reader"}
        for name in ("alpha.txt", "beta.txt")
    ]
    server.answer({"calls": [{"tool": "Task", "arguments": task} for task in tasks]})
    server.answer({"reply": "read"})  # each child, in whichever order they ask
    server.answer({"reply": "read"})
    server.answer({"reply": "both read"})

    code, out, err = run(repo, "Start two notes-reader agents at once: alpha.txt and beta.txt.")

    assert code == 0, err
    assert json.loads(out)["output"] == "both read"
    assert server.refused == [] and server.unused_answers == 0
    main = server.requests[0].json()
    assert "To start several Task calls at once" in main["messages"][0]["content"]
    children = sorted(request.json()["messages"][-1]["content"] for request in server.requests[1:3])
    assert [own_words(child) for child in children] == ["Read alpha.txt.", "Read beta.txt."]
    answer, results = server.requests[3].json()["messages"][-2:]
    assert len(json.loads(answer["content"])["calls"]) == 2  # the history keeps the form
    assert results["content"].count('<tool_response name="Task">') == 2


def test_several_calls_at_once_are_offered_for_delegations_only() -> None:
    task = ToolSpec("Task", "", {"type": "object", "properties": {}}, parallel=True)
    read = ToolSpec("Read", "", {"type": "object", "properties": {}})
    validator = Draft202012Validator(turn_schema([read, task]))
    call = {"tool": "Task", "arguments": {}}
    assert validator.is_valid({"calls": [call, call]})
    assert not validator.is_valid({"calls": [call]})  # one call has its own form
    assert not validator.is_valid({"calls": [call] * 5})
    assert not validator.is_valid({"calls": [{"tool": "Read", "arguments": {}}] * 2})
    assert not any("calls" in b["properties"] for b in turn_schema([read])["anyOf"])


@pytest.fixture
def loose_server() -> Iterator[FakeOpenAIServer]:
    """A server that takes ``response_format`` but does not enforce it."""
    with FakeOpenAIServer() as fake:
        yield fake


def test_an_answer_that_is_not_json_is_a_tool_error_the_model_recovers_from(
    repo: Path, loose_server: FakeOpenAIServer
) -> None:
    write(repo / ".subagents" / "config.toml", config(loose_server.base_url))
    loose_server.reply_text("I should read the file first.")
    loose_server.reply_text('```json\n{"reply": "done"}\n```')

    code, out, err = run(repo, "do it")

    assert code == 0, err
    assert json.loads(out)["output"] == "done"
    second = loose_server.requests[1].json()
    assistant, error = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": "I should read the file first."}
    assert error["role"] == "user"
    assert "your answer was not valid JSON" in error["content"]
    assert '{"reply": "<text>"}' in error["content"]


def test_a_tool_the_agent_does_not_have_is_refused_as_a_tool_error(
    repo: Path, loose_server: FakeOpenAIServer
) -> None:
    write(repo / ".subagents" / "config.toml", config(loose_server.base_url))
    agent = "---\nname: reader\ndescription: reads\ntools: Read\n---\nYou read.\n"
    write(repo / ".claude" / "agents" / "reader.md", agent)
    loose_server.reply_text(json.dumps({"tool": "Bash", "arguments": {"command": "rm -rf /"}}))
    loose_server.reply_text(json.dumps({"reply": "sorry"}))

    result = runner.invoke(
        app,
        ["run", "x", "--agent", "reader", "--cwd", str(repo), "--model", MODEL, "--no-store"],
    )

    assert result.exit_code == 0, result.stderr
    error = loose_server.requests[1].json()["messages"][-1]
    assert error["role"] == "user"
    assert error["content"].startswith('<tool_response name="Bash" status="error">')
    assert "not available to this agent" in error["content"]


async def test_schema_mode_sends_no_tools_and_yields_the_reply_once_read(
    loose_server: FakeOpenAIServer,
) -> None:
    loose_server.reply_stream(
        [chunk({"content": piece}) for piece in ('{"reply', '": "hello', ' there"}')]
        + [chunk(finish_reason="stop")]
    )
    model = OpenAIChatModel("m", base_url=loose_server.base_url, tool_calls="schema")
    read = ToolSpec("Read", "Read a file.", {"type": "object", "properties": {}})

    events = [event async for event in model.stream(ModelRequest("sys", [], tools=[read]))]

    await model.aclose()
    (body,) = (request.json() for request in loose_server.requests)
    assert "tools" not in body and body["stream"] is True
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["messages"][0]["content"].startswith("sys\n\n# How to answer")
    assert "## Read\nRead a file.\nArguments: none, send {}." in body["messages"][0]["content"]
    assert [type(event).__name__ for event in events] == ["TextDelta", "ResponseCompleted"]
    assert events[-1].response.text == "hello there"  # type: ignore[union-attr]


# -- reading answers -----------------------------------------------------------------------------


def test_read_turn_forms() -> None:
    assert read_turn('{"reply": "hi"}') == ("hi", ())
    text, (call,) = read_turn('{"tool": "Read", "arguments": {"file_path": "a"}}')
    assert text == "" and call.name == "Read" and call.arguments == {"file_path": "a"}
    _, calls = read_turn('{"calls": [{"tool": "A", "arguments": {}}, {"tool": "B"}]}')
    assert [c.name for c in calls] == ["A", "B"]
    _, (bad,) = read_turn('{"tool": "Read", "arguments": [1]}')
    assert bad.name == "Read" and bad.arguments_error is not None
    _, (cut,) = read_turn('{"tool": "Read", "argu', truncated=True)
    assert cut.name == "" and "cut off at the token limit" in (cut.arguments_error or "")
    _, (text_arguments,) = read_turn('{"tool": "Read", "arguments": "{\\"file_path\\": \\"a\\"}"}')
    assert text_arguments.arguments == {"file_path": "a"}
    _, (function_form,) = read_turn('{"name": "Read", "parameters": {"file_path": "b"}}')
    assert function_form.name == "Read" and function_form.arguments == {"file_path": "b"}
    _, (nameless,) = read_turn('{"tool": null, "arguments": {}}')
    assert nameless.name == "" and '"tool" must be the name' in (nameless.arguments_error or "")
    assert read_turn('<think>\nthe user wants {x}\n</think>\n{"reply": "x"}') == ("x", ())
    many = {"calls": [{"tool": "Task", "arguments": {}}] * 5}
    _, (refused,) = read_turn(json.dumps(many))
    assert "you made 5 calls at once; make at most 4" in (refused.arguments_error or "")
    # a reply cut at the token limit is a cut reply (judged as any cut answer), even mid-escape
    assert read_turn('{"reply": "caf\\u00', truncated=True) == ("caf", ())
    assert read_turn('{"reply": "done"  \n\n  ', truncated=True) == ("done", ())
    _, (uncut,) = read_turn('{"reply": "caf')
    assert uncut.arguments_error is not None  # not cut: not a reply
    _, (other,) = read_turn('{"answer": 42}')
    assert "not one of the accepted forms" in (other.arguments_error or "")
    # make eval (server, nested): llama-cpp-python's json_object grammar let a raw tab into
    # a reply string, and the reply was refused three times as invalid JSON
    assert read_turn('{"reply": "1\tThe code word is KESTREL-09.\nDone"}') == (
        "1\tThe code word is KESTREL-09.\nDone",
        (),
    )
    hermes = '<tool_call>\n{"name": "Read", "arguments": {"file_path": "a"}}\n</tool_call>'
    _, (written,) = read_turn(hermes, offered=["Read"])  # a server that did not constrain
    assert written.name == "Read" and written.arguments == {"file_path": "a"}
    _, (refused,) = read_turn("I should read the file first.", offered=["Read"])
    assert "not valid JSON" in (refused.arguments_error or "")


@given(st.text(max_size=300))
def test_read_turn_never_raises_and_keeps_what_it_refused(text: str) -> None:
    reply, calls = read_turn(text)
    for call in calls:
        if call.arguments_error is not None and not call.name:
            assert call.raw_arguments is not None
            assert call.raw_arguments.startswith(text[:1000])
    assert reply or calls or text.strip()


def test_read_turn_survives_deep_nesting() -> None:
    _, (call,) = read_turn("[" * 100_000 + "]" * 100_000)
    assert call.arguments_error is not None


def test_history_has_no_tool_messages_and_alternates() -> None:
    call = ToolCall("c1", "Read", {"file_path": "a"})
    refused = read_turn("nonsense")[1][0]
    messages: list[Message] = [
        UserMessage("go"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage("c1", "Read", "contents"),
        AssistantMessage(tool_calls=(refused,)),
        ToolResultMessage("", "", "tool call without a name", is_error=True),
        UserMessage("a note"),
        AssistantMessage("the end"),
    ]

    converted = history_messages("sys", messages)

    assert [m["role"] for m in converted] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert json.loads(converted[2]["content"]) == {"tool": "Read", "arguments": {"file_path": "a"}}
    assert converted[3]["content"] == '<tool_response name="Read">\ncontents\n</tool_response>'
    assert converted[4]["content"] == "nonsense"
    assert converted[5]["content"].endswith("\n\na note")
    assert json.loads(converted[6]["content"]) == {"reply": "the end"}


def test_tools_with_the_same_definition_names_keep_them_apart() -> None:
    def tool(name: str, kind: str) -> ToolSpec:
        return ToolSpec(
            name,
            "",
            {
                "type": "object",
                "properties": {"item": {"$ref": "#/$defs/Item"}},
                "required": ["item"],
                "$defs": {"Item": {"type": kind}},
            },
        )

    schema = turn_schema([tool("A", "string"), tool("B", "integer")])
    validator = Draft202012Validator(schema)

    assert validator.is_valid({"tool": "A", "arguments": {"item": "x"}})
    assert validator.is_valid({"tool": "B", "arguments": {"item": 3}})
    assert not validator.is_valid({"tool": "A", "arguments": {"item": 3}})
    assert not validator.is_valid({"tool": "C", "arguments": {"item": 3}})
    assert validator.is_valid({"reply": "ok"})
    assert not validator.is_valid({"reply": "ok", "tool": "A"})


_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,20}", fullmatch=True)
_tool_messages = st.lists(
    st.one_of(
        st.builds(UserMessage, st.text(max_size=20)),
        st.builds(AssistantMessage, st.text(max_size=20)),
        st.builds(
            lambda name, args: AssistantMessage(tool_calls=(ToolCall("", name, args),)),
            _names,
            st.dictionaries(_names, st.integers(), max_size=3),
        ),
        st.builds(ToolResultMessage, st.text(max_size=5), _names, st.text(max_size=20)),
    ),
    max_size=12,
)


@given(
    st.text(max_size=200).map(str.rstrip),
    st.sampled_from(["", '"', '"}', '"' + " " * 80, " " * 80, "\\n" * 40]),
)
def test_a_cut_reply_is_finished_when_its_string_ended_or_whitespace_ran_on(
    words: str, end: str
) -> None:
    text = '{"reply": "' + json.dumps(words)[1:-1] + end
    assert finished_reply(text) is (end != "")
    assert finished_reply(text.replace('"reply"', '"tool"', 1)) is False


@pytest.mark.slow
@given(_tool_messages)
def test_history_never_has_tool_messages_nor_two_user_messages_in_a_row(
    messages: list[Any],
) -> None:
    converted = history_messages("sys", messages)

    roles = [m["role"] for m in converted]
    assert "tool" not in roles and all("tool_calls" not in m for m in converted)
    assert all(not (a == b == "user") for a, b in itertools.pairwise(roles))
    for message in converted:
        if message["role"] == "assistant":  # every turn reads back as what it was
            _, calls = read_turn(message["content"].split("\n")[0])
            assert all(call.name and call.arguments_error is None for call in calls)


@pytest.mark.slow
@given(st.lists(_names, min_size=1, max_size=5, unique=True), _names)
def test_the_schema_allows_exactly_the_offered_tools(names: list[str], other: str) -> None:
    tools = [ToolSpec(name, "", {"type": "object", "properties": {}}) for name in names]
    validator = Draft202012Validator(turn_schema(tools))

    for name in names:
        assert validator.is_valid({"tool": name, "arguments": {}})
    assert validator.is_valid({"tool": other, "arguments": {}}) == (other in names)


def test_an_unknown_tool_calls_mode_is_a_config_error(tmp_path: Path) -> None:
    from subagents.config import load_config
    from subagents.errors import ConfigError

    root = tmp_path / "repo"
    write(root / ".subagents" / "config.toml", '[providers.local]\ntool_calls = "grammar"\n')
    (root / ".git").mkdir()

    with pytest.raises(ConfigError) as caught:
        load_config(root)

    assert "tool_calls" in str(caught.value)


async def test_a_server_that_refuses_response_format_points_at_models_check(
    loose_server: FakeOpenAIServer,
) -> None:
    from subagents.errors import ModelError

    loose_server.reply_error(400, "Unrecognized request argument supplied: response_format")
    model = OpenAIChatModel(
        "m", base_url=loose_server.base_url, provider="local", tool_calls="schema", max_retries=0
    )

    with pytest.raises(ModelError) as caught:
        await model.request(ModelRequest("sys", [UserMessage("hi")]))

    await model.aclose()
    assert "response_format" in caught.value.message
    assert caught.value.hint is not None
    assert "subagents models check local:m" in caught.value.hint
    assert '[providers.local] tool_calls = "schema"' in caught.value.hint


def test_every_builtin_tool_round_trips_through_the_turn_schema() -> None:
    from fakes.schema_server import minimal_instance
    from subagents.tools.builtin import builtin_tools

    tools = [ToolSpec(t.name, t.description, t.parameters) for t in builtin_tools()]
    schema = turn_schema(tools)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)

    for index, tool in enumerate(tools):
        # the branch of this tool, as a constrained model would fill it
        branch = {**schema, "anyOf": [schema["anyOf"][index]]}
        answer = minimal_instance(branch)
        assert validator.is_valid(answer), tool.name
        _, (call,) = read_turn(json.dumps(answer))
        assert call.name == tool.name and call.arguments_error is None
        assert call.arguments == answer["arguments"]


def test_the_instructions_list_each_argument_in_one_line() -> None:
    from subagents.models.schema_turns import turn_instructions

    grep = ToolSpec(
        "Grep",
        "Search files.",
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "A regular expression."},
                "output_mode": {"enum": ["content", "files_with_matches"]},
                "paths": {"type": "array", "items": {"type": "string"}},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            },
            "required": ["pattern"],
        },
    )

    text = turn_instructions([grep])

    assert text.startswith("# How to answer\nAnswer with exactly one JSON object: ")
    assert "- pattern (string, required): A regular expression." in text
    assert '- output_mode (one of "content", "files_with_matches", optional)' in text
    assert "- paths (array of string, optional)" in text
    assert "- limit (integer or null, optional)" in text


def test_hoisted_definition_names_suit_grammar_converters() -> None:
    # llama.cpp's converter keeps rule names to letters, digits and "-"; a recursive
    # reference whose name holds anything else points at a rule that does not exist
    node = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
    }
    tree = ToolSpec(
        "mcp__x__tree",
        "",
        {
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": node},
        },
    )

    schema = turn_schema([tree, tree])

    assert sorted(schema["$defs"]) == ["t0-Node", "t1-Node"]
    text = json.dumps(schema)
    assert '"#/$defs/t0-Node"' in text and '"#/$defs/t1-Node"' in text
    assert '"#/$defs/Node"' not in text


@pytest.mark.parametrize(
    ("prompt", "offered_at_once"),
    [
        ("Start two notes-reader agents at the same time: alpha.txt and beta.txt.", True),
        ("Read docs/later.txt in the background, then get its result with TaskOutput.", False),
    ],
)
async def test_several_calls_at_once_are_offered_when_the_prompt_asks(
    tmp_path: Path, prompt: str, offered_at_once: bool
) -> None:
    """Offered always, a 1.5B main agent paired a start in the background with a second
    agent told to "get the result" of the first (eval b3): only a prompt that asks for work
    at the same time gets the form."""
    from subagents.definitions.model import AgentDefinition
    from subagents.runtime.runtime import Runtime
    from subagents.testing import FunctionModel, text_response

    (tmp_path / ".git").mkdir()
    reader = AgentDefinition(name="notes-reader", description="Reads files.", system_prompt="x")
    model = FunctionModel(lambda request: text_response("done"), name="llamacpp:small.gguf")
    await Runtime(cwd=tmp_path, model=model, agents=[reader]).run(prompt)
    (task,) = (spec for spec in model.requests[0].tools if spec.name == "Task")
    assert task.parallel is offered_at_once
    instructions = turn_instructions(model.requests[0].tools)
    assert ("To start several Task calls at once" in instructions) is offered_at_once


TYPED_READER = """---
name: typed-reader
description: Reads notes files and reports the secret word as JSON.
tools: Read
outputSchema:
  type: object
  properties:
    word: {type: string}
  required: [word]
  additionalProperties: false
---
You read notes files and report the secret word.
"""


def test_a_typed_agents_reply_is_constrained_to_its_output_schema(
    repo: Path, server: SchemaEnforcingServer
) -> None:
    write(repo / ".subagents" / "config.toml", config(server.base_url))
    write(repo / ".claude" / "agents" / "typed-reader.md", TYPED_READER)
    task = {"description": "find it", "prompt": "Find the word.", "subagent_type": "typed-reader"}
    server.answer({"tool": "Task", "arguments": task})
    server.answer({"reply": {"word": "PAPAYA"}})  # prose would break the schema sent
    server.answer({"reply": "It is PAPAYA."})

    code, out, err = run(repo, "Use the typed-reader subagent to find the secret word.")

    assert code == 0, err
    child = server.requests[1].json()
    reply = next(
        b
        for b in child["response_format"]["json_schema"]["schema"]["anyOf"]
        if "reply" in b["properties"]
    )
    assert reply["properties"]["reply"]["required"] == ["word"]
    assert server.refused == [] and server.unused_answers == 0
    parent_sees = server.requests[-1].json()["messages"][-1]["content"]
    assert '{"word":"PAPAYA"}' in parent_sees
    assert json.loads(out)["output"] == "It is PAPAYA."
