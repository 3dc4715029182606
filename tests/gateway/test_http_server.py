"""One write per loop tick: a response's headers and body leave together."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.responses import Response
from uvicorn.server import ServerState

from rigway.gateway.http_server import CoalescingHttpToolsProtocol, CoalescingTransport


class RecordingTransport(asyncio.Transport):
    """What a socket would have been asked to send, write by write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default
        )


async def _next_tick() -> None:
    await asyncio.sleep(0)


async def test_writes_of_one_tick_leave_as_one_write() -> None:
    real = RecordingTransport()
    transport = CoalescingTransport(real, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"")
    transport.writelines([b"body ", memoryview(b"bytes")])
    assert real.writes == []
    assert transport.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody bytes")
    await _next_tick()
    assert real.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody bytes"]
    transport.write(b"next tick")
    await _next_tick()
    assert real.writes[1:] == [b"next tick"]


async def test_close_sends_what_was_written_first_and_abort_drops_it() -> None:
    loop = asyncio.get_running_loop()
    closing = RecordingTransport()
    transport = CoalescingTransport(closing, loop)
    transport.write(b"last words")
    transport.close()
    assert closing.writes == [b"last words"]
    assert closing.closed
    await _next_tick()  # the scheduled flush finds nothing more to send
    assert closing.writes == [b"last words"]

    aborting = RecordingTransport()
    transport = CoalescingTransport(aborting, loop)
    transport.write(b"never sent")
    transport.abort()
    await _next_tick()
    assert aborting.writes == []
    assert aborting.aborted


async def test_a_response_through_uvicorns_protocol_is_one_write() -> None:
    body = b"\xff\xd8" + bytes(range(256)) * 200

    async def app(scope: Any, receive: Any, send: Any) -> None:
        response = Response(body, media_type="image/jpeg", headers={"X-Screenshot-Width": "8"})
        await response(scope, receive, send)

    config = uvicorn.Config(app, http=CoalescingHttpToolsProtocol, lifespan="off")
    config.load()
    protocol = CoalescingHttpToolsProtocol(config, ServerState(), app_state={})
    real = RecordingTransport()
    protocol.connection_made(real)
    protocol.data_received(b"GET /v1/shot HTTP/1.1\r\nHost: gateway\r\n\r\n")
    async with asyncio.timeout(5):
        while not real.writes:
            await _next_tick()
    assert len(real.writes) == 1
    head, _, sent = real.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert b"x-screenshot-width: 8" in head
    assert sent == body
