"""A node's Redis clients survive a Redis restart: the first command after it succeeds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import redis.asyncio

from rigway.gateway.notices import RedisNotices
from rigway.gateway.redis_clients import reconnecting_options, redis_client
from tests.support.own_redis import own_redis_server


async def test_the_first_command_after_a_restart_runs_on_a_fresh_connection(
    tmp_path: Path,
) -> None:
    async with own_redis_server(tmp_path) as server:
        client = redis_client(server.url)
        try:
            assert await client.set("k", b"before")
            await server.kill()
            await server.start()
            # The pooled socket died with the old server; without a retry this raises
            # ConnectionError ("Connection closed by server").
            assert await client.get("k") is None  # nothing kept across the restart
            assert await client.set("k", b"after")
        finally:
            await client.aclose()


async def test_a_pool_built_with_the_options_retries_as_well(tmp_path: Path) -> None:
    async with own_redis_server(tmp_path) as server:
        pool = redis.asyncio.ConnectionPool.from_url(server.url, **reconnecting_options())
        client = redis.asyncio.Redis(connection_pool=pool)
        try:
            assert await client.incr("hits") == 1
            await server.kill()
            await server.start()
            assert await client.incr("hits") == 1
        finally:
            await client.aclose()
            await pool.aclose()


async def test_a_dropped_subscription_reaches_the_notices_which_flush_again(
    tmp_path: Path,
) -> None:
    # A subscription that reconnected by itself would hide that notices were lost
    # meanwhile: the node must hear of it and flush its caches.
    async with own_redis_server(tmp_path) as server:
        notices = RedisNotices(server.url)
        flushes: list[int] = []
        notices.on_resubscribed(lambda: flushes.append(1))
        killer = redis_client(server.url)
        await notices.start()
        try:
            async with asyncio.timeout(10):
                await notices.subscribed.wait()
                assert await killer.client_kill_filter(_type="pubsub") == 1
                while len(flushes) < 2:
                    await asyncio.sleep(0.01)
        finally:
            await notices.stop()
            await killer.aclose()
