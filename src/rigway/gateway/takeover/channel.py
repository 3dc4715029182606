"""`TakeoverChannel`: the signaling socket of a person who takes control of a session.

It is a stream viewer's channel (`ViewerChannel`: the same offer/answer relay to the
rig's agent, candidates, ping/pong, bye) with the person's input on top:

Page → gateway, beside the viewer's messages:
    the input events of `rigway.gateway.takeover.events`
    {"type":"hand_back"}              control back to the API; the socket then closes
Gateway → page, beside the viewer's messages:
    {"type":"control","control":"human"}             after the answer: the person drives
    {"type":"control","control":"api","reason"}      handed back; the socket closes next
    {"type":"error","error"}          an event refused (bad, or the host said no)

Input runs in arrival order through one sender task: events that arrive while a batch
runs on the host go together in the next batch (up to 100), and of pointer moves queued
back to back only the last is kept, so a slow link never builds a backlog of moves.
The socket must hear from the page at least every `heartbeat_timeout_s` (the page
pings every second); silence, a close or a hand back returns control to the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

from starlette.websockets import WebSocket

from rigway.gateway.errors import ApiError
from rigway.gateway.sessions.live import LiveSession
from rigway.gateway.stream.service import StreamService
from rigway.gateway.stream.signaling import ViewerChannel
from rigway.gateway.takeover.events import (
    HUMAN_EVENT_TYPES,
    BadHumanEvent,
    HeldInput,
    human_event,
)
from rigway.gateway.takeover.service import TakeoverService
from rigway.protocol import ops

__all__ = ["TakeoverChannel"]

logger = logging.getLogger(__name__)

MAX_BATCH_EVENTS: Final = 100
# Events waiting for the host beyond this are dropped (the page is told): a page that
# sends faster than the rig takes input for long is broken, not busy.
MAX_PENDING_EVENTS: Final = 500
# A hand back waits this long for the batch on the host to answer before it releases
# (with the service's release deadline and the heartbeat, control returns within 5 s).
_SENDER_STOP_TIMEOUT_S: Final = 1.0


class TakeoverChannel(ViewerChannel):
    def __init__(
        self,
        websocket: WebSocket,
        stream: StreamService,
        takeover: TakeoverService,
        live: LiveSession,
        *,
        max_width: int | None,
    ) -> None:
        super().__init__(websocket, stream, live, max_width=max_width)
        self.held = HeldInput()
        self._takeover = takeover
        self._live = live
        self._pending: list[ops.InputEvent] = []
        self._wake = asyncio.Event()
        self._accepting = True
        self._sender: asyncio.Task[None] | None = None

    async def run(self) -> None:
        self._sender = asyncio.create_task(self._send_input())
        try:
            await super().run()
        finally:
            await self._stop_sender()
            await self._takeover.release(self)

    async def hand_back(self, reason: str) -> None:
        """Control back to the API (what the person holds released first), the page
        told, the socket closed. From the page's message or the owner's console."""
        await self._stop_sender()
        if await self._takeover.release(self):
            await self._send({"type": "control", "control": "api", "reason": reason})
        await self._close(1000, reason)

    # ---- messages ----------------------------------------------------------------------

    async def _handle(self, message: dict[str, Any]) -> bool:
        kind = message.get("type")
        if kind == "hand_back":
            await self.hand_back("handed_back")
            return False
        if kind in HUMAN_EVENT_TYPES:
            await self._queue(message)
            return True
        return await super()._handle(message)

    async def _offer(self, message: dict[str, Any]) -> None:
        await super()._offer(message)
        if await self._takeover.grant(self):
            await self._send({"type": "control", "control": "human"})

    async def _receive(self) -> dict[str, Any] | None:
        try:
            async with asyncio.timeout(self._takeover.heartbeat_timeout_s):
                message = await super()._receive()
        except TimeoutError:
            logger.info("takeover of %s: the page went silent", self.session_id)
            return None
        if message is not None:
            self._takeover.heard_from(self)
        return message

    # ---- input -------------------------------------------------------------------------

    async def _queue(self, message: dict[str, Any]) -> None:
        width, height = self._live.native_width, self._live.native_height
        if not self._takeover.holds(self) or self._live.control != "human":
            await self._send({"type": "error", "error": "not_in_control"})
            return
        if width is None or height is None:
            await self._send({"type": "error", "error": "host_error: the desktop size is unknown"})
            return
        try:
            event = human_event(message, width, height)
        except BadHumanEvent as exc:
            await self._send({"type": "error", "error": f"invalid_request: {exc}"[:300]})
            return
        pending = self._pending
        if event.type == "mouse_move" and pending and pending[-1].type == "mouse_move":
            pending[-1] = event
        elif len(pending) >= MAX_PENDING_EVENTS:
            await self._send({"type": "error", "error": "input_overflow: event dropped"})
            return
        else:
            pending.append(event)
        self._wake.set()

    async def _send_input(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                events = self._pending[:MAX_BATCH_EVENTS]
                del self._pending[:MAX_BATCH_EVENTS]
                try:
                    await self._takeover.run_input(self, events)
                except ApiError as exc:
                    await self._send({"type": "error", "error": str(exc.body()["error"])[:500]})
            if not self._accepting:
                return

    async def _stop_sender(self) -> None:
        """No more input: what is queued is dropped, the batch on the host is waited for
        (bounded), so the releases that follow run after it."""
        self._accepting = False
        self._pending.clear()
        sender, self._sender = self._sender, None
        if sender is None:
            return
        self._wake.set()
        try:
            async with asyncio.timeout(_SENDER_STOP_TIMEOUT_S):
                await asyncio.shield(sender)
        except TimeoutError:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
        except Exception:
            # A bug in the sender must not keep control from going back.
            logger.exception("takeover of %s: the input sender failed", self.session_id)
