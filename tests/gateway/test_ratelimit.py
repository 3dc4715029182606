"""Per-key rate limits on a clock the test moves (time-machine drives `limits`)."""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Iterator

import pytest
import time_machine

from rigway.gateway.errors import InvalidRequest, RateLimited, ServiceUnavailable
from rigway.gateway.ratelimit import RateLimits, seconds_until_room

START = 1_800_000_000.0


@pytest.fixture
def traveller() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(START, tick=False) as coordinates:
        yield coordinates


async def test_request_quota_refuses_the_next_request_with_headers(
    traveller: time_machine.Traveller,
) -> None:
    limits = RateLimits("3/minute", "100/minute", None)
    for _ in range(3):
        await limits.hit_request("key-a")
    with pytest.raises(RateLimited) as refused:
        await limits.hit_request("key-a")
    assert refused.value.status == 429
    assert refused.value.code == "rate_limited"
    headers = refused.value.headers
    assert headers["RateLimit-Limit"] == "3"
    assert headers["RateLimit-Remaining"] == "0"
    # Used up at the very start of a window: the three hits weigh in full until it
    # closes, and a fourth fits the second after.
    assert headers["Retry-After"] == "61"
    assert headers["RateLimit-Reset"] == "61"


async def test_quota_returns_after_the_window_moves(traveller: time_machine.Traveller) -> None:
    limits = RateLimits("3/minute", "100/minute", None)
    for _ in range(3):
        await limits.hit_request("key-a")
    traveller.shift(61)
    await limits.hit_request("key-a")


async def test_keys_have_separate_quotas(traveller: time_machine.Traveller) -> None:
    limits = RateLimits("1/minute", "100/minute", None)
    await limits.hit_request("key-a")
    await limits.hit_request("key-b")


async def test_each_input_event_counts(traveller: time_machine.Traveller) -> None:
    limits = RateLimits("100/minute", "10/minute", None)
    await limits.hit_input_events("key-a", 10)
    with pytest.raises(RateLimited):
        await limits.hit_input_events("key-a", 1)


async def test_a_batch_larger_than_what_is_left_is_refused_whole(
    traveller: time_machine.Traveller,
) -> None:
    limits = RateLimits("100/minute", "10/minute", None)
    await limits.hit_input_events("key-a", 6)
    with pytest.raises(RateLimited):
        await limits.hit_input_events("key-a", 5)
    await limits.hit_input_events("key-a", 4)


async def test_quota_holds_on_redis_with_the_same_headers() -> None:
    """The scale-out storage: CI and this machine run Redis on 127.0.0.1:6379."""
    redis_url = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    limits = RateLimits("3/minute", "100/minute", redis_url)
    key_id = f"key-{secrets.token_hex(8)}"  # a fresh key: nothing to clean, nothing shared
    try:
        for _ in range(3):
            await limits.hit_request(key_id)
        with pytest.raises(RateLimited) as refused:
            await limits.hit_request(key_id)
        assert refused.value.headers["RateLimit-Remaining"] == "0"
        assert 1 <= int(refused.value.headers["Retry-After"]) <= 60
        await limits.hit_request(f"{key_id}-other")
    finally:
        await limits.close()


async def test_retry_after_is_when_room_returns_not_when_the_window_ends(
    traveller: time_machine.Traveller,
) -> None:
    """Full 30 s into a window: the library's reset (30 s) would meet a second 429."""
    limits = RateLimits("3/minute", "100/minute", None)
    traveller.shift(30)
    for _ in range(3):
        await limits.hit_request("key-a")
    with pytest.raises(RateLimited) as refused:
        await limits.hit_request("key-a")
    retry_after = int(refused.value.headers["Retry-After"])
    assert retry_after == 31  # the window's end, and 3 x 59/60 < 3 a second later
    traveller.shift(retry_after)
    await limits.hit_request("key-a")


async def test_retry_after_counts_the_previous_window(
    traveller: time_machine.Traveller,
) -> None:
    limits = RateLimits("100/minute", "3/minute", None)
    await limits.hit_input_events("key-a", 3)
    traveller.shift(70)  # 10 s into the next window: 3 x 50/60 = 2.5 still weigh
    with pytest.raises(RateLimited) as refused:
        await limits.hit_input_events("key-a", 2)
    retry_after = int(refused.value.headers["Retry-After"])
    assert retry_after == 11  # 3 x 39/60 = 1.95: floor 1, and 1 + 2 <= 3
    assert refused.value.headers["RateLimit-Remaining"] == "1"
    traveller.shift(retry_after)
    await limits.hit_input_events("key-a", 2)


async def test_a_batch_over_the_whole_quota_is_a_400_not_a_429(
    traveller: time_machine.Traveller,
) -> None:
    limits = RateLimits("100/minute", "5/minute", None)
    with pytest.raises(InvalidRequest):
        await limits.hit_input_events("key-a", 6)
    await limits.hit_input_events("key-a", 5)


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


def _dead_redis_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


async def test_api_quotas_fail_open_when_the_storage_is_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = RateLimits("1/minute", "1/minute", _dead_redis_url())
    try:
        with caplog.at_level(logging.WARNING, logger="rigway.gateway.ratelimit"):
            for _ in range(3):  # past the quota: nothing counts, nothing refuses
                await limits.hit_request("key-a")
                await limits.hit_input_events("key-a", 1)
        warnings = [r for r in caplog.records if "quotas not enforced" in r.getMessage()]
        assert len(warnings) == 1
    finally:
        await limits.close()


async def test_sign_in_limit_fails_closed_when_the_storage_is_down() -> None:
    limits = RateLimits("1/minute", "1/minute", _dead_redis_url())
    try:
        with pytest.raises(ServiceUnavailable) as refused:
            await limits.hit_sign_in("owner@example.com")
        assert refused.value.status == 503
        assert refused.value.headers["Retry-After"].isdigit()
    finally:
        await limits.close()
