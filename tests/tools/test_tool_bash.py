"""Bash: real subprocesses, timeouts that kill the whole process group, output caps."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from processes import is_gone
from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin.bash import MAX_BASH_OUTPUT_CHARS
from subagents.tools.execution import ToolOutcome, execute_tool_call

Run = Callable[..., Awaitable[ToolOutcome]]


@pytest.fixture
def run(tmp_path: Path) -> Run:
    registry = ToolRegistry(builtin_tools())
    ctx = ToolContext(workspace=tmp_path)

    async def call(**arguments: Any) -> ToolOutcome:
        return await execute_tool_call(ToolCall("call-1", "Bash", arguments), registry, ctx)

    return call


def read_if_written(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def wait_for_file(path: Path) -> str:
    for _ in range(500):
        if text := read_if_written(path):
            return text
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def real_root(tmp_path: Path) -> str:
    return os.path.realpath(tmp_path)


async def test_output_runs_in_the_workspace_with_stderr_merged(run: Run, real_root: str) -> None:
    outcome = await run(command="pwd; echo out; echo err >&2", description="where am I")
    assert outcome.status == "ok"
    assert outcome.message.content == f"{real_root}\nout\nerr\n"


async def test_exit_code_is_reported(run: Run) -> None:
    outcome = await run(command="echo nope; exit 3")
    assert outcome.status == "ok"
    assert outcome.message.content == "nope\n\nExit code: 3"


async def test_killed_by_signal_is_reported(run: Run) -> None:
    outcome = await run(command="kill -TERM $$")
    assert "killed by signal SIGTERM" in outcome.message.content


async def test_no_output_is_said(run: Run) -> None:
    assert (await run(command="true")).message.content == "(no output)"


@pytest.mark.slow
async def test_timeout_kills_the_whole_process_group(run: Run, tmp_path: Path) -> None:
    outcome = await run(command="sleep 60 & echo $! > child.pid; echo started; wait", timeout=700)
    assert outcome.status == "error"
    assert "started" in outcome.message.content
    assert "timed out after 700 ms and was killed" in outcome.message.content
    assert is_gone(int((tmp_path / "child.pid").read_text()))


@pytest.mark.slow
async def test_background_job_holding_the_output_is_stopped(run: Run, tmp_path: Path) -> None:
    outcome = await run(command="sleep 60 & echo $! > child.pid; echo started")
    assert outcome.status == "ok"
    assert outcome.message.content.startswith("started\n")
    assert "left running in the background" in outcome.message.content
    assert is_gone(int((tmp_path / "child.pid").read_text()))


async def test_background_job_with_its_own_output_survives(run: Run) -> None:
    outcome = await run(command="sleep 30 > /dev/null 2>&1 & echo $!")
    pid = int(outcome.message.content.strip())
    try:
        assert psutil.pid_exists(pid)
        assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    finally:
        os.kill(pid, 9)


async def test_long_output_keeps_head_and_tail(run: Run) -> None:
    outcome = await run(command="printf HEAD; head -c 100000 /dev/zero | tr '\\0' x; printf TAIL")
    content = outcome.message.content
    assert content.startswith("HEAD")
    assert content.endswith("TAIL")
    assert "output cut: 70008 characters omitted" in content
    assert content.count("x") == MAX_BASH_OUTPUT_CHARS - 8


async def test_huge_output_stays_bounded(run: Run) -> None:
    outcome = await run(command="printf HEAD; head -c 3000000 /dev/zero | tr '\\0' y; printf END")
    content = outcome.message.content
    assert content.startswith("HEAD") and content.endswith("END")
    assert "output cut: about 2970007 bytes omitted" in content
    assert len(content) < MAX_BASH_OUTPUT_CHARS + 300


async def test_environment_is_inherited_and_not_changed(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUBAGENTS_TEST_MARK", "visible")
    before = dict(os.environ)
    outcome = await run(command='echo "$SUBAGENTS_TEST_MARK"; export LEAK=1')
    assert outcome.message.content == "visible\n"
    assert dict(os.environ) == before


async def test_cancellation_kills_the_command(tmp_path: Path) -> None:
    registry = ToolRegistry(builtin_tools())
    ctx = ToolContext(workspace=tmp_path)
    call = ToolCall("c", "Bash", {"command": "sleep 60 & echo $! > child.pid; wait"})
    task = asyncio.create_task(execute_tool_call(call, registry, ctx))
    pid = int(await wait_for_file(tmp_path / "child.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert is_gone(pid)


async def test_bad_arguments(run: Run) -> None:
    empty = await run(command="  ")
    too_long = await run(command="true", timeout=600_001)
    assert empty.status == "error" and "command is empty" in empty.message.content
    assert too_long.status == "error"
    assert "timeout: Input should be less than or equal to 600000" in too_long.message.content
