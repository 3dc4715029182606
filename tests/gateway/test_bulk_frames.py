"""Large binary frames read in bulk beside websockets' parser: whatever the stream and
wherever the socket cuts it, the app gets exactly the messages websockets would give it,
in order; every frame it should refuse, websockets still refuses."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from hypothesis import given, settings
from hypothesis import strategies as st
from uvicorn.server import ServerState
from websockets.frames import Frame, Opcode

from rigway.gateway import http_server
from rigway.gateway.http_server import MESSAGE_SINK_EXTENSION, DirectMessageWebSocketProtocol
from rigway.protocol.ws_frames import BULK_FRAME_MIN, BulkFrame, FrameHead
from tests.gateway.test_http_server import RecordingTransport

HANDSHAKE = (
    b"GET /v1/agent/connect HTTP/1.1\r\nHost: gateway\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n\r\n"
)
MAX_SIZE = 1 << 20


class SinkApp:
    def __init__(self) -> None:
        self.messages: list[str | bytes] = []
        self.sink_taken = asyncio.Event()
        self.disconnect: dict[str, Any] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        scope["extensions"][MESSAGE_SINK_EXTENSION](self.messages.append)
        self.sink_taken.set()
        self.disconnect = await receive()


async def _opened() -> tuple[DirectMessageWebSocketProtocol, RecordingTransport, SinkApp]:
    app = SinkApp()
    config = uvicorn.Config(
        app, ws=DirectMessageWebSocketProtocol, lifespan="off", ws_max_size=MAX_SIZE
    )
    config.load()
    protocol = DirectMessageWebSocketProtocol(
        config=config, server_state=ServerState(), app_state={}
    )
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(HANDSHAKE)
    async with asyncio.timeout(5):
        await app.sink_taken.wait()
    return protocol, transport, app


def _client_frames(message: str | bytes, fragments: int) -> list[bytes]:
    """`message` as a client sends it: masked, in `fragments` frames."""
    data = message.encode() if isinstance(message, str) else message
    opcode = Opcode.TEXT if isinstance(message, str) else Opcode.BINARY
    cuts = [len(data) * i // fragments for i in range(fragments + 1)]
    frames = []
    for index in range(fragments):
        first, last = index == 0, index == fragments - 1
        frame = Frame(opcode if first else Opcode.CONT, data[cuts[index] : cuts[index + 1]], last)
        frames.append(frame.serialize(mask=True))
    return frames


class CountingBulkFrame(BulkFrame):
    made: list[int] = []

    def __init__(self, head: FrameHead) -> None:
        super().__init__(head)
        CountingBulkFrame.made.append(head.length)


messages = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.binary(max_size=300),
        st.integers(BULK_FRAME_MIN, 3 * BULK_FRAME_MIN).map(
            lambda n: bytes(i % 251 for i in range(n))
        ),
        st.just("ping"),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(
    sent=messages,
    fragmented=st.lists(st.integers(1, 3), min_size=6, max_size=6),
    cuts=st.lists(st.integers(1, 70_000), max_size=12),
)
def test_the_app_gets_what_was_sent_however_the_stream_is_cut(
    sent: list[str | bytes], fragmented: list[int], cuts: list[int]
) -> None:
    stream = b""
    expected: list[str | bytes] = []
    for message, fragments in zip(sent, fragmented, strict=False):
        if message == "ping":
            stream += Frame(Opcode.PING, b"still there?").serialize(mask=True)
            continue
        stream += b"".join(_client_frames(message, fragments))
        expected.append(message)
    delivered, bulk_lengths = asyncio.run(_received(stream, cuts))
    assert delivered == expected
    # A whole large binary message in one frame was read in bulk; nothing else was.
    whole_large = [
        len(m)
        for m, f in zip(sent, fragmented, strict=False)
        if isinstance(m, bytes) and f == 1 and len(m) >= BULK_FRAME_MIN
    ]
    assert bulk_lengths == whole_large


async def _received(stream: bytes, cuts: list[int]) -> tuple[list[str | bytes], list[int]]:
    CountingBulkFrame.made = []
    # The protocol makes its bulk frames through this module-level name.
    original = getattr(http_server, "BulkFrame")  # noqa: B009
    setattr(http_server, "BulkFrame", CountingBulkFrame)  # noqa: B010
    try:
        protocol, transport, app = await _opened()
        position = 0
        for cut in [*sorted(set(cuts)), len(stream)]:
            if position < cut <= len(stream):
                protocol.data_received(stream[position:cut])
                position = cut
        assert transport.closed is False
        return list(app.messages), list(CountingBulkFrame.made)
    finally:
        setattr(http_server, "BulkFrame", original)  # noqa: B010


async def _refused(frames: list[bytes]) -> tuple[SinkApp, RecordingTransport]:
    protocol, transport, app = await _opened()
    for frame in frames:
        protocol.data_received(frame)
    async with asyncio.timeout(5):
        while app.disconnect is None:
            await asyncio.sleep(0)
    return app, transport


def _close_code(transport: RecordingTransport) -> int:
    """The code of the close frame the server wrote (unmasked, code first)."""
    close = next(w for w in transport.writes if w[:1] == b"\x88")
    return int.from_bytes(close[2:4], "big")


large = bytes(BULK_FRAME_MIN)


async def test_a_frame_past_the_size_limit_is_refused_with_1009() -> None:
    app, transport = await _refused(
        [Frame(Opcode.BINARY, bytes(MAX_SIZE + 1)).serialize(mask=True)]
    )
    assert app.messages == []
    assert _close_code(transport) == 1009


async def test_an_unmasked_frame_is_refused_with_1002() -> None:
    app, transport = await _refused([Frame(Opcode.BINARY, large).serialize(mask=False)])
    assert app.messages == []
    assert _close_code(transport) == 1002


async def test_a_new_message_inside_a_fragmented_one_is_refused_with_1002() -> None:
    start = Frame(Opcode.BINARY, b"first half", fin=False).serialize(mask=True)
    app, transport = await _refused([start, Frame(Opcode.BINARY, large).serialize(mask=True)])
    assert app.messages == []
    assert _close_code(transport) == 1002


async def test_after_a_refusal_nothing_more_is_delivered() -> None:
    bad = Frame(Opcode.BINARY, b"x").serialize(mask=False)
    good = Frame(Opcode.BINARY, large).serialize(mask=True)
    app, transport = await _refused([bad + good])
    assert app.messages == []
    assert _close_code(transport) == 1002


def test_a_head_cut_short_reads_as_incomplete() -> None:
    frame = Frame(Opcode.BINARY, bytes(70_000)).serialize(mask=True)  # 64-bit length, key
    for cut in range(14):
        assert FrameHead.read(memoryview(frame[:cut])) is None
    head = FrameHead.read(memoryview(frame))
    assert head is not None
    assert (head.size, head.length, head.is_bulk) == (14, 70_000, True)


def _head(frame: bytes) -> FrameHead:
    head = FrameHead.read(memoryview(frame))
    assert head is not None
    return head


def test_only_a_whole_large_masked_binary_frame_is_read_in_bulk() -> None:
    bulk = Frame(Opcode.BINARY, large).serialize(mask=True)
    assert _head(bulk).is_bulk
    reserved_bit = bytes([bulk[0] | 0x40]) + bulk[1:]  # as a compressed frame would be
    refused = [
        Frame(Opcode.BINARY, bytes(BULK_FRAME_MIN - 1)).serialize(mask=True),
        Frame(Opcode.TEXT, b"a" * BULK_FRAME_MIN).serialize(mask=True),
        Frame(Opcode.BINARY, large, fin=False).serialize(mask=True),
        Frame(Opcode.BINARY, large).serialize(mask=False),
        reserved_bit,
    ]
    assert [_head(frame).is_bulk for frame in refused] == [False] * len(refused)
