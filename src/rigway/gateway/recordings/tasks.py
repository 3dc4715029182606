"""The cleaner: deletes recordings whose retention ended, every
`recording_cleanup_interval_s`, on the gateway's clock (a test's fake one moves it)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rigway.gateway.recordings.service import RecordingService

logger = logging.getLogger(__name__)


class RecordingCleaner:
    def __init__(self, recordings: RecordingService, interval_s: float) -> None:
        self._recordings = recordings
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        # Set after each pass (tests wait on it instead of sleeping).
        self.passes = 0
        self.passed = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def run_once(self) -> int:
        try:
            deleted = await self._recordings.delete_expired()
        except Exception:
            # A store hiccup must not end the loop: the next pass deletes them.
            logger.exception("recording cleaner pass failed")
            deleted = 0
        if deleted:
            logger.info("deleted %d expired recordings", deleted)
        self.passes += 1
        self.passed.set()
        return deleted

    async def _run(self) -> None:
        while True:
            await self.run_once()
            await asyncio.sleep(self._interval_s)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
