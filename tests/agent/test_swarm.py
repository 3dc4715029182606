"""A swarm rig against the fake gateway end of the host link: what it answers, its
heartbeats, and what it tells the gateway when its link comes back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from rigway.agent.swarm import CannedScreen, RigSwarm
from rigway.protocol import ops
from tests.agent.fake_gateway import RIG_TOKEN, AgentConnection, FakeGateway


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    async with FakeGateway(heartbeat_interval_s=0.2).running() as running:
        yield running


@contextlib.asynccontextmanager
async def swarm_of_one(gateway: FakeGateway) -> AsyncIterator[RigSwarm]:
    swarm = RigSwarm([gateway.url], [RIG_TOKEN], backoff_initial_s=0.01, backoff_max_s=0.05)
    running = asyncio.create_task(swarm.run())
    try:
        yield swarm
    finally:
        swarm.stop()
        async with asyncio.timeout(10):
            await running


async def _start(connection: AgentConnection, session_id: str) -> None:
    started = await connection.request(ops.SESSION_START, {"session_id": session_id})
    assert started.header["ok"] is True, started.header


async def test_requests_outside_the_session_are_refused_and_unknown_ops_named(
    gateway: FakeGateway,
) -> None:
    async with swarm_of_one(gateway):
        connection = await gateway.next_connection()
        before = await connection.request(ops.SCREEN_CAPTURE, {"session_id": "ses_1"})
        await _start(connection, "ses_1")
        other = await connection.request(ops.A11Y_TARGETS, {"session_id": "ses_2"})
        unknown = await connection.request(ops.STREAM_OFFER, {"session_id": "ses_1"})
        woken = await connection.request(ops.WAKE_SEND, {"mac": "00:11:22:33:44:55"})

    assert before.header["error"]["code"] == ops.ERROR_SESSION_MISMATCH
    assert other.header["error"]["code"] == ops.ERROR_SESSION_MISMATCH
    assert unknown.header["error"]["code"] == ops.ERROR_UNKNOWN_OP
    assert woken.header["ok"] is True


async def test_a_capture_is_the_canned_jpeg_in_a_binary_frame(gateway: FakeGateway) -> None:
    async with swarm_of_one(gateway):
        connection = await gateway.next_connection()
        await _start(connection, "ses_1")
        captured = await connection.request(ops.SCREEN_CAPTURE, {"session_id": "ses_1"})
        changed = await connection.request(
            ops.SCREEN_CHANGED_SINCE, {"session_id": "ses_1", "damage_mark": 0}
        )

    screen = CannedScreen.default()
    assert captured.is_binary
    assert captured.payload == screen.jpeg
    body = ops.ScreenCaptured.model_validate(captured.header["body"])
    assert (body.width, body.height) == (screen.width, screen.height)
    assert ops.ScreenChanged.model_validate(changed.header["body"]).known is True


async def test_the_rig_pings_and_answers_the_gateways_pings(gateway: FakeGateway) -> None:
    async with swarm_of_one(gateway):
        connection = await gateway.next_connection()
        await connection.send({"t": "ping", "sent_at": 12.5})
        async with asyncio.timeout(5):
            pong = await connection.pongs.get()
            ping = await connection.pings.get()

    assert pong["sent_at"] == 12.5
    assert ping["t"] == "ping"


async def test_a_relink_names_the_open_session_and_forgets_it_when_told_it_ended(
    gateway: FakeGateway,
) -> None:
    async with swarm_of_one(gateway) as swarm:
        first = await gateway.next_connection()
        await _start(first, "ses_1")
        await first.drop()
        second = await gateway.next_connection()
        assert second.hello.open_session_ids == ["ses_1"]
        held_while_relinked = swarm.rigs[0].active_session_id

        gateway.ended_session_ids = ["ses_1"]
        await second.drop()
        third = await gateway.next_connection()
        assert third.hello.open_session_ids == ["ses_1"]
        async with asyncio.timeout(5):
            await swarm.wait_linked()
        assert (held_while_relinked, swarm.rigs[0].active_session_id) == ("ses_1", None)
        assert swarm.rigs[0].connection_count == 3


async def test_a_silent_gateway_is_left_and_dialled_again(gateway: FakeGateway) -> None:
    gateway.answer_pings = False
    async with swarm_of_one(gateway):
        first = await gateway.next_connection()
        async with asyncio.timeout(10):
            await first.closed.wait()
        second = await gateway.next_connection()

    assert first.ws.close_code == 1011
    assert second.hello.open_session_ids == []


async def test_an_undecodable_frame_closes_the_link_with_1007_and_it_is_dialled_again(
    gateway: FakeGateway,
) -> None:
    async with swarm_of_one(gateway):
        first = await gateway.next_connection()
        await first.ws.send(b"\x00")
        async with asyncio.timeout(10):
            await first.closed.wait()
        await gateway.next_connection()

    assert first.ws.close_code == 1007


async def test_rigs_start_spread_over_the_nodes(gateway: FakeGateway) -> None:
    async with FakeGateway().running() as other:
        swarm = RigSwarm([gateway.url, other.url], [RIG_TOKEN, RIG_TOKEN])
        running = asyncio.create_task(swarm.run())
        try:
            on_first = await gateway.next_connection()
            on_second = await other.next_connection()
        finally:
            swarm.stop()
            async with asyncio.timeout(10):
                await running

    assert on_first.hello.backend == on_second.hello.backend == "swarm"
