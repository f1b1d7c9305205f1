"""``ThreadedAsyncStore``: any blocking :class:`~subagents.store.base.Store` as an
:class:`~subagents.store.base.AsyncStore`, its calls run on one worker thread of its own.

One thread, not a pool: calls run one at a time in the order they were made (as they would on
the store's lock anyway), and a transaction's begin, writes and end all run on the thread
that holds the store's lock for it. While a transaction is open, calls from other asyncio tasks that
were not given its ``tx`` wait for it to end instead of slipping into it on that thread; calls
given ``tx``, and the calls of the task that opened it, go ahead (inside it, as on the blocking
store). Cancelling a caller never cancels the call it waits for once queued: a write lands or
fails as a whole, and a transaction is always ended on the worker.

Which code uses which: the runtime's recorder, the CLI and the retention clean-up call the
blocking store directly (a SQLite step costs tens of microseconds); code on an event loop that
must not stall on a busy database uses this facade. Do not use the blocking store on the event
loop's thread while this facade holds a transaction open: that call would wait for the
transaction, which waits for the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, asynccontextmanager
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

from subagents.errors import StoreError
from subagents.store.base import (
    DEFAULT_LEASE_TTL,
    StepWrite,
    Store,
    TaskBundle,
    TaskLease,
    TaskOwner,
    TaskScan,
    Transaction,
)
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.steplog import EncodedStep

__all__ = ["ThreadedAsyncStore"]

T = TypeVar("T")

_holding: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "subagents_store_transactions", default=frozenset()
)
"""The facades (by id) whose transaction the current task holds open."""


class ThreadedAsyncStore:
    """``store``'s operations as coroutines, run on a dedicated thread. Closing it closes
    ``store`` (on that thread) and ends the thread."""

    def __init__(self, store: Store) -> None:
        self.store = store
        """The blocking store underneath."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="subagents-store")
        self._gate = asyncio.Lock()  # held while a transaction without a ``tx`` is open
        self._closed = False

    @property
    def location(self) -> str:
        return self.store.location

    def __repr__(self) -> str:
        return f"ThreadedAsyncStore({self.store!r})"

    async def __aenter__(self) -> ThreadedAsyncStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # -- running on the worker ---------------------------------------------------------------

    def _submit(self, call: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if self._closed:
            raise StoreError(
                f"the store {self.location} is closed",
                hint="open it again with subagents.store.open_async_store()",
            )
        context = contextvars.copy_context()
        return self._executor.submit(context.run, functools.partial(call, *args, **kwargs))

    async def _run(self, call: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``call`` on the worker, after any open transaction that it is not part of."""
        joins = kwargs.get("tx") is not None or id(self) in _holding.get()
        if not joins and self._gate.locked():
            async with self._gate:
                future = self._submit(call, *args, **kwargs)
        else:
            future = self._submit(call, *args, **kwargs)
        return await asyncio.shield(asyncio.wrap_future(future))

    @asynccontextmanager
    async def transaction(self, tx: Transaction | None = None) -> AsyncIterator[Transaction]:
        own = tx is None and id(self) not in _holding.get()
        if own:
            await self._gate.acquire()
        holding = _holding.set(_holding.get() | {id(self)})
        try:
            manager = self.store.transaction(tx)
            entered = self._submit(manager.__enter__)
            try:
                handle = await asyncio.shield(asyncio.wrap_future(entered))
            except BaseException:
                # Cancelled while it began: the worker still ends it, next in its queue.
                self._submit(_end_if_begun, entered, manager)
                raise
            try:
                yield handle
            except BaseException as error:
                ended = self._submit(manager.__exit__, type(error), error, error.__traceback__)
                if not await asyncio.shield(asyncio.wrap_future(ended)):
                    raise
            else:
                ended = self._submit(manager.__exit__, None, None, None)
                await asyncio.shield(asyncio.wrap_future(ended))
        finally:
            _holding.reset(holding)
            if own:
                self._gate.release()

    async def close(self) -> None:
        if self._closed:
            return
        try:
            await self._run(self.store.close)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)

    # -- the store's operations --------------------------------------------------------------

    async def create_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        await self._run(self.store.create_task, task, tx=tx)

    async def get_task(self, task_id: str) -> TaskRecord:
        return await self._run(self.store.get_task, task_id)

    async def list_tasks(
        self, *, status: str | None = None, limit: int | None = 100
    ) -> list[TaskRecord]:
        return await self._run(self.store.list_tasks, status=status, limit=limit)

    async def scan_tasks(self, *, status: str | None = None, limit: int | None = 100) -> TaskScan:
        return await self._run(self.store.scan_tasks, status=status, limit=limit)

    async def update_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        await self._run(self.store.update_task, task, tx=tx)

    async def commit(
        self, step: StepWrite, *, tx: Transaction | None = None
    ) -> CheckpointRecord | None:
        return await self._run(self.store.commit, step, tx=tx)

    async def append(self, step: EncodedStep, *, tx: Transaction | None = None) -> int | None:
        return await self._run(self.store.append, step, tx=tx)

    async def get_session(self, session_id: str) -> SessionRecord:
        return await self._run(self.store.get_session, session_id)

    async def sessions(self, task_id: str) -> list[SessionRecord]:
        return await self._run(self.store.sessions, task_id)

    async def messages(self, session_id: str) -> list[dict[str, Any]]:
        return await self._run(self.store.messages, session_id)

    async def latest_checkpoint(
        self, task_id: str, session_id: str | None = None
    ) -> CheckpointRecord | None:
        return await self._run(self.store.latest_checkpoint, task_id, session_id)

    async def checkpoints(self, task_id: str) -> list[CheckpointRecord]:
        return await self._run(self.store.checkpoints, task_id)

    async def ledger(self, task_id: str, session_id: str | None = None) -> list[ToolLedgerEntry]:
        return await self._run(self.store.ledger, task_id, session_id)

    async def traces(self, task_id: str) -> list[TraceRecord]:
        return await self._run(self.store.traces, task_id)

    async def delete_task(self, task_id: str) -> None:
        await self._run(self.store.delete_task, task_id)

    async def load_bundle(self, task_id: str) -> TaskBundle:
        return await self._run(self.store.load_bundle, task_id)

    async def restore_bundle(self, bundle: TaskBundle, *, replace: bool = False) -> None:
        await self._run(self.store.restore_bundle, bundle, replace=replace)

    async def get_meta(self, key: str) -> str | None:
        return await self._run(self.store.get_meta, key)

    async def set_meta(self, key: str, value: str) -> None:
        await self._run(self.store.set_meta, key, value)

    async def claim_periodic(self, name: str, *, every: timedelta, now: datetime) -> bool:
        return await self._run(self.store.claim_periodic, name, every=every, now=now)

    async def claim_task(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
        force: bool = False,
    ) -> TaskLease | None:
        return await self._run(self.store.claim_task, task_id, owner, ttl=ttl, now=now, force=force)

    async def renew_lease(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
    ) -> TaskLease:
        return await self._run(self.store.renew_lease, task_id, owner, ttl=ttl, now=now)

    async def task_lease(self, task_id: str) -> TaskLease | None:
        return await self._run(self.store.task_lease, task_id)

    async def release_task(self, task_id: str, owner: TaskOwner) -> None:
        await self._run(self.store.release_task, task_id, owner)

    async def integrity_check(self) -> list[str]:
        return await self._run(self.store.integrity_check)


def _end_if_begun(entered: Future[Any], manager: AbstractContextManager[Any]) -> None:
    if entered.exception() is None:
        manager.__exit__(asyncio.CancelledError, asyncio.CancelledError(), None)
