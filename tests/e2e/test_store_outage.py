"""While PostgreSQL or Redis is unreachable the gateway answers 503 (never 500) and
reports not ready; it recovers by itself when they are back. The outage is real: the
gateway reaches each through a TCP proxy the test cuts and restores."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from sqlalchemy.engine import make_url

from tests.e2e.harness import QUICK_AGENT, running_stack
from tests.support.databases import create_postgres_database, drop_postgres_database
from tests.support.store_requests import statuses_of_store_requests
from tests.support.tcp_proxy import CuttableProxy

POSTGRES_SERVER = os.environ.get(
    "RIGWAY_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
async def postgres_proxy() -> AsyncIterator[tuple[CuttableProxy, str]]:
    """A fresh database, and a proxy in front of its server: (proxy, URL through it)."""
    name = f"rigway_t_{secrets.token_hex(6)}"
    url = make_url(await create_postgres_database(POSTGRES_SERVER, name))
    proxy = CuttableProxy(url.host or "127.0.0.1", url.port or 5432)
    await proxy.start()
    try:
        yield proxy, url.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
    finally:
        await proxy.cut()
        await drop_postgres_database(POSTGRES_SERVER, name)


async def _until_status(client: httpx2.AsyncClient, path: str, status: int) -> None:
    async with asyncio.timeout(20):
        while (await client.get(path)).status_code != status:
            await asyncio.sleep(0.1)


async def test_postgres_unreachable_is_503_then_recovers_by_itself(
    tmp_path: Path, postgres_proxy: tuple[CuttableProxy, str]
) -> None:
    proxy, database_url = postgres_proxy
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        session_id = await stack.start_session()
        rig_id = stack.rig_ids[0]

        await proxy.cut()
        during = await statuses_of_store_requests(stack.client, session_id, rig_id)
        ready_during = await stack.client.get("/readyz")
        await proxy.start()
        await _until_status(stack.client, "/readyz", 200)
        session_after = await stack.client.get(f"/v1/sessions/{session_id}")

    assert 500 not in during
    assert set(during) <= {200, 503}, during
    assert during[:3] == [503, 503, 503]
    assert ready_during.status_code == 503
    assert ready_during.json()["error"].startswith("store_unavailable")
    assert session_after.status_code == 200
    assert session_after.json()["status"] == "active"


async def test_redis_unreachable_is_not_ready_and_requests_go_on(
    tmp_path: Path, database_url: str
) -> None:
    url = make_url(REDIS_URL.replace("redis://", "postgresql://", 1))  # host and port only
    proxy = CuttableProxy(url.host or "127.0.0.1", url.port or 6379)
    await proxy.start()
    proxied = f"redis://127.0.0.1:{proxy.port}/{url.database or 0}"
    try:
        async with running_stack(
            tmp_path / "state", database_url, reaper_interval_s=3600, redis_url=proxied
        ) as stack:
            session_id = await stack.start_session()
            await proxy.cut()
            ready_during = await stack.client.get("/readyz")
            screenshot_during = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
            await proxy.start()
            await _until_status(stack.client, "/readyz", 200)
    finally:
        await proxy.cut()

    assert ready_during.status_code == 503
    assert ready_during.json() == {"ok": False, "error": "redis_unavailable"}
    # Request quotas fail open while their counts cannot be reached (docs/operations.md).
    assert screenshot_during.status_code == 200
