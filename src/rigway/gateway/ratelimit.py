"""Per-key rate limits on the `limits` library (memory by default, Redis when set).

Two quotas per API key: requests, and input events (a batch of 10 costs 10).

The strategy is the sliding window counter: two counters per key and quota (windows
aligned to multiples of the quota's period), the previous one weighted by how much of
it still overlaps the last period. The moving window keeps one timestamp per hit (1,200
per key at the default quota) and its in-memory storage prunes them on a worker thread
after every hit, which cost the gateway a thread hop per request.

`Retry-After` is computed from the two counters (`seconds_until_room`): the library's
reset time is the end of the current window, when the key may well still be full.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import cast

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, SlidingWindowCounterSupport, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from rigway.gateway.errors import InvalidRequest, RateLimited

logger = logging.getLogger(__name__)


def seconds_until_room(
    *, amount: int, cost: int, period_s: float, previous: int, current: int, now: float
) -> float:
    """How long until a hit of `cost` fits under a sliding window counter of `amount`
    per `period_s`, given the previous and current windows' counts (`cost <= amount`).

    The weighted count is previous * (the part of the previous window still inside the
    last period) + current; a hit fits while floor(weighted) + cost <= amount, that is
    while weighted < amount - cost + 1. The weighted count falls as the current window
    runs; when that window closes, its count becomes the previous one and falls from
    there. The answer is the bound itself: a hit fits any time after it."""
    left_s = period_s - now % period_s  # until the current window closes
    below = amount - cost + 1  # the weighted count must fall under this
    if current < below:
        if previous == 0:
            return 0.0
        return max(0.0, left_s - period_s * (below - current) / previous)
    return left_s + period_s * (1 - below / current)


class RateLimits:
    def __init__(
        self,
        request_limit: str,
        input_event_limit: str,
        redis_url: str | None,
        sign_in_limit: str = "10/minute",
    ) -> None:
        self._storage, self._close_storage = _storage(redis_url)
        self._limiter = SlidingWindowCounterRateLimiter(self._storage)
        self._requests = parse(request_limit)
        self._input_events = parse(input_event_limit)
        self._sign_ins = parse(sign_in_limit)

    async def hit_request(self, key_id: str) -> None:
        await self._hit(self._requests, key_id, 1, "request")

    async def hit_input_events(self, key_id: str, count: int) -> None:
        await self._hit(self._input_events, key_id, count, "input event")

    async def hit_sign_in(self, email: str) -> None:
        """Password guesses per account email: argon2's cost alone is not a limit."""
        await self._hit(self._sign_ins, f"sign-in:{email.strip().lower()}", 1, "sign-in")

    async def _hit(self, item: RateLimitItem, key_id: str, cost: int, what: str) -> None:
        period_s = item.get_expiry()
        if cost > item.amount:
            # Waiting would never help: no Retry-After could be honest.
            raise InvalidRequest(
                f"{cost} {what}s in one call exceed the quota of {item.amount} per {period_s} s"
            )
        if await self._limiter.hit(item, "key", key_id, cost=cost):
            return
        storage = cast(SlidingWindowCounterSupport, self._storage)
        previous, _, current, _ = await storage.get_sliding_window(
            item.key_for("key", key_id), period_s
        )
        now = time.time()
        wait_s = seconds_until_room(
            amount=item.amount,
            cost=cost,
            period_s=period_s,
            previous=previous,
            current=current,
            now=now,
        )
        retry_after = max(1, math.floor(wait_s) + 1)  # strictly after the bound
        weighted = previous * (period_s - now % period_s) / period_s + current
        remaining = max(0, item.amount - math.floor(weighted))
        raise RateLimited(
            f"{what} quota of {item.amount} per {period_s} s exceeded",
            headers={
                "Retry-After": str(retry_after),
                "RateLimit-Limit": str(item.amount),
                "RateLimit-Remaining": str(remaining),
                "RateLimit-Reset": str(retry_after),
            },
        )

    async def reset(self) -> None:
        await self._storage.reset()

    async def close(self) -> None:
        """Let go of the storage's connections (Redis) at shutdown. A failure is logged,
        never raised: a stuck disconnect must not stop the rest of the shutdown."""
        try:
            await self._close_storage()
        except Exception:
            logger.exception("could not close the rate-limit storage")


async def _nothing_to_close() -> None:
    return None


def _storage(redis_url: str | None) -> tuple[Storage, Callable[[], Awaitable[None]]]:
    """The storage, and how to close it."""
    if redis_url is None:
        return MemoryStorage(), _nothing_to_close
    import redis.asyncio  # the `redis` extra: only a gateway configured for Redis has it

    # Our own pool, so that close() can let go of its sockets; `limits` documents the
    # connection_pool option but types its options as scalars.
    pool = redis.asyncio.ConnectionPool.from_url(redis_url)
    storage = RedisStorage(
        redis_url.replace("redis://", "async+redis://", 1),
        implementation="redispy",
        connection_pool=pool,  # type: ignore[arg-type]
    )
    return storage, pool.aclose
