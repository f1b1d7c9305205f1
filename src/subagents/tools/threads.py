"""Worker threads for the tools written as plain functions, which may block.

``asyncio.to_thread`` goes through the loop's default executor: a ``concurrent.futures``
future chained to an asyncio one, a work item, a semaphore. For the short functions most tools
are, that bookkeeping is most of the call's cost (about 110 µs CPU a call on a 2-core machine).
:func:`run_in_worker` hands the call to a thread of its own small pool through a
``queue.SimpleQueue``.

The way back is cheap too. When nothing else is due on the loop, the caller waits for the
result on a lock for up to :data:`QUICK_SECONDS` before it gives the loop back: a function
that returns within that time (most do: a file read, a computation) costs one thread wake-up
each way, with no trip through the loop's selector (its self-pipe write, the wake from
``epoll`` and the drain: about half of the hand-off's CPU) and no timer for the tool's timeout.
The loop is held at most that long, and only while it had nothing else to run; a slower
function finishes as before: the caller awaits a future that the worker settles through
``call_soon_threadsafe``. Results that come back while the loop is busy are settled together:
the first schedules one callback on its loop and the next ones join its batch, so 500
subagents' tool calls wake the loop (a write to its self-pipe, a switch of threads) a few
times instead of 500.

The pool has no fixed size up to :data:`MAX_WORKERS`: a call finds an idle thread or starts
one, so tools that block for long (an HTTP request, a subprocess) run side by side for as
many parallel subagents as call them, and never wait behind each other below that bound (the
loop's default executor caps them at ``min(32, CPUs + 4)``: 6 on 2 cores). Threads are daemons
and stay for the process's life: a tool that never returns cannot hold the process open
when the run ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

from subagents._loop import others_ready

__all__ = ["MAX_WORKERS", "QUICK_SECONDS", "run_in_worker"]

MAX_WORKERS = 64
"""Calls beyond this many at once wait for a thread to come free."""

QUICK_SECONDS = 0.0005
"""How long a caller with an idle loop waits on the worker before it gives the loop back."""


class _Call:
    """One function call handed to a worker, and how its result gets back.

    ``done`` is held until the worker has the outcome; ``future`` is set by a caller that
    stopped waiting on ``done``. The worker releases ``done`` before it reads ``future``, and
    the caller sets ``future`` before it tries ``done`` once more, so one of them always sees
    the other (every step runs under the GIL, in order)."""

    __slots__ = ("context", "done", "error", "function", "future", "kwargs", "loop", "result")

    def __init__(self, function: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self.function = function
        self.kwargs = kwargs
        self.context = contextvars.copy_context()
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None
        self.future: asyncio.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def outcome(self) -> Any:
        error = self.error
        if error is not None:
            self.error = None  # no cycle through the traceback
            raise error
        return self.result


_jobs: queue.SimpleQueue[_Call] = queue.SimpleQueue()
_lock = threading.Lock()
_idle = 0  # threads waiting for a job nobody has claimed
_unclaimed = 0  # jobs queued while every thread was busy and no new one could start
_started = 0
# the futures each loop has a _settle call due for (under _lock)
_due: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}


async def run_in_worker(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``function(**kwargs)`` on a worker thread, in a copy of the caller's context; its
    result or exception. Cancelling the caller leaves the call running to its end (a thread
    cannot be stopped) and drops its result."""
    loop = asyncio.get_running_loop()
    call = _Call(function, kwargs)
    _ensure_worker()
    _jobs.put(call)
    if others_ready(loop) is False and call.done.acquire(timeout=QUICK_SECONDS):
        return call.outcome()
    future: asyncio.Future[None] = loop.create_future()
    call.loop, call.future = loop, future
    if call.done.acquire(blocking=False):  # it finished meanwhile, before seeing the future
        call.future = None
        return call.outcome()
    await future
    return call.outcome()


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
        call = _jobs.get()
        try:
            call.result = call.context.run(call.function, **call.kwargs)
        except BaseException as caught:  # raised in the awaiting task, as
            call.error = caught  # asyncio.to_thread does
        call.done.release()
        future, loop = call.future, call.loop
        if future is not None and loop is not None:
            _hand_back(loop, future)
        del call, future, loop
        with _lock:
            if _unclaimed > 0:
                _unclaimed -= 1  # this thread takes a waiting job next
            else:
                _idle += 1


def _hand_back(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
    """Have ``loop`` settle ``future``: with the batch already due there, or in a new one."""
    with _lock:
        for closed in [other for other in _due if other.is_closed()]:
            del _due[closed]  # it closed before its _settle ran: nobody waits there any more
        batch = _due.get(loop)
        if batch is not None:
            batch.append(future)
            return
        _due[loop] = [future]
    try:
        loop.call_soon_threadsafe(_settle, loop)
    except RuntimeError:  # a closed loop: nobody waits any more
        with _lock:
            _due.pop(loop, None)


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    with _lock:
        batch = _due.pop(loop, [])
    for future in batch:
        if not future.done():  # a cancelled caller's future is done already
            future.set_result(None)
