"""The gateway's end of a host link against a host that stops reading."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest
from starlette.websockets import WebSocket

from rigway.gateway.hostlink.connection import HostConnection, HostTimeoutError
from rigway.protocol import PROTOCOL_VERSION, Hello, Request, decode_frame


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


def _connection(socket: DeafHostSocket) -> HostConnection:
    hello = Hello(protocol=PROTOCOL_VERSION, agent_version="test", native_width=8, native_height=8)

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


async def test_the_deadline_covers_a_send_the_host_never_reads() -> None:
    socket = DeafHostSocket()
    connection = _connection(socket)
    started = time.monotonic()
    async with asyncio.timeout(2):  # without the fix the request hangs: fail, don't hang
        with pytest.raises(HostTimeoutError):
            await connection.request("screen/capture", {"session_id": "s"}, timeout_s=0.2)
    assert socket.sends_started == 1
    assert time.monotonic() - started < 1.0


async def test_a_request_leaves_as_a_request_frame_the_agent_accepts() -> None:
    socket = DeafHostSocket()
    connection = _connection(socket)
    body = {"session_id": "s", "quality": 85, "region": None}
    with pytest.raises(HostTimeoutError):
        await connection.request("screen/capture", body, timeout_s=0.05)
    header, payload = decode_frame(socket.sent[0])
    assert header["t"] == "req"  # the model would default it: the agent would not
    request = Request.model_validate(header)
    assert (request.id, request.op, request.deadline_ms, request.body) == (
        "g1",
        "screen/capture",
        50,
        body,
    )
    assert bytes(payload) == b""
