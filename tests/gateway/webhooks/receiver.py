"""A real HTTPS webhook receiver on 127.0.0.1, in the test's own event loop.

It records each request (and the TLS SNI name the client sent) and answers as told:
`ok` (204), `redirect` (302), `error` (500), `slow` (never answers until the test ends) or
`huge` (announces 100 MiB, sends 256 KiB, then stalls). Nothing here sleeps: stalls wait
on `release`, which is set when the receiver closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self

Behaviour = Literal["ok", "redirect", "error", "slow", "huge"]

HUGE_ANNOUNCED_BYTES = 100 * 1024 * 1024
HUGE_SENT_BYTES = 256 * 1024


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HttpsReceiver:
    server_context: ssl.SSLContext
    behaviour: Behaviour = "ok"
    requests: list[ReceivedRequest] = field(default_factory=list)
    sni_names: list[str | None] = field(default_factory=list)
    connections: int = 0
    port: int = 0

    def __post_init__(self) -> None:
        self.release = asyncio.Event()
        self._handlers: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.server_context.sni_callback = self._record_sni

    def _record_sni(self, _sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        self.sni_names.append(name)

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", 0, ssl=self.server_context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release.set()
        assert self._server is not None
        self._server.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self.connections += 1
        try:
            self.requests.append(await _read_request(reader))
            await self._respond(writer)
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            pass  # the client hung up: exactly what some tests provoke
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()

    async def _respond(self, writer: asyncio.StreamWriter) -> None:
        if self.behaviour == "slow":
            await self.release.wait()
            return
        if self.behaviour == "huge":
            writer.write(_head("200 OK", f"Content-Length: {HUGE_ANNOUNCED_BYTES}"))
            writer.write(b"x" * HUGE_SENT_BYTES)
            await writer.drain()
            await self.release.wait()
            return
        status, extra = {
            "ok": ("204 No Content", "Content-Length: 0"),
            "redirect": ("302 Found", f"Location: https://receiver.test:{self.port}/next"),
            "error": ("500 Internal Server Error", "Content-Length: 0"),
        }[self.behaviour]
        writer.write(_head(status, extra))
        await writer.drain()


def _head(status: str, extra: str) -> bytes:
    return f"HTTP/1.1 {status}\r\n{extra}\r\nConnection: close\r\n\r\n".encode("ascii")


async def _read_request(reader: asyncio.StreamReader) -> ReceivedRequest:
    head = await reader.readuntil(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip()] = value.strip()
    length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
    body = await reader.readexactly(length)
    return ReceivedRequest(method, path, headers, body)
