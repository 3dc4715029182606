"""Per-key rate limits on the `limits` library (memory by default, Redis when set).

Two quotas per API key: requests, and input events (a batch of 10 costs 10).

The strategy is the sliding window counter: two counters per key and quota, weighted
by how far the current window has run. The moving window keeps one timestamp per hit
(1,200 per key at the default quota) and its in-memory storage prunes them on a worker
thread after every hit, which cost the gateway a thread hop per request.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from rigway.gateway.errors import RateLimited


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
        if await self._limiter.hit(item, "key", key_id, cost=cost):
            return
        stats = await self._limiter.get_window_stats(item, "key", key_id)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimited(
            f"{what} quota of {item.amount} per {item.get_expiry()} s exceeded",
            headers={
                "Retry-After": str(retry_after),
                "RateLimit-Limit": str(item.amount),
                "RateLimit-Remaining": str(stats.remaining),
                "RateLimit-Reset": str(retry_after),
            },
        )

    async def reset(self) -> None:
        await self._storage.reset()

    async def close(self) -> None:
        """Let go of the storage's connections (Redis); the limits stop counting."""
        await self._close_storage()


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
