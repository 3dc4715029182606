"""The link between two gateway nodes: one persistent WebSocket per pair, over which
the node a request reached hands it to the node that holds its rig.

A frame is the host link's framing (`rigway.protocol.framing`): a JSON header and the
body as raw bytes, so a JPEG crosses as it is, never base64. A request carries an id
and a deadline; replies come back in any order. The link is authenticated by a token
every node derives from the shared secret key (`RIGWAY_SECRET_KEY_FILE`), compared in
constant time. The receiving node runs a forwarded request through its own app, as if
it had arrived there, except that it trusts the caller named in the request (the
sending node authenticated and rate-limited it) and never forwards it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from rigway.protocol.framing import FramingError, decode_frame, encode_binary

_log = logging.getLogger(__name__)

PEER_PATH = "/v1/peer/connect"
FORWARDED_EXTENSION = "rigway.forwarded"
MAX_FRAME_BYTES = 64 * 1024 * 1024
_OPEN_TIMEOUT_S = 5.0
# Headers of a forwarded request the receiving app may read; the rest stay behind
# (hop-by-hop, and Authorization: the caller travels as the sender authenticated it).
FORWARDED_REQUEST_HEADERS = frozenset(
    {"content-type", "accept", "x-request-id", "user-agent", "x-frame-id", "if-none-match"}
)
# Headers of the reply that describe the body as the owner built it.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})


def peer_token(secret_key: bytes) -> str:
    """The bearer token of every node of a service, from their shared secret key."""
    return hmac.new(secret_key, b"rigway peer link v1", hashlib.sha256).hexdigest()


def is_peer_token(secret_key: bytes, presented: str | None) -> bool:
    if presented is None:
        return False
    return hmac.compare_digest(peer_token(secret_key).encode(), presented.encode())


@dataclass(frozen=True, slots=True)
class ForwardedRequest:
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    caller: dict[str, Any]

    def header(self, request_id: str, deadline_ms: int) -> dict[str, Any]:
        return {
            "t": "req",
            "id": request_id,
            "deadline_ms": deadline_ms,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
            "caller": self.caller,
        }


@dataclass(frozen=True, slots=True)
class ForwardedResponse:
    status: int
    headers: list[tuple[str, str]]
    body: memoryview


class PeerUnavailableError(Exception):
    """The other node cannot be reached, or dropped the link mid-request."""


class PeerTimeoutError(Exception):
    """The other node did not answer within the deadline."""


class PeerClient:
    """This node's link to one other node, dialled on first use and again after a drop."""

    def __init__(self, node_url: str, token: str) -> None:
        parts = urlsplit(node_url)
        scheme = "wss" if parts.scheme in ("https", "wss") else "ws"
        self._url = f"{scheme}://{parts.netloc}{PEER_PATH}"
        self._token = token
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._dialing = asyncio.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[ForwardedResponse]] = {}

    async def request(
        self, forwarded: ForwardedRequest, body: bytes, timeout_s: float
    ) -> ForwardedResponse:
        request_id = f"p{next(self._ids)}"
        waiter: asyncio.Future[ForwardedResponse] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = waiter
        try:
            async with asyncio.timeout(timeout_s):
                ws = await self._connection()
                frame = encode_binary(forwarded.header(request_id, int(timeout_s * 1000)), body)
                await ws.send(frame)
                return await waiter
        except TimeoutError as exc:
            raise PeerTimeoutError(f"{self._url} did not answer in {timeout_s:g} s") from exc
        except (OSError, ConnectionClosed, InvalidHandshake, InvalidURI) as exc:
            # InvalidHandshake: something other than a node answered the dial (a load
            # balancer's 502, a proxy's 403, not HTTP at all); InvalidURI: a node
            # registered an address with no host. Either way there is no link.
            raise PeerUnavailableError(f"{self._url}: {exc}") from exc
        finally:
            self._pending.pop(request_id, None)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def _connection(self) -> ClientConnection:
        async with self._dialing:
            if self._ws is None or self._reader is None or self._reader.done():
                try:
                    self._ws = await connect(
                        self._url,
                        additional_headers={"Authorization": f"Bearer {self._token}"},
                        compression=None,
                        max_size=MAX_FRAME_BYTES,
                        open_timeout=_OPEN_TIMEOUT_S,
                    )
                except ValueError as exc:
                    # An address websockets cannot parse (a bad port, a host IDNA
                    # refuses), registered by a node of another version: no link.
                    raise PeerUnavailableError(f"{self._url}: {exc}") from exc
                self._reader = asyncio.create_task(self._read(self._ws))
            return self._ws

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                try:
                    header, payload = decode_frame(frame)
                except FramingError:
                    _log.warning("a malformed frame from %s closed the link", self._url)
                    break
                waiter = self._pending.get(str(header.get("id")))
                if waiter is None or waiter.done():
                    continue  # its caller gave up
                waiter.set_result(
                    ForwardedResponse(
                        status=int(header.get("status", 502)),
                        headers=[(str(k), str(v)) for k, v in header.get("headers", [])],
                        body=payload,
                    )
                )
        except ConnectionClosed:
            pass
        finally:
            for waiter in self._pending.values():
                if not waiter.done():
                    waiter.set_exception(PeerUnavailableError(f"{self._url} closed the link"))
            await ws.close()


class PeerClients:
    """One `PeerClient` per other node, made on first use; `secret_key` is the key every
    node of the service shares, from which the links' token is derived."""

    def __init__(self, secret_key: bytes) -> None:
        self.secret_key = secret_key
        self._token = peer_token(secret_key)
        self._clients: dict[str, PeerClient] = {}

    def to(self, node_url: str) -> PeerClient:
        client = self._clients.get(node_url)
        if client is None:
            client = self._clients[node_url] = PeerClient(node_url, self._token)
        return client

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients.values()), return_exceptions=True)
        self._clients.clear()


def reply_header(
    request_id: str, status: int, headers: list[tuple[bytes, bytes]]
) -> dict[str, Any]:
    return {
        "t": "res",
        "id": request_id,
        "status": status,
        "headers": [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in headers
            if name.decode("latin-1").lower() not in _HOP_BY_HOP
        ],
    }
