"""The gateway's end of a host link: deadlines against a host that stops reading, and
replies heard as they are read."""

from __future__ import annotations

import asyncio
import time

import pytest

from rigway.gateway.hostlink.connection import (
    HostOpError,
    HostTimeoutError,
)
from rigway.protocol import (
    Request,
    decode_frame,
    encode_text,
)
from tests.gateway.hostlink.host_sockets import DeafHostSocket, HearingHostSocket, host_connection


async def test_the_deadline_covers_a_send_the_host_never_reads() -> None:
    socket = DeafHostSocket()
    connection = host_connection(socket)
    started = time.monotonic()
    async with asyncio.timeout(2):  # without the fix the request hangs: fail, don't hang
        with pytest.raises(HostTimeoutError):
            await connection.request("screen/capture", {"session_id": "s"}, timeout_s=0.2)
    assert socket.sends_started == 1
    assert time.monotonic() - started < 1.0


async def test_a_request_leaves_as_a_request_frame_the_agent_accepts() -> None:
    socket = DeafHostSocket()
    connection = host_connection(socket)
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


# ---- replies -------------------------------------------------------------------------


async def _sent_request_id(socket: HearingHostSocket, count: int) -> str:
    async with asyncio.timeout(2):
        sent = await socket.wait_sent(count)
    request_id: str = decode_frame(sent[count - 1])[0]["id"]
    return request_id


async def test_a_failed_reply_carries_its_body_to_the_caller() -> None:
    socket = HearingHostSocket()
    connection = host_connection(socket)
    serving = asyncio.create_task(connection.serve())
    request = asyncio.create_task(connection.request("input/batch", {}, 5.0))
    stopped = {"events": [], "stopped_at": 0, "rects": []}
    await socket.deliver(
        encode_text(
            {
                "t": "res",
                "id": await _sent_request_id(socket, 1),
                "ok": False,
                "error": {"code": "target_gone", "detail": "t_1 is gone"},
                "body": stopped,
            }
        )
    )
    with pytest.raises(HostOpError) as failed:
        await request
    assert (failed.value.code, failed.value.detail, failed.value.body) == (
        "target_gone",
        "t_1 is gone",
        stopped,
    )
    request = asyncio.create_task(connection.request("input/batch", {}, 5.0))
    error = {"code": "host_error", "detail": "no"}
    await socket.deliver(
        encode_text(
            {"t": "res", "id": await _sent_request_id(socket, 2), "ok": False, "error": error}
        )
    )
    with pytest.raises(HostOpError) as bodiless:
        await request
    assert bodiless.value.body == {}  # an agent that sends none
    await connection.close()
    await serving
