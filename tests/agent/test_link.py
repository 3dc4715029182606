from __future__ import annotations

import asyncio
import logging
import random
import socket
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import pytest
import simplejpeg
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosedError

from rigway.agent.backends.base import AccessibilitySnapshot, Pixels, WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.dispatch import Dispatcher
from rigway.agent.link import (
    AgentLink,
    LinkAuthError,
    LinkProtocolError,
    LinkUnavailableError,
    backoff_delay_s,
)
from rigway.agent.worker import SerialWorker
from rigway.protocol import PROTOCOL_VERSION, Hello, encode_text, ops
from tests.agent.assembly import dispatcher_over
from tests.agent.fake_gateway import RIG_TOKEN, AgentConnection, FakeGateway
from tests.agent.fakes import FakeApps, RecordingDesktop
from tests.support.log_records import log_records


@dataclass
class Agent:
    sim: SimDesktop
    desktop: RecordingDesktop
    apps: FakeApps
    dispatcher: Dispatcher

    def link(
        self, url: str | list[str], *, token: str = RIG_TOKEN, grace_s: float = 30.0
    ) -> AgentLink:
        hello = Hello(
            protocol=PROTOCOL_VERSION,
            agent_version="0.1.0",
            backend="sim",
            capture_mode="sim",
            native_width=1920,
            native_height=1080,
        )
        return AgentLink(
            url,
            token,
            hello,
            self.dispatcher,
            session_grace_s=grace_s,
            backoff_initial_s=0.01,
            backoff_max_s=0.05,
            open_timeout_s=5.0,
            rng=random.Random(7),
        )


@pytest.fixture
async def agent(
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: SerialWorker,
) -> AsyncIterator[Agent]:
    sim = SimDesktop()
    desktop = RecordingDesktop(sim)
    apps = FakeApps()
    dispatcher = dispatcher_over(desktop, apps, screen_worker, a11y_worker, input_worker)
    yield Agent(sim, desktop, apps, dispatcher)
    await dispatcher.close()


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    async with FakeGateway().running() as running:
        yield running


@pytest.fixture
async def link(agent: Agent, gateway: FakeGateway) -> AsyncIterator[AgentLink]:
    link = agent.link(gateway.url)
    task = asyncio.create_task(link.run())
    yield link
    await link.stop()
    async with asyncio.timeout(10):
        await task


async def _start(connection: Any, session_id: str = "s1") -> None:
    reply = await connection.request(ops.SESSION_START, {"session_id": session_id})
    assert reply.header["ok"], reply.header


async def test_hello_welcome_then_capture_is_a_binary_jpeg(
    link: AgentLink, gateway: FakeGateway
) -> None:
    connection = await gateway.next_connection()
    assert connection.hello.native_width == 1920
    assert connection.hello.open_session_ids == []
    # Compression off: the agent does not even offer permessage-deflate.
    assert connection.ws.request is not None
    assert connection.ws.request.headers.get("Sec-WebSocket-Extensions") is None
    await _start(connection)
    reply = await connection.request(ops.SCREEN_CAPTURE, {"session_id": "s1", "max_width": 1280})
    assert reply.is_binary
    assert reply.header["ok"]
    assert reply.header["body"]["width"] == 1280
    assert simplejpeg.decode_jpeg_header(reply.payload)[:2] == (720, 1280)
    assert link.rig_id == "rig-1"


async def test_errors_come_back_as_failed_replies(link: AgentLink, gateway: FakeGateway) -> None:
    connection = await gateway.next_connection()
    reply = await connection.request(ops.SCREEN_DIRTY, {"session_id": "nope"})
    assert reply.header["ok"] is False
    assert reply.header["error"]["code"] == ops.ERROR_SESSION_MISMATCH
    assert not reply.is_binary


