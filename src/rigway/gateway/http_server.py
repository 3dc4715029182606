"""uvicorn's HTTP protocol with one send per event-loop tick.

uvicorn writes a response's status line and headers the moment the app sends
`http.response.start`, then the body in a second `write`. Each write on a TCP socket is
a syscall, and on loopback the kernel runs the receiver's side of it in the sender's
time; the first write also wakes the client, which then often wakes a second time for
the body. Measured with py-spy on `bench.gateway_sim`, the two writes were about a
third of the gateway's busy time per screenshot, the header write the larger part
(docs/decisions/0004-screen-hot-path.md).

`CoalescingTransport` holds what is written during one tick of the loop and sends it
as one write (a writev) at the end of that tick (`loop.call_soon`), like TCP_CORK for a
tick: the headers and body of a plain response, or a WebSocket reply, leave in one
segment. The delay is that of one ready-queue pass; flow control still acts on the real
transport. A WebSocket upgrade hands this same transport to the WebSocket protocol, so
host-link frames get the same treatment.

Two scope extensions give the host link's hot path a way around the ASGI layers, each
where a screenshot's reply would otherwise wait for a task to wake
(docs/decisions/0009-screenshot-answered-from-the-reply.md):
- `rigway.message_sink` (WebSocket): host-link messages by a plain call from
  `data_received` (`DirectMessageWebSocketProtocol`);
- `rigway.answer_now` (HTTP): a whole fixed-length response written at once, from
  any callback, as the request's ASGI `send` would have written it
  (`CoalescingHttpToolsProtocol`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Request as HandshakeRequest
from websockets.protocol import State

from rigway.protocol.ws_frames import BulkFrame, FrameHead

__all__ = [
    "ANSWER_NOW_EXTENSION",
    "MESSAGE_SINK_EXTENSION",
    "AnswerNow",
    "CoalescingHttpToolsProtocol",
    "CoalescingTransport",
    "DirectMessageWebSocketProtocol",
    "MessageSink",
]

# The scope extension through which a WebSocket app takes its messages directly.
MESSAGE_SINK_EXTENSION = "rigway.message_sink"
MessageSink = Callable[[str | bytes], None]

# The HTTP scope extension that writes a whole response at once; see `answer_now`.
ANSWER_NOW_EXTENSION = "rigway.answer_now"
AnswerNow = Callable[[int, Sequence[tuple[bytes, bytes]], bytes | memoryview], bool]


class CoalescingTransport(asyncio.Transport):
    """A write-coalescing view of `transport`; everything but writes passes through."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes | bytearray | memoryview] = []
        self._flush_scheduled = False

    # ---- writes ---------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        self._held.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Send what this tick wrote, in one write."""
        self._flush_scheduled = False
        held, self._held = self._held, []
        if not held or self._transport.is_closing():
            # A closed transport would refuse the write; its peer is gone anyway.
            return
        if len(held) == 1:
            self._transport.write(held[0])
        else:
            # One writev with uvloop: the headers and a JPEG body leave together without
            # first being copied into one buffer.
            self._transport.writelines(held)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._held)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    # ---- closing: what was written goes out first -------------------------------------

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    # ---- the rest passes through -------------------------------------------------------

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """httptools parsing as uvicorn does it, writing through `CoalescingTransport`, with
    `rigway.answer_now` in each request's scope."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # An upgrade (the host link's WebSocket) creates no cycle for this scope.
        if cycle is not None and cycle.scope is self.scope:
            # A callable, as `rigway.message_sink` is, where ASGI's own would be a dict.
            extensions = cast("dict[str, Any]", self.scope.setdefault("extensions", {}))
            extensions[ANSWER_NOW_EXTENSION] = partial(answer_now, cycle)


def answer_now(
    cycle: RequestResponseCycle,
    status: int,
    headers: Sequence[tuple[bytes, bytes]],
    body: bytes | memoryview,
) -> bool:
    """Write a whole response to `cycle`'s request now, as its ASGI `send` would have
    over two messages, and complete the cycle; the app then returns without sending.

    For a caller that is not the request's task: the host link's reply callback answers
    a screenshot from there instead of waking the task to run the same code through the
    ASGI layers. `headers` are the app's own, without content-length or connection,
    which this adds. False, with nothing written, when the response cannot go now: one
    already started, the client left, the transport is paused on a slow reader (`send`
    waits for it), or a HEAD request; the app then answers through `send` as usual.
    """
    if (
        cycle.response_started
        or cycle.disconnected
        or cycle.flow.write_paused
        or cycle.scope["method"] == "HEAD"
    ):
        return False
    head = [STATUS_LINE[status]]
    length = (b"content-length", b"%d" % len(body))
    for name, value in (*cycle.default_headers, *headers, length):
        # uvicorn's own checks: a header can neither end the head early nor split it.
        if HEADER_RE.search(name) or HEADER_VALUE_RE.search(value):
            raise ValueError(f"invalid HTTP header {name!r}")
        head += (name.lower(), b": ", value, b"\r\n")
    if not cycle.keep_alive:
        head.append(b"connection: close\r\n")
    head.append(b"\r\n")
    cycle.response_started = cycle.response_complete = True
    cycle.waiting_for_100_continue = False
    if cycle.access_log:
        cycle.access_logger.info(
            '%s - "%s %s HTTP/%s" %d',
            get_client_addr(cycle.scope),
            cycle.scope["method"],
            get_path_with_query_string(cycle.scope),
            cycle.scope["http_version"],
            status,
        )
    transport = cycle.transport
    transport.writelines((b"".join(head), body))
    if isinstance(transport, CoalescingTransport):
        transport.flush()  # now: the point is not to wait for another tick
    cycle.message_event.set()  # a `receive()` waiting for the body learns it is over
    if not cycle.keep_alive:
        transport.close()
    cycle.on_response()
    return True


class DirectMessageWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, with a direct way in for messages.

    Through ASGI, every message is queued, reading is paused, the app's task wakes, and
    its `receive()` resumes reading: a task switch and two epoll changes per message.
    On the host link that is paid by every screenshot reply, as the gateway's largest
    step between the reply's arrival and its waiting request (timed across processes).

    An app that calls the `rigway.message_sink` scope extension with a callable gets
    each later message by a plain call from `data_received`, and never pauses reading:
    the sink handles a message before the next one is delivered. Messages queued before
    the call are handed to it first, in order. The disconnect still comes through
    `receive()`, so the app's receive loop stays its way to learn the link is gone. A
    sink that raises fails the connection with 1011, as a broken app would.

    Once a sink is taken, a whole binary message of at least `BULK_FRAME_MIN` bytes in
    one frame (a screenshot's reply) is read in bulk: unmasked straight from the bytes
    the socket gave, one copy instead of websockets' three (`ws_frames.py`). The
    protocol follows every frame's boundary for that, and hands every other byte to
    websockets as it came; a frame goes the bulk way only when websockets would take
    it as a whole message (open, not inside a fragmented one, within the size limit,
    no extension), so every frame it would refuse it still sees and refuses.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._message_sink: MessageSink | None = None
        # Frame boundaries, followed so that a large binary frame can be read in bulk
        # (`ws_frames.py`); websockets reads every other byte.
        self._handshake_read = False
        self._following_frames = True  # until websockets fails the connection
        self._held_head = b""  # the start of a frame head that the last bytes cut short
        self._owed = 0  # bytes of the current frame still to give websockets
        self._bulk: BulkFrame | None = None

    def data_received(self, data: bytes) -> None:
        if not self._handshake_read:
            # uvicorn hands the upgrade request over alone, in one call: every later
            # byte belongs to a frame, and the first one starts a frame.
            self._handshake_read = True
            super().data_received(data)
            return
        if not self._following_frames:
            super().data_received(data)
            return
        if self._held_head:
            data, self._held_head = self._held_head + data, b""
        view = memoryview(data)
        owed_from = position = 0  # websockets has had everything before `owed_from`
        end = len(view)
        while position < end:
            if self._bulk is not None:
                position = self._bulk.take(view, position)
                owed_from = position
                if self._bulk.complete:
                    payload, self._bulk = self._bulk.payload(), None
                    self._deliver_bulk(payload)
                continue
            if self._owed:
                step = min(self._owed, end - position)
                self._owed -= step
                position += step
                continue
            head = FrameHead.read(view[position:])
            if head is None:
                self._held_head = bytes(view[position:])
                end = position
                break
            if head.is_bulk:
                # websockets reads the frames before this one first: their messages go
                # first, and its state then says whether this one may be read here.
                if not self._give_websockets(data, owed_from, position):
                    # It failed the connection on one of them: the rest is its to discard.
                    self._give_websockets(data, position, len(data))
                    return
                owed_from = position
                if self._may_read_in_bulk(head):
                    self._bulk = BulkFrame(head)
                    position += head.size
                    owed_from = position
                    continue
            self._owed = head.size + head.length
        self._give_websockets(data, owed_from, end)

    def _give_websockets(self, data: bytes, start: int, stop: int) -> bool:
        """Hand `data[start:stop]` to websockets' parser; False once it has failed the
        connection, after which it reads every byte (and discards them)."""
        if start < stop:
            super().data_received(data if (start, stop) == (0, len(data)) else data[start:stop])
        if self.conn.parser_exc is not None:
            self._following_frames = False
        return self._following_frames

    def _may_read_in_bulk(self, head: FrameHead) -> bool:
        """websockets would accept this frame as a whole message and deliver it."""
        conn = self.conn
        return (
            self._message_sink is not None
            and not self.close_sent
            and conn.state is State.OPEN
            and not conn.extensions
            and conn.current_size is None  # not inside a fragmented message
            and (conn.max_message_size is None or head.length <= conn.max_message_size)
            and (conn.max_fragment_size is None or head.length <= conn.max_fragment_size)
        )

    def _deliver_bulk(self, payload: bytes) -> None:
        sink = self._message_sink
        if sink is not None and not self.close_sent:
            self._deliver(sink, payload)

    def handle_connect(self, event: HandshakeRequest) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # absent when the handshake was refused
        if scope is not None:
            scope["extensions"][MESSAGE_SINK_EXTENSION] = self._take_messages

    def _take_messages(self, sink: MessageSink) -> None:
        held: list[Any] = []
        while not self.queue.empty():
            message = self.queue.get_nowait()
            if message["type"] == "websocket.receive":
                text, data = message.get("text"), message.get("bytes")
                self._deliver(sink, text if text is not None else data or b"")
            else:
                held.append(message)  # a disconnect: still for receive()
        for message in held:
            self.queue.put_nowait(message)
        self._message_sink = sink
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()

    def send_receive_event_to_app(self) -> None:
        sink = self._message_sink
        if sink is None or self.close_sent:
            super().send_receive_event_to_app()
            return
        data = self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
        if self.curr_msg_data_type == "bytes":
            self.frames = []
            self._deliver(sink, data)
            return
        try:
            text = data.decode()
        except UnicodeDecodeError:
            self.frames = [data]
            super().send_receive_event_to_app()  # uvicorn's own answer to bad UTF-8
            return
        self.frames = []
        self._deliver(sink, text)

    def _deliver(self, sink: MessageSink, message: str | bytes) -> None:
        try:
            sink(message)
        except Exception:
            # Escaping `data_received`, it would drop the socket without a close frame.
            self.logger.exception("the WebSocket app failed on a message")
            self._message_sink = None
            self.conn.fail(1011, "internal error")
            if self.conn.close_sent is not None:
                self.handle_parser_exception()  # the close frame, then the socket
            else:
                self.transport.close()
