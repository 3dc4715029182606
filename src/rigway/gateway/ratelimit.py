"""Per-key rate limits on the `limits` library (memory by default, Redis when set).

Two quotas per API key: requests, and input events (a batch of 10 costs 10).
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from rigway.gateway.errors import RateLimited


class RateLimits:
    def __init__(
        self,
        request_limit: str,
        input_event_limit: str,
        redis_url: str | None,
        sign_in_limit: str = "10/minute",
    ) -> None:
        self._storage = _storage(redis_url)
        self._limiter = MovingWindowRateLimiter(self._storage)
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


def _storage(redis_url: str | None) -> Storage:
    if redis_url is None:
        return MemoryStorage()
    storage = storage_from_string(
        redis_url.replace("redis://", "async+redis://", 1), implementation="redispy"
    )
    assert isinstance(storage, Storage)
    return storage
