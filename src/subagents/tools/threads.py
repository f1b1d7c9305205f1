"""Worker threads for the tools written as plain functions, which may block.

``asyncio.to_thread`` goes through the loop's default executor: a ``concurrent.futures``
future chained to an asyncio one, a work item, a semaphore. For the short functions most tools
are, that bookkeeping is most of the call's cost (about 110 µs CPU a call on a 2-core machine,
against 50 µs for the hand-off itself). :func:`run_in_worker` hands the call to a thread of its
own small pool through a ``queue.SimpleQueue`` and wakes the loop once with the result.

The pool has no fixed size up to :data:`MAX_WORKERS`: a call finds an idle thread or starts
one, so tools that block for long (an HTTP request, a subprocess) run side by side for as
many parallel subagents as call them, and never wait behind each other below that bound (the
loop's default executor caps them at ``min(32, CPUs + 4)``: 6 on 2 cores). Threads are daemons
and stay for the process's life: a tool that never returns cannot hold the process open
when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_WORKERS", "run_in_worker"]

MAX_WORKERS = 64
"""Calls beyond this many at once wait for a thread to come free."""

_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    dict[str, Any],
]

_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_lock = threading.Lock()
_idle = 0  # threads waiting for a job nobody has claimed
_unclaimed = 0  # jobs queued while every thread was busy and no new one could start
_started = 0


async def run_in_worker(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``function(**kwargs)`` on a worker thread, in a copy of the caller's context; its
    result or exception. Cancelling the caller leaves the call running to its end (a thread
    cannot be stopped) and drops its result."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    _ensure_worker()
    _jobs.put((loop, future, contextvars.copy_context(), function, kwargs))
    return await future


def _ensure_worker() -> None:
    """Claim an idle thread for the job about to be queued, or start one."""
    global _idle, _started, _unclaimed
    with _lock:
        if _idle > 0:
            _idle -= 1
            return
        if _started >= MAX_WORKERS:
            _unclaimed += 1  # the job waits in the queue for the next thread to finish
            return
        _started += 1
    threading.Thread(target=_work, name=f"subagents-tool-{_started}", daemon=True).start()


def _work() -> None:
    global _idle, _unclaimed
    while True:
        loop, future, context, function, kwargs = _jobs.get()
        result: Any = None
        error: BaseException | None = None
        try:
            result = context.run(function, **kwargs)
        except BaseException as caught:  # raised in the awaiting task, as
            error = caught  # asyncio.to_thread does
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for it any more
            loop.call_soon_threadsafe(_settle, future, result, error)
        del loop, future, context, function, kwargs, result, error
        with _lock:
            if _unclaimed > 0:
                _unclaimed -= 1  # this thread takes a waiting job next
            else:
                _idle += 1


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
