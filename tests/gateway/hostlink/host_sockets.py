"""Sockets that stand in for a host's WebSocket on the gateway's end of a link, and a
`HostConnection` over one, for the hostlink tests."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from starlette.websockets import WebSocket

from rigway.gateway.hostlink.connection import HostConnection
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
    """A WebSocket whose sends return at once and whose messages the test delivers,
    as the server's `receive()` would hand them over."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self._sent_more = asyncio.Event()
        self._messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._handed_over = False

    async def wait_sent(self, count: int) -> list[str]:
        """Until the connection has sent `count` frames (woken by each send); the frames."""
        while len(self.sent) < count:
            self._sent_more.clear()
            await self._sent_more.wait()
        return self.sent

    async def deliver(self, message: str | bytes) -> None:
        """Hand `message` to the connection; returns once the connection has handled it
        (it asks for the next message, or has stopped)."""
        key = "text" if isinstance(message, str) else "bytes"
        await self._messages.put({"type": "websocket.receive", key: message})
        await self._messages.join()

    async def send_text(self, text: str) -> None:
        self.sent.append(text)
        self._sent_more.set()

    async def receive(self) -> dict[str, Any]:
        if self._handed_over:
            self._handed_over = False
            self._messages.task_done()  # the connection came back: it handled the last
        message = await self._messages.get()
        if message["type"] == "websocket.disconnect":
            self._messages.task_done()
        else:
            self._handed_over = True
        return message

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if self._handed_over:
            self._handed_over = False
            self._messages.task_done()
        self._messages.put_nowait({"type": "websocket.disconnect", "code": code})


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
