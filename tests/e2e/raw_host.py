"""A host agent by hand on a real gateway: the test decides what each request gets.

Unlike `test_error_codes.FakeHost` (a fixed reply per op, answered in arrival order),
each request here is answered by its own task, so an answer may wait on later requests
(a barrier), and the host can say it still runs a session when it (re)connects.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simplejpeg
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from rigway.agent.pairing import pair
from rigway.protocol import (
    PROTOCOL_VERSION,
    Hello,
    Pong,
    Request,
    Welcome,
    decode_frame,
    encode_binary,
    encode_text,
    ops,
)
from tests.e2e.harness import Stack

NATIVE_W, NATIVE_H = 1920, 1080
# A tiny real JPEG: what a screenshot reply carries.
JPEG = simplejpeg.encode_jpeg(np.full((8, 8, 3), 90, dtype=np.uint8), quality=85)

# An answer is the frame to send back, or None for a request left unanswered.
Answer = Callable[[Request], Awaitable[str | bytes | None]]


def ok(request: Request, body: dict[str, Any]) -> str:
    return encode_text({"t": "res", "id": request.id, "ok": True, "body": body})


def captured(request: Request, *, marked: bool = False) -> bytes:
    body = ops.ScreenCaptured(
        width=8,
        height=8,
        native_width=NATIVE_W,
        native_height=NATIVE_H,
        host_jpeg_ms=3.0,
        cached=False,
        marked=marked,
    ).model_dump()
    return encode_binary({"t": "res", "id": request.id, "ok": True, "body": body}, JPEG)


def dirty(request: Request) -> str:
    rects = ops.DirtyRects(
        width=NATIVE_W, height=NATIVE_H, available=True, capture_mode="fake", rects=[]
    )
    return ok(request, rects.model_dump())


def targets(request: Request, *found: ops.Target) -> str:
    snapshot = ops.TargetSnapshot(
        width=NATIVE_W,
        height=NATIVE_H,
        window_title="Fake window",
        window_role="frame",
        targets=list(found),
        truncated=False,
        host_uia_ms=1.0,
    )
    return ok(request, snapshot.model_dump())


def started(request: Request) -> str:
    body = ops.SessionStarted(native_width=NATIVE_W, native_height=NATIVE_H, capture_mode="fake")
    return ok(request, body.model_dump())


async def answer_like_a_plain_host(request: Request) -> str | bytes | None:
    """Every op a session needs, answered at once."""
    if request.op == ops.SESSION_START:
        return started(request)
    if request.op == ops.SCREEN_CAPTURE:
        return captured(request)
    if request.op == ops.SCREEN_DIRTY:
        return dirty(request)
    if request.op == ops.A11Y_TARGETS:
        return targets(request)
    return ok(request, {})


@dataclass
class RawHost:
    ws: ClientConnection
    welcome: Welcome
    answer: Answer
    requests: list[Request] = field(default_factory=list)
    answer_pings: bool = True
    pings_seen: int = 0
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def ops_seen(self) -> list[str]:
        return [request.op for request in self.requests]

    async def serve(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                header, _ = decode_frame(raw)
                if header.get("t") == "ping":
                    self.pings_seen += 1
                    if self.answer_pings:
                        pong = Pong(sent_at=header["sent_at"])
                        await self.ws.send(encode_text(pong.model_dump()))
                elif header.get("t") == "req":
                    request = Request.model_validate(header)
                    self.requests.append(request)
                    task = asyncio.create_task(self._reply(request))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    async def _reply(self, request: Request) -> None:
        frame = await self.answer(request)
        if frame is not None:
            with contextlib.suppress(ConnectionClosed):
                await self.ws.send(frame)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def pair_rig(stack: Stack, name: str = "raw") -> tuple[str, str]:
    """A newly paired rig with API access on: its id and token."""
    code = await stack.services.rigs.create_pairing_code(stack.account_id)
    paired = await pair(stack.base_url, code.code, name=name, os="fake-os", gpu="")
    await stack.services.rigs.set_api_access(stack.account_id, paired.rig_id, True)
    return paired.rig_id, paired.rig_token


@contextlib.asynccontextmanager
async def host_link(
    base_url: str, rig_token: str, open_session_ids: Sequence[str] = ()
) -> AsyncIterator[tuple[ClientConnection, Welcome]]:
    """A host's link to the gateway, dialled by hand: hello sent, welcome read."""
    url = "ws" + base_url.removeprefix("http") + "/v1/agent/connect"
    async with connect(
        url,
        additional_headers={"Authorization": f"Bearer {rig_token}"},
        compression=None,
        ping_interval=None,  # silence means silence: no WebSocket pings of its own
    ) as ws:
        hello = Hello(
            protocol=PROTOCOL_VERSION,
            agent_version="0.0.0-raw",
            os="fake-os",
            backend="fake",
            capture_mode="fake",
            native_width=NATIVE_W,
            native_height=NATIVE_H,
            open_session_ids=list(open_session_ids),
        )
        await ws.send(encode_text(hello.model_dump()))
        yield ws, Welcome.model_validate(decode_frame(await ws.recv())[0])


@contextlib.asynccontextmanager
async def raw_host(
    base_url: str,
    rig_token: str,
    answer: Answer = answer_like_a_plain_host,
    *,
    open_session_ids: Sequence[str] = (),
    answer_pings: bool = True,
) -> AsyncIterator[RawHost]:
    """Connected, hello sent and welcome read; serving until the block ends."""
    async with host_link(base_url, rig_token, open_session_ids) as (ws, welcome):
        host = RawHost(ws, welcome, answer, answer_pings=answer_pings)
        serving = asyncio.create_task(host.serve())
        try:
            yield host
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
            await host.stop()
