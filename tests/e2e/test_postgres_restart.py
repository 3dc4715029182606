"""PostgreSQL restarted under a running gateway: while the server is down every request
that needs the store answers 503 (never 500) and /readyz says `store_unavailable`; once
the server is back on the same data the gateway recovers by itself, its sessions live on
(none ended), and new ones start.

The server is a PostgreSQL of the test's own (`own_postgres_server`), really stopped: by
an immediate shutdown (no checkpoint, connections cut, crash recovery at the next start)
or by SIGKILL of the postmaster and its processes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from tests.e2e.harness import QUICK_AGENT, ok_json, running_stack, session_ended_events
from tests.support.own_postgres import OwnPostgres, own_postgres_server
from tests.support.store_requests import statuses_of_store_requests

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

RECOVERY_TIMEOUT_S = 20.0


@pytest.fixture
async def own_postgres() -> AsyncIterator[OwnPostgres]:
    async with own_postgres_server() as server:
        yield server


async def _until_ready(client: httpx2.AsyncClient) -> None:
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while (await client.get("/readyz")).status_code != 200:
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("crash", ["immediate_shutdown", "sigkill"])
async def test_postgres_restart_is_503_then_recovers_by_itself(
    tmp_path: Path, own_postgres: OwnPostgres, crash: str
) -> None:
    async with running_stack(
        tmp_path / "state",
        own_postgres.url,
        rigs=2,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as stack:
        session_id = await stack.start_session(0)
        ended: list[str] = []

        async def heard_end(ended_id: str) -> None:
            ended.append(ended_id)

        stack.services.sessions.on_session_ended.append(heard_end)
        screenshot_before = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")

        if crash == "sigkill":
            await own_postgres.kill()
        else:
            await own_postgres.stop_immediately()
        # The new session would go on the idle rig: a 201 here would mean no store asked.
        during = await statuses_of_store_requests(stack.client, session_id, stack.rig_ids[1])
        ready_during = await stack.client.get("/readyz")

        await own_postgres.start()
        await _until_ready(stack.client)
        session_after = await stack.client.get(f"/v1/sessions/{session_id}")
        screenshot_after = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        input_after = await stack.client.post(
            f"/v1/sessions/{session_id}/input",
            json={"events": [{"type": "mouse_move", "x": 5, "y": 5}]},
        )
        new_session = await stack.client.post("/v1/sessions", json={"rig_id": stack.rig_ids[1]})
        if new_session.status_code == 201:
            new_end = await stack.client.delete(f"/v1/sessions/{new_session.json()['session_id']}")
            assert new_end.status_code == 200, new_end.text
        ended_events = await session_ended_events(stack.services, session_id)

    assert screenshot_before.status_code == 200, screenshot_before.text
    assert 500 not in during, during
    assert set(during) <= {200, 503}, during
    assert during[:3] == [503, 503, 503], during
    assert ready_during.status_code == 503, ready_during.text
    assert ready_during.json()["error"].startswith("store_unavailable"), ready_during.text
    assert ok_json(session_after)["status"] == "active"
    assert screenshot_after.status_code == 200, screenshot_after.text
    assert input_after.status_code == 200, input_after.text
    assert new_session.status_code == 201, new_session.text
    assert session_id not in ended
    assert ended_events == 0
