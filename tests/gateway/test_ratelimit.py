"""Rate limits on the gateway's clock: a fake one the test puts at a window's start and
moves, in memory and on Redis."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.gateway.clock import FakeClock
from rigway.gateway.errors import InvalidRequest, RateLimited, ServiceUnavailable
from rigway.gateway.ratelimit import RateLimits, address_subject, seconds_until_room
from rigway.gateway.settings import GatewaySettings

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def clock() -> FakeClock:
    """At the very start of a minute: every window here is a whole one."""
    clock = FakeClock()
    assert clock.now().timestamp() % 60 == 0
    return clock


def rate_limits(clock: FakeClock, **quotas: Any) -> RateLimits:
    return RateLimits(GatewaySettings(**quotas), clock)


@pytest.fixture
async def on_redis(clock: FakeClock) -> AsyncIterator[RateLimits]:
    """The scale-out storage: CI and this machine run Redis on 127.0.0.1:6379. Tests
    on it use fresh subjects: nothing to clean, nothing shared with another run."""
    limits = rate_limits(clock, request_rate_limit="3/minute", redis_url=REDIS_URL)
    yield limits
    await limits.close()


def fresh(name: str) -> str:
    return f"{name}-{secrets.token_hex(8)}"


async def requests(limits: RateLimits, count: int, key_id: str, account_id: str = "acc") -> None:
    for _ in range(count):
        await limits.hit_request(key_id=key_id, account_id=account_id)


async def test_request_quota_refuses_the_next_request_with_headers(clock: FakeClock) -> None:
    limits = rate_limits(clock, request_rate_limit="3/minute")
    await requests(limits, 3, "key-a")
    with pytest.raises(RateLimited) as refused:
        await limits.hit_request(key_id="key-a", account_id="acc")
    assert refused.value.status == 429
    assert refused.value.code == "rate_limited"
    headers = refused.value.headers
    assert headers["RateLimit-Limit"] == "3"
    assert headers["RateLimit-Remaining"] == "0"
    # Used up at the very start of a window: the three hits weigh in full until it
    # closes, and a fourth fits the second after.
    assert headers["Retry-After"] == "61"
    assert headers["RateLimit-Reset"] == "61"


async def test_quota_returns_after_the_window_moves(clock: FakeClock) -> None:
    limits = rate_limits(clock, request_rate_limit="3/minute")
    await requests(limits, 3, "key-a")
    clock.advance(61)
    await limits.hit_request(key_id="key-a", account_id="acc")


async def test_a_window_edge_does_not_free_a_full_quota(clock: FakeClock) -> None:
    """Just after the edge the previous window still weighs 3 x 59/60 = 2.95: floor 2,
    room for one, not for three (the approximation the strategy documents)."""
    limits = rate_limits(clock, request_rate_limit="3/minute")
    clock.advance(59)
    await requests(limits, 3, "key-a")
    clock.advance(2)
    await limits.hit_request(key_id="key-a", account_id="acc")
    with pytest.raises(RateLimited):
        await limits.hit_request(key_id="key-a", account_id="acc")


async def test_refused_requests_count_nothing(clock: FakeClock) -> None:
    limits = rate_limits(clock, request_rate_limit="3/minute")
    await requests(limits, 3, "key-a")
    for _ in range(10):
        with pytest.raises(RateLimited):
            await limits.hit_request(key_id="key-a", account_id="acc")
    clock.advance(61)  # 3 x 59/60 weighs 2 when only the three accepted ones count
    await limits.hit_request(key_id="key-a", account_id="acc")


async def test_keys_have_separate_quotas(clock: FakeClock) -> None:
    limits = rate_limits(clock, request_rate_limit="1/minute")
    await limits.hit_request(key_id="key-a", account_id="acc")
    await limits.hit_request(key_id="key-b", account_id="acc")


async def test_the_account_ceiling_holds_across_its_keys(clock: FakeClock) -> None:
    limits = rate_limits(
        clock, request_rate_limit="3/minute", account_request_rate_limit="4/minute"
    )
    await requests(limits, 3, "key-a")
    await limits.hit_request(key_id="key-b", account_id="acc")
    with pytest.raises(RateLimited) as refused:
        await limits.hit_request(key_id="key-c", account_id="acc")
    assert refused.value.code == "rate_limited"
    assert "account request quota of 4" in refused.value.detail
    assert refused.value.headers["RateLimit-Limit"] == "4"
    assert refused.value.headers["RateLimit-Remaining"] == "0"
    assert refused.value.headers["Retry-After"] == "61"
    # Another account's keys have a ceiling of their own.
    await limits.hit_request(key_id="key-d", account_id="other")


async def test_a_key_past_its_own_quota_spends_none_of_the_account_ceiling(
    clock: FakeClock,
) -> None:
    limits = rate_limits(
        clock, request_rate_limit="3/minute", account_request_rate_limit="4/minute"
    )
    await requests(limits, 3, "key-a")
    for _ in range(5):
        with pytest.raises(RateLimited):
            await limits.hit_request(key_id="key-a", account_id="acc")
    await limits.hit_request(key_id="key-b", account_id="acc")


async def test_each_input_event_counts(clock: FakeClock) -> None:
    limits = rate_limits(clock, input_event_rate_limit="10/minute")
    await limits.hit_input_events("key-a", 10)
    with pytest.raises(RateLimited):
        await limits.hit_input_events("key-a", 1)


async def test_a_batch_larger_than_what_is_left_is_refused_whole(clock: FakeClock) -> None:
    limits = rate_limits(clock, input_event_rate_limit="10/minute")
    await limits.hit_input_events("key-a", 6)
    with pytest.raises(RateLimited):
        await limits.hit_input_events("key-a", 5)
    await limits.hit_input_events("key-a", 4)


async def test_retry_after_is_when_room_returns_not_when_the_window_ends(
    clock: FakeClock,
) -> None:
    """Full 30 s into a window: the window's end (30 s) would meet a second 429."""
    limits = rate_limits(clock, request_rate_limit="3/minute")
    clock.advance(30)
    await requests(limits, 3, "key-a")
    with pytest.raises(RateLimited) as refused:
        await limits.hit_request(key_id="key-a", account_id="acc")
    retry_after = int(refused.value.headers["Retry-After"])
    assert retry_after == 31  # the window's end, and 3 x 59/60 < 3 a second later
    clock.advance(retry_after)
    await limits.hit_request(key_id="key-a", account_id="acc")


