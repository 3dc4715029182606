"""A keep-alive HTTP/1.1 client on a raw socket, for timing the gateway.

httpx2 spends about a millisecond of its own per request on this machine, and the
standard library's http.client 0.1 to 0.2 ms more than this one (its headers go through the email
package); timing with a lean client keeps the figure about the service, the way curl
would. Replies are read into one preallocated buffer: a fresh 1 MiB `recv` per read
costs an allocation and page faults the service is not to blame for. It speaks only
what the benchmarks use: GET/POST/DELETE with query params or a
JSON body, answered with a Content-Length body (every gateway answer is). An error
status raises: a benchmark must never time a 429 as if it were a screenshot.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

_READ_CHUNK = 1 << 20


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
        head = (
            f"{method} {path} HTTP/1.1\r\n{self._fixed_headers}{extra}"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self._socket.sendall(head.encode() + body)
        response = self._read_response()
        response.raise_for_status()
        return response

    def _read_response(self) -> LeanResponse:
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            self._fill()
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers:
            raise RuntimeError("the lean client reads Content-Length bodies only")
        length = int(headers["content-length"])
        while len(self._buffer) < length:
            self._fill()
        content = bytes(self._buffer[:length])
        del self._buffer[:length]
        return LeanResponse(status, headers, content)

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