async def test_agent_answers_pings(link: AgentLink, gateway: FakeGateway) -> None:
    connection = await gateway.next_connection()
    await connection.send({"t": "ping", "sent_at": 12.5})
    async with asyncio.timeout(5):
        pong = await connection.pongs.get()
    assert pong["sent_at"] == 12.5


async def test_agent_sends_pings_every_interval(agent: Agent) -> None:
    async with FakeGateway(heartbeat_interval_s=0.05).running() as gateway:
        link = agent.link(gateway.url)
        task = asyncio.create_task(link.run())
        connection = await gateway.next_connection()
        async with asyncio.timeout(5):
            first = await connection.pings.get()
            second = await connection.pings.get()
        assert second["sent_at"] >= first["sent_at"]
        await link.stop()
        await task


async def test_silent_gateway_is_dropped_and_redialled(agent: Agent) -> None:
    async with FakeGateway(heartbeat_interval_s=0.05).running() as gateway:
        gateway.answer_pings = False
        link = agent.link(gateway.url)
        task = asyncio.create_task(link.run())
        first = await gateway.next_connection()
        second = await gateway.next_connection()
        async with asyncio.timeout(5):
            await first.closed.wait()
        assert second.hello.open_session_ids == []
        await link.stop()
        await task


async def test_a_gateway_that_stops_reading_is_dropped_even_mid_send(agent: Agent) -> None:
    """A reply the peer never reads blocks its sender; the silence is still noticed."""
    async with FakeGateway(heartbeat_interval_s=0.1).running() as gateway:
        link = agent.link(gateway.url)
        task = asyncio.create_task(link.run())
        first = await gateway.next_connection()
        async with asyncio.timeout(5):
            await link.wait_connected()
        first.ws.transport.pause_reading()  # alive as TCP, deaf as a peer
        ws = link._ws
        assert ws is not None
        stuck = asyncio.create_task(
            link._send(ws, {"t": "res", "id": "x", "ok": True}, bytes(48 << 20))
        )
        async with asyncio.timeout(5):
            await gateway.next_connection()  # dropped after ~3 silent intervals, redialled
        assert stuck.done()
        first.ws.transport.abort()  # the deaf peer's side, so the fake server can close
        await link.stop()
        await task


async def test_drop_releases_held_input_and_reconnects_with_open_session(
    link: AgentLink, gateway: FakeGateway, agent: Agent
) -> None:
    first = await gateway.next_connection()
    await _start(first)
    batch = {"session_id": "s1", "events": [{"type": "key_down", "key": "shift"}]}
    assert (await first.request(ops.INPUT_BATCH, batch)).header["ok"]
    assert agent.sim.pressed_keys == {"shift"}
    await first.drop()
    assert await asyncio.to_thread(agent.desktop.released.wait, 5.0)
    assert agent.sim.pressed_keys == frozenset()
    second = await gateway.next_connection()
    assert second.hello.open_session_ids == ["s1"]
    assert agent.dispatcher.active_session_id == "s1"
    assert agent.apps.kill_all_calls == 0


async def test_welcome_listing_the_session_as_ended_ends_it(
    link: AgentLink, gateway: FakeGateway, agent: Agent
) -> None:
    first = await gateway.next_connection()
    await _start(first)
    gateway.ended_session_ids = ["s1"]
    await first.drop()
    await gateway.next_connection()
    assert await asyncio.to_thread(agent.apps.killed_all.wait, 5.0)
    assert agent.dispatcher.active_session_id is None


async def test_gone_past_the_grace_ends_the_local_session(agent: Agent) -> None:
    async with FakeGateway().running() as gateway:
        link = agent.link(gateway.url, grace_s=0.05)
        task = asyncio.create_task(link.run())
        first = await gateway.next_connection()
        await _start(first)
        gateway.close_code = 1013  # "try again later": every redial fails, retryably
        await first.drop()
        assert await asyncio.to_thread(agent.apps.killed_all.wait, 5.0)
        assert agent.dispatcher.active_session_id is None
        await link.stop()
        await task


