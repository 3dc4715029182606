"""A viewer's signaling socket (live view, takeover) relayed to the node holding its rig.

The agent's WebRTC publisher is reached over the rig's host link, so a signaling socket
is served where that link is. A socket that reached another node is relayed: that node
opens a WebSocket to the holder's same endpoint (same path and query, so the token
travels on and the holder uses it, once), authenticated as a peer with the peer link's
token, which tells the holder the socket was relayed already and is never to be relayed
again. Frames then flow both ways unchanged until either side closes, and the other
side is closed next: the viewer with the holder's code and reason, so the holder's
refusals (4401, 4403, 4410, ...) reach it as they were. A holder that cannot be reached,
or whose socket drops without a close, closes the viewer 1013 `unavailable`.

Time limits are those of a local socket: the holder's channel applies its own (the
takeover's heartbeat), the viewer's leg has uvicorn's keepalive pings and the holder's
leg the client's, so a node gone silent is noticed on either leg.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from rigway.gateway.cluster.peer_link import is_peer_token, peer_token

__all__ = ["UNAVAILABLE", "is_relayed", "relay_socket"]

_log = logging.getLogger(__name__)

# The WebSocket code for "try again later": the link's token was not used.
UNAVAILABLE = (1013, "unavailable")
_OPEN_TIMEOUT_S = 5.0
_CLOSE_TIMEOUT_S = 1.0
# A signaling message is small (an SDP is a few KiB; the channel refuses 64 KiB).
_MAX_MESSAGE_BYTES = 1024 * 1024
# Close codes that may not be sent in a close frame (RFC 6455 7.4.1): a leg that ended
# with one of them ended without a proper close.
_NOT_SENDABLE = frozenset({1004, 1005, 1006, 1015})


def is_relayed(websocket: WebSocket, secret_key: bytes) -> bool:
    """Whether another node of the service relayed this socket here (its peer token)."""
    scheme, _, token = websocket.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and is_peer_token(secret_key, token)


async def relay_socket(websocket: WebSocket, node_url: str, secret_key: bytes) -> None:
    """Relay the accepted `websocket` to the same endpoint of the node at `node_url`
    until either side closes."""
    url = _holder_url(node_url, websocket.url.path, websocket.url.query)
    try:
        holder = await connect(
            url,
            additional_headers={"Authorization": f"Bearer {peer_token(secret_key)}"},
            compression=None,
            max_size=_MAX_MESSAGE_BYTES,
            open_timeout=_OPEN_TIMEOUT_S,
            close_timeout=_CLOSE_TIMEOUT_S,
        )
    except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
        # The kind of failure only: some (InvalidURI) quote the URL, whose query is the
        # viewer's token, still unused and good.
        _log.warning("could not relay a signaling socket to %s: %s", node_url, type(exc).__name__)
        await _close_viewer(websocket, *UNAVAILABLE)
        return
    to_holder = asyncio.create_task(_viewer_to_holder(websocket, holder))
    to_viewer = asyncio.create_task(_holder_to_viewer(holder, websocket))
    try:
        await asyncio.wait({to_holder, to_viewer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (to_holder, to_viewer):
            task.cancel()
        await asyncio.gather(to_holder, to_viewer, return_exceptions=True)
        # The viewer left (the holder's channel then lets go), or the holder closed.
        await holder.close()
    code, reason = holder.close_code, holder.close_reason or ""
    if code is None or code in _NOT_SENDABLE:
        code, reason = UNAVAILABLE
    await _close_viewer(websocket, code, reason)


async def _viewer_to_holder(websocket: WebSocket, holder: ClientConnection) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, ConnectionClosed):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text, data = message.get("text"), message.get("bytes")
            if text is not None:
                await holder.send(text)
            elif data is not None:
                await holder.send(data)


async def _holder_to_viewer(holder: ClientConnection, websocket: WebSocket) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError, ConnectionClosed):
        async for message in holder:
            if isinstance(message, str):
                await websocket.send_text(message)
            else:
                await websocket.send_bytes(message)


async def _close_viewer(websocket: WebSocket, code: int, reason: str) -> None:
    # A viewer gone already cannot be closed: nothing is left to do then.
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError, TimeoutError):
        async with asyncio.timeout(_CLOSE_TIMEOUT_S):
            await websocket.close(code=code, reason=reason)


def _holder_url(node_url: str, path: str, query: str) -> str:
    """`http://10.0.0.2:8080`, `/v1/stream/signal`, `token=…` → `ws://10.0.0.2:8080/…?token=…`."""
    parts = urlsplit(node_url)
    scheme = "wss" if parts.scheme in ("https", "wss") else "ws"
    return f"{scheme}://{parts.netloc}{path}" + (f"?{query}" if query else "")
