"""A node's graceful stop: finish the requests in flight, then let the server stop.

The order matters. uvicorn, told to stop, closes every WebSocket at once, the host
links included, and a request still waiting for its host's reply would fail. So a
draining node first reports itself not ready (`/readyz` 503, for the load balancer),
waits until no HTTP request is in flight (bounded by `shutdown_grace_s`), and only then
stops the server: its host links close with 1012 (service restart), which their agents
answer by reconnecting, through the load balancer or to another of their gateway URLs.
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import ASGIApp, Receive, Scope, Send


class RequestsInFlight:
    """How many HTTP requests the node is serving, and whether it is draining."""

    def __init__(self) -> None:
        self.count = 0
        self.is_draining = False
        self._idle = asyncio.Event()
        self._idle.set()

    def started(self) -> None:
        self.count += 1
        self._idle.clear()

    def finished(self) -> None:
        self.count -= 1
        if self.count == 0:
            self._idle.set()

    async def drain(self, grace_s: float) -> bool:
        """Mark the node draining and wait until nothing is in flight, at most `grace_s`;
        True when everything finished in time."""
        self.is_draining = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                await self._idle.wait()
        return self.count == 0


class CountRequestsInFlight:
    """ASGI middleware that keeps `RequestsInFlight` up to date (HTTP only: a WebSocket,
    a host link or a viewer's signaling, lasts as long as its peer wants)."""

    def __init__(self, app: ASGIApp, tracker: RequestsInFlight) -> None:
        self.app = app
        self.tracker = tracker

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.tracker.started()
        try:
            await self.app(scope, receive, send)
        finally:
            self.tracker.finished()
