"""uvicorn's HTTP protocol with one send per event-loop tick.

uvicorn writes a response's status line and headers the moment the app sends
`http.response.start`, then the body in a second `write`. Each write on a TCP socket is
a syscall, and on loopback the kernel runs the receiver's side of it in the sender's
time; the first write also wakes the client, which then often wakes a second time for
the body. Measured with py-spy on `bench.gateway_sim`, the two writes were about a
third of the gateway's busy time per screenshot, the header write the larger part
(docs/decisions/0004-screen-hot-path.md).

`CoalescingTransport` holds what is written during one tick of the loop and sends it
as one write (a writev) at the end of that tick (`loop.call_soon`), like TCP_CORK for a tick: the
headers and body of a plain response, or a WebSocket reply, leave in one segment. The
delay is that of one ready-queue pass; flow control still acts on the real transport.
A WebSocket upgrade hands this same transport to the WebSocket protocol, so host-link
frames get the same treatment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["CoalescingHttpToolsProtocol", "CoalescingTransport"]


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
    """httptools parsing as uvicorn does it, writing through `CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))
