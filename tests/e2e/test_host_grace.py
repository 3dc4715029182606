"""The graces of the host link: a host that comes back in time keeps its session.

The tests beside these (`test_session_lifecycle`) show a host that stays away ending its
session; these show the grace is real: a session survives a link that drops and comes
back within `host_gone_grace_s`, and a gateway restart whose host returns within
`orphan_grace_s`. With either grace at 0 the session would end before the host is back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rigway.gateway.hostlink.connection import HostConnection
from tests.e2e.harness import Stack, running_stack
from tests.e2e.raw_host import JPEG, pair_rig, raw_host

pytestmark = pytest.mark.postgres

# Graces far longer than a reconnect (the agent's first redial waits 0.25 to 0.5 s), so
# only a grace that is not applied can end the session inside a test.
GRACE_S = 60.0


async def _status(stack: Stack, session_id: str) -> str:
    response = await stack.client.get(f"/v1/sessions/{session_id}")
    assert response.status_code == 200, response.text
    status = response.json()["status"]
    assert isinstance(status, str)
    return status


async def test_a_link_that_drops_and_returns_within_the_grace_keeps_its_session(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        host_gone_grace_s=GRACE_S,
        agent_settings={"heartbeat_interval_s": 1.0, "session_grace_s": GRACE_S},
    ) as stack:
        rig_id = stack.rig_ids[0]
        session_id = await stack.start_session()
        dropped = stack.services.registry.get(rig_id)
        assert dropped is not None
        await dropped.close(code=1011, reason="test: link dropped")
        assert not stack.services.registry.is_online(rig_id)

        def is_back() -> bool:
            current: HostConnection | None = stack.services.registry.get(rig_id)
            return current is not None and current is not dropped

        await stack.wait_until(is_back)
        await stack.wait_until(lambda: stack.agents[0].link.connection_count == 2)
        assert stack.services.sessions.live.get(session_id) is not None
        assert await _status(stack, session_id) == "active"
        shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert shot.status_code == 200, shot.text
        assert shot.headers["content-type"] == "image/jpeg"


async def test_a_host_back_within_the_orphan_grace_after_a_restart_keeps_its_session(
    tmp_path: Path, database_url: str
) -> None:
    state_dir = tmp_path / "state"
    async with running_stack(state_dir, database_url, rigs=0, reaper_interval_s=3600) as first:
        rig_id, rig_token = await pair_rig(first)
        async with raw_host(first.base_url, rig_token):
            response = await first.client.post("/v1/sessions", json={"rig_id": rig_id})
            assert response.status_code == 201, response.text
            session_id = response.json()["session_id"]
        api_key = first.api_key
    # The gateway restarts (same store) with the session still active in it; the host
    # comes back still running that session.
    async with running_stack(
        state_dir, database_url, rigs=0, reaper_interval_s=3600, orphan_grace_s=GRACE_S
    ) as second:
        second.client.headers["Authorization"] = f"Bearer {api_key}"
        assert second.services.sessions.live.get(session_id) is not None
        async with raw_host(second.base_url, rig_token, open_session_ids=[session_id]) as host:
            assert host.welcome.ended_session_ids == []
            await second.wait_online(rig_id)
            assert await _status(second, session_id) == "active"
            shot = await second.client.get(f"/v1/sessions/{session_id}/screenshot")
            assert shot.status_code == 200, shot.text
            assert shot.content == JPEG
