"""The Redis clients of a gateway node (the `redis` extra: only a node configured for
Redis imports it, so the imports are inside the functions).

Every client retries a command that fails on a broken connection, twice, 50-200 ms
apart, on a fresh connection: after Redis restarts, each pooled socket is dead, and
without a retry the first command on each fails ("Connection closed by server") although
Redis is back. For the rig leases that cost a whole refresh period (the other nodes
meanwhile saw no holder); for quotas and notices a spurious failure. A command that
fails again is Redis really being away, and its caller handles that as before.

Two clients must not retry (`retrying=False`): a pub/sub subscription, which redis-py
would otherwise reconnect and resubscribe silently, so its owner would never learn that
notices were lost meanwhile; and a command that must not run twice (`SET NX` deciding a
first use: repeated after a lost reply, it would refuse its own first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["reconnecting_options", "redis_client"]

_RETRIES = 2


def reconnecting_options() -> dict[str, Any]:
    """Connection options that retry a command on a fresh connection after a broken one
    (for a connection pool's `from_url`, or a client's)."""
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError, TimeoutError

    return {
        "retry": Retry(ExponentialBackoff(cap=0.2, base=0.05), _RETRIES),
        "retry_on_error": [ConnectionError, TimeoutError],
    }


def redis_client(
    redis_url: str, *, decode_responses: bool = False, retrying: bool = True
) -> redis.asyncio.Redis:
    import redis.asyncio
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    options = reconnecting_options() if retrying else {"retry": Retry(NoBackoff(), 0)}
    return redis.asyncio.Redis.from_url(redis_url, decode_responses=decode_responses, **options)
