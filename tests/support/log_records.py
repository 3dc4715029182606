"""Log records as events a test can await: "the link noticed the drop" is the record the
link writes when it does, so a test waits for that record instead of sleeping."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator

__all__ = ["LogRecords", "log_records"]


class LogRecords(logging.Handler):
    """Every record of one logger from the moment it is attached, each handed to the
    event loop (records written on worker threads too)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.DEBUG)
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self.records: list[logging.LogRecord] = []
        self._arrived = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if threading.get_ident() == self._loop_thread:
            self._take(record)
            return
        # A loop that closed meanwhile has nobody left waiting.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._take, record)

    def _take(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self._arrived.set()

    async def wait_for(self, fragment: str, timeout_s: float = 10.0) -> logging.LogRecord:
        """The first record since attaching whose message contains `fragment`, as soon as
        it is written; TimeoutError after `timeout_s`."""
        async with asyncio.timeout(timeout_s):
            while True:
                for record in self.records:
                    if fragment in record.getMessage():
                        return record
                self._arrived.clear()
                await self._arrived.wait()


@contextlib.contextmanager
def log_records(logger_name: str, level: int = logging.DEBUG) -> Iterator[LogRecords]:
    """Records of `logger_name` at `level` and above while the block runs; the logger's
    level is lowered to `level` meanwhile (records below a logger's level are never
    made), then restored. Call from the event loop's thread."""
    logger = logging.getLogger(logger_name)
    handler = LogRecords(asyncio.get_running_loop())
    handler.setLevel(level)
    level_before = logger.level
    logger.setLevel(min(level, logger.getEffectiveLevel()))
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level_before)
