"""Rate limits, counted in the process (the `limits` library's memory storage) by
default or in Redis when set, on the gateway's clock.

    requests        per API key, and per account: a ceiling over all of an account's
                    keys, so that more keys do not multiply the quota
    input events    per API key (a batch of 10 costs 10)
    sign-ins        per account email, and per client address (IPv6: per /64)

The strategy is the sliding window counter: two counters per quota and subject, in
windows aligned to multiples of the quota's period, the previous one weighted by how
much of it still overlaps the last period. The windows are keyed and counted here (in
memory with the storage's public `incr` and `get`; on Redis with one script per call):
the library's own strategies read `time.time()` (memory) or Redis's key expiries, and a
clock they read is one a test can only move by waiting. Here the time is the injected
`Clock`'s, so a test puts it at a window's start instead; and every node of a
deployment keys the same windows in Redis as long as their clocks agree (as they must
for tokens already).

`Retry-After` is computed from the two counters (`seconds_until_room`), not from the end
of the current window, when the subject may well still be full.

When the storage (Redis) is down, the API quotas fail open (a warning, at most once a
minute) so an outage of the limiter is not an outage of the service; the sign-in limits
fail closed (503), since they are what stands between a password and a guesser.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from limits import parse
from limits.aio.storage import MemoryStorage

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


@dataclass(frozen=True, slots=True)
class _Hit:
    """One quota's share of a call: `cost` against `subject`'s windows of `quota`."""

    quota: Quota
    subject: str
    cost: int


class CountsUnavailable(Exception):
    """The counts' storage (Redis) did not answer."""


class _Counts(Protocol):
    async def count(self, hits: Sequence[_Hit], now: float) -> tuple[int, int, int] | None:
        """Counts `hits` in order, each in its current window, until one does not fit:
        that one counts nothing and its (index, previous, current) counts are answered;
        the hits before it stay counted. None when all fit."""
        ...

    async def is_reachable(self) -> bool: ...

    async def close(self) -> None: ...


class RateLimits:
    def __init__(self, settings: GatewaySettings, clock: Clock) -> None:
        self._counts = _counts(settings.redis_url)
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
        await self._hit(
            [_Hit(self._key_requests, key_id, 1), _Hit(self._account_requests, account_id, 1)],
            fail_open=True,
        )

    async def hit_input_events(self, key_id: str, count: int) -> None:
        await self._hit([_Hit(self._input_events, key_id, count)], fail_open=True)

    async def hit_sign_in(self, email: str, *, client_address: str | None) -> None:
        """Password guesses: argon2's cost alone is not a limit. Per client address
        first (`None`: not a network caller), so that a client trying many emails is
        stopped there, then per email, so that many clients cannot share one email's
        guesses out."""
        hits = [_Hit(self._email_sign_ins, email_subject(email), 1)]
        if client_address is not None:
            hits.insert(0, _Hit(self._address_sign_ins, address_subject(client_address), 1))
        await self._hit(hits, fail_open=False)

    async def _hit(self, hits: Sequence[_Hit], *, fail_open: bool) -> None:
        for hit in hits:
            if hit.cost > hit.quota.amount:
                # Waiting would never help: no Retry-After could be honest.
                raise InvalidRequest(
                    f"{hit.cost} {hit.quota.label}s in one call exceed the quota of "
                    f"{hit.quota.amount} per {hit.quota.period_s} s"
                )
        now = self._clock.now().timestamp()
        try:
            refused = await self._counts.count(hits, now)
        except CountsUnavailable as exc:
            if not fail_open:
                label = hits[0].quota.label
                raise ServiceUnavailable(f"the {label} limit cannot be checked now") from exc
            self._warn_outage(exc)
            return
        if refused is not None:
            index, previous, current = refused
            hit = hits[index]
            raise _refusal(hit.quota, hit.cost, (previous, current), now)

    def _warn_outage(self, exc: CountsUnavailable) -> None:
        now = self._clock.monotonic()
        if self._warned_at is None or now - self._warned_at >= _OUTAGE_WARNING_INTERVAL_S:
            self._warned_at = now
            logger.warning("rate-limit storage unavailable, quotas not enforced: %s", exc)

    async def is_reachable(self) -> bool:
        """Whether the counts' storage answers (Redis `PING`; always, in the process)."""
        return await self._counts.is_reachable()

    async def close(self) -> None:
        """Let go of the storage's connections (Redis) at shutdown. A failure is logged,
        never raised: a stuck disconnect must not stop the rest of the shutdown."""
        try:
            await self._counts.close()
        except Exception:
            logger.exception("could not close the rate-limit storage")


