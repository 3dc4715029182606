"""Rate limits, counted in the `limits` library's storage (memory by default, Redis when
set) on the gateway's clock.

    requests        per API key, and per account: a ceiling over all of an account's
                    keys, so that more keys do not multiply the quota
    input events    per API key (a batch of 10 costs 10)
    sign-ins        per account email, and per client address (IPv6: per /64)

The strategy is the sliding window counter: two counters per quota and subject, in
windows aligned to multiples of the quota's period, the previous one weighted by how
much of it still overlaps the last period. The windows are keyed and counted here, with
the storage's public `incr` and `get`: the library's own strategies read `time.time()`
(memory) or Redis's key expiries, and a clock they read is one a test can only move by
waiting. Here the time is the injected `Clock`'s, so a test puts it at a window's start
instead; and every node of a deployment keys the same windows in Redis as long as their
clocks agree (as they must for tokens already).

`Retry-After` is computed from the two counters (`seconds_until_room`), not from the end
of the current window, when the subject may well still be full.

When the storage (Redis) is down, the API quotas fail open (a warning, at most once a
minute) so an outage of the limiter is not an outage of the service; the sign-in limits
fail closed (503), since they are what stands between a password and a guesser.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from limits import parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.errors import StorageError

from rigway.gateway.clock import Clock
from rigway.gateway.errors import InvalidRequest, RateLimited, ServiceUnavailable
from rigway.gateway.redis_clients import reconnecting_options
from rigway.gateway.settings import GatewaySettings

logger = logging.getLogger(__name__)

# One warning per this many seconds while the storage is down, not one per request.
_OUTAGE_WARNING_INTERVAL_S = 60.0
# A window's counter is read until the next window ends: two periods after the first
# hit at the latest. The slack covers nodes whose clocks run a little behind Redis's.
_EXPIRY_SLACK_S = 5
# IPv6 clients usually hold a whole /64: counting per address would let one client
# rotate through 2^64 of them.
_IPV6_PREFIX_LENGTH = 64


@dataclass(frozen=True, slots=True)
class Quota:
    """`amount` per `period_s`; `name` keys its counters, `label` names it in a refusal."""

    name: str
    label: str
    amount: int
    period_s: int

    @classmethod
    def parse(cls, name: str, label: str, notation: str) -> Quota:
        """From the `limits` notation: "1200/minute", "10 per 2 minutes"."""
        item = parse(notation)
        return cls(name, label, item.amount, item.get_expiry())


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


def weighted_count(*, period_s: float, previous: int, current: int, now: float) -> float:
    """The sliding window counter's estimate of the hits in the last `period_s`."""
    return previous * (period_s - now % period_s) / period_s + current


def address_subject(address: str) -> str:
    """What a client address is counted as: an IPv4 address (an IPv4-mapped IPv6 one
    included) by itself, an IPv6 address by its /64; anything else (a Unix socket's
    name) as it is."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{_IPV6_PREFIX_LENGTH}", strict=False))
    return str(parsed)


def email_subject(email: str) -> str:
    """An email as its counters' key: hashed, so the storage (Redis) holds no addresses."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]


