"""A keep-alive HTTP/1.1 client on a raw socket, for timing the gateway.

httpx2 spends about a millisecond of its own per request on this machine, and the
standard library's http.client 0.1 to 0.2 ms more than this one (its headers go through the email
package); timing with a lean client keeps the figure about the service, the way curl
would. Replies are read into one preallocated buffer: a fresh 1 MiB `recv` per read
costs an allocation and page faults the service is not to blame for. It speaks only
what the benchmarks use: GET/POST/DELETE with query params or a
JSON body, answered with a Content-Length body (every gateway answer is). An error
status raises: a benchmark must never time a 429 as if it were a screenshot.

`AsyncLeanConnection` is the same client on asyncio, one connection per simulated
agent, for load generators that share the machine with the service they load: httpx2's
own millisecond per request would be CPU taken from the service being measured.
"""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

_READ_CHUNK = 1 << 20


def _request_bytes(method: str, path: str, fixed_headers: str, extra: str, body: bytes) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\n{fixed_headers}{extra}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


@dataclass
class LeanResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}: {self.content[:200]!r}")


class LeanClient:
    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(base_url)
        assert parts.hostname is not None
        assert parts.port is not None
        self._socket = socket.create_connection((parts.hostname, parts.port))
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._fixed_headers = f"Host: {parts.hostname}:{parts.port}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        self._buffer = bytearray()
        self._scratch_view = memoryview(bytearray(_READ_CHUNK))

    def request(
        self, method: str, path: str, params: dict[str, Any] | None = None, json_body: Any = None
    ) -> LeanResponse:
        if params:
            path = f"{path}?{urlencode(params)}"
        body = b"" if json_body is None else json.dumps(json_body).encode()
        extra = "Content-Type: application/json\r\n" if json_body is not None else ""
        self._socket.sendall(_request_bytes(method, path, self._fixed_headers, extra, body))
        response = self._read_response()
        response.raise_for_status()
        return response

    def _read_response(self) -> LeanResponse:
        while (response := _take_response(self._buffer)) is None:
            self._fill()
        return response

    def _fill(self) -> None:
        count = self._socket.recv_into(self._scratch_view)
        if count == 0:
            raise ConnectionError("the gateway closed the connection")
        self._buffer += self._scratch_view[:count]

    def get(self, path: str, params: dict[str, Any] | None = None) -> LeanResponse:
        return self.request("GET", path, params=params)

    def post(self, path: str, json: Any = None) -> LeanResponse:
        return self.request("POST", path, json_body=json)

    def delete(self, path: str) -> LeanResponse:
        return self.request("DELETE", path)

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> LeanClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _take_response(buffer: bytearray) -> LeanResponse | None:
    """The first whole response in `buffer`, taken out of it; None until one is there."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise RuntimeError("the lean client reads Content-Length bodies only")
    length = int(headers["content-length"])
    if len(buffer) < end + 4 + length:
        return None
    status = int(lines[0].split(" ", 2)[1])
    content = bytes(buffer[end + 4 : end + 4 + length])
    del buffer[: end + 4 + length]
    return LeanResponse(status, headers, content)


class AsyncLeanConnection:
    """One keep-alive connection to `base_url` on asyncio, opened at the first request.
    After a failed request it is closed; the next request opens a new one (what an
    agent's client does after an error)."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(base_url)
        assert parts.hostname is not None
        assert parts.port is not None
        self._host, self._port = parts.hostname, parts.port
        self._fixed_headers = f"Host: {parts.hostname}:{parts.port}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._buffer = bytearray()

    async def get(self, path: str) -> LeanResponse:
        """The answer, whatever its status; raises OSError (the connection failed or
        closed under the request) and leaves the connection closed."""
        try:
            return await self._exchange(_request_bytes("GET", path, self._fixed_headers, "", b""))
        except BaseException:
            self.close()
            raise

    async def _exchange(self, request: bytes) -> LeanResponse:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self._host, self._port)
            self._buffer.clear()
        reader, writer = self._streams
        writer.write(request)
        while (response := _take_response(self._buffer)) is None:
            chunk = await reader.read(_READ_CHUNK)
            if not chunk:
                raise ConnectionResetError("the gateway closed the connection")
            self._buffer += chunk
        return response

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
