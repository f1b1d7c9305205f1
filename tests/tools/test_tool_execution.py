"""execute_tool_call: lookup, isolation, validation, errors, timeouts, fallbacks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from subagents.errors import ToolError
from subagents.messages import ToolCall
from subagents.tools.base import Tool, ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.decorator import tool
from subagents.tools.execution import execute_tool_call
from subagents.tools.permissions import PermissionPolicy


class Address(BaseModel):
    city: str
    zip_code: Annotated[str, Field(pattern=r"^\d{5}$")]


@tool(read_only=True)
async def register(
    name: str, age: Annotated[int, Field(ge=0)], address: Address, tags: list[str] | None = None
) -> str:
    """Register a person."""
    return f"{name} ({age}) in {address.city} tags={tags}"


@tool(timeout_seconds=0.05, fallback_tools=["quick", "missing"])
async def slow(query: str) -> str:
    """Slow primary."""
    await asyncio.sleep(30)
    return "never"


@tool
async def quick(query: str) -> str:
    """Fast fallback."""
    return f"quick answer to {query}"


@tool(fallback_tools=["also_broken"])
async def broken(query: str) -> str:
    """Always fails."""
    raise ValueError("disk on fire")


@tool
async def also_broken(query: str) -> str:
    """Fails too."""
    raise ToolError("no luck either")


@tool(fallback_tools=["quick"])
async def refuses(query: str) -> str:
    """Reports a failure the model can act on."""
    raise ToolError(f"cannot answer {query!r}; ask something else")


@tool
async def own_timeout() -> str:
    """Raises TimeoutError by itself."""
    raise TimeoutError("upstream socket timed out")


@tool
async def cancels_itself() -> str:
    """Raises CancelledError."""
    raise asyncio.CancelledError


@tool
def returns_object() -> object:
    """Returns something JSON cannot show."""
    return object()


@tool(run_in_thread=False)
def sync_inline(n: Annotated[int, Field(ge=0, le=100)]) -> list[int]:
    """Sync, on the loop."""
    return list(range(n))


REGISTRY = ToolRegistry(
    [
        register,
        slow,
        quick,
        broken,
        also_broken,
        refuses,
        own_timeout,
        cancels_itself,
        returns_object,
        sync_inline,
    ]
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path)


async def run(ctx: ToolContext, name: str, arguments: Any = None, **kw: Any) -> Any:
    call = ToolCall("id-1", name, arguments if arguments is not None else {}, **kw)
    return await execute_tool_call(call, REGISTRY, ctx)


GOOD = {"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "12345"}}


async def test_happy_path(ctx: ToolContext) -> None:
    outcome = await run(ctx, "register", GOOD)
    assert outcome.status == "ok"
    assert outcome.tool_name == "register"
    assert outcome.duration_ms >= 0
    assert outcome.message.tool_call_id == "id-1"
    assert outcome.message.tool_name == "register"
    assert outcome.message.is_error is False
    assert outcome.message.content == "Ada (36) in London tags=None"


async def test_unknown_tool_lists_what_is_available(ctx: ToolContext) -> None:
    outcome = await run(ctx, "Delete")
    assert outcome.status == "error" and outcome.message.is_error
    assert outcome.message.content.startswith("tool 'Delete' is not available to this agent;")
    assert "available: register, slow, quick" in outcome.message.content


async def test_a_tool_outside_the_agents_set_is_refused(ctx: ToolContext) -> None:
    everything = ToolRegistry(builtin_tools())
    allowed = everything.subset(["Read", "Grep"])
    call = ToolCall("c", "Bash", {"command": "touch pwned"})
    outcome = await execute_tool_call(call, allowed, ctx)
    assert outcome.status == "error"
    assert outcome.message.content == (
        "tool 'Bash' is not available to this agent; available: Read, Grep. "
        "Call one of these instead."
    )
    assert not (ctx.workspace / "pwned").exists()


async def test_arguments_that_were_not_json(ctx: ToolContext) -> None:
    outcome = await run(
        ctx, "quick", raw_arguments="{query: hi", arguments_error="Expecting property name"
    )
    assert outcome.status == "error"
    assert "not a valid JSON object (Expecting property name)" in outcome.message.content
    assert "Call quick again" in outcome.message.content


async def test_validation_errors_are_listed_in_plain_words(ctx: ToolContext) -> None:
    arguments = {"age": -1, "address": {"city": "X", "zip_code": "abc"}, "colour": "red"}
    content = (await run(ctx, "register", arguments)).message.content
    assert content.splitlines() == [
        "Invalid arguments for register:",
        "- name: required, but missing",
        "- age: Input should be greater than or equal to 0 (got -1)",
        "- address.zip_code: String should match pattern '^\\d{5}$' (got \"abc\")",
        "- colour: not an argument of register (accepted: name, age, address, tags)",
        "Call register again with these arguments fixed.",
    ]


async def test_non_object_arguments(ctx: ToolContext) -> None:
    outcome = await run(ctx, "register", [1, 2])
    assert outcome.status == "error"
    assert "the arguments must be a JSON object, got [1, 2]" in outcome.message.content


async def test_tool_error_and_unexpected_exception(ctx: ToolContext) -> None:
    also = await run(ctx, "also_broken", {"query": "q"})
    own = await run(ctx, "own_timeout")
    odd = await run(ctx, "returns_object")
    assert also.status == "error" and also.message.content == "no luck either"
    assert own.status == "error"
    assert own.message.content == "Tool own_timeout failed: TimeoutError: upstream socket timed out"
    assert odd.status == "error" and "cannot be shown as JSON" in odd.message.content


async def test_sync_tool_result_is_json(ctx: ToolContext) -> None:
    assert (await run(ctx, "sync_inline", {"n": 3})).message.content == "[0, 1, 2]"


async def test_timeout_then_fallback_answers(ctx: ToolContext) -> None:
    outcome = await run(ctx, "slow", {"query": "q"})
    assert outcome.status == "ok"
    assert outcome.tool_name == "quick"
    assert outcome.message.tool_name == "slow"
    assert outcome.message.content == (
        "[slow timed out; answered by fallback tool quick]\nquick answer to q"
    )


async def test_failure_then_failing_fallback_reports_everything(ctx: ToolContext) -> None:
    outcome = await run(ctx, "broken", {"query": "q"})
    assert outcome.status == "error"
    assert outcome.tool_name == "broken"
    assert outcome.message.content.splitlines() == [
        "broken failed: Tool broken failed: ValueError: disk on fire",
        "fallback also_broken: no luck either",
    ]


async def test_tool_error_also_tries_the_fallback(ctx: ToolContext) -> None:
    outcome = await run(ctx, "refuses", {"query": "q"})
    assert outcome.status == "ok" and outcome.tool_name == "quick"


async def test_missing_fallback_is_noted(ctx: ToolContext) -> None:
    registry = ToolRegistry([slow])
    outcome = await execute_tool_call(ToolCall("c", "slow", {"query": "q"}), registry, ctx)
    assert outcome.status == "timeout"
    assert "slow timed out: Tool slow timed out after 0.05 s" in outcome.message.content
    assert "fallback quick is not available to this agent" in outcome.message.content
    assert "fallback missing is not available to this agent" in outcome.message.content


async def test_denied_call_does_not_fall_back(ctx: ToolContext) -> None:
    call = ToolCall("c", "slow", {"query": "q"})
    outcome = await execute_tool_call(call, REGISTRY, ctx, permissions=PermissionPolicy("plan"))
    assert outcome.status == "denied"
    assert outcome.tool_name == "slow"


async def test_cancellation_propagates(ctx: ToolContext) -> None:
    with pytest.raises(asyncio.CancelledError):
        await run(ctx, "cancels_itself")
    waiting = asyncio.create_task(
        execute_tool_call(ToolCall("c", "waits", {}), ToolRegistry([_waits]), ctx)
    )
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert _WAITS_STATE == ["started", "cancelled"]


_WAITS_STATE: list[str] = []


@tool(name="waits")
async def _waits() -> str:
    """Waits until cancelled."""
    _WAITS_STATE.append("started")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        _WAITS_STATE.append("cancelled")
        raise
    return "never"


async def test_hand_built_tool_without_input_model(ctx: ToolContext) -> None:
    def add(a: int, b: int) -> int:
        return a + b

    manual = Tool(name="add", description="Add.", parameters={"type": "object"}, function=add)
    registry = ToolRegistry([manual])
    ok = await execute_tool_call(ToolCall("c", "add", {"a": 1, "b": 2}), registry, ctx)
    bad = await execute_tool_call(ToolCall("c", "add", {"a": 1}), registry, ctx)
    assert ok.message.content == "3"
    assert bad.status == "error" and bad.message.content.startswith("Tool add failed: TypeError")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "name",
        "age",
        "address",
        "tags",
        "file_path",
        "offset",
        "limit",
        "pattern",
        "path",
        "glob",
        "type",
        "output_mode",
        "-i",
        "-n",
        "-A",
        "-B",
        "-C",
        "head_limit",
        "multiline",
        "ignore",
        "query",
        "n",
        "zz",
    ]
)
ARGUMENTS = st.dictionaries(KEYS, JSON, max_size=6) | JSON


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["register", "quick", "sync_inline", "Read", "Glob", "Grep", "LS"]),
    arguments=ARGUMENTS,
)
async def test_arbitrary_json_arguments_never_escape(
    tmp_path: Path, name: str, arguments: Any
) -> None:
    (tmp_path / "f.txt").write_text("hello\nworld\n")
    registry = ToolRegistry([register, quick, *builtin_tools()])
    ctx = ToolContext(workspace=tmp_path)
    outcome = await execute_tool_call(ToolCall("h", name, arguments), registry, ctx)
    assert outcome.status in ("ok", "error")
    assert outcome.message.is_error == (outcome.status == "error")
    assert isinstance(outcome.message.content, str) and outcome.message.content
    assert "Traceback" not in outcome.message.content


async def test_tool_that_suspends_many_times_completes(ctx: ToolContext) -> None:
    @tool
    async def stepper(steps: int) -> str:
        """Suspends repeatedly, then hands back a value set by another task."""
        for _ in range(steps):
            await asyncio.sleep(0)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "done")
        return await future

    outcome = await execute_tool_call(
        ToolCall("c", "stepper", {"steps": 5}), ToolRegistry([stepper]), ctx
    )
    assert (outcome.status, outcome.message.content) == ("ok", "done")


async def test_tool_returning_a_plain_awaitable(ctx: ToolContext) -> None:
    def later() -> asyncio.Future[str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.01, future.set_result, "later")
        return future

    manual = Tool(name="later", description="", parameters={"type": "object"}, function=later)
    outcome = await execute_tool_call(ToolCall("c", "later"), ToolRegistry([manual]), ctx)
    assert outcome.message.content == "later"