class RateLimits:
    def __init__(self, settings: GatewaySettings, clock: Clock) -> None:
        self._storage, self._close_storage = _storage(settings.redis_url)
        self._clock = clock
        self._warned_at: float | None = None
        self._key_requests = Quota.parse("key-requests", "request", settings.request_rate_limit)
        self._account_requests = Quota.parse(
            "account-requests", "account request", settings.account_request_rate_limit
        )
        self._input_events = Quota.parse(
            "key-input-events", "input event", settings.input_event_rate_limit
        )
        self._email_sign_ins = Quota.parse(
            "email-sign-ins", "sign-in", settings.sign_in_rate_limit_per_email
        )
        self._address_sign_ins = Quota.parse(
            "address-sign-ins", "client address sign-in", settings.sign_in_rate_limit_per_address
        )

    async def hit_request(self, *, key_id: str, account_id: str) -> None:
        """One request of an API key, counted against the key and against its account.

        The key's own quota is counted first: a key refused by it never reaches the
        account's counter, so one key hammering past its quota cannot use up the
        ceiling its account's other keys share."""
        await self._hit(self._key_requests, key_id, 1, fail_open=True)
        await self._hit(self._account_requests, account_id, 1, fail_open=True)

    async def hit_input_events(self, key_id: str, count: int) -> None:
        await self._hit(self._input_events, key_id, count, fail_open=True)

    async def hit_sign_in(self, email: str, *, client_address: str | None) -> None:
        """Password guesses: argon2's cost alone is not a limit. Per client address
        first (`None`: not a network caller), so that a client trying many emails is
        stopped there, then per email, so that many clients cannot share one email's
        guesses out."""
        if client_address is not None:
            subject = address_subject(client_address)
            await self._hit(self._address_sign_ins, subject, 1, fail_open=False)
        await self._hit(self._email_sign_ins, email_subject(email), 1, fail_open=False)

    async def _hit(self, quota: Quota, subject: str, cost: int, *, fail_open: bool) -> None:
        if cost > quota.amount:
            # Waiting would never help: no Retry-After could be honest.
            raise InvalidRequest(
                f"{cost} {quota.label}s in one call exceed the quota of "
                f"{quota.amount} per {quota.period_s} s"
            )
        now = self._clock.now().timestamp()
        try:
            counts = await self._count(quota, subject, cost, now)
        except StorageError as exc:
            if not fail_open:
                raise ServiceUnavailable(f"the {quota.label} limit cannot be checked now") from exc
            self._warn_outage(exc)
            return
        if counts is not None:
            raise _refusal(quota, cost, counts, now)

    async def _count(
        self, quota: Quota, subject: str, cost: int, now: float
    ) -> tuple[int, int] | None:
        """Counts the hit in the current window if it fits: None. Otherwise counts
        nothing and answers the (previous, current) counts it did not fit under.

        Counting first and checking after makes a hit two storage calls (Redis: two
        round trips), and two hits racing for the last room cannot both get it: the
        one whose count went over gives its cost back."""
        window = math.floor(now / quota.period_s)
        current_key = _window_key(quota, subject, window)
        expiry_s = 2 * quota.period_s + _EXPIRY_SLACK_S
        current = await self._storage.incr(current_key, expiry_s, cost)
        previous = await self._storage.get(_window_key(quota, subject, window - 1))
        weighted = weighted_count(
            period_s=quota.period_s, previous=previous, current=current, now=now
        )
        if math.floor(weighted) <= quota.amount:
            return None
        # Both storages add a negative amount as they add any other.
        await self._storage.incr(current_key, expiry_s, -cost)
        return previous, current - cost

    def _warn_outage(self, exc: StorageError) -> None:
        now = self._clock.monotonic()
        if self._warned_at is None or now - self._warned_at >= _OUTAGE_WARNING_INTERVAL_S:
            self._warned_at = now
            logger.warning("rate-limit storage unavailable, quotas not enforced: %s", exc)

    async def is_reachable(self) -> bool:
        """Whether the counts' storage answers (Redis `PING`; always, in the process)."""
        try:
            return await self._storage.check()
        except Exception:  # any failure to answer is "unreachable", never raised
            return False

    async def close(self) -> None:
        """Let go of the storage's connections (Redis) at shutdown. A failure is logged,
        never raised: a stuck disconnect must not stop the rest of the shutdown."""
        try:
            await self._close_storage()
        except Exception:
            logger.exception("could not close the rate-limit storage")


def _window_key(quota: Quota, subject: str, window: int) -> str:
    # The period is part of the key: a changed period starts from empty windows rather
    # than reading counts made in windows of another length.
    return f"rigway/{quota.name}/{quota.period_s}/{subject}/{window}"


def _refusal(quota: Quota, cost: int, counts: tuple[int, int], now: float) -> RateLimited:
    previous, current = counts
    wait_s = seconds_until_room(
        amount=quota.amount,
        cost=cost,
        period_s=quota.period_s,
        previous=previous,
        current=current,
        now=now,
    )
    retry_after = max(1, math.floor(wait_s) + 1)  # strictly after the bound
    weighted = weighted_count(period_s=quota.period_s, previous=previous, current=current, now=now)
    remaining = max(0, quota.amount - math.floor(weighted))
    return RateLimited(
        f"{quota.label} quota of {quota.amount} per {quota.period_s} s exceeded",
        headers={
            "Retry-After": str(retry_after),
            "RateLimit-Limit": str(quota.amount),
            "RateLimit-Remaining": str(remaining),
            "RateLimit-Reset": str(retry_after),
        },
    )


# Connections to Redis for the counts, and how long a hit waits for a free one.
_REDIS_CONNECTIONS = 64
_REDIS_CONNECTION_WAIT_S = 2.0


async def _nothing_to_close() -> None:
    return None


def _storage(redis_url: str | None) -> tuple[Storage, Callable[[], Awaitable[None]]]:
    """The storage, and how to close it."""
    if redis_url is None:
        return MemoryStorage(), _nothing_to_close
    import redis.asyncio  # the `redis` extra: only a gateway configured for Redis has it

    # Our own pool, so that close() can let go of its sockets; `limits` documents the
    # connection_pool option but types its options as scalars. A blocking one: under
    # load a hit waits briefly for a connection instead of failing ("too many
    # connections"), which would leave the quotas unenforced.
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        redis_url,
        max_connections=_REDIS_CONNECTIONS,
        timeout=_REDIS_CONNECTION_WAIT_S,
        **reconnecting_options(),
    )
    storage = RedisStorage(
        redis_url.replace("redis://", "async+redis://", 1),
        implementation="redispy",
        # Storage failures surface as StorageError, which _hit handles.
        wrap_exceptions=True,
        connection_pool=pool,  # type: ignore[arg-type]
    )
    return storage, pool.aclose
