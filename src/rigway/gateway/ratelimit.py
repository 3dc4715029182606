"""Per-key rate limits on the `limits` library (memory by default, Redis when set).

Two quotas per API key: requests, and input events (a batch of 10 costs 10).

The strategy is the sliding window counter: two counters per key and quota (windows
aligned to multiples of the quota's period), the previous one weighted by how much of
it still overlaps the last period. The moving window keeps one timestamp per hit (1,200
per key at the default quota) and its in-memory storage prunes them on a worker thread
after every hit, which cost the gateway a thread hop per request.

`Retry-After` is computed from the two counters (`seconds_until_room`): the library's
reset time is the end of the current window, when the key may well still be full.

When the storage (Redis) is down, the API quotas fail open (a warning, at most once a
minute) so an outage of the limiter is not an outage of the service; the sign-in limit
fails closed (503), since it is what stands between a password and a guesser.
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
from limits.errors import StorageError

from rigway.gateway.errors import InvalidRequest, RateLimited, ServiceUnavailable

logger = logging.getLogger(__name__)

# One warning per this many seconds while the storage is down, not one per request.
_OUTAGE_WARNING_INTERVAL_S = 60.0


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
        # The same storage, seen as what the Retry-After arithmetic reads from it.
        self._counters = cast(SlidingWindowCounterSupport, self._storage)
        self._warned_at: float | None = None
        self._limiter = SlidingWindowCounterRateLimiter(self._storage)
        self._requests = parse(request_limit)
        self._input_events = parse(input_event_limit)
        self._sign_ins = parse(sign_in_limit)

    async def hit_request(self, key_id: str) -> None:
        await self._hit(self._requests, key_id, 1, "request", fail_open=True)

    async def hit_input_events(self, key_id: str, count: int) -> None:
        await self._hit(self._input_events, key_id, count, "input event", fail_open=True)

    async def hit_sign_in(self, email: str) -> None:
        """Password guesses per account email: argon2's cost alone is not a limit."""
        key = f"sign-in:{email.strip().lower()}"
        await self._hit(self._sign_ins, key, 1, "sign-in", fail_open=False)

    async def _hit(
        self, item: RateLimitItem, key_id: str, cost: int, what: str, *, fail_open: bool
    ) -> None:
        period_s = item.get_expiry()
        if cost > item.amount:
            # Waiting would never help: no Retry-After could be honest.
            raise InvalidRequest(
                f"{cost} {what}s in one call exceed the quota of {item.amount} per {period_s} s"
            )
        try:
            if await self._limiter.hit(item, "key", key_id, cost=cost):
                return
            previous, _, current, _ = await self._counters.get_sliding_window(
                item.key_for("key", key_id), period_s
            )
        except StorageError as exc:
            if not fail_open:
                raise ServiceUnavailable(f"the {what} limit cannot be checked now") from exc
            self._warn_outage(exc)
            return
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

    def _warn_outage(self, exc: StorageError) -> None:
        now = time.monotonic()
        if self._warned_at is None or now - self._warned_at >= _OUTAGE_WARNING_INTERVAL_S:
            self._warned_at = now
            logger.warning("rate-limit storage unavailable, quotas not enforced: %s", exc)

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
        # Storage failures surface as StorageError, which _hit handles.
        wrap_exceptions=True,
        connection_pool=pool,  # type: ignore[arg-type]
    )
    return storage, pool.aclose
