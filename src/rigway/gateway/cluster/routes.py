"""The peer link's endpoint: other nodes of the service forward requests here."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from rigway.gateway.cluster.forwarding import serve_peer
from rigway.gateway.cluster.peer_link import PEER_PATH
from rigway.gateway.services import services_of

router = APIRouter()


@router.websocket(PEER_PATH)
async def peer_connect(websocket: WebSocket) -> None:
    await serve_peer(websocket, websocket.app, services_of(websocket).peers.secret_key)
