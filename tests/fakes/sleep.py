"""A stand-in for ``asyncio.sleep`` in the providers' retry loop."""

from __future__ import annotations

__all__ = ["RecordingSleep"]


class RecordingSleep:
    """Stands in for asyncio.sleep in the retry loop: records each wait, waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
