"""The loop the desktop state and displays reporters share: read on a worker thread
every `interval_s`, and send each value that differs from the last one sent."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["PolledReporter"]

T = TypeVar("T")


class PolledReporter(ABC, Generic[T]):
    """Reads with `_read` (blocking, so on a worker thread) and reports changes."""

    def __init__(self, *, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self._interval_s = interval_s

    @abstractmethod
    def _read(self) -> T: ...

    async def sample(self) -> T:
        return await asyncio.to_thread(self._read)

    async def report_changes(self, reported: T, send: Callable[[T], Awaitable[None]]) -> None:
        """Until cancelled (the link drops): read, and `send` each value that differs
        from the last one reported (`reported`: what the hello said)."""
        while True:
            await asyncio.sleep(self._interval_s)
            now = await self.sample()
            if now != reported:
                await send(now)
                reported = now
