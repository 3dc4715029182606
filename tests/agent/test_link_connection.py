"""DirectClientConnection against a real websockets server on 127.0.0.1, and the
client frames the screen worker builds, read back by the library's parser."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from rigway.agent.link_connection import MAX_FRAGMENTS, DirectClientConnection, Message
from rigway.protocol.framing import FramingError
from rigway.protocol.ws_frames import masked_binary_frame

Script = Callable[[ServerConnection], Awaitable[None]]


@contextlib.asynccontextmanager
async def connected(script: Script) -> AsyncIterator[DirectClientConnection]:
    """A client connection to a server that runs `script`, then waits for the client."""

    async def handler(ws: ServerConnection) -> None:
        await script(ws)
        with contextlib.suppress(ConnectionClosed):
            await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0, compression=None, ping_interval=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(
            f"ws://127.0.0.1:{port}",
            compression=None,
            ping_interval=None,
            create_connection=DirectClientConnection,
        ) as ws:
            assert isinstance(ws, DirectClientConnection)
            yield ws


def send_in_one_write(ws: ServerConnection, *texts: bytes) -> None:
    """Frames that reach the client in one read, so one `data_received` parses them all."""
    for text in texts:
        ws.protocol.send_text(text)
    ws.send_data()


class Collector:
    def __init__(self, stop_after: Message | None = None) -> None:
        self.messages: list[Message] = []
        self.arrived = asyncio.Event()
        self._stop_after = stop_after
        self.wanted = 0

    def __call__(self, message: Message) -> bool:
        self.messages.append(message)
        if len(self.messages) >= self.wanted:
            self.arrived.set()
        return message != self._stop_after

    async def wait_for(self, count: int) -> list[Message]:
        self.wanted = count
        if len(self.messages) < count:
            self.arrived.clear()
            async with asyncio.timeout(5):
                await self.arrived.wait()
        return self.messages


async def test_held_messages_reach_the_sink_first_in_order() -> None:
    async def script(ws: ServerConnection) -> None:
        send_in_one_write(ws, b"welcome", b"two", b"three")
        await ws.recv()  # the client is delivering directly now
        await ws.send(b"four")

    async with connected(script) as client:
        assert await client.next_message() == "welcome"
        sink = Collector()
        client.deliver_to(sink)  # "two" and "three" were parsed with the welcome
        await client.send("go")
        assert await sink.wait_for(3) == ["two", "three", b"four"]


async def test_fragmented_messages_arrive_whole() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.send(["ab", "cd", "é"])
        await ws.send([b"\x00\x01", b"\x02"])

    async with connected(script) as client:
        sink = Collector()
        client.deliver_to(sink)
        assert await sink.wait_for(2) == ["abcdé", b"\x00\x01\x02"]


async def test_a_message_in_too_many_fragments_is_unreadable_and_its_rest_dropped() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.send([b"x"] * (MAX_FRAGMENTS + 5))
        await ws.send("after")

    async with connected(script) as client:
        with pytest.raises(FramingError, match="fragments"):
            await client.next_message()
        sink = Collector()
        client.deliver_to(sink)
        assert await sink.wait_for(1) == ["after"]


async def test_a_sink_that_raises_fails_the_connection_with_1011() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.recv()
        send_in_one_write(ws, b"boom", b"unheard")

    def exploding(message: Message) -> bool:
        heard.append(message)
        raise RuntimeError("a bug in the link")

    heard: list[Message] = []
    async with connected(script) as client:
        client.deliver_to(exploding)
        await client.send("go")
        async with asyncio.timeout(5):
            await client.wait_closed()
        assert heard == ["boom"]
        assert client.close_code == 1011


async def test_text_that_is_not_utf8_is_unreadable_both_ways() -> None:
    async def script(ws: ServerConnection) -> None:
        send_in_one_write(ws, b"\xff\xfe", b"\xc3")

    async with connected(script) as client:
        with pytest.raises(FramingError, match="UTF-8"):
            await client.next_message()
        sink = Collector()
        client.deliver_to(sink)
        [unreadable] = await sink.wait_for(1)
        assert isinstance(unreadable, FramingError)


async def test_a_sink_that_refuses_hears_nothing_more() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.recv()
        send_in_one_write(ws, b"a", b"stop", b"c")
        await ws.send("d")

    async with connected(script) as client:
        sink = Collector(stop_after="stop")
        client.deliver_to(sink)
        await client.send("go")
        await sink.wait_for(2)
        await asyncio.sleep(0.2)  # "c" and "d" had their chance
        assert sink.messages == ["a", "stop"]


async def test_next_message_raises_when_the_peer_closes_first() -> None:
    async def script(ws: ServerConnection) -> None:
        await ws.close(4409, "replaced")

    async with connected(script) as client:
        with pytest.raises(ConnectionClosed):
            await client.next_message()
        assert client.close_code == 4409


# ---- a client's binary frame from parts ------------------------------------------------------


def _parsed(frame: list[bytes]) -> Frame:
    """`frame` read back by the library's own parser, as a server reads a client."""
    reader = StreamReader()
    reader.feed_data(b"".join(frame))
    reader.feed_eof()
    parser = Frame.parse(reader.read_exact, mask=True, max_size=None)
    try:
        next(parser)
    except StopIteration as done:
        parsed: Frame = done.value
        return parsed
    raise AssertionError("the frame was incomplete")


@pytest.mark.parametrize("length", [0, 1, 125, 126, 65535, 65536, 200_003])
@pytest.mark.parametrize("first", [0, 1, 2, 3, 7])
def test_a_frame_from_parts_reads_back_as_the_joined_parts(length: int, first: int) -> None:
    """Each length class of the header, and parts starting at every offset of the key."""
    payload = bytes(i * 7 % 251 for i in range(length))
    parts = [payload[:first], payload[first : first + 5], payload[first + 5 :]]
    frame = masked_binary_frame(parts)
    parsed = _parsed(frame)
    assert parsed.opcode is Opcode.BINARY
    assert parsed.fin
    assert parsed.data == payload


def test_a_frame_from_parts_is_the_librarys_frame_for_the_same_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = b"\x12\x34\x56\x78"
    monkeypatch.setattr(secrets, "token_bytes", lambda n: key[:n])
    parts = [b"\x00\x00\x00\x05{...}", bytes(range(256)) * 300]
    expected = Frame(Opcode.BINARY, b"".join(parts)).serialize(mask=True)
    assert b"".join(masked_binary_frame(parts)) == expected


def test_every_frame_gets_a_fresh_key() -> None:
    keys = {masked_binary_frame([b"same"])[0][-4:] for _ in range(64)}
    assert len(keys) > 60  # 32 random bits each: a repeat in 64 is a one-in-a-million event
