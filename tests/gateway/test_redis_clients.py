"""A node's Redis clients survive a Redis restart: the first command after it succeeds."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio

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
