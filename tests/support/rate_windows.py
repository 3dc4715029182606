"""Waiting out a rate-limit window's edge before a test that fills a quota.

The sliding window counter (gateway/ratelimit.py) weighs the previous window by how much
of it still overlaps the last period. Just after a window's edge, ten hits made a moment
before count as 9.99, and an eleventh fits: the approximation the strategy documents.
A test that asserts "the eleventh is refused" must make its hits inside one window.
"""

from __future__ import annotations

import asyncio
import time


async def inside_one_window(period_s: float = 60.0, room_s: float = 15.0) -> None:
    """Return once at least `room_s` of the current window (aligned to multiples of
    `period_s` in Unix time, as the limiter's are) is left."""
    left_s = period_s - time.time() % period_s
    if left_s < room_s:
        await asyncio.sleep(left_s + 0.05)