async def test_input_batches_of_a_session_run_in_order(
    link: AgentLink, gateway: FakeGateway, agent: Agent
) -> None:
    connection = await gateway.next_connection()
    await _start(connection)
    slow = {"session_id": "s1", "events": [{"type": "type_text", "text": "ab", "delay_ms": 50}]}
    fast = {"session_id": "s1", "events": [{"type": "type_text", "text": "cd"}]}
    replies = await asyncio.gather(
        connection.request(ops.INPUT_BATCH, slow), connection.request(ops.INPUT_BATCH, fast)
    )
    assert all(r.header["ok"] for r in replies)
    assert agent.sim.field_text("username") == "abcd"


class LegsMustMeet(RecordingDesktop):
    """Once armed, a screen grab and a targets walk each wait for the other to have
    started: an agent that ran observe's legs one after the other would have the first
    one wait out its deadline and fail."""

    def __init__(self, inner: SimDesktop) -> None:
        super().__init__(inner)
        self.armed = False
        self.grab_started = threading.Event()
        self.walk_started = threading.Event()

    def grab(self) -> Pixels:
        if self.armed:
            self.grab_started.set()
            if not self.walk_started.wait(5.0):
                raise TimeoutError("no targets walk started while the capture waited")
        return super().grab()

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        if self.armed:
            self.walk_started.set()
            if not self.grab_started.wait(5.0):
                raise TimeoutError("no capture started while the targets walk waited")
        return super().snapshot_accessibility(budget)


async def test_observe_legs_run_concurrently(
    gateway: FakeGateway,
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: SerialWorker,
) -> None:
    sim = SimDesktop()
    desktop = LegsMustMeet(sim)
    apps = FakeApps()
    dispatcher = dispatcher_over(desktop, apps, screen_worker, a11y_worker, input_worker)
    agent = Agent(sim, desktop, apps, dispatcher)
    link = agent.link(gateway.url)
    task = asyncio.create_task(link.run())
    try:
        connection = await gateway.next_connection()
        await _start(connection)
        desktop.armed = True
        # Targets first: an agent answering in arrival order would block on the walk.
        targets, capture, dirty = await asyncio.gather(
            connection.request(ops.A11Y_TARGETS, {"session_id": "s1"}),
            connection.request(ops.SCREEN_CAPTURE, {"session_id": "s1"}),
            connection.request(ops.SCREEN_DIRTY, {"session_id": "s1"}),
        )
        assert [r.header["ok"] for r in (targets, capture, dirty)] == [True] * 3, [
            r.header.get("error") for r in (targets, capture, dirty)
        ]
        assert desktop.grab_count == 1
        assert capture.is_binary
        assert dirty.header["body"]["available"] is True
        masked = [t for t in targets.header["body"]["targets"] if t["masked"]]
        assert masked
        assert all(t["value"] == ops.MASKED_VALUE for t in masked)
    finally:
        await link.stop()
        async with asyncio.timeout(10):
            await task
        await dispatcher.close()


async def test_agent_can_ask_the_gateway(link: AgentLink, gateway: FakeGateway) -> None:
    connection = await gateway.next_connection()
    async with asyncio.timeout(5):
        await link.wait_connected()
    reply = await link.request(ops.SESSION_OWNER_KILL, {"session_id": "s1"}, 5.0)
    assert reply == {"ended": True}
    seen = await connection.agent_requests.get()
    assert seen["op"] == ops.SESSION_OWNER_KILL


async def test_request_without_a_link_is_unavailable(agent: Agent) -> None:
    link = agent.link("ws://127.0.0.1:9/v1/agent/connect")
    with pytest.raises(LinkUnavailableError):
        await link.request(ops.SESSION_OWNER_KILL, {}, 1.0)


async def test_bad_token_stops_with_auth_error(agent: Agent, gateway: FakeGateway) -> None:
    link = agent.link(gateway.url, token="wrong")
    with pytest.raises(LinkAuthError, match="4401"):
        async with asyncio.timeout(10):
            await link.run()