def _counts(redis_url: str | None) -> _Counts:
    return _InProcessCounts() if redis_url is None else _RedisCounts(redis_url)


def _window_keys(hit: _Hit, now: float) -> tuple[str, str]:
    """The keys of the hit's current and previous windows."""
    window = math.floor(now / hit.quota.period_s)
    return _window_key(hit.quota, hit.subject, window), _window_key(
        hit.quota, hit.subject, window - 1
    )


def _expiry_s(quota: Quota) -> int:
    return 2 * quota.period_s + _EXPIRY_SLACK_S


class _InProcessCounts:
    """One process's counts, in the `limits` library's memory storage. Counting first
    and checking after: two hits racing for the last room cannot both get it, the one
    whose count went over gives its cost back."""

    def __init__(self) -> None:
        self._storage = MemoryStorage()

    async def count(self, hits: Sequence[_Hit], now: float) -> tuple[int, int, int] | None:
        for index, hit in enumerate(hits):
            current_key, previous_key = _window_keys(hit, now)
            expiry_s = _expiry_s(hit.quota)
            current = await self._storage.incr(current_key, expiry_s, hit.cost)
            previous = await self._storage.get(previous_key)
            weighted = weighted_count(
                period_s=hit.quota.period_s, previous=previous, current=current, now=now
            )
            if math.floor(weighted) > hit.quota.amount:
                # The storage adds a negative amount as it adds any other.
                await self._storage.incr(current_key, expiry_s, -hit.cost)
                return index, previous, current - hit.cost
        return None

    async def is_reachable(self) -> bool:
        return True

    async def close(self) -> None:
        return None


# The same counting as `_InProcessCounts`, for all of a call's hits in one script (a
# request's key and account quotas: one EVALSHA instead of four commands). A script runs
# alone on the server, so hits racing for the last room still cannot both get it.
#   KEYS: each hit's current and previous window;
#   ARGV: now, then each hit's cost, amount, period and expiry.
# Several subjects' keys in one script is fine on one Redis server, not on a Redis
# Cluster (the keys would need one hash slot).
_COUNT_SCRIPT = """
local now = tonumber(ARGV[1])
for i = 1, #KEYS / 2 do
    local current_key, previous_key = KEYS[2 * i - 1], KEYS[2 * i]
    local cost = tonumber(ARGV[4 * i - 2])
    local amount = tonumber(ARGV[4 * i - 1])
    local period = tonumber(ARGV[4 * i])
    local current = redis.call('INCRBY', current_key, cost)
    if current == cost then
        redis.call('EXPIRE', current_key, ARGV[4 * i + 1])
    end
    local previous = tonumber(redis.call('GET', previous_key) or '0')
    local weighted = previous * (period - now % period) / period + current
    if math.floor(weighted) > amount then
        redis.call('INCRBY', current_key, -cost)
        return {i, previous, current - cost}
    end
end
return {0}
"""

# Connections to Redis for the counts, and how long a hit waits for a free one.
_REDIS_CONNECTIONS = 64
_REDIS_CONNECTION_WAIT_S = 2.0
# `limits`' prefix, which the counts had when the library counted them on Redis: nodes
# of the previous release and of this one count in the same keys during an upgrade.
_REDIS_KEY_PREFIX = "LIMITS:"


