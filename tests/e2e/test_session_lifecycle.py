"""Every end reason of docs/api.md (Sessions) through its own code path, billing, and the safety
restore on the host. The fake clock drives idle timeout, max age and billing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from rigway.agent.control import owner_kill_handler, send_command, serve_control
from rigway.gateway.clock import FakeClock
from rigway.gateway.db.models import Session
from rigway.protocol import ops
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.support.session_ends import wait_session_ended

pytestmark = pytest.mark.postgres


@pytest.fixture
async def timed_stack(tmp_path: Path, database_url: str, clock: FakeClock) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        clock=clock,
        reaper_interval_s=3600,
        max_session_age_s=3 * 3600,
        host_gone_grace_s=0.2,
        agent_settings=QUICK_AGENT,
    ) as running:
        yield running


async def _status(stack: Stack, session_id: str) -> dict[str, object]:
    response = await stack.client.get(f"/v1/sessions/{session_id}")
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, dict)
    return body


async def test_client_delete_ends_session_with_reason_client(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await stack.client.delete(f"/v1/sessions/{session_id}")
    assert response.status_code == 200
    assert response.json()["status"] == "ended"
    assert response.json()["ended_reason"] == "client"
    assert response.json()["ended_at"] is not None


async def test_post_end_is_the_same_operation_and_idempotent(stack: Stack) -> None:
    session_id = await stack.start_session()
    first = await stack.client.post(f"/v1/sessions/{session_id}/end")
    again = await stack.client.delete(f"/v1/sessions/{session_id}")
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert again.json()["ended_reason"] == "client"


async def test_idle_session_ends_with_idle_timeout(timed_stack: Stack, clock: FakeClock) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    clock.advance(59)
    assert await timed_stack.services.sessions.reap() == []
    clock.advance(2)
    assert await timed_stack.services.sessions.reap() == [session_id]
    body = await _status(timed_stack, session_id)
    assert (body["status"], body["ended_reason"]) == ("ended", "idle_timeout")


async def test_screenshot_resets_the_idle_timer(timed_stack: Stack, clock: FakeClock) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    clock.advance(50)
    shot = await timed_stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert shot.status_code == 200
    clock.advance(50)
    assert await timed_stack.services.sessions.reap() == []


async def test_dirty_and_targets_do_not_reset_the_idle_timer(
    timed_stack: Stack, clock: FakeClock
) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    clock.advance(50)
    await timed_stack.client.get(f"/v1/sessions/{session_id}/dirty")
    await timed_stack.client.get(f"/v1/sessions/{session_id}/targets")
    clock.advance(11)
    assert await timed_stack.services.sessions.reap() == [session_id]


async def test_session_past_max_age_ends_with_max_age(timed_stack: Stack, clock: FakeClock) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=3600)
    for _ in range(3):
        clock.advance(3599)
        await timed_stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert await timed_stack.services.sessions.reap() == []
    clock.advance(10)
    assert await timed_stack.services.sessions.reap() == [session_id]
    body = await _status(timed_stack, session_id)
    assert body["ended_reason"] == "max_age"


@pytest.mark.parametrize(
    ("seconds", "minutes"), [(0, 1), (1, 1), (60, 1), (61, 2), (3599, 60), (3600, 60)]
)
async def test_billed_minutes_round_wall_clock_up(
    timed_stack: Stack, clock: FakeClock, seconds: int, minutes: int
) -> None:
    # An hour of idle allowed: past its idle deadline a session bills no further.
    session_id = await timed_stack.start_session(idle_timeout_seconds=3600)
    clock.advance(seconds)
    ended = await timed_stack.client.delete(f"/v1/sessions/{session_id}")
    assert ended.json()["billed_minutes"] == minutes
    clock.advance(600)
    assert (await _status(timed_stack, session_id))["billed_minutes"] == minutes


async def test_active_session_bills_up_to_now(timed_stack: Stack, clock: FakeClock) -> None:
    session_id = await timed_stack.start_session()
    clock.advance(125)
    body = await _status(timed_stack, session_id)
    assert (body["billed_minutes"], body["duration_seconds"]) == (3, 125)


async def test_host_that_stays_gone_ends_session_host_gone(timed_stack: Stack) -> None:
    session_id = await timed_stack.start_session()
    await timed_stack.stop_agent(timed_stack.rig_ids[0])
    await wait_session_ended(timed_stack.services, session_id)
    body = await _status(timed_stack, session_id)
    assert body["ended_reason"] == "host_gone"


async def test_owner_kill_from_the_host_ends_session_owner_kill(stack: Stack) -> None:
    session_id = await stack.start_session()
    link = stack.agents[0].link
    reply = await link.request(ops.SESSION_OWNER_KILL, {"session_id": None}, 5.0)
    assert reply == {"ended": True}
    body = await _status(stack, session_id)
    assert body["ended_reason"] == "owner_kill"


async def test_orphan_without_host_after_restart_ends_with_timeout(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(tmp_path / "one", database_url, agent_settings=QUICK_AGENT) as first:
        session_id = await first.start_session()
        rig_token = first.agents[0].rig_token
        del rig_token
    # The first gateway stopped with the session still active in the store.
    async with running_stack(tmp_path / "two", database_url, rigs=0, orphan_grace_s=0.2) as second:
        await wait_session_ended(second.services, session_id)
        async with second.services.db() as db:
            row = await db.get(Session, session_id)
        assert row is not None
        assert (row.status, row.ended_reason) == ("ended", "timeout")


async def test_session_end_releases_held_keys_and_buttons(stack: Stack) -> None:
    session_id = await stack.start_session()
    events = [
        {"type": "key_down", "key": "shift"},
        {"type": "key_down", "key": "ctrl"},
    ]
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json={"events": events})
    assert response.status_code == 200
    assert stack.sim().pressed_keys == {"shift", "ctrl"}
    await stack.client.delete(f"/v1/sessions/{session_id}")
    assert stack.sim().pressed_keys == frozenset()
    assert stack.sim().pressed_buttons == frozenset()


async def test_link_drop_releases_held_keys_at_once(tmp_path: Path, database_url: str) -> None:
    """The link drops under a running agent: held keys go up at once, not when a grace
    ends the session (both graces outlast the test), and the session goes on."""
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        host_gone_grace_s=60.0,
        agent_settings={"heartbeat_interval_s": 1.0, "session_grace_s": 60.0},
    ) as stack:
        session_id = await stack.start_session()
        pressed = await stack.client.post(
            f"/v1/sessions/{session_id}/input",
            json={"events": [{"type": "key_down", "key": "alt"}]},
        )
        assert pressed.status_code == 200, pressed.text
        assert stack.sim().pressed_keys == {"alt"}
        link = stack.services.registry.get(stack.rig_ids[0])
        assert link is not None
        await link.close(code=1011, reason="test: link dropped")  # the agent keeps running
        await stack.wait_until(lambda: stack.sim().pressed_keys == frozenset())
        # The release was the drop's own: the session survived it, on both ends.
        await stack.wait_until(lambda: stack.agents[0].link.connection_count == 2)
        assert (await _status(stack, session_id))["status"] == "active"
        shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert shot.status_code == 200, shot.text


async def test_session_end_kills_launched_apps(stack: Stack) -> None:
    session_id = await stack.start_session()
    launched = await stack.client.post(
        f"/v1/sessions/{session_id}/app/launch", json={"path": "sleep", "args": ["300"]}
    )
    assert launched.status_code == 200, launched.text
    pid = launched.json()["pid"]
    assert psutil.pid_exists(pid)
    await stack.client.delete(f"/v1/sessions/{session_id}")
    assert not _is_running(pid)


def _is_running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_agent_kill_command_ends_session_owner_kill(stack: Stack, tmp_path: Path) -> None:
    session_id = await stack.start_session()
    socket_path = tmp_path / "agent.sock"
    server = await serve_control(socket_path, owner_kill_handler(stack.agents[0].link))
    try:
        answer = await send_command(socket_path, "owner_kill")
    finally:
        server.close()
        await server.wait_closed()
    assert answer == {"ok": True, "ended": True}
    assert (await _status(stack, session_id))["ended_reason"] == "owner_kill"
    assert socket_path.stat().st_mode & 0o777 == 0o600


async def test_a_late_reaper_bills_up_to_the_idle_deadline_not_past_it(
    timed_stack: Stack, clock: FakeClock
) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    clock.advance(60 * 10)  # the reaper (or a gateway that was down) notices late
    assert await timed_stack.services.sessions.reap() == [session_id]
    body = await _status(timed_stack, session_id)
    assert (body["billed_minutes"], body["duration_seconds"]) == (1, 60)


async def test_max_age_bills_exactly_the_maximum(timed_stack: Stack, clock: FakeClock) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=3600)
    for _ in range(3):
        clock.advance(3599)
        await timed_stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    clock.advance(10)  # 3 h + 7 s: the reaper is a few seconds late
    assert await timed_stack.services.sessions.reap() == [session_id]
    body = await _status(timed_stack, session_id)
    assert body["ended_reason"] == "max_age"
    assert (body["billed_minutes"], body["duration_seconds"]) == (180, 3 * 3600)


async def test_a_session_is_not_idle_while_its_input_batch_runs(
    timed_stack: Stack, clock: FakeClock
) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    events = [{"type": "mouse_move", "x": 1, "y": 1, "delay_ms": 1000}]
    batch = asyncio.create_task(
        timed_stack.client.post(f"/v1/sessions/{session_id}/input", json={"events": events})
    )
    # The host has moved the pointer and now pauses a second inside the batch.
    await timed_stack.wait_until(lambda: timed_stack.sim().pointer == (1, 1))
    clock.advance(120)
    assert await timed_stack.services.sessions.reap() == []
    assert (await batch).status_code == 200
    assert await timed_stack.services.sessions.reap() == []  # its end counts as activity
