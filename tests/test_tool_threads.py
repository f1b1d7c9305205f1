"""Plain-function tools run on the worker threads of ``subagents.tools.threads``."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from subagents.tools.threads import MAX_WORKERS, run_in_worker

REQUEST = contextvars.ContextVar("REQUEST", default="none")


async def test_the_function_runs_off_the_loop_in_the_callers_context() -> None:
    REQUEST.set("request-7")

    def where() -> tuple[str, str]:
        return threading.current_thread().name, REQUEST.get()

    name, seen = await run_in_worker(where, {})
    assert name != threading.current_thread().name
    assert name.startswith("subagents-tool-")
    assert seen == "request-7"


async def test_its_exception_reaches_the_caller_as_raised() -> None:
    def broken(path: str) -> str:
        raise FileNotFoundError(path)

    with pytest.raises(FileNotFoundError, match=r"missing\.txt"):
        await run_in_worker(broken, {"path": "missing.txt"})


async def test_blocking_calls_run_side_by_side_beyond_the_default_executors_six() -> None:
    # Twelve calls that each wait for all twelve: they finish only if they run at once.
    together = 12
    assert together < MAX_WORKERS
    barrier = threading.Barrier(together, timeout=30)

    def meet(index: int) -> int:
        barrier.wait()
        return index

    results = await asyncio.gather(*(run_in_worker(meet, {"index": i}) for i in range(together)))
    assert sorted(results) == list(range(together))


async def test_a_cancelled_caller_leaves_the_call_to_finish_and_drops_its_result() -> None:
    release = threading.Event()
    finished = threading.Event()

    def slow() -> str:
        release.wait(30)
        finished.set()
        return "late"

    task = asyncio.create_task(run_in_worker(slow, {}))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await asyncio.to_thread(finished.wait, 30)
    # the worker is free again and serves the next call
    assert await run_in_worker(lambda: "next", {}) == "next"