async def test_retry_after_counts_the_previous_window(clock: FakeClock) -> None:
    limits = rate_limits(clock, input_event_rate_limit="3/minute")
    await limits.hit_input_events("key-a", 3)
    clock.advance(70)  # 10 s into the next window: 3 x 50/60 = 2.5 still weigh
    with pytest.raises(RateLimited) as refused:
        await limits.hit_input_events("key-a", 2)
    retry_after = int(refused.value.headers["Retry-After"])
    assert retry_after == 11  # 3 x 39/60 = 1.95: floor 1, and 1 + 2 <= 3
    assert refused.value.headers["RateLimit-Remaining"] == "1"
    clock.advance(retry_after)
    await limits.hit_input_events("key-a", 2)


async def test_a_batch_over_the_whole_quota_is_a_400_not_a_429(clock: FakeClock) -> None:
    limits = rate_limits(clock, input_event_rate_limit="5/minute")
    with pytest.raises(InvalidRequest):
        await limits.hit_input_events("key-a", 6)
    await limits.hit_input_events("key-a", 5)


async def test_sign_ins_from_one_address_are_limited_whatever_the_email(
    clock: FakeClock,
) -> None:
    limits = rate_limits(clock, sign_in_rate_limit_per_address="3/minute")
    for email in ("a@example.com", "b@example.com", "c@example.com"):
        await limits.hit_sign_in(email, client_address="192.0.2.7")
    with pytest.raises(RateLimited) as refused:
        await limits.hit_sign_in("d@example.com", client_address="192.0.2.7")
    assert refused.value.headers["RateLimit-Limit"] == "3"
    assert refused.value.headers["Retry-After"] == "61"
    await limits.hit_sign_in("d@example.com", client_address="192.0.2.8")


