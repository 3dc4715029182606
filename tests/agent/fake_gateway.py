"""A tiny gateway end of the host link for the agent's link tests.

It speaks docs/protocol.md from the gateway side on 127.0.0.1: checks the bearer
token (closing 4401), reads hello, sends welcome, then lets the test send requests and
await replies, ping, answer agent requests, read the agent's notes, and drop the
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from rigway.protocol import PROTOCOL_VERSION, Hello, Welcome, decode_frame, encode_text


@dataclass
class GatewayReply:
    header: dict[str, Any]
    payload: bytes
    is_binary: bool


@dataclass
class AgentConnection:
    ws: ServerConnection
    hello: Hello
    pongs: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    pings: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    agent_requests: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    notes: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    # Replies to no request this connection is waiting for.
    stray_replies: list[dict[str, Any]] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _pending: dict[str, asyncio.Future[GatewayReply]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def request(
        self, op: str, body: dict[str, Any], *, deadline_ms: int = 5000
    ) -> GatewayReply:
        request_id = f"g{next(self._ids)}"
        waiter: asyncio.Future[GatewayReply] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = waiter
        await self.send(
            {"t": "req", "id": request_id, "op": op, "deadline_ms": deadline_ms, "body": body}
        )
        async with asyncio.timeout(10):
            return await waiter

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(encode_text(message))

    async def read_loop(self, answer_pings: bool) -> None:
        with contextlib.suppress(Exception):
            async for frame in self.ws:
                await self._on_frame(frame, answer_pings)
        self.closed.set()

    async def _on_frame(self, frame: str | bytes, answer_pings: bool) -> None:
        header, payload = decode_frame(frame)
        kind = header["t"]
        if kind == "res":
            waiter = self._pending.pop(header["id"], None)
            if waiter is None:
                self.stray_replies.append(header)
            else:
                waiter.set_result(GatewayReply(header, bytes(payload), isinstance(frame, bytes)))
        elif kind == "ping":
            self.pings.put_nowait(header)
            if answer_pings:
                await self.send({"t": "pong", "sent_at": header["sent_at"]})
        elif kind == "pong":
            self.pongs.put_nowait(header)
        elif kind == "note":
            self.notes.put_nowait(header)
        elif kind == "req":
            self.agent_requests.put_nowait(header)
            reply = {"t": "res", "id": header["id"], "ok": True, "body": {"ended": True}}
            await self.send(reply)

    async def drop(self) -> None:
        """The gateway goes away abruptly (no close handshake)."""
        self.ws.transport.abort()
        await self.closed.wait()


RIG_TOKEN = "rig-token"


def fake_hello() -> Hello:
    """The hello of an agent over a `FakeDesktop` (320x200)."""
    return Hello(
        protocol=PROTOCOL_VERSION,
        agent_version="0.1.0",
        backend="fake",
        capture_mode="fake",
        native_width=320,
        native_height=200,
    )


class FakeGateway:
    def __init__(self, *, token: str = RIG_TOKEN, heartbeat_interval_s: float = 30.0) -> None:
        self.token = token
        self.heartbeat_interval_s = heartbeat_interval_s
        self.connections: asyncio.Queue[AgentConnection] = asyncio.Queue()
        self.ended_session_ids: list[str] = []
        self.close_code: int | None = None  # set: close every connection at once with it
        self.answer_pings = True
        self.send_welcome = True
        self.url = ""

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeGateway]:
        async with serve(
            # The real gateway's cap on a host frame (rigway.agent.link.MAX_FRAME_BYTES).
            self._handler,
            "127.0.0.1",
            0,
            compression=None,
            ping_interval=None,
            max_size=64 << 20,
        ) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}/v1/agent/connect"
            yield self

    async def next_connection(self, timeout_s: float = 10.0) -> AgentConnection:
        async with asyncio.timeout(timeout_s):
            return await self.connections.get()

    async def _handler(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        if ws.request.headers.get("Authorization") != f"Bearer {self.token}":
            await ws.close(4401, "invalid_rig_token")
            return
        if self.close_code is not None:
            await ws.close(self.close_code, "test")
            return
        header, _ = decode_frame(await ws.recv())
        hello = Hello.model_validate(header)
        connection = AgentConnection(ws, hello)
        if self.send_welcome:
            welcome = Welcome(
                rig_id="rig-1",
                heartbeat_interval_s=self.heartbeat_interval_s,
                ended_session_ids=[
                    s for s in self.ended_session_ids if s in hello.open_session_ids
                ],
            )
            await connection.send(welcome.model_dump())
        self.connections.put_nowait(connection)
        await connection.read_loop(self.answer_pings)
