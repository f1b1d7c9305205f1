"""Group commit: the steps concurrent sessions write in one turn of the event loop share one
transaction.

A SQLite commit costs about the same for one step as for a hundred (its price is the
write-ahead log's frames and locks, not the rows), and a run's sessions write from one event
loop. When 100 subagents' model calls return together, their 100 checkpoints used to be 100
commits in a row on the loop. Through :class:`CommitGroup` a step commits at once when nothing
else is ready to run on the loop (a lone session pays nothing); otherwise it waits for the
callbacks already due in this turn, whose steps join it in one transaction.

Durability is unchanged: a session goes on only once its own step is committed. A step whose
writer was cancelled before the transaction began is left out (its session writes it with its
last checkpoint); a step that the store refuses fails alone, and nothing of it stays: a step
that is one statement (the loop's steps are) is undone whole by SQLite, a step of several is
written in a savepoint of its own.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from subagents._loop import others_ready
from subagents.store.shared import appended

if TYPE_CHECKING:
    from subagents.store.base import Store
    from subagents.store.steplog import EncodedStep

__all__ = ["CommitGroup", "commit_group"]

Committed = Callable[[int | None], None]
"""Told the checkpoint sequence of a step once it is written (None: a step with no
checkpoint, such as a ledger entry of a workflow's tool call)."""


@runtime_checkable
class GroupAppender(Protocol):
    """A store that appends a group's steps its own, faster way."""

    def append_group(self, steps: Sequence[EncodedStep]) -> Sequence[int | Exception | None]: ...


_GROUPS: weakref.WeakKeyDictionary[object, CommitGroup] = weakref.WeakKeyDictionary()


def commit_group(store: Store) -> CommitGroup:
    """The group of ``store`` (one per store object)."""
    group = _GROUPS.get(store)
    if group is None:
        group = _GROUPS[store] = CommitGroup(store)
    return group


class _Pending:
    __slots__ = ("committed", "future", "write")

    def __init__(
        self, write: EncodedStep, committed: Committed, future: asyncio.Future[None]
    ) -> None:
        self.write = write
        self.committed = committed
        self.future = future


class CommitGroup:
    """Commits the steps of one store, grouping those of one loop turn."""

    __slots__ = ("__weakref__", "_loop", "_pending", "store")

    def __init__(self, store: Store) -> None:
        self.store = store
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[_Pending] = []

    async def commit(self, write: EncodedStep, committed: Committed) -> None:
        """Commit ``write`` (a step with a checkpoint); ``committed`` gets the checkpoint's
        sequence right after the transaction that holds it, before anything else runs (even
        when the caller was cancelled meanwhile), so the writer's bookkeeping never misses a
        step it wrote."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a store used by another loop (a new asyncio.run)
            self._loop, self._pending = loop, []
        if not self._pending and not others_ready(loop):  # None: cannot tell, commit now
            committed(self.store.append(write))
            return
        future: asyncio.Future[None] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append(_Pending(write, committed, future))
        await future

    def _flush(self) -> None:
        batch = [pending for pending in self._pending if not pending.future.cancelled()]
        self._pending = []
        if len(batch) == 1:
            self._settle(batch[0], _outcome(appended(self.store, batch[0].write)))
            return
        try:
            outcomes = self._append_each([pending.write for pending in batch])
        except Exception as error:  # the transaction failed: all hear
            outcomes = [error] * len(batch)
        for pending, outcome in zip(batch, outcomes, strict=True):
            self._settle(pending, _outcome(outcome))

    def _append_each(self, writes: list[EncodedStep]) -> Sequence[int | Exception | None]:
        """Each of ``writes`` appended in one transaction, each failing alone; the store's own
        way when it has one (:meth:`SQLiteStore.append_group
        <subagents.store.sqlite.SQLiteStore.append_group>`)."""
        store = self.store
        if isinstance(store, GroupAppender):
            return store.append_group(writes)
        with store.transaction() as tx:
            return [appended(store, write, tx) for write in writes]

    @staticmethod
    def _settle(pending: _Pending, outcome: int | BaseException | None) -> None:
        if isinstance(outcome, BaseException):
            if not pending.future.done():
                pending.future.set_exception(outcome)
            return
        pending.committed(outcome)
        if not pending.future.done():
            pending.future.set_result(None)


def _outcome(outcome: int | Exception | None) -> int | Exception | None:
    """A step's outcome as its writer hears it: its checkpoint's sequence (None for a step
    without one), or its error."""
    return outcome
