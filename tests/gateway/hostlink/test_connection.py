"""The gateway's end of a host link against a host that stops reading."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, cast

import pytest
from starlette.websockets import WebSocket

from rigway.gateway.hostlink import connection as connection_module
from rigway.gateway.hostlink.connection import HostConnection, HostOpError, HostTimeoutError
from rigway.protocol import PROTOCOL_VERSION, Hello, decode_frame, encode_binary


class DeafHostSocket:
    """A WebSocket whose peer never reads: every send blocks, nothing arrives."""

    def __init__(self) -> None:
        self.sends_started = 0
        self._never = asyncio.Event()

    async def send_text(self, _text: str) -> None:
        self.sends_started += 1
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


class ScriptedHostSocket:
    """A host that answers each request with the frames the test scripted for it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[list[str | bytes]] = []
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send_text(self, text: str) -> None:
        request = json.loads(text)
        self.requests.append(request)
        for frame in self.script.pop(0):
            if isinstance(frame, bytes):
                frame = _with_id(frame, request["id"])
                self._inbox.put_nowait({"type": "websocket.receive", "bytes": frame})
            else:
                self._inbox.put_nowait(
                    {"type": "websocket.receive", "text": frame.replace("@ID@", request["id"])}
                )

    async def receive(self) -> dict[str, Any]:
        return await self._inbox.get()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self._inbox.put_nowait({"type": "websocket.disconnect", "code": code})


def _with_id(frame: bytes, request_id: str) -> bytes:
    """The binary frame with its header's placeholder id replaced (length fixed up)."""
    header, payload = decode_frame(frame)
    return encode_binary({**header, "id": request_id}, payload)


def _part(payload: bytes) -> bytes:
    return encode_binary({"t": "part", "id": "@ID@"}, payload)


def _reply(payload: bytes, *, ok: bool = True) -> bytes:
    header: dict[str, Any] = {"t": "res", "id": "@ID@", "ok": ok}
    if not ok:
        header["error"] = {"code": "host_error", "detail": "the encoder failed"}
    return encode_binary(header, payload)


async def _serving(socket: ScriptedHostSocket) -> tuple[HostConnection, asyncio.Task[None]]:
    connection = _connection(cast(DeafHostSocket, socket))
    return connection, asyncio.create_task(connection.serve())


async def test_parts_come_before_the_reply_payload_in_order() -> None:
    socket = ScriptedHostSocket()
    socket.script.append([_part(b"AAA"), _part(b"BB"), _reply(b"C")])
    connection, serving = await _serving(socket)

    reply = await connection.request("screen/capture", {}, timeout_s=2, accept_parts=True)

    assert reply.payload == b"AAABBC"
    await connection.close()
    await serving


async def test_parts_nobody_asked_for_are_dropped() -> None:
    socket = ScriptedHostSocket()
    socket.script.append([_part(b"stray"), _reply(b"only")])
    connection, serving = await _serving(socket)

    reply = await connection.request("screen/capture", {}, timeout_s=2)

    assert reply.payload == b"only"
    await connection.close()
    await serving


async def test_a_failed_reply_drops_its_parts_and_the_next_request_starts_clean() -> None:
    socket = ScriptedHostSocket()
    socket.script.append([_part(b"half"), _reply(b"", ok=False)])
    socket.script.append([_part(b"new"), _reply(b"!")])
    connection, serving = await _serving(socket)

    with pytest.raises(HostOpError) as failed:
        await connection.request("screen/capture", {}, timeout_s=2, accept_parts=True)
    reply = await connection.request("screen/capture", {}, timeout_s=2, accept_parts=True)

    assert failed.value.code == "host_error"
    assert reply.payload == b"new!"
    await connection.close()
    await serving


async def test_parts_past_the_cap_fail_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "MAX_PARTS_BYTES", 10)
    socket = ScriptedHostSocket()
    socket.script.append([_part(b"123456"), _part(b"7890ab"), _reply(b"c")])
    connection, serving = await _serving(socket)

    with pytest.raises(HostOpError) as failed:
        await connection.request("screen/capture", {}, timeout_s=2, accept_parts=True)

    assert "10 bytes" in failed.value.detail
    await connection.close()
    await serving
