"""Per-key rate limits on a clock the test moves (time-machine drives `limits`)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
import time_machine

from rigway.gateway.errors import RateLimited
from rigway.gateway.ratelimit import RateLimits

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
    assert 1 <= int(headers["Retry-After"]) <= 60


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
