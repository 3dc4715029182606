"""How the gateway is served: uvicorn with its public settings, behind connection bounds.

uvicorn bounds neither the time a client may take to send a request nor, on a WebSocket
upgrade, what the handshake parser will choke on:
- its keep-alive timer runs only between requests, so a client that opens a connection
  and sends half a header line (or half a body) holds it, and a task, forever;
- a WebSocket upgrade whose header line is longer than the WebSocket library's 8 KB
  limit passes the HTTP parser, then fails inside the handshake in a way that leaves
  the socket open with no answer at all, before any credentials are checked.

`BoundedConnection` sits in front of uvicorn's HTTP protocol, as the protocol the
listening socket creates for each connection, and hands every byte on unchanged. It
reads the same bytes with httptools (the parser uvicorn itself uses, through its public
API) only to know where each request's head and body end, and:
- closes a connection whose request head is not complete `head_timeout_s` after its
  first byte (or after the connection opened), answering 408;
- closes a connection whose request body is not complete `body_timeout_s` after its
  head;
- answers 431 and closes when a header line, the number of headers or the whole head
  is over its bound, and 400 when a WebSocket upgrade's head holds what the WebSocket
  handshake parser would refuse: such a request never reaches uvicorn.
Once a connection is upgraded to a WebSocket it steps aside; the host link has its own
heartbeat and deadlines.

Each connection also writes through a `CoalescingTransport`: uvicorn writes a
response's status line and headers, then its body, in two `write` calls, each a
syscall that on loopback also runs the receiver's side in the sender's time and may wake
the client twice. Held until the end of the event loop's tick, they leave as one
writev; the upgraded WebSocket inherits the same transport, so host-link frames get the
same treatment (docs/decisions/0004-screen-hot-path.md measured the two writes at about
a third of the gateway's busy time per screenshot).

It is wired through `uvicorn.Config`'s own `http` protocol setting: the config is loaded
as uvicorn's server would load it, and the protocol class it resolved for "httptools" is
the one each `BoundedConnection` wraps (by composition: it calls the asyncio `Protocol`
methods, nothing else).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import httptools
import uvicorn

from rigway.gateway.settings import GatewaySettings

__all__ = ["BoundedConnection", "CoalescingTransport", "ConnectionLimits", "server_config"]

logger = logging.getLogger(__name__)

# What the WebSocket handshake parser accepts (RFC 7230 tokens; visible characters,
# spaces and tabs in values; lines up to 8 KB): an upgrade with anything else is
# refused here, with an answer, instead of there, without one.
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE = re.compile(rb"[\x09\x20-\x7e\x80-\xff]*")
_HANDSHAKE_MAX_LINE_BYTES = 8192


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    head_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    # Gunicorn's long-standing defaults for a header line and the number of headers.
    max_header_line_bytes: int = 8190
    max_headers: int = 100
    max_head_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        if self.max_header_line_bytes > _HANDSHAKE_MAX_LINE_BYTES:
            raise ValueError("a header line longer than the WebSocket handshake allows")


def _response(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


_REQUEST_TIMEOUT = _response(b"408 Request Timeout")
_HEADERS_TOO_LARGE = _response(b"431 Request Header Fields Too Large")
_BAD_UPGRADE = _response(b"400 Bad Request")


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


class BoundedConnection(asyncio.Protocol):
    """One client connection: `inner` (uvicorn's protocol) does the work; this bounds
    the time and size of each request's head and the time of its body."""

    def __init__(
        self, inner: asyncio.Protocol, limits: ConnectionLimits, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._inner = inner
        self._limits = limits
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._timer: asyncio.TimerHandle | None = None
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._url_bytes = 0
        self._header_fault: bytes | None = None
        self._upgrade_is_clean = True
        self._stepped_aside = False
        self._refused = False

    # ---- the asyncio Protocol, passed on -----------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not a subclass of asyncio's, so no isinstance).
        self._transport = cast(asyncio.Transport, transport)
        self._arm(self._limits.head_timeout_s, self._head_timed_out)
        self._inner.connection_made(CoalescingTransport(self._transport, self._loop))

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._stepped_aside:
            self._inner.data_received(data)
            return
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._header_fault is None and not self._upgrade_is_clean:
                self._header_fault = _BAD_UPGRADE
            if self._header_fault is None:
                self._step_aside()
        except httptools.HttpParserError:
            # uvicorn's parser fails on the same bytes and answers 400 itself.
            self._step_aside()
        too_long = self._in_head and self._head_bytes > self._limits.max_head_bytes
        if self._header_fault is None and too_long:
            self._header_fault = _HEADERS_TOO_LARGE
        if self._header_fault is not None:
            self._refuse(self._header_fault)
            return
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    # ---- httptools callbacks: where heads and bodies end --------------------------------

    def on_message_begin(self) -> None:
        self._in_head = True
        self._header_count = 0
        self._url_bytes = 0
        self._upgrade_is_clean = True
        if self._timer is None:
            self._arm(self._limits.head_timeout_s, self._head_timed_out)

    def on_url(self, url: bytes) -> None:
        # httptools may hand the target over in pieces.
        self._url_bytes += len(url)
        if self._url_bytes + 32 > _HANDSHAKE_MAX_LINE_BYTES:
            self._upgrade_is_clean = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        limits = self._limits
        line_bytes = len(name) + 2 + len(value)
        if line_bytes > limits.max_header_line_bytes or self._header_count > limits.max_headers:
            self._header_fault = _HEADERS_TOO_LARGE
        elif _TOKEN.fullmatch(name) is None or _FIELD_VALUE.fullmatch(value) is None:
            self._upgrade_is_clean = False

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        self._arm(self._limits.body_timeout_s, self._body_timed_out)

    def on_message_complete(self) -> None:
        # Between requests uvicorn's own keep-alive timer bounds the wait.
        self._disarm()

    # ---- outcomes ------------------------------------------------------------------------

    def _step_aside(self) -> None:
        self._disarm()
        self._stepped_aside = True

    def _refuse(self, answer: bytes) -> None:
        """Answer for uvicorn, which has not seen this request, and close."""
        self._refused = True
        self._disarm()
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.write(answer)
            transport.close()

    def _head_timed_out(self) -> None:
        self._timer = None
        logger.info("closing a connection whose request head stalled")
        self._refuse(_REQUEST_TIMEOUT)

    def _body_timed_out(self) -> None:
        self._timer = None
        logger.info("closing a connection whose request body stalled")
        # The app may be reading it: closing tells uvicorn's protocol the client left.
        self._refused = True
        if self._transport is not None:
            self._transport.close()

    def _arm(self, delay_s: float, expire: Callable[[], None]) -> None:
        self._disarm()
        self._timer = self._loop.call_later(delay_s, expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def server_config(
    app: Any,
    settings: GatewaySettings,
    host: str,
    port: int,
    limits: ConnectionLimits | None = None,
    log_level: str = "warning",
    *,
    configure_logging: bool = True,
) -> uvicorn.Config:
    """The gateway's uvicorn settings, each connection behind `BoundedConnection`
    (`limits`, else the settings' head and body timeouts with the default sizes).

    `log_level` is uvicorn's (debug, info, warning, error): at info and below it logs
    one access line per request. `configure_logging=False` leaves the handlers and
    formats of uvicorn's loggers to the caller (JSON logs), setting only their level."""
    # uvicorn's own logging set-up unless the caller configures logging itself (its
    # `log_config=None` leaves handlers and formats alone, setting only the levels).
    logging_options: dict[str, Any] = {} if configure_logging else {"log_config": None}
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http="httptools",
        # The sans-I/O WebSocket protocol has no reader task per connection.
        ws="websockets-sansio",
        # Per-message deflate costs ~27 ms on a 487 KB JPEG (bench/ws_compression.py).
        ws_per_message_deflate=False,
        ws_max_size=64 * 1024 * 1024,
        timeout_keep_alive=settings.keep_alive_s,
        # Forwarding headers only from the operator's proxies, never by default (uvicorn
        # would otherwise believe any local peer, or read FORWARDED_ALLOW_IPS itself).
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=list(settings.trusted_proxies),
        log_level=log_level,
        **logging_options,
        lifespan="on",
    )
    config.load()
    inner_class: Callable[..., asyncio.Protocol] = config.http_protocol_class
    bounds = (
        ConnectionLimits(
            head_timeout_s=settings.request_head_timeout_s,
            body_timeout_s=settings.request_body_timeout_s,
        )
        if limits is None
        else limits
    )

    def bounded_connection(*args: Any, **kwargs: Any) -> BoundedConnection:
        inner = inner_class(*args, **kwargs)
        return BoundedConnection(inner, bounds, asyncio.get_running_loop())

    # uvicorn's server builds each connection's protocol from this, once loaded.
    config.http_protocol_class = bounded_connection  # type: ignore[assignment]
    return config