async def test_protocol_refusal_stops(agent: Agent, gateway: FakeGateway) -> None:
    gateway.close_code = 4400
    link = agent.link(gateway.url)
    with pytest.raises(LinkProtocolError, match="4400"):
        async with asyncio.timeout(10):
            await link.run()


async def test_http_401_stops_with_auth_error(agent: Agent) -> None:
    async def handler(ws: Any) -> None:
        raise AssertionError("never upgraded")

    def refuse(connection: Any, request: Any) -> Any:
        return connection.respond(401, "bad token\n")

    async with serve(handler, "127.0.0.1", 0, process_request=refuse) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        link = agent.link(f"ws://127.0.0.1:{port}/v1/agent/connect")
        with pytest.raises(LinkAuthError, match="401"):
            async with asyncio.timeout(10):
                await link.run()


async def test_stop_while_unreachable_returns(agent: Agent) -> None:
    link = agent.link("ws://127.0.0.1:9/v1/agent/connect")
    with log_records("rigway.agent.link") as records:
        task = asyncio.create_task(link.run())
        await records.wait_for("failed")  # the first dial failed: now backing off
    await link.stop()
    async with asyncio.timeout(5):
        await task


def test_backoff_doubles_with_jitter_and_caps() -> None:
    rng = random.Random(1)
    first = [backoff_delay_s(0, 0.5, 30.0, rng) for _ in range(50)]
    late = [backoff_delay_s(20, 0.5, 30.0, rng) for _ in range(50)]
    assert all(0.25 <= d <= 0.5 for d in first)
    assert all(15.0 <= d <= 30.0 for d in late)
    assert len(set(first)) > 1


async def test_queued_batch_past_its_deadline_is_dropped(
    link: AgentLink, gateway: FakeGateway, agent: Agent
) -> None:
    connection = await gateway.next_connection()
    await _start(connection)
    slow = {"session_id": "s1", "events": [{"type": "type_text", "text": "a", "delay_ms": 200}]}
    late = {"session_id": "s1", "events": [{"type": "type_text", "text": "z"}]}
    first, second = await asyncio.gather(
        connection.request(ops.INPUT_BATCH, slow),
        connection.request(ops.INPUT_BATCH, late, deadline_ms=50),
    )
    assert first.header["ok"]
    assert second.header["ok"] is False
    assert "deadline" in second.header["error"]["detail"]
    assert agent.sim.field_text("username") == "a"


async def test_stop_during_the_handshake_returns(agent: Agent, gateway: FakeGateway) -> None:
    gateway.send_welcome = False
    link = agent.link(gateway.url)
    task = asyncio.create_task(link.run())
    await gateway.next_connection()  # hello received, no welcome coming
    await link.stop()
    async with asyncio.timeout(5):
        await task
    assert not link.is_connected


