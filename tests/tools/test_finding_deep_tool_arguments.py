"""Finding 3: tool arguments nested 800 deep raised RecursionError out of ``Runtime.run``.

Arguments deeper than the limit, however they arrive (JSON text from a provider, or a ToolCall
built directly, as a FunctionModel can), become a tool error the model reads and can correct.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.models.tool_arguments import (
    MAX_ARGUMENT_DEPTH,
    MAX_RAW_ARGUMENTS_CHARS,
    arguments_text,
    bound_tool_call,
    bound_tool_calls,
    parse_tool_arguments,
    tool_call_from_object,
)
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore
from subagents.testing import FunctionModel


def nested_dict(depth: int) -> dict[str, Any]:
    """``{"k": {"k": ... {}}}`` with ``depth`` objects, built without recursion."""
    root: dict[str, Any] = {}
    current = root
    for _ in range(depth - 1):
        child: dict[str, Any] = {}
        current["k"] = child
        current = child
    return root


def nested_text(depth: int) -> str:
    return '{"file_path": "notes.txt", "extra": ' + "[" * depth + "]" * depth + "}"


def deep_call(depth: int, how: str) -> ToolCall:
    if how == "text":  # what a provider hands over: the raw JSON text
        return parse_tool_arguments("call_deep", "Read", nested_text(depth))
    return ToolCall("call_deep", "Read", {"file_path": "notes.txt", "extra": nested_dict(depth)})


@pytest.mark.slow
@pytest.mark.parametrize("how", ["text", "object"])
@pytest.mark.parametrize("depth", [800, 10_000, 100_000])
async def test_finding_3_deep_arguments_become_a_tool_error_and_the_run_completes(
    tmp_path: Path, depth: int, how: str
) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    seen: list[ToolResultMessage] = []

    def turn(request: ModelRequest) -> ModelResponse | str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return ModelResponse(text="", tool_calls=(deep_call(depth, how),))
        seen.extend(results)
        return "I will send flatter arguments next time."

    with SQLiteStore(tmp_path / "state.db") as store:
        runtime = Runtime(cwd=tmp_path, model=FunctionModel(turn), store=store)
        result = await runtime.run("read the notes")
        assert result.status == "completed", result.error
        assert result.output == "I will send flatter arguments next time."
        assert result.task_id is not None
        assert store.get_task(result.task_id).status == "completed"
        stored = [m for s in store.sessions(result.task_id) for m in store.messages(s.session_id)]

    (error,) = seen
    assert error.is_error
    assert f"the limit is {MAX_ARGUMENT_DEPTH}: flatten them" in error.content
    assert "levels deep" in error.content
    # The store holds the refused call with bounded text, not the deep value.
    assert len(json.dumps(stored)) < 4 * MAX_RAW_ARGUMENTS_CHARS


def test_parse_reports_the_depth_of_text_too_deep_for_json() -> None:
    call = parse_tool_arguments("c", "Read", nested_text(100_000))
    assert call.arguments == {}
    assert call.arguments_error is not None
    assert "nested 100,001 levels deep; the limit is 64" in call.arguments_error
    assert call.raw_arguments is not None
    assert len(call.raw_arguments) <= MAX_RAW_ARGUMENTS_CHARS + 100
    assert call.raw_arguments.startswith('{"file_path"')
    assert arguments_text(call) == call.raw_arguments


def test_arguments_at_the_limit_pass_and_one_more_level_does_not() -> None:
    at_limit = tool_call_from_object("c", "T", nested_dict(MAX_ARGUMENT_DEPTH))
    assert at_limit.arguments_error is None
    over = tool_call_from_object("c", "T", nested_dict(MAX_ARGUMENT_DEPTH + 1))
    assert over.arguments == {}
    assert over.arguments_error is not None
    assert f"nested {MAX_ARGUMENT_DEPTH + 1} levels deep" in over.arguments_error
    text = json.dumps(nested_dict(MAX_ARGUMENT_DEPTH + 1))
    assert parse_tool_arguments("c", "T", text).arguments_error == over.arguments_error


def test_bound_tool_call_leaves_good_calls_untouched() -> None:
    good = ToolCall("c", "Write", {"file_path": "a", "content": "x" * 100_000})
    assert bound_tool_call(good) is good
    calls = (good, ToolCall("d", "Read", {"file_path": "b"}))
    assert bound_tool_calls(calls) is calls


def test_a_cyclic_arguments_object_is_refused() -> None:
    cyclic: dict[str, Any] = {"file_path": "a"}
    cyclic["self"] = cyclic
    bounded = bound_tool_call(ToolCall("c", "Read", cyclic))
    assert bounded.arguments == {}
    assert bounded.arguments_error is not None and "cycle" in bounded.arguments_error
    assert bounded.raw_arguments is not None
    assert len(bounded.raw_arguments) <= MAX_RAW_ARGUMENTS_CHARS + 100


def dag(levels: int) -> Any:
    """``levels`` nested lists, each holding the next one twice: 2**levels paths."""
    layer: Any = ["x"]
    for _ in range(levels - 1):
        layer = [layer, layer]
    return layer


def test_shared_sub_objects_are_measured_once() -> None:
    shared: dict[str, Any] = {"leaf": [1, 2]}
    assert bound_tool_call(ToolCall("c", "T", {"a": shared, "b": shared})).arguments_error is None
    # 2**60 paths: walking them would never end; measuring each list once is instant.
    assert bound_tool_call(ToolCall("c", "T", {"v": dag(60)})).arguments_error is None
    refused = bound_tool_call(ToolCall("c", "T", {"v": dag(70)}))
    assert refused.arguments_error is not None
    assert "nested 71 levels deep" in refused.arguments_error


def test_the_raw_text_kept_is_bounded() -> None:
    huge = "not json " * 10_000
    call = parse_tool_arguments("c", "Write", huge)
    assert call.arguments_error is not None and "not valid JSON" in call.arguments_error
    assert call.raw_arguments is not None
    assert call.raw_arguments.startswith("not json")
    assert len(call.raw_arguments) < MAX_RAW_ARGUMENTS_CHARS + 100
    assert f"cut: {len(huge):,} characters" in call.raw_arguments
    handmade = ToolCall("c", "Write", raw_arguments=huge, arguments_error="bad")
    assert bound_tool_call(handmade).raw_arguments == call.raw_arguments


def test_a_non_object_that_is_deep_is_previewed_not_serialised() -> None:
    deep_list: Any = []
    for _ in range(5_000):
        deep_list = [deep_list]
    call = tool_call_from_object("c", "T", deep_list)
    assert call.arguments_error == "arguments must be a JSON object, got list"
    assert call.raw_arguments is not None and call.raw_arguments.startswith("[[[[")
