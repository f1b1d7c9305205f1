"""@tool: schemas, descriptions, context injection, sync/async functions, bad declarations."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from subagents.errors import ToolDefinitionError
from subagents.messages import ToolCall
from subagents.tools.base import Tool, ToolContext, ToolRegistry
from subagents.tools.decorator import tool
from subagents.tools.execution import execute_tool_call


class Point(BaseModel):
    x: int
    y: int


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


def test_bare_decorator_builds_a_clean_schema_from_the_signature() -> None:
    @tool
    async def move(target: Point, speed: float = 1.0, mode: Literal["walk", "run"] = "walk") -> str:
        """Move the robot to a point.

        Longer explanation that is not part of the description.

        Args:
            target: Where to go.
            speed: How fast,
                in metres per second.
        """
        return "moved"

    assert isinstance(move, Tool)
    assert move.name == "move"
    assert move.description == "Move the robot to a point."
    schema = move.parameters
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["target"]
    assert "$defs" not in schema
    assert "$ref" not in str(schema)
    target = schema["properties"]["target"]
    assert target["type"] == "object"
    assert target["description"] == "Where to go."
    assert set(target["properties"]) == {"x", "y"}
    assert schema["properties"]["speed"]["description"] == "How fast, in metres per second."
    assert schema["properties"]["mode"]["enum"] == ["walk", "run"]
    assert move.timeout_seconds == 300.0
    assert move.read_only is False
    assert move.requires_approval is True


def test_options_are_carried_to_the_tool() -> None:
    @tool(
        name="Lookup",
        description="Find a thing.",
        timeout_seconds=5,
        fallback_tools=["Other"],
        read_only=True,
        idempotent=True,
    )
    def lookup(key: str) -> str:
        return key

    assert lookup.name == "Lookup"
    assert lookup.description == "Find a thing."
    assert lookup.timeout_seconds == 5
    assert lookup.fallback_tools == ("Other",)
    assert lookup.read_only and lookup.idempotent
    assert lookup.requires_approval is False
    assert lookup.spec.name == "Lookup"
    assert lookup.spec.parameters is lookup.parameters


def test_optional_arguments_are_plain_types_that_are_not_required() -> None:
    @tool
    def search(query: str, limit: int | None = None) -> str:
        """Search."""
        return query

    limit = search.parameters["properties"]["limit"]
    assert limit["type"] == "integer"
    assert "anyOf" not in limit
    assert "default" not in limit
    assert search.parameters["required"] == ["query"]


def test_field_description_wins_over_the_docstring() -> None:
    @tool
    def f(a: Annotated[int, Field(description="from Field", ge=0)]) -> str:
        """Do.

        Args:
            a: from docstring
        """
        return str(a)

    prop = f.parameters["properties"]["a"]
    assert prop["description"] == "from Field"
    assert prop["minimum"] == 0


def test_numpy_and_sphinx_docstrings_give_parameter_descriptions() -> None:
    @tool
    def numpy_style(a: int, b: str) -> str:
        """Numpy style.

        Parameters
        ----------
        a : int
            The first.
        b : str
            The second.

        Returns
        -------
        str
        """
        return ""

    @tool
    def sphinx_style(a: int) -> str:
        """Sphinx style.

        :param a: The only one.
        :returns: nothing much
        """
        return ""

    assert numpy_style.parameters["properties"]["a"]["description"] == "The first."
    assert numpy_style.parameters["properties"]["b"]["description"] == "The second."
    assert sphinx_style.parameters["properties"]["a"]["description"] == "The only one."
    assert sphinx_style.description == "Sphinx style."


def test_aliases_are_the_json_keys() -> None:
    @tool
    def grep_like(pattern: str, ignore_case: Annotated[bool, Field(alias="-i")] = False) -> str:
        """Search."""
        return f"{pattern}:{ignore_case}"

    assert set(grep_like.parameters["properties"]) == {"pattern", "-i"}


def test_a_recursive_type_keeps_its_definition() -> None:
    @tool
    def plant(tree: Tree) -> str:
        """Plant a tree."""
        return tree.name

    schema = plant.parameters
    assert "Tree" in schema["$defs"]
    assert schema["properties"]["tree"]["type"] == "object"


def test_context_parameter_is_injected_and_hidden(tmp_path: Path) -> None:
    @tool
    async def where(name: str, ctx: ToolContext) -> str:
        """Say where."""
        return f"{name}@{ctx.workspace}:{ctx.agent_id}"

    assert where.takes_context
    assert set(where.parameters["properties"]) == {"name"}
    ctx = ToolContext(workspace=tmp_path, agent_id="a1")
    outcome = asyncio.run(
        execute_tool_call(ToolCall("c1", "where", {"name": "n"}), ToolRegistry([where]), ctx)
    )
    assert outcome.status == "ok"
    assert outcome.message.content == f"n@{tmp_path}:a1"


async def test_sync_functions_run_in_a_worker_thread(tmp_path: Path) -> None:
    loop_thread = threading.get_ident()

    @tool
    def which_thread() -> str:
        """Report the thread."""
        return str(threading.get_ident())

    @tool(run_in_thread=False)
    def inline_thread() -> str:
        """Report the thread."""
        return str(threading.get_ident())

    registry = ToolRegistry([which_thread, inline_thread])
    ctx = ToolContext(workspace=tmp_path)
    threaded = await execute_tool_call(ToolCall("1", "which_thread"), registry, ctx)
    inline = await execute_tool_call(ToolCall("2", "inline_thread"), registry, ctx)
    assert threaded.message.content != str(loop_thread)
    assert inline.message.content == str(loop_thread)


async def test_non_string_results_are_rendered_as_json(tmp_path: Path) -> None:
    @tool
    async def stats() -> dict[str, Any]:
        """Stats."""
        return {"path": Path("a/b"), "point": Point(x=1, y=2), "n": [1, 2]}

    outcome = await execute_tool_call(
        ToolCall("1", "stats"), ToolRegistry([stats]), ToolContext(workspace=tmp_path)
    )
    assert outcome.message.content == '{"path": "a/b", "point": {"x": 1, "y": 2}, "n": [1, 2]}'


def test_missing_annotation_is_refused_with_advice() -> None:
    def untyped(a) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(ToolDefinitionError, match="no type annotation") as info:
        tool(untyped)
    assert "annotate it" in str(info.value)


def test_star_args_are_refused() -> None:
    def star(*items: str) -> str:
        return ""

    def star_star(**items: str) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match=r"\*items"):
        tool(star)
    with pytest.raises(ToolDefinitionError, match=r"\*\*items"):
        tool(star_star)


def test_positional_only_is_refused() -> None:
    def positional(a: int, /) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="positional-only"):
        tool(positional)


def test_context_under_another_name_is_refused() -> None:
    def f(context: ToolContext) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="name it 'ctx'"):
        tool(f)


def test_bad_names_and_timeouts_are_refused() -> None:
    def f() -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="cannot be a tool name"):
        tool(name="has space")(f)
    with pytest.raises(ToolDefinitionError, match="cannot be a tool name"):
        tool(name="x" * 65)(f)
    with pytest.raises(ToolDefinitionError, match="must be positive"):
        tool(timeout_seconds=0)(f)


def test_unresolvable_annotation_is_refused() -> None:
    def f(a: NotDefinedAnywhere) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(ToolDefinitionError, match="cannot be resolved"):
        tool(f)


def test_type_without_a_json_schema_is_refused() -> None:
    def f(lock: threading.Event) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="JSON Schema"):
        tool(f)


def test_applying_twice_is_refused() -> None:
    @tool
    def f() -> str:
        """F."""
        return ""

    with pytest.raises(ToolDefinitionError, match="already a Tool"):
        tool(f)  # type: ignore[call-overload]  # the misuse under test