@pytest.mark.parametrize(
    ("answer", "close_code"),
    [
        pytest.param("not json", 1007, id="not-json"),
        pytest.param(encode_text({"t": "welcome"}), 1007, id="welcome-missing-fields"),
        pytest.param(encode_text({"t": "ping", "sent_at": 1.0}), 1002, id="not-a-welcome"),
    ],
)
async def test_a_wrong_answer_to_hello_closes_with_a_code_that_says_why(
    agent: Agent, answer: str, close_code: int
) -> None:
    codes: asyncio.Queue[int | None] = asyncio.Queue()

    async def gateway(ws: ServerConnection) -> None:
        await ws.recv()  # the hello
        await ws.send(answer)
        await ws.wait_closed()
        codes.put_nowait(ws.close_code)

    async with serve(gateway, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        link = agent.link(f"ws://127.0.0.1:{port}/v1/agent/connect")
        task = asyncio.create_task(link.run())
        try:
            async with asyncio.timeout(5):
                assert await codes.get() == close_code
            assert not link.is_connected
        finally:
            await link.stop()
            async with asyncio.timeout(10):
                await task


async def test_a_session_started_as_the_link_drops_still_ends_after_the_grace(
    agent: Agent, gateway: FakeGateway
) -> None:
    real_list_windows = agent.desktop.list_windows
    listings = 0  # the start lists windows (baseline), the end again
    start_listing, link_dropped = threading.Event(), threading.Event()

    def held_list_windows() -> frozenset[int]:
        nonlocal listings
        listings += 1
        if listings == 1:  # the start is still running when the link drops
            start_listing.set()
            link_dropped.wait(5)
        return real_list_windows()

    agent.desktop.list_windows = held_list_windows  # type: ignore[method-assign]
    link = agent.link(gateway.url, grace_s=0.3)
    task = asyncio.create_task(link.run())
    try:
        connection = await gateway.next_connection()
        gateway.send_welcome = False  # the link never comes back
        start = {"session_id": "s1", "mode": "desktop"}
        await connection.send(
            {"t": "req", "id": "g1", "op": ops.SESSION_START, "deadline_ms": 10_000, "body": start}
        )
        assert await asyncio.to_thread(start_listing.wait, 5)
        with log_records("rigway.agent.link") as records:
            await connection.drop()
            await records.wait_for("host link down")
            link_dropped.set()
            await records.wait_for("ended the local session")  # after the grace
        assert listings == 2  # the grace's end listed the windows to close
        assert agent.dispatcher.active_session_id is None
    finally:
        link_dropped.set()
        await link.stop()
        async with asyncio.timeout(10):
            await task


class LinkSpy:
    """Counts the replies a link sends through its ordinary `_send`, and signals each
    reply the screen worker hands to `_send_answer`."""

    def __init__(self, link: AgentLink, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent_replies: list[str] = []
        self.answers_handed_over = asyncio.Event()
        send, send_answer = link._send, link._send_answer

        async def counting_send(
            ws: ClientConnection, message: dict[str, Any], payload: bytes | None = None
        ) -> None:
            if message.get("t") == "res":
                self.sent_replies.append(message["id"])
            await send(ws, message, payload)

        def signalling_send_answer(ws: ClientConnection, data: bytes) -> None:
            send_answer(ws, data)
            self.answers_handed_over.set()

        monkeypatch.setattr(link, "_send", counting_send)
        monkeypatch.setattr(link, "_send_answer", signalling_send_answer)


async def _settled(connection: AgentConnection) -> None:
    """Everything the agent wrote before this has reached the fake gateway."""
    await connection.send({"t": "ping", "sent_at": 1.0})
    async with asyncio.timeout(5):
        await connection.pongs.get()


async def test_a_capture_reply_is_sent_once_from_the_screen_worker(
    link: AgentLink, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = await gateway.next_connection()
    await _start(connection)
    spy = LinkSpy(link, monkeypatch)
    reply = await connection.request(ops.SCREEN_CAPTURE, {"session_id": "s1", "max_width": 320})
    assert simplejpeg.decode_jpeg_header(reply.payload)[:2] == (180, 320)
    assert spy.answers_handed_over.is_set()
    dirty = await connection.request(ops.SCREEN_DIRTY, {"session_id": "s1"})
    await _settled(connection)
    # Only the dirty read took the ordinary path; the capture was answered exactly once.
    assert spy.sent_replies == [dirty.header["id"]]
    assert connection.stray_replies == []


async def test_a_capture_reply_arrives_whole_behind_a_reply_the_gateway_has_not_read(
    link: AgentLink, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply larger than the socket buffers waits for a gateway that stopped reading;
    the screen worker's reply goes after it, and both arrive whole once it reads again."""
    connection = await gateway.next_connection()
    await _start(connection)
    spy = LinkSpy(link, monkeypatch)
    connection.ws.transport.pause_reading()
    ws = link._ws
    assert ws is not None
    big = bytes(32 << 20)  # past what the socket buffers hold
    await link._send(ws, {"t": "res", "id": "big", "ok": True}, big)
    capture = asyncio.create_task(
        connection.request(ops.SCREEN_CAPTURE, {"session_id": "s1", "max_width": 320})
    )
    async with asyncio.timeout(5):
        await spy.answers_handed_over.wait()
    connection.ws.transport.resume_reading()
    reply = await capture
    assert simplejpeg.decode_jpeg_header(reply.payload)[:2] == (180, 320)
    assert connection.stray_replies == [{"t": "res", "id": "big", "ok": True}]


class RecordingConnection:
    """Stands for the link's connection where only `send` is used."""

    def __init__(self, *, closed: bool) -> None:
        self.closed = closed
        self.sent: list[str | bytes] = []

    async def send(self, data: str | bytes) -> None:
        if self.closed:
            raise ConnectionClosedError(None, None)
        self.sent.append(data)


@pytest.mark.parametrize(
    ("is_current", "closed", "sent"),
    [
        pytest.param(True, False, True, id="the open connection: sent"),
        pytest.param(False, False, False, id="another connection: dropped"),
        pytest.param(True, True, False, id="closed meanwhile: dropped quietly"),
    ],
)
async def test_where_an_answer_from_the_worker_goes(
    agent: Agent, is_current: bool, closed: bool, sent: bool
) -> None:
    link = agent.link("ws://127.0.0.1:9/v1/agent/connect")
    connection = RecordingConnection(closed=closed)
    ws = cast(ClientConnection, connection)
    link._ws = ws if is_current else cast(ClientConnection, RecordingConnection(closed=False))
    with log_records("rigway.agent.link") as records:
        link._send_answer(ws, b"reply")
        await asyncio.gather(*link._connection_tasks)
    assert connection.sent == ([b"reply"] if sent else [])
    assert [r.getMessage() for r in records.records if r.levelno >= logging.WARNING] == []


async def test_an_undecodable_frame_closes_the_link_with_1007_and_nothing_after_runs(
    link: AgentLink, gateway: FakeGateway, agent: Agent
) -> None:
    connection = await gateway.next_connection()
    await _start(connection)
    await connection.ws.send("{not json")
    after = {"t": "req", "id": "after", "op": ops.SCREEN_CAPTURE, "deadline_ms": 5000}
    await connection.send({**after, "body": {"session_id": "s1"}})
    async with asyncio.timeout(5):
        await connection.closed.wait()
    assert connection.ws.close_code == 1007
    assert agent.desktop.grab_count == 0


def _unreachable_url() -> str:
    """A connect URL where nothing listens (a node that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"ws://127.0.0.1:{port}/v1/agent/connect"


async def test_a_node_down_is_passed_over_for_the_next_url(agent: Agent) -> None:
    async with FakeGateway().running() as live_node:
        link = agent.link([_unreachable_url(), live_node.url])
        task = asyncio.create_task(link.run())
        try:
            connection = await live_node.next_connection()
            assert connection.hello.backend == "sim"
        finally:
            await link.stop()
            async with asyncio.timeout(10):
                await task


async def test_a_dropped_link_moves_to_the_next_node_and_keeps_the_session(agent: Agent) -> None:
    async with FakeGateway().running() as first, FakeGateway().running() as second:
        link = agent.link([first.url, second.url], grace_s=30.0)
        task = asyncio.create_task(link.run())
        try:
            on_first = await first.next_connection()
            await _start(on_first, "s-failover")
            await on_first.ws.close(1012, "node stopping")

            on_second = await second.next_connection()
        finally:
            await link.stop()
            async with asyncio.timeout(10):
                await task
    # The session is still the agent's, and the new node hears of it in the hello.
    assert on_second.hello.open_session_ids == ["s-failover"]