async def test_sign_ins_for_one_email_are_limited_whatever_the_address(
    clock: FakeClock,
) -> None:
    limits = rate_limits(clock, sign_in_rate_limit_per_email="2/minute")
    await limits.hit_sign_in("owner@example.com", client_address="192.0.2.1")
    await limits.hit_sign_in("Owner@Example.com ", client_address="192.0.2.2")
    with pytest.raises(RateLimited):
        await limits.hit_sign_in("owner@example.com", client_address="192.0.2.3")


async def test_a_sign_in_refused_per_address_spends_none_of_the_email_quota(
    clock: FakeClock,
) -> None:
    limits = rate_limits(
        clock, sign_in_rate_limit_per_address="1/minute", sign_in_rate_limit_per_email="2/minute"
    )
    await limits.hit_sign_in("owner@example.com", client_address="192.0.2.1")
    for _ in range(3):
        with pytest.raises(RateLimited):
            await limits.hit_sign_in("owner@example.com", client_address="192.0.2.1")
    await limits.hit_sign_in("owner@example.com", client_address="192.0.2.2")


async def test_one_ipv6_client_is_counted_by_its_slash_64(clock: FakeClock) -> None:
    limits = rate_limits(clock, sign_in_rate_limit_per_address="1/minute")
    await limits.hit_sign_in("a@example.com", client_address="2001:db8:1:2::1")
    with pytest.raises(RateLimited):
        await limits.hit_sign_in("b@example.com", client_address="2001:db8:1:2:ffff::9")
    await limits.hit_sign_in("b@example.com", client_address="2001:db8:1:3::1")


@pytest.mark.parametrize(
    ("address", "subject"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("testclient", "testclient"),
    ],
)
def test_address_subject(address: str, subject: str) -> None:
    assert address_subject(address) == subject


@pytest.mark.parametrize(
    ("previous", "current", "cost", "expected"),
    [
        (0, 0, 1, 0.0),
        (0, 6, 1, 20.0),  # the window's end: 6 x (1 - a bit) < 6
        (6, 0, 3, 0.0),  # already room: 6 x 20/60 = 2 < 4
        (6, 2, 3, 20.0 - 60.0 * 2 / 6),  # 6 x left/60 + 2 < 4
        (6, 4, 3, 20.0),
        (6, 6, 6, 20.0 + 60.0 * 5 / 6),  # 6 x (1 - f) < 1 in the next window
    ],
)
def test_seconds_until_room(previous: int, current: int, cost: int, expected: float) -> None:
    wait = seconds_until_room(
        amount=6, cost=cost, period_s=60, previous=previous, current=current, now=40.0
    )
    assert wait == pytest.approx(max(0.0, expected))


async def test_quota_holds_on_redis_with_the_same_headers(on_redis: RateLimits) -> None:
    key_id = fresh("key")
    await requests(on_redis, 3, key_id, fresh("acc"))
    with pytest.raises(RateLimited) as refused:
        await on_redis.hit_request(key_id=key_id, account_id=fresh("acc"))
    assert refused.value.headers["RateLimit-Remaining"] == "0"
    assert refused.value.headers["Retry-After"] == "61"
    await on_redis.hit_request(key_id=fresh("key"), account_id=fresh("acc"))


async def test_redis_windows_move_with_the_injected_clock(
    on_redis: RateLimits, clock: FakeClock
) -> None:
    key_id = fresh("key")
    await requests(on_redis, 3, key_id, fresh("acc"))
    clock.advance(61)
    await on_redis.hit_request(key_id=key_id, account_id=fresh("acc"))


async def test_racing_requests_on_redis_get_exactly_the_quota(on_redis: RateLimits) -> None:
    key_id = fresh("key")

    async def one() -> bool:
        try:
            await on_redis.hit_request(key_id=key_id, account_id=fresh("acc"))
        except RateLimited:
            return False
        return True

    accepted = await asyncio.gather(*(one() for _ in range(20)))
    assert sum(accepted) == 3


def _dead_redis_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


