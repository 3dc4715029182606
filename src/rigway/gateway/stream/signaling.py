"""`ViewerChannel`: one viewer's signaling socket, relayed to the rig's agent.

Viewer → gateway (JSON text frames):
    {"type":"offer","sdp"}            once per connection
    {"type":"candidate","candidate","sdpMid","sdpMLineIndex"}   trickle ICE
                                      (candidate null or "": end of candidates)
    {"type":"bye"}                    the viewer leaves
    {"type":"ping"}                   → {"type":"pong"} (keeps proxies from idling out)
Gateway → viewer:
    {"type":"answer","sdp","width","height","encoder"}
    {"type":"error","error"}          why the agent refused an offer (the socket then
                                      closes 4415) or a candidate (the channel stays)
    {"type":"bye","reason"}           the session ended; the socket closes next

Messages are handled in arrival order, so a candidate is relayed only after the offer
it belongs to was answered (candidates that come early wait, bounded). The agent
gathers all of its own candidates before it answers, so they ride in the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from rigway.gateway.hostlink.connection import (
    HostOpError,
    HostTimeoutError,
    HostUnavailableError,
)
from rigway.gateway.sessions.live import LiveSession
from rigway.gateway.stream.service import Refused, StreamService
from rigway.protocol import ops

__all__ = ["ViewerChannel", "new_viewer_id"]

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 64 * 1024
MAX_CANDIDATES = 64
# Saying goodbye never takes long: a viewer that does not read is cut off.
_BYE_TIMEOUT_S = 1.0
_CANDIDATE_TIMEOUT_S = 5.0


def new_viewer_id() -> str:
    return f"vwr_{secrets.token_hex(8)}"


class ViewerChannel:
    def __init__(
        self,
        websocket: WebSocket,
        service: StreamService,
        live: LiveSession,
        *,
        max_width: int | None,
    ) -> None:
        self.session_id = live.id
        self.viewer_id = new_viewer_id()
        self._websocket = websocket
        self._service = service
        self._rig_id = live.rig_id
        self._max_width = max_width
        self._send_lock = asyncio.Lock()
        self._closed = False
        self._answered = False
        self._offered = False
        self._early_candidates: list[dict[str, Any]] = []

    async def run(self) -> None:
        """Serve until the viewer leaves, misbehaves or the session ends."""
        try:
            while not self._closed:
                message = await self._receive()
                if message is None:
                    break
                if not await self._handle(message):
                    break
        except Refused as refused:
            await self._close(refused.code, refused.reason)
        finally:
            self._service.unregister(self)
            if self._offered:
                await self._release_on_agent()
            await self._close(1000, "bye")

    async def end(self, reason: str) -> None:
        if self._closed:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_BYE_TIMEOUT_S):
                await self._send({"type": "bye", "reason": reason})
        await self._close(1000 if reason == "session_ended" else 1001, reason)

    # ---- messages ----------------------------------------------------------------------

    async def _handle(self, message: dict[str, Any]) -> bool:
        kind = message.get("type")
        if kind == "offer":
            await self._offer(message)
        elif kind == "candidate":
            await self._candidate(message)
        elif kind == "ping":
            await self._send({"type": "pong"})
        elif kind == "bye":
            return False
        else:
            raise Refused("bad_message")
        return True

    async def _offer(self, message: dict[str, Any]) -> None:
        sdp = message.get("sdp")
        if self._offered or not isinstance(sdp, str) or not sdp:
            raise Refused("bad_message")
        self._offered = True
        body = ops.StreamOffer(
            session_id=self.session_id,
            viewer_id=self.viewer_id,
            sdp=sdp,
            max_width=self._max_width,
            ice_servers=list(self._service.settings.stream_ice_servers),
        )
        reply = await self._request(ops.STREAM_OFFER, body.model_dump(), fatal=True)
        try:
            answer = ops.StreamAnswer.model_validate(reply)
        except ValueError as exc:
            logger.warning("malformed stream/offer reply from %s: %s", self._rig_id, exc)
            raise Refused("host_error") from exc
        await self._send({"type": "answer", **answer.model_dump()})
        self._answered = True
        early, self._early_candidates = self._early_candidates, []
        for candidate in early:
            await self._candidate(candidate)

    async def _candidate(self, message: dict[str, Any]) -> None:
        if not self._answered:
            if len(self._early_candidates) >= MAX_CANDIDATES:
                raise Refused("bad_message")
            self._early_candidates.append(message)
            return
        try:
            body = ops.StreamCandidate(
                session_id=self.session_id,
                viewer_id=self.viewer_id,
                candidate=message.get("candidate") or None,
                sdp_mid=message.get("sdpMid"),
                sdp_mline_index=message.get("sdpMLineIndex"),
            )
        except ValueError as exc:
            await self._send({"type": "error", "error": f"invalid_request: {exc}"[:300]})
            return
        await self._request(ops.STREAM_CANDIDATE, body.model_dump(), fatal=False)

    # ---- the agent ---------------------------------------------------------------------

    async def _request(self, op: str, body: dict[str, Any], *, fatal: bool) -> dict[str, Any]:
        """Ask the rig's agent. Failures close the channel, except a refused candidate
        (fatal=False), which the viewer is told about."""
        connection = self._service.registry.get(self._rig_id)
        if connection is None:
            raise Refused("rig_offline")
        timeout = self._service.settings.host_timeout_s if fatal else _CANDIDATE_TIMEOUT_S
        try:
            return (await connection.request(op, body, timeout)).body
        except HostUnavailableError as exc:
            raise Refused("rig_offline") from exc
        except HostTimeoutError as exc:
            raise Refused("host_timeout") from exc
        except HostOpError as exc:
            if exc.code == ops.ERROR_SESSION_MISMATCH:
                raise Refused("session_ended") from exc
            await self._send({"type": "error", "error": f"{exc.code}: {exc.detail}"[:500]})
            if exc.code != ops.ERROR_INVALID_REQUEST:
                raise Refused("host_error") from exc
            if fatal:
                raise Refused("offer_refused") from exc
            return {}

    async def _release_on_agent(self) -> None:
        # Best effort: a session end already closed the agent's side.
        connection = self._service.registry.get(self._rig_id)
        if connection is None:
            return
        body = ops.StreamClose(session_id=self.session_id, viewer_id=self.viewer_id)
        try:
            await connection.request(ops.STREAM_CLOSE, body.model_dump(), _CANDIDATE_TIMEOUT_S)
        except (HostUnavailableError, HostTimeoutError, HostOpError) as exc:
            logger.info("stream/close of %s failed: %s", self.viewer_id, exc)

    # ---- the socket --------------------------------------------------------------------

    async def _receive(self) -> dict[str, Any] | None:
        try:
            message = await self._websocket.receive()
        except (WebSocketDisconnect, RuntimeError):
            return None
        if message["type"] == "websocket.disconnect":
            self._closed = True
            return None
        text = message.get("text")
        if not isinstance(text, str) or len(text) > MAX_MESSAGE_CHARS:
            raise Refused("bad_message")
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise Refused("bad_message") from exc
        if not isinstance(parsed, dict):
            raise Refused("bad_message")
        return parsed

    async def _send(self, message: dict[str, Any]) -> None:
        if self._closed:
            return
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            async with self._send_lock:
                await self._websocket.send_text(json.dumps(message))

    async def _close(self, code: int, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError, TimeoutError):
            async with asyncio.timeout(_BYE_TIMEOUT_S):
                await self._websocket.close(code=code, reason=reason)
