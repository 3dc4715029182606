"""An aiortc viewer, as an API client would write one: it opens the connect URL,
offers to receive H.264, and decodes what the agent sends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import av
import numpy as np
import numpy.typing as npt
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpReceiver,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed


@dataclass
class Received:
    count: int = 0
    size: tuple[int, int] | None = None
    last_rgb: npt.NDArray[np.uint8] | None = None
    arrivals: list[float] = field(default_factory=list)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    # Set as each frame has been taken in (count, size and pixels updated).
    decoded: asyncio.Event = field(default_factory=asyncio.Event)


class AiortcViewer:
    def __init__(self, connect_url: str, *, keep_pixels: bool = False, codec: str = "H264") -> None:
        self.connect_url = connect_url
        self.codec = codec
        self.keep_pixels = keep_pixels
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.received = Received()
        self.messages: list[dict[str, Any]] = []
        self.answer: dict[str, Any] | None = None
        # Called with each decoded frame and its arrival time (time.time()).
        self.frame_hooks: list[Callable[[av.VideoFrame, float], None]] = []
        self._ws: ClientConnection | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> dict[str, Any]:
        """Connect, offer, and apply the answer; returns the gateway's reply (an answer,
        or the error that refused the offer)."""
        transceiver = self.pc.addTransceiver("video", direction="recvonly")
        capabilities = RTCRtpReceiver.getCapabilities("video")
        assert capabilities is not None  # typed Optional, never None for video
        codecs = capabilities.codecs
        transceiver.setCodecPreferences(
            [c for c in codecs if c.mimeType == f"video/{self.codec}"]
            + [c for c in codecs if c.mimeType == "video/rtx"]
        )
        self.pc.on("track", self._on_track)
        self._ws = await connect(self.connect_url, compression=None)
        await self.pc.setLocalDescription(await self.pc.createOffer())
        await self._ws.send(json.dumps({"type": "offer", "sdp": self.pc.localDescription.sdp}))
        reply = await self.next_message()
        if reply["type"] == "answer":
            self.answer = reply
            await self.pc.setRemoteDescription(RTCSessionDescription(reply["sdp"], "answer"))
        return reply

    async def next_message(self, timeout_s: float = 15.0) -> dict[str, Any]:
        assert self._ws is not None
        async with asyncio.timeout(timeout_s):
            message = json.loads(await self._ws.recv())
        self.messages.append(message)
        assert isinstance(message, dict)
        return message

    async def wait_closed(self, timeout_s: float) -> tuple[int | None, str | None]:
        """Read until the gateway closes the socket: (close code, reason)."""
        assert self._ws is not None
        async with asyncio.timeout(timeout_s):
            with contextlib.suppress(ConnectionClosed):
                while True:
                    self.messages.append(json.loads(await self._ws.recv()))
            await self._ws.wait_closed()
        return self._ws.close_code, self._ws.close_reason

    async def wait_frames(self, count: int, timeout_s: float = 20.0) -> None:
        """Until `count` frames have been decoded, woken by each."""
        async with asyncio.timeout(timeout_s):
            while self.received.count < count:
                self.received.decoded.clear()
                await self.received.decoded.wait()

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        await self.pc.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_track(self, track: MediaStreamTrack) -> None:
        self._tasks.append(asyncio.ensure_future(self._consume(track)))

    async def _consume(self, track: MediaStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                self.received.ended.set()
                return
            assert isinstance(frame, av.VideoFrame)
            now = time.time()
            self.received.count += 1
            self.received.size = (frame.width, frame.height)
            self.received.arrivals.append(now)
            for hook in self.frame_hooks:
                hook(frame, now)
            if self.keep_pixels:
                # rgb24 is 8 bits a channel; av's stub types any format's array, and
                # astype(copy=False) returns this very array, narrowed to uint8.
                rgb = frame.to_ndarray(format="rgb24")
                self.received.last_rgb = rgb.astype(np.uint8, copy=False)
            self.received.decoded.set()
