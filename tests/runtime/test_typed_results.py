"""Typed results (runtime/typed_result.py): an agent file's ``outputSchema`` is a JSON Schema its
final answer must match; its parent gets the JSON, one wrong answer is asked again, a second is
refused with what is wrong."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.definitions.parse import parse_agent_text
from subagents.definitions.render import render_markdown
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.runtime.typed_result import typed_answer
from subagents.testing import FunctionModel, text_response, tool_call_response

SCHEMA = {
    "type": "object",
    "properties": {"bugs": {"type": "integer", "minimum": 0}, "files": {"type": "array"}},
    "required": ["bugs", "files"],
    "additionalProperties": False,
}
REVIEWER = AgentDefinition(
    name="reviewer", description="Counts bugs.", system_prompt="You review.", output_schema=SCHEMA
)


def parent(request: ModelRequest) -> ModelResponse:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        task = {"description": "review", "prompt": "count bugs", "subagent_type": "reviewer"}
        return tool_call_response("Task", task)
    return text_response(f"got: {results[0].content}")


def scripted(*answers: str) -> tuple[FunctionModel, list[ModelRequest]]:
    seen: list[ModelRequest] = []
    replies: Iterator[str] = iter(answers)

    def turn(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return text_response(next(replies))

    return FunctionModel(turn, name="scripted:reviewer"), seen


def parse_markdown(text: str, path: Path) -> AgentDefinition:
    return parse_agent_text(text, dialect="markdown", source_path=path)


def runtime(tmp_path: Path, child: FunctionModel) -> Runtime:
    return Runtime(
        cwd=tmp_path,
        agents=[REVIEWER],
        model=FunctionModel(parent, name="scripted:main"),
        agent_models={"reviewer": child},
    )


async def test_a_matching_answer_reaches_the_parent_as_json(tmp_path: Path) -> None:
    child, seen = scripted('```json\n{"bugs": 2, "files": ["a.py"]}\n```')
    result = await runtime(tmp_path, child).run("go")
    (spawn,) = result.subagents
    assert spawn.success and spawn.summary == '{"bugs":2,"files":["a.py"]}'
    assert '{"bugs":2,"files":["a.py"]}' in result.output
    assert '"minimum": 0' in seen[0].system  # the schema is in its prompt


async def test_a_wrong_answer_is_asked_again_once_with_what_is_wrong(tmp_path: Path) -> None:
    child, seen = scripted("There are two bugs.", '{"bugs": 2, "files": []}')
    result = await runtime(tmp_path, child).run("go")
    (spawn,) = result.subagents
    assert spawn.success and spawn.summary == '{"bugs":2,"files":[]}'
    note = seen[1].messages[-1]
    assert isinstance(note, UserMessage) and "it is not JSON" in note.content


async def test_a_second_wrong_answer_is_refused_and_the_parent_told_why(tmp_path: Path) -> None:
    child, seen = scripted('{"bugs": -1, "files": []}', '{"bugs": "two"}')
    result = await runtime(tmp_path, child).run("go")
    (spawn,) = result.subagents
    assert not spawn.success and len(seen) == 2
    assert spawn.error is not None and "outputSchema" in spawn.error
    assert "'files' is a required property" in spawn.error and "at bugs" in spawn.error
    assert "-1 is less than the minimum of 0" in seen[1].messages[-1].content


def test_an_agent_file_gives_its_schema_in_yaml_or_json_and_renders_it_back() -> None:
    yaml_form = (
        "---\nname: r\ndescription: d\noutputSchema:\n  type: object\n"
        "  properties:\n    bugs: {type: integer}\n---\nbody\n"
    )
    json_form = '---\nname: r\ndescription: d\noutputSchema: \'{"type": "object"}\'\n---\nb\n'
    for text, expected in ((yaml_form, "bugs"), (json_form, None)):
        definition = parse_markdown(text, Path("r.md"))
        assert definition.status == "active", definition.validation_errors
        assert definition.output_schema is not None
        assert expected is None or expected in definition.output_schema["properties"]
        again = parse_markdown(render_markdown(definition), Path("r.md"))
        assert again.output_schema == definition.output_schema


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("lots", "must be a JSON Schema"),
        ("{type: objekt}", "not a valid JSON Schema"),
        ("{properties: {a: {minimum: ten}}}", "at properties/a/minimum"),
    ],
)
def test_a_schema_json_schema_cannot_read_is_an_error_saying_where(value: str, said: str) -> None:
    text = f"---\nname: r\ndescription: d\noutputSchema: {value}\n---\nbody\n"
    definition = parse_markdown(text, Path("r.md"))
    assert definition.status == "invalid"
    assert any(said in error for error in definition.validation_errors), (
        definition.validation_errors
    )


@given(st.text(max_size=300))
def test_any_answer_is_matched_or_refused_with_a_reason(answer: str) -> None:
    value, problem = typed_answer(SCHEMA, answer)
    assert (value is None) != (problem is None)
    if value is not None:
        assert json.loads(value)["bugs"] >= 0


def test_an_answer_nested_too_deeply_is_refused_not_a_crash() -> None:
    deep: Callable[[int], str] = lambda n: "[" * n + "]" * n  # noqa: E731
    value, problem = typed_answer(SCHEMA, deep(100_000))
    assert value is None and problem is not None


async def test_a_task_call_gives_its_own_schema_kept_across_a_rebuild(tmp_path: Path) -> None:
    from subagents.store.sqlite import open_store

    calls: list[dict[str, object]] = []

    def asking_parent(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if len(results) == 0:
            task = {"description": "d", "prompt": "p", "subagent_type": "plain", "output_schema": 7}
            return tool_call_response("Task", task)
        if len(results) == 1:
            task = {"description": "d", "prompt": "count bugs", "subagent_type": "plain"}
            calls.append(task)
            return tool_call_response("Task", {**task, "output_schema": SCHEMA})
        return text_response(" | ".join(result.content for result in results))

    child, seen = scripted("Two bugs.", '{"bugs": 2, "files": ["a.py"]}')
    plain = AgentDefinition(name="plain", description="Reviews.", system_prompt="You review.")
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path,
            agents=[plain],
            model=FunctionModel(asking_parent),
            agent_models={"plain": child},
            store=store,
            permission_mode="bypassPermissions",
        )
        result = await runtime.run("go")
        assert result.task_id is not None
        (session,) = [s for s in store.sessions(result.task_id) if s.agent_name == "plain"]
        checkpoint = store.latest_checkpoint(result.task_id, session.session_id)
    refused, answered = result.output.split(" | ")
    assert "output_schema" in refused  # a schema that is no schema is refused, saying why
    assert answered.startswith('{"bugs":2,"files":["a.py"]}')
    assert "JSON Schema" in seen[0].messages[0].content  # its opening asks for the JSON
    assert "does not match" in seen[1].messages[-1].content  # asked again once
    assert checkpoint is not None and checkpoint.state["output_schema"] == SCHEMA
