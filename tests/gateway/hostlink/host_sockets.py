"""Sockets that stand in for a host's WebSocket on the gateway's end of a link, and a
`HostConnection` over one, for the hostlink tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, cast

from starlette.websockets import WebSocket

from rigway.gateway.hostlink.connection import HostConnection
from rigway.gateway.http_server import MESSAGE_SINK_EXTENSION
from rigway.protocol import PROTOCOL_VERSION, Hello, ops


class DeafHostSocket:
    """A WebSocket whose peer never reads: every send blocks, nothing arrives."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self._never = asyncio.Event()

    @property
    def sends_started(self) -> int:
        return len(self.sent)

    async def send_text(self, text: str) -> None:
        self.sent.append(text)
        await self._never.wait()

    async def receive(self) -> dict[str, Any]:
        await self._never.wait()
        raise AssertionError("unreachable")

    async def close(self, code: int = 1000, reason: str = "") -> None:
        return None


class HearingHostSocket:
    """A WebSocket whose sends return at once and whose messages the test delivers
    through the server's direct way in (`rigway.message_sink`)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self._sink: Callable[[str | bytes], None] | None = None
        self._closed = asyncio.Event()
        self.scope = {"extensions": {MESSAGE_SINK_EXTENSION: self._take_messages}}

    def _take_messages(self, sink: Callable[[str | bytes], None]) -> None:
        self._sink = sink

    def deliver(self, message: str | bytes) -> None:
        assert self._sink is not None, "the connection has not taken its messages"
        self._sink(message)

    async def send_text(self, text: str) -> None:
        self.sent.append(text)

    async def receive(self) -> dict[str, Any]:
        await self._closed.wait()
        return {"type": "websocket.disconnect", "code": 1000}

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self._closed.set()


def host_connection(
    socket: DeafHostSocket | HearingHostSocket, desktop_state: ops.DesktopState | None = None
) -> HostConnection:
    """A connection over `socket`, as if a host had said hello (with `desktop_state`);
    requests from the agent get an empty answer."""
    hello = Hello(
        protocol=PROTOCOL_VERSION,
        agent_version="test",
        native_width=8,
        native_height=8,
        desktop_state=desktop_state,
    )

    async def no_agent_requests(*_args: object) -> dict[str, Any]:
        return {}

    return HostConnection(
        "rig_test",
        cast(WebSocket, socket),
        hello,
        heartbeat_interval_s=30.0,
        monotonic=time.monotonic,
        on_agent_request=no_agent_requests,
    )
