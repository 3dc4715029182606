"""websockets' asyncio client connection, handing each message to the link as it is parsed.

The library queues every message for a task blocked in `recv()`: the connection's
reader wakes that task, which then runs the link's handler in a later turn of the
event loop. On the screenshot path that is one more task switch, after the agent's loop
sat idle through the gateway's share of the call; on this VM an idle vCPU makes every
such step cost two to three times its warm price
(docs/decisions/0008-replies-from-the-screen-worker.md). A `DirectClientConnection`
hands each whole message to the link's sink with a plain call, from the reader itself.

Until the link asks for direct delivery (`deliver_to`, after the hello and welcome), the
connection holds messages in order, and `next_message()` reads them: the welcome first,
then anything the gateway sent right behind it goes to the sink before newer messages.
The library's `recv()` is not used on such a connection.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any, Final

from websockets.asyncio.client import ClientConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event

from rigway.protocol.framing import FramingError

__all__ = ["MAX_FRAGMENTS", "DirectClientConnection", "Message", "MessageSink"]

_log = logging.getLogger(__name__)

# The protocol bounds a fragmented message's bytes (max_size); this bounds its pieces,
# which could otherwise be empty and many. The gateway never fragments.
MAX_FRAGMENTS: Final = 1024

# A whole message, or why it could not be read (the link closes with 1007 on it).
Message = str | bytes | FramingError
# Returns False to stop delivery: the link is closing the connection.
MessageSink = Callable[[Message], bool]


class DirectClientConnection(ClientConnection):
    """Build through `connect(create_connection=DirectClientConnection)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sink: MessageSink | None = None
        self._delivering = True
        self._held: collections.deque[Message] = collections.deque()
        self._held_waiter: asyncio.Future[None] | None = None
        self._fragments: list[Frame] = []
        # Past MAX_FRAGMENTS: the rest of that message is dropped, up to its last frame.
        self._dropping_fragments = False
        self._closing: asyncio.Task[None] | None = None

    def deliver_to(self, sink: MessageSink) -> None:
        """From now on, every message goes to `sink` the moment it is parsed; the
        messages held so far go first, in order."""
        self._sink = sink
        while self._held and self._delivering:
            self._deliver(self._held.popleft())

    async def next_message(self) -> str | bytes:
        """The next held message (before `deliver_to`): raises ConnectionClosed when the
        connection ends first, FramingError for a message that cannot be read."""
        if self._sink is not None:
            raise RuntimeError("messages go to the sink: next_message() would never return")
        while not self._held:
            if self.connection_lost_waiter.done():
                raise self.close_exc
            waiter = self.loop.create_future()
            self._held_waiter = waiter
            try:
                await waiter
            finally:
                self._held_waiter = None
        message = self._held.popleft()
        if isinstance(message, FramingError):
            raise message
        return message

    def process_event(self, event: Event) -> None:
        if (
            self.response is None  # the handshake response: the library's business
            or not isinstance(event, Frame)
            or event.opcode not in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)
        ):
            super().process_event(event)
            return
        message = self._assemble(event)
        if message is None:
            return
        if self._sink is not None:
            self._deliver(message)
            return
        self._held.append(message)
        if self._held_waiter is not None and not self._held_waiter.done():
            self._held_waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._held_waiter is not None and not self._held_waiter.done():
            self._held_waiter.set_result(None)

    def _deliver(self, message: Message) -> None:
        assert self._sink is not None
        if not self._delivering:
            return
        try:
            self._delivering = self._sink(message)
        except Exception:
            # Escaping data_received, it would drop the socket without a close frame and
            # lose the rest of this read: fail the connection as a broken app would.
            _log.exception("the host link failed on a message from the gateway")
            self._delivering = False
            self._closing = asyncio.ensure_future(self.close(1011, "internal error"))

    def _assemble(self, frame: Frame) -> Message | None:
        """The whole message once its last frame is here, else None."""
        if self._dropping_fragments:
            self._dropping_fragments = not frame.fin
            return None
        if not frame.fin or self._fragments:
            self._fragments.append(frame)
            if len(self._fragments) > MAX_FRAGMENTS:
                self._fragments = []
                self._dropping_fragments = not frame.fin
                return FramingError(f"a message in more than {MAX_FRAGMENTS} fragments")
            if not frame.fin:
                return None
            frames, self._fragments = self._fragments, []
            data = b"".join(piece.data for piece in frames)
            opcode = frames[0].opcode
        else:
            data, opcode = bytes(frame.data), frame.opcode
        if opcode is Opcode.BINARY:
            return data
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            return FramingError(f"text frame is not UTF-8: {exc.reason} at {exc.start}")
