"""The gateway's heartbeat on a real server: a host that says hello and then nothing is
closed with 4408; one that answers the gateway's pings stays."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import Stack, running_stack
from tests.e2e.raw_host import pair_rig, raw_host

pytestmark = pytest.mark.postgres

CLOSE_HEARTBEAT_TIMEOUT = 4408
INTERVAL_S = 0.1  # silent for 3 intervals: closed


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        reaper_interval_s=3600,
        heartbeat_interval_s=INTERVAL_S,
    ) as running:
        yield running


async def test_a_host_silent_after_its_hello_is_closed_with_4408(stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(stack)
    async with raw_host(stack.base_url, rig_token, answer_pings=False) as host:
        assert host.welcome.heartbeat_interval_s == INTERVAL_S
        await stack.wait_online(rig_id)
        async with asyncio.timeout(10):
            await host.ws.wait_closed()
        assert host.ws.close_code == CLOSE_HEARTBEAT_TIMEOUT
        assert host.ws.close_reason == "heartbeat_timeout"
        assert host.pings_seen >= 1  # the gateway asked; the host never answered
        await stack.wait_until(lambda: not stack.services.registry.is_online(rig_id))


async def test_a_host_that_answers_pings_stays_connected(stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(stack)
    async with raw_host(stack.base_url, rig_token) as host:
        # Ten pings answered: over three times the silence that closes a mute host.
        await stack.wait_until(lambda: host.pings_seen >= 10 or host.ws.close_code is not None)
        assert host.ws.close_code is None
        assert stack.services.registry.is_online(rig_id)
