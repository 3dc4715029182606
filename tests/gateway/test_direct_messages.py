"""The WebSocket protocol's direct way in: messages by a call, in order, never queued,
and the disconnect still through `receive()`. A real uvicorn server, a real client."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from websockets.asyncio.client import connect

from rigway.gateway.http_server import (
    MESSAGE_SINK_EXTENSION,
    CoalescingHttpToolsProtocol,
    DirectMessageWebSocketProtocol,
)


@dataclass
class SinkApp:
    """Reads `before_sink` messages through `receive()`, then takes the sink and
    records what reaches it, and what `receive()` still yields, until the disconnect."""

    before_sink: int = 0
    through_receive: list[Any] = field(default_factory=list)
    through_sink: list[str | bytes] = field(default_factory=list)
    sink_taken: asyncio.Event = field(default_factory=asyncio.Event)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "websocket"
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        for _ in range(self.before_sink):
            self.through_receive.append(await receive())
        # Lets the client send more before the sink is taken: they queue meanwhile.
        await asyncio.sleep(0.2)
        scope["extensions"][MESSAGE_SINK_EXTENSION](self.through_sink.append)
        self.sink_taken.set()
        while True:
            message = await receive()
            self.through_receive.append(message)
            if message["type"] == "websocket.disconnect":
                self.disconnected.set()
                return


def _free_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
async def serve() -> AsyncIterator[Any]:
    servers: list[tuple[uvicorn.Server, asyncio.Task[None]]] = []

    async def start(app: Callable[[Any, Any, Any], Awaitable[None]]) -> str:
        sock = _free_socket()
        config = uvicorn.Config(
            app,
            http=CoalescingHttpToolsProtocol,
            ws=DirectMessageWebSocketProtocol,
            lifespan="off",
            log_level="warning",
        )
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        servers.append((server, task))
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.01)
        return f"ws://127.0.0.1:{sock.getsockname()[1]}/"

    yield start
    for server, task in servers:
        server.should_exit = True
        await task


async def test_messages_reach_the_sink_in_order_queued_ones_first(serve: Any) -> None:
    app = SinkApp(before_sink=1)
    url = await serve(app)
    async with connect(url) as client:
        await client.send("hello")  # read through receive(), before the sink
        await client.send(b"queued-1")  # these two wait in the queue for the sink
        await client.send("queued-2")
        async with asyncio.timeout(5):
            await app.sink_taken.wait()
        await client.send(b"direct-1")
        await client.send("direct-2 \u25cf")
        async with asyncio.timeout(5):
            while len(app.through_sink) < 4:
                await asyncio.sleep(0.01)
    async with asyncio.timeout(5):
        await app.disconnected.wait()
    assert app.through_sink == [b"queued-1", "queued-2", b"direct-1", "direct-2 \u25cf"]
    assert [m["type"] for m in app.through_receive] == [
        "websocket.receive",
        "websocket.disconnect",
    ]
    assert app.through_receive[0]["text"] == "hello"


async def test_a_large_binary_message_arrives_whole(serve: Any) -> None:
    app = SinkApp()
    url = await serve(app)
    jpeg = b"\xff\xd8" + bytes(range(256)) * 4096 + b"\xff\xd9"  # 1 MiB, many reads
    async with connect(url, max_size=None) as client:
        async with asyncio.timeout(5):
            await app.sink_taken.wait()
        await client.send(jpeg)
        await client.send(b"after")
        async with asyncio.timeout(5):
            while len(app.through_sink) < 2:
                await asyncio.sleep(0.01)
    assert app.through_sink == [jpeg, b"after"]


async def test_a_sink_that_raises_fails_the_connection_with_1011(serve: Any) -> None:
    app = SinkApp()

    def refuse(message: str | bytes) -> None:
        app.through_sink.append(message)
        raise RuntimeError("the app broke on this message")

    original_call = app.__call__

    async def taking_a_failing_sink(scope: Any, receive: Any, send: Any) -> None:
        extensions = scope["extensions"]
        take = extensions[MESSAGE_SINK_EXTENSION]
        extensions[MESSAGE_SINK_EXTENSION] = lambda _sink: take(refuse)
        await original_call(scope, receive, send)

    url = await serve(taking_a_failing_sink)
    async with connect(url) as client:
        async with asyncio.timeout(5):
            await app.sink_taken.wait()
        await client.send(b"breaks it")
        async with asyncio.timeout(5):
            await client.wait_closed()
        assert client.close_code == 1011
    async with asyncio.timeout(5):
        await app.disconnected.wait()
    assert app.through_sink == [b"breaks it"]
