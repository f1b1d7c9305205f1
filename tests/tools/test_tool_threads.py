"""Plain-function tools run on the worker threads of ``subagents.tools.threads``."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
import time
import weakref

import pytest

from subagents.tools import threads
from subagents.tools.threads import MAX_WORKERS, QUICK_SECONDS, run_in_worker

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


async def test_a_slow_function_gives_the_loop_back_while_it_runs() -> None:
    # The function ends only when the loop has run a callback: a caller that kept the loop
    # past its short wait would leave it hanging for the 30 s timeout.
    loop_ran = threading.Event()
    asyncio.get_running_loop().call_later(QUICK_SECONDS * 4, loop_ran.set)

    def wait_for_the_loop() -> bool:
        return loop_ran.wait(30)

    assert await run_in_worker(wait_for_the_loop, {}) is True


async def test_results_come_back_right_on_either_side_of_the_quick_wait() -> None:
    # Durations around the quick wait, so that calls finish before it, after it, and in the
    # moment between the caller giving up and offering its future.
    durations = [QUICK_SECONDS * factor / 10 for factor in range(0, 21)] * 20

    def busy(index: int, seconds: float) -> int:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            pass
        if index % 7 == 0:
            raise ValueError(index)
        return index

    for index, seconds in enumerate(durations):
        if index % 7 == 0:
            with pytest.raises(ValueError, match=rf"^{index}$"):
                await run_in_worker(busy, {"index": index, "seconds": seconds})
        else:
            assert await run_in_worker(busy, {"index": index, "seconds": seconds}) == index


async def test_calls_made_while_the_loop_is_busy_all_come_back() -> None:
    # Many at once: the loop has other callbacks due, so they go the way of the future.
    results = await asyncio.gather(*(run_in_worker(lambda i=i: i * 2, {}) for i in range(200)))
    assert results == [i * 2 for i in range(200)]


@pytest.mark.slow
def test_a_loop_that_closed_before_taking_its_results_is_not_kept() -> None:
    """A worker hands a result back to its caller's loop; a loop that closed first (before the
    hand-back, or with a batch of results still due there) is dropped, not kept alive."""
    closed_first = asyncio.new_event_loop()
    future = closed_first.create_future()
    closed_first.close()
    threads._hand_back(closed_first, future)  # the closed loop refuses the callback
    first = weakref.ref(closed_first)
    del closed_first, future
    gc.collect()
    assert first() is None  # dropped at once, without waiting for another hand-back

    closed_after = asyncio.new_event_loop()
    threads._hand_back(closed_after, closed_after.create_future())  # its settling is due...
    closed_after.close()  # ... and never runs

    running = asyncio.new_event_loop()
    settled = running.create_future()
    threads._hand_back(running, settled)  # the next hand-back drops the closed loop's batch
    running.run_until_complete(settled)
    running.close()

    after = weakref.ref(closed_after)
    del closed_after
    gc.collect()
    assert after() is None