class _RedisCounts:
    """Every node's counts, on Redis: the calls made in one turn of the event loop sent
    together, one pipeline of scripts, one round trip. Profiled under bench.scale, a
    request's four commands were 18 % of a node's CPU and one script per request still
    13 %, mostly redis-py's own work per call; under load a turn holds several requests."""

    def __init__(self, redis_url: str) -> None:
        import redis.asyncio  # the `redis` extra: only a gateway configured for Redis has it

        # A blocking pool: under load a send waits briefly for a connection instead of
        # failing ("too many connections"), which would leave the quotas unenforced.
        # Retried on a fresh connection after a broken one: a script whose reply was
        # lost then counts twice, one call too strict, once, after a Redis restart.
        self._pool = redis.asyncio.BlockingConnectionPool.from_url(
            redis_url,
            max_connections=_REDIS_CONNECTIONS,
            timeout=_REDIS_CONNECTION_WAIT_S,
            **reconnecting_options(),
        )
        self._client = redis.asyncio.Redis(connection_pool=self._pool)
        self._script_sha = hashlib.sha1(_COUNT_SCRIPT.encode(), usedforsecurity=False).hexdigest()
        self._waiting: list[_ScriptCall] = []
        self._sends: set[asyncio.Task[None]] = set()

    async def count(self, hits: Sequence[_Hit], now: float) -> tuple[int, int, int] | None:
        keys: list[str] = []
        args: list[str | int] = [repr(now)]
        for hit in hits:
            keys.extend(_REDIS_KEY_PREFIX + key for key in _window_keys(hit, now))
            args += [hit.cost, hit.quota.amount, hit.quota.period_s, _expiry_s(hit.quota)]
        loop = asyncio.get_running_loop()
        call = _ScriptCall(keys, args, loop.create_future())
        if not self._waiting:
            loop.call_soon(self._send_waiting)
        self._waiting.append(call)
        answer = await call.reply
        index = int(answer[0])
        if index == 0:
            return None
        return index - 1, int(answer[1]), int(answer[2])

    def _send_waiting(self) -> None:
        calls, self._waiting = self._waiting, []
        send = asyncio.create_task(self._send(calls))
        self._sends.add(send)
        send.add_done_callback(self._sends.discard)

    async def _send(self, calls: list[_ScriptCall]) -> None:
        from redis.exceptions import NoScriptError, RedisError

        try:
            answers = await self._run(calls)
            missing = [i for i, answer in enumerate(answers) if isinstance(answer, NoScriptError)]
            if missing:
                # Redis restarted or flushed its scripts: a NOSCRIPT call counted
                # nothing, so sending those again once the script is loaded counts each
                # once.
                await self._client.script_load(_COUNT_SCRIPT)
                again = await self._run([calls[i] for i in missing])
                for i, answer in zip(missing, again, strict=True):
                    answers[i] = answer
        except RedisError as exc:
            answers = [exc] * len(calls)
        except BaseException as exc:  # cancelled at shutdown: no caller waits forever
            for call in calls:
                if not call.reply.done():
                    call.reply.set_exception(CountsUnavailable(type(exc).__name__))
            raise
        for call, answer in zip(calls, answers, strict=True):
            if call.reply.done():  # its request was cancelled meanwhile
                continue
            if isinstance(answer, BaseException):
                unavailable = CountsUnavailable(str(answer) or type(answer).__name__)
                call.reply.set_exception(unavailable)
            else:
                call.reply.set_result(answer)

    async def _run(self, calls: Sequence[_ScriptCall]) -> list[Any]:
        async with self._client.pipeline(transaction=False) as pipe:
            for call in calls:
                pipe.evalsha(self._script_sha, len(call.keys), *call.keys, *call.args)
            return list(await pipe.execute(raise_on_error=False))

    async def is_reachable(self) -> bool:
        try:
            return bool(await self._client.ping())
        except Exception:  # any failure to answer is "unreachable", never raised
            return False

    async def close(self) -> None:
        for send in list(self._sends):
            send.cancel()
        await asyncio.gather(*self._sends, return_exceptions=True)
        await self._client.aclose()
        await self._pool.aclose()


@dataclass(frozen=True, slots=True)
class _ScriptCall:
    keys: list[str]
    args: list[str | int]
    reply: asyncio.Future[Any]


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
