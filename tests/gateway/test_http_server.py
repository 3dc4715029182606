"""One write per loop tick: a response's headers and body leave together; and a whole
response written at once from a callback (`rigway.answer_now`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from starlette.responses import Response
from uvicorn.server import ServerState

from rigway.gateway.http_server import (
    ANSWER_NOW_EXTENSION,
    CoalescingHttpToolsProtocol,
    CoalescingTransport,
)


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

    def pause_reading(self) -> None:
        pass  # uvicorn pauses reading behind a pipelined request

    def resume_reading(self) -> None:
        pass

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


# ---- rigway.answer_now: a whole response written from a callback --------------------------

JPEG = b"\xff\xd8" + bytes(range(256)) * 40
JPEG_HEADERS = [(b"content-type", b"image/jpeg"), (b"x-screenshot-width", b"8")]


def _protocol(app: Any) -> tuple[CoalescingHttpToolsProtocol, RecordingTransport]:
    config = uvicorn.Config(app, http=CoalescingHttpToolsProtocol, lifespan="off")
    config.load()
    protocol = CoalescingHttpToolsProtocol(config, ServerState(), app_state={})
    real = RecordingTransport()
    protocol.connection_made(real)
    return protocol, real


async def _writes(real: RecordingTransport, count: int) -> list[bytes]:
    async with asyncio.timeout(5):
        while len(real.writes) < count:
            await _next_tick()
    return real.writes


def _without_date(response: bytes) -> bytes:
    return b"\r\n".join(line for line in response.split(b"\r\n") if not line.startswith(b"date:"))


async def _via_send(scope: Any, receive: Any, send: Any) -> None:
    length = (b"content-length", b"%d" % len(JPEG))
    await send({"type": "http.response.start", "status": 200, "headers": [*JPEG_HEADERS, length]})
    await send({"type": "http.response.body", "body": JPEG})


class AnsweringFromACallback:
    """An app that answers through `rigway.answer_now` from a loop callback, as the host
    link's reply does, and records what the call returned and what had been written by
    then; declined, it answers through `send`."""

    def __init__(self, real: RecordingTransport | None = None) -> None:
        self.real = real
        self.answered: list[bool] = []
        self.written_at_return: list[int] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        answer_now = scope["extensions"][ANSWER_NOW_EXTENSION]
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def answer() -> None:
            self.answered.append(answer_now(200, JPEG_HEADERS, memoryview(JPEG)))
            if self.real is not None:
                self.written_at_return.append(len(self.real.writes))
            done.set_result(None)

        loop.call_soon(answer)
        await done
        if not self.answered[-1]:
            await _via_send(scope, receive, send)


REQUEST = b"GET /v1/shot HTTP/1.1\r\nHost: gateway\r\n\r\n"


async def test_answer_now_writes_what_send_would_have_written_at_once() -> None:
    protocol, by_send = _protocol(_via_send)
    protocol.data_received(REQUEST)
    expected = (await _writes(by_send, 1))[0]
    app = AnsweringFromACallback()
    protocol, real = _protocol(app)
    app.real = real
    protocol.data_received(REQUEST + REQUEST)  # pipelined: the second waits for the first
    first, second = await _writes(real, 2)
    assert app.answered == [True, True]
    assert app.written_at_return == [1, 2]  # written during the call, not a tick later
    assert _without_date(first) == _without_date(second) == _without_date(expected)
    assert not real.closed
    await _next_tick()  # the app returns after its early answer: nothing more is sent
    assert len(real.writes) == 2


async def test_answer_now_closes_a_connection_the_client_will_not_keep() -> None:
    app = AnsweringFromACallback()
    protocol, real = _protocol(app)
    protocol.data_received(b"GET /v1/shot HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
    (response,) = await _writes(real, 1)
    assert app.answered == [True]
    assert response.partition(b"\r\n\r\n")[0].endswith(b"\r\nconnection: close")
    assert real.closed


async def test_answer_now_declines_a_head_request_which_send_then_answers() -> None:
    app = AnsweringFromACallback()
    protocol, real = _protocol(app)
    protocol.data_received(b"HEAD /v1/shot HTTP/1.1\r\nHost: gateway\r\n\r\n")
    (response,) = await _writes(real, 1)
    assert app.answered == [False]
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert body == b""


async def test_answer_now_declines_once_the_app_started_its_response() -> None:
    declined: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        length = (b"content-length", b"%d" % len(JPEG))
        await send({"type": "http.response.start", "status": 200, "headers": [length]})
        declined.append(scope["extensions"][ANSWER_NOW_EXTENSION](200, [], JPEG))
        await send({"type": "http.response.body", "body": JPEG})

    protocol, real = _protocol(app)
    protocol.data_received(REQUEST)
    (response,) = await _writes(real, 1)
    assert declined == [False]
    assert response.endswith(b"\r\n\r\n" + JPEG)


@pytest.mark.parametrize(
    "bad", [(b"x-a", b"1\r\nx-b: 2"), (b"x-b: 2\r\nx-a", b"1"), (b"x-a x-b", b"1")]
)
async def test_answer_now_refuses_a_header_that_would_split_the_head(
    bad: tuple[bytes, bytes],
) -> None:
    refused: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"x-fine", b"1\t2"), bad]
        try:
            scope["extensions"][ANSWER_NOW_EXTENSION](200, headers, b"")
        except ValueError as exc:
            refused.append(str(exc))
        await _via_send(scope, receive, send)

    protocol, real = _protocol(app)
    protocol.data_received(REQUEST)
    (response,) = await _writes(real, 1)
    assert refused == [f"invalid HTTP header {bad[0]!r}"]
    assert b"x-b" not in response
    assert b"x-fine" not in response  # nothing of the refused answer was written
