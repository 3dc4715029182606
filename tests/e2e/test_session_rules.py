"""Session rules of the contract on the running stack: what counts as activity, the
reaper on its own, the host's deadlines per operation, the default idle timeout, which
sessions a key lists, keys hashed at rest, and the host hello's protocol version."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
import websockets
from sqlalchemy import text

from rigway.agent.backends.base import AccessibilitySnapshot, Rect, WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.pairing import pair
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.clock import FakeClock
from rigway.gateway.settings import load_settings
from rigway.protocol import PROTOCOL_VERSION, Hello
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
        agent_settings=QUICK_AGENT,
    ) as running:
        yield running


async def _session(stack: Stack, session_id: str, client: httpx2.AsyncClient | None = None) -> Any:
    response = await (client or stack.client).get(f"/v1/sessions/{session_id}")
    assert response.status_code == 200, response.text
    return response.json()


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# ---- 1. app launch and kill are actions, not activity ---------------------------------


async def test_app_launch_does_not_move_last_activity_but_input_does(
    timed_stack: Stack, clock: FakeClock
) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    started = _at((await _session(timed_stack, session_id))["last_activity_at"])

    clock.advance(30)
    launched = await timed_stack.client.post(
        f"/v1/sessions/{session_id}/app/launch", json={"path": "sleep", "args": ["300"]}
    )
    assert launched.status_code == 200, launched.text
    after_launch = await _session(timed_stack, session_id)
    assert _at(after_launch["last_activity_at"]) == started
    assert after_launch["action_count"] == 1  # still counted as an action

    clock.advance(10)
    typed = await timed_stack.client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_move", "x": 5, "y": 5}]},
    )
    assert typed.status_code == 200, typed.text
    after_input = await _session(timed_stack, session_id)
    assert _at(after_input["last_activity_at"]) == started + timedelta(seconds=40)


async def test_a_session_with_only_app_operations_idles_out(
    timed_stack: Stack, clock: FakeClock
) -> None:
    session_id = await timed_stack.start_session(idle_timeout_seconds=60)
    clock.advance(40)
    launched = await timed_stack.client.post(
        f"/v1/sessions/{session_id}/app/launch", json={"path": "sleep", "args": ["300"]}
    )
    assert launched.status_code == 200, launched.text
    clock.advance(10)
    killed = await timed_stack.client.post(
        f"/v1/sessions/{session_id}/app/kill", json={"pid": launched.json()["pid"]}
    )
    assert killed.status_code == 200, killed.text
    assert (await _session(timed_stack, session_id))["action_count"] == 2
    clock.advance(11)  # 61 s after the start, 11 s after the kill
    assert await timed_stack.services.sessions.reap() == [session_id]
    body = await _session(timed_stack, session_id)
    assert (body["status"], body["ended_reason"]) == ("ended", "idle_timeout")


# ---- 2. the reaper runs by itself ----------------------------------------------------


async def test_the_reaper_ends_an_idle_session_without_being_called(
    tmp_path: Path, database_url: str, clock: FakeClock
) -> None:
    # The idle window cannot go under 60 s, so the fake clock stands in for the minute;
    # the reaper's loop runs on real time, every 50 ms, and nothing here calls reap().
    async with running_stack(
        tmp_path / "state",
        database_url,
        clock=clock,
        reaper_interval_s=0.05,
        agent_settings=QUICK_AGENT,
    ) as stack:
        session_id = await stack.start_session(idle_timeout_seconds=60)
        clock.advance(61)
        await wait_session_ended(stack.services, session_id)
        body = await _session(stack, session_id)
        assert (body["status"], body["ended_reason"]) == ("ended", "idle_timeout")
        assert body["duration_seconds"] == 60  # billed up to the idle deadline


# ---- 3. dirty and targets get the "other" deadline on their own ------------------------


class SlowSim(SimDesktop):
    """The sim desktop, whose damage poll and accessibility walk take `delay_s` once
    `slow` is set. Both run on worker threads of the agent, so a sleep is the slow
    host itself, not a stalled event loop."""

    slow = False
    delay_s = 1.5

    def poll_damage(self) -> list[Rect]:
        if self.slow:
            time.sleep(self.delay_s)
        return super().poll_damage()

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        if self.slow:
            time.sleep(self.delay_s)
        return super().snapshot_accessibility(budget)


@pytest.fixture
async def slow_session(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[Stack, str]]:
    """A session on a host whose reads each take 1.5 s, between the scaled-down
    deadlines: screenshot/observe 0.5 s, others 10 s (the default), as 7 s would lie
    between 5 s and 10 s."""
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        reaper_interval_s=3600,
        screen_timeout_s=0.5,
        host_timeout_s=10.0,
        agent_settings=QUICK_AGENT,
    ) as stack:
        desktop = SlowSim()
        await stack.add_agent(desktop)
        session_id = await stack.start_session()
        desktop.slow = True
        yield stack, session_id


async def test_a_slow_targets_read_gets_the_longer_deadline(
    slow_session: tuple[Stack, str],
) -> None:
    stack, session_id = slow_session
    targets = await stack.client.get(f"/v1/sessions/{session_id}/targets")
    assert targets.status_code == 200, targets.text
    # An empty list is what the gateway answers when the host misses the deadline.
    assert targets.json()["targets"], "the targets read gave up before the host answered"


async def test_a_slow_dirty_read_gets_the_longer_deadline(slow_session: tuple[Stack, str]) -> None:
    stack, session_id = slow_session
    dirty = await stack.client.get(f"/v1/sessions/{session_id}/dirty")
    assert dirty.status_code == 200, dirty.text


async def test_observe_keeps_the_screenshot_deadline_for_its_legs(
    slow_session: tuple[Stack, str],
) -> None:
    stack, session_id = slow_session
    observed = await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
    assert observed.status_code == 504, observed.text
    assert observed.json()["error"].startswith("host_timeout")


# ---- 4. the default idle timeout comes from the settings -----------------------------


async def test_a_session_without_idle_timeout_gets_the_configured_default(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=2,
        reaper_interval_s=3600,
        default_idle_timeout_s=120,
        agent_settings=QUICK_AGENT,
    ) as stack:
        defaulted = await stack.start_session(0)
        chosen = await stack.start_session(1, idle_timeout_seconds=300)
        assert (await _session(stack, defaulted))["idle_timeout_seconds"] == 120
        assert (await _session(stack, chosen))["idle_timeout_seconds"] == 300


async def test_the_default_idle_timeout_without_settings_is_900(stack: Stack) -> None:
    session_id = await stack.start_session()
    assert (await _session(stack, session_id))["idle_timeout_seconds"] == 900


def test_the_default_idle_timeout_is_read_from_the_environment() -> None:
    settings = load_settings({"RIGWAY_DEFAULT_IDLE_TIMEOUT_SECONDS": "600"})
    assert settings.default_idle_timeout_s == 600
    with pytest.raises(ValueError, match="default_idle_timeout_s"):
        load_settings({"RIGWAY_DEFAULT_IDLE_TIMEOUT_SECONDS": "59"})


# ---- 5a. a key lists the sessions it created -----------------------------------------


async def test_a_key_lists_only_the_sessions_it_created(tmp_path: Path, database_url: str) -> None:
    async with running_stack(
        tmp_path / "state", database_url, rigs=2, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        key_b = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="b"))
        identity = stack.services.identity
        assert identity is not None
        console_token = identity.issue("usr_test", stack.account_id)
        async with (
            _client(stack, key_b.secret) as client_b,
            _client(stack, console_token) as console,
        ):
            by_a = await stack.start_session(0)
            created = await client_b.post("/v1/sessions", json={"rig_id": stack.rig_ids[1]})
            assert created.status_code == 201, created.text
            by_b = created.json()["session_id"]

            assert await _listed(stack.client) == [by_a]
            assert await _listed(client_b) == [by_b]
            # The console sees the whole account: the keys' lists are filtered, not short.
            assert sorted(await _listed(console)) == sorted([by_a, by_b])


def _client(stack: Stack, bearer: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        base_url=stack.base_url, headers={"Authorization": f"Bearer {bearer}"}, trust_env=False
    )


async def _listed(client: httpx2.AsyncClient) -> list[str]:
    response = await client.get("/v1/sessions")
    assert response.status_code == 200, response.text
    return [session["session_id"] for session in response.json()["sessions"]]


# ---- 5b. API keys are hashed at rest -------------------------------------------------


async def test_an_api_key_is_stored_as_its_sha256_not_in_plain(stack: Stack) -> None:
    identity = stack.services.identity
    assert identity is not None
    async with _client(stack, identity.issue("usr_test", stack.account_id)) as console:
        created = await console.post("/v1/keys", json={"name": "at rest"})
    assert created.status_code == 201, created.text
    secret = created.json()["secret"]
    key_id = created.json()["id"]

    async with stack.services.db() as db:
        result = await db.execute(text("SELECT * FROM api_keys WHERE id = :id"), {"id": key_id})
        row = dict(result.mappings().one())
    # The random part after the lookup prefix (which is stored, and shown in lists).
    hidden = secret[len(row["key_prefix"]) :]
    assert len(hidden) >= 40
    stored = json.dumps({name: str(value) for name, value in row.items()})
    assert secret not in stored
    assert hidden not in stored
    assert row["key_hash"] == hashlib.sha256(secret.encode()).hexdigest()  # api_keys.py
    # The stored hash is what authenticates the key.
    async with _client(stack, secret) as client:
        assert (await client.get("/v1/rigs")).status_code == 200


# ---- 5c. the host hello's protocol version -------------------------------------------


async def test_the_gateway_refuses_a_hello_with_another_protocol_version(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, reaper_interval_s=3600
    ) as stack:
        code = await stack.services.rigs.create_pairing_code(stack.account_id)
        paired = await pair(stack.base_url, code.code, name="raw", os="test-os", gpu="")
        url = stack.base_url.replace("http://", "ws://") + "/v1/agent/connect"
        headers = {"Authorization": f"Bearer {paired.rig_token}"}
        hello = Hello(
            protocol=PROTOCOL_VERSION, agent_version="test", native_width=800, native_height=600
        ).model_dump()

        async with websockets.connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps(hello | {"protocol": PROTOCOL_VERSION + 1}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4400, "protocol_unsupported")
        assert not stack.services.registry.is_online(paired.rig_id)

        # The same rig and token with the gateway's version: welcomed, so the refusal
        # above was the version's.
        async with websockets.connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps(hello))
            welcome = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert (welcome["t"], welcome["rig_id"]) == ("welcome", paired.rig_id)
            await stack.wait_online(paired.rig_id)
