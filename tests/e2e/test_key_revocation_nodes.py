"""A key revoked on one gateway node stops working on every other node at once (a
notice over Redis), and a node that may have missed notices (its subscription dropped)
flushes its key cache when it subscribes again."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
import pytest
from sqlalchemy.engine import make_url

from rigway.gateway.notices import RedisNotices
from tests.e2e.harness import Stack, running_stack
from tests.support.tcp_proxy import CuttableProxy

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# The bar: another node refuses a revoked key within this long.
REVOCATION_SEEN_WITHIN_S = 1.0


async def _subscribed(stack: Stack) -> None:
    notices = stack.services.notices
    assert isinstance(notices, RedisNotices)
    async with asyncio.timeout(10):
        await notices.subscribed.wait()


async def _refused_within(client: httpx2.AsyncClient, key: str, timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        while True:
            answer = await client.get("/v1/rigs", headers={"Authorization": f"Bearer {key}"})
            if answer.status_code == 401:
                return
            assert answer.status_code == 200, answer.text


async def _key_made_before_node_b(node_a: Stack) -> tuple[str, str]:
    """Node A's own key (id, secret), made as A started: before node B subscribed, so
    the notice of its creation cannot reach B later and empty B's cache by itself."""
    [key] = await node_a.services.keys.list(node_a.account_id)
    return key.id, node_a.api_key


@pytest.fixture
async def redis_proxy() -> AsyncIterator[CuttableProxy]:
    url = make_url(REDIS_URL.replace("redis://", "postgresql://", 1))  # host and port only
    proxy = CuttableProxy(url.host or "127.0.0.1", url.port or 6379)
    await proxy.start()
    yield proxy
    await proxy.cut()


async def test_a_key_revoked_on_one_node_is_refused_by_another_within_a_second(
    tmp_path: Path, shared_store_url: str
) -> None:
    async with AsyncExitStack() as nodes:
        node_a = await nodes.enter_async_context(
            running_stack(tmp_path / "a", shared_store_url, rigs=0, redis_url=REDIS_URL)
        )
        node_b = await nodes.enter_async_context(
            running_stack(tmp_path / "b", shared_store_url, rigs=0, redis_url=REDIS_URL)
        )
        await _subscribed(node_a)
        await _subscribed(node_b)
        key_id, secret = await _key_made_before_node_b(node_a)
        on_b = await node_b.client.get("/v1/rigs", headers={"Authorization": f"Bearer {secret}"})
        assert on_b.status_code == 200  # node B now holds the key in its cache

        await node_a.services.keys.revoke(node_a.account_id, key_id)

        await _refused_within(node_b.client, secret, REVOCATION_SEEN_WITHIN_S)


async def test_a_node_that_missed_notices_flushes_its_key_cache_when_it_resubscribes(
    tmp_path: Path, shared_store_url: str, redis_proxy: CuttableProxy
) -> None:
    async with AsyncExitStack() as nodes:
        node_a = await nodes.enter_async_context(
            running_stack(tmp_path / "a", shared_store_url, rigs=0, redis_url=REDIS_URL)
        )
        node_b = await nodes.enter_async_context(
            running_stack(
                tmp_path / "b",
                shared_store_url,
                rigs=0,
                redis_url=f"redis://127.0.0.1:{redis_proxy.port}/0",
            )
        )
        await _subscribed(node_b)
        key_id, secret = await _key_made_before_node_b(node_a)
        on_b = await node_b.client.get("/v1/rigs", headers={"Authorization": f"Bearer {secret}"})
        assert on_b.status_code == 200

        notices_b = node_b.services.notices
        assert isinstance(notices_b, RedisNotices)
        await redis_proxy.cut()
        async with asyncio.timeout(10):
            while notices_b.subscribed.is_set():
                await asyncio.sleep(0.01)
        await node_a.services.keys.revoke(node_a.account_id, key_id)  # B misses this
        still_cached = await node_b.client.get(
            "/v1/rigs", headers={"Authorization": f"Bearer {secret}"}
        )
        await redis_proxy.start()
        await _subscribed(node_b)

        refused = await node_b.client.get("/v1/rigs", headers={"Authorization": f"Bearer {secret}"})
    assert still_cached.status_code == 200  # the notice was lost: the cache still said yes
    assert refused.status_code == 401
