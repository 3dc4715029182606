"""A keep-alive HTTP client on the standard library, for timing the gateway.

httpx2 spends about a millisecond of its own per request on this machine; timing with
a lean client keeps the figure about the service. It speaks only what the benchmarks
use: GET/POST/DELETE with query params or a JSON body.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit


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
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port)
        self._headers = headers

    def request(
        self, method: str, path: str, params: dict[str, Any] | None = None, json_body: Any = None
    ) -> LeanResponse:
        if params:
            path = f"{path}?{urlencode(params)}"
        headers = dict(self._headers)
        body = None
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        self._connection.request(method, path, body=body, headers=headers)
        response = self._connection.getresponse()
        content = response.read()
        return LeanResponse(
            response.status, {k.lower(): v for k, v in response.getheaders()}, content
        )

    def get(self, path: str, params: dict[str, Any] | None = None) -> LeanResponse:
        return self.request("GET", path, params=params)

    def post(self, path: str, json: Any = None) -> LeanResponse:
        return self.request("POST", path, json_body=json)

    def delete(self, path: str) -> LeanResponse:
        return self.request("DELETE", path)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> LeanClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