async def test_api_quotas_fail_open_when_the_storage_is_down(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    limits = rate_limits(
        clock,
        request_rate_limit="1/minute",
        input_event_rate_limit="1/minute",
        redis_url=_dead_redis_url(),
    )
    try:
        with caplog.at_level(logging.WARNING, logger="rigway.gateway.ratelimit"):
            for _ in range(3):  # past the quota: nothing counts, nothing refuses
                await limits.hit_request(key_id="key-a", account_id="acc")
                await limits.hit_input_events("key-a", 1)
        warnings = [r for r in caplog.records if "quotas not enforced" in r.getMessage()]
        assert len(warnings) == 1
    finally:
        await limits.close()


async def test_sign_in_limit_fails_closed_when_the_storage_is_down(clock: FakeClock) -> None:
    limits = rate_limits(clock, redis_url=_dead_redis_url())
    try:
        with pytest.raises(ServiceUnavailable) as refused:
            await limits.hit_sign_in("owner@example.com", client_address="192.0.2.1")
        assert refused.value.status == 503
        assert refused.value.headers["Retry-After"].isdigit()
    finally:
        await limits.close()


async def test_many_hits_at_once_on_redis_are_all_counted(clock: FakeClock) -> None:
    """More hits in flight than Redis connections: they wait for one, none goes uncounted
    (a pool that refused them would leave the quota unenforced)."""
    limits = rate_limits(clock, request_rate_limit="150/minute", redis_url=REDIS_URL)
    key_id, account_id = fresh("key"), fresh("acc")
    try:
        await asyncio.gather(
            *(limits.hit_request(key_id=key_id, account_id=account_id) for _ in range(150))
        )
        with pytest.raises(RateLimited):
            await limits.hit_request(key_id=key_id, account_id=account_id)
    finally:
        await limits.close()


async def test_redis_counts_exactly_as_the_process_does(clock: FakeClock) -> None:
    """The same calls, at the same moments, through both storages: the same refusals
    with the same headers (Redis counts in one script, the process in Python)."""
    quotas = {
        "request_rate_limit": "5/minute",
        "account_request_rate_limit": "7/minute",
        "input_event_rate_limit": "12/minute",
    }
    in_process = rate_limits(clock, **quotas)
    on_redis = rate_limits(clock, redis_url=REDIS_URL, **quotas)
    key_ids = [fresh("key"), fresh("key")]
    account_id = fresh("acc")

    async def outcome(limits: RateLimits, call: int) -> str:
        try:
            if call % 3 == 2:
                await limits.hit_input_events(key_ids[0], 1 + call % 5)
            else:
                await limits.hit_request(key_id=key_ids[call % 2], account_id=account_id)
        except RateLimited as refused:
            return f"{refused.detail} {sorted(refused.headers.items())}"
        return "ok"

    try:
        seen: list[tuple[str, str]] = []
        for call in range(60):
            seen.append((await outcome(in_process, call), await outcome(on_redis, call)))
            clock.advance(3.7)  # through two windows and a half, at uneven points
        assert all(mine == theirs for mine, theirs in seen), seen
        assert {"ok"} < {mine for mine, _ in seen}  # both outcomes were seen
    finally:
        await on_redis.close()


async def test_counts_go_on_once_each_after_redis_forgets_the_script(
    on_redis: RateLimits,
) -> None:
    """A Redis restart or SCRIPT FLUSH: the next calls answer NOSCRIPT, counted nothing,
    and are sent again with the script loaded."""
    import redis.asyncio

    key_id = fresh("key")
    await requests(on_redis, 2, key_id, fresh("acc"))
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        await client.script_flush()
    finally:
        await client.aclose()
    await on_redis.hit_request(key_id=key_id, account_id=fresh("acc"))  # the third of 3
    with pytest.raises(RateLimited):
        await on_redis.hit_request(key_id=key_id, account_id=fresh("acc"))


async def test_calls_sent_together_each_get_their_own_answer(
    on_redis: RateLimits,
) -> None:
    full, empty = fresh("key"), fresh("key")
    await requests(on_redis, 3, full, fresh("acc"))

    async def outcome(key_id: str) -> str:
        try:
            await on_redis.hit_request(key_id=key_id, account_id=fresh("acc"))
        except RateLimited:
            return "refused"
        return "counted"

    # Started in the same turn of the event loop: sent in one pipeline.
    outcomes = await asyncio.gather(outcome(full), outcome(empty), outcome(full))
    assert list(outcomes) == ["refused", "counted", "refused"]
