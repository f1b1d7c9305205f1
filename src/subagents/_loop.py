"""What an event loop has left to do in its current turn, for the fast paths that skip a trip
through the loop when nothing else is waiting for it."""

from __future__ import annotations

import asyncio

__all__ = ["others_ready"]


def others_ready(loop: asyncio.AbstractEventLoop) -> bool | None:
    """Whether other callbacks are due in this turn of ``loop``; None when the loop does not
    show them (asyncio's own loops keep them in ``_ready``; uvloop, for one, does not)."""
    ready = getattr(loop, "_ready", None)
    return None if ready is None else bool(ready)
