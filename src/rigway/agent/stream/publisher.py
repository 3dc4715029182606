"""`StreamPublisher`: one aiortc peer connection per viewer, fed by the screen service.

The gateway relays each viewer's offer (`stream/offer`), trickled candidates
(`stream/candidate`) and goodbye (`stream/close`); the media then flows straight
between the viewer and this agent (DTLS-SRTP), never over the host link. A viewer is
registered before the first await of its offer, so a session end that lands during
negotiation still finds and closes it.

`RTCConfiguration(iceServers=…)` is always given explicitly: with None, aiortc adds a
public STUN server of its own (stun.l.google.com), and nothing external may be contacted
unless the operator configured it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aioice.ice
import av
from aiortc import (
    InvalidStateError,
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
)

from rigway.agent.backends.base import Pixels
from rigway.agent.screen import ScreenService, StreamWatch
from rigway.agent.stream import aiortc_adaptation, encoders
from rigway.agent.stream.sdp import (
    UnsupportedOfferError,
    is_loopback_candidate,
    keep_loopback_candidates,
    prefer_h264,
)
from rigway.agent.stream.settings import StreamError, StreamSettings
from rigway.agent.stream.track import DesktopTrack, scaled_size
from rigway.protocol import ops

__all__ = ["ScreenFrameSource", "StreamPublisher", "pin_host_addresses_to_loopback"]

_log = logging.getLogger(__name__)

# A negotiation is local work (no STUN unless configured): bounded so a wedged one
# cannot hold a viewer slot.
_NEGOTIATION_TIMEOUT_S = 10.0
# Closing tears down DTLS and ICE; bounded so a session end stays within its 2 s.
_CLOSE_TIMEOUT_S = 1.5

ChooseEncoder = Callable[[str], str]


def pin_host_addresses_to_loopback() -> None:
    """aioice skips 127.0.0.1 when it lists host addresses; with `loopback_only` it
    must offer exactly that (process-wide, like aioice's own lookup)."""
    aioice.ice.get_host_addresses = _loopback_addresses


def _loopback_addresses(use_ipv4: bool = True, use_ipv6: bool = False) -> list[str]:
    return ["127.0.0.1"] if use_ipv4 else []


def auto_encoder(preference: str) -> str:
    return encoders.choose_h264_encoder(
        preference, lambda name: name in av.codecs_available, encoders.probe_h264_encoder
    )


class ScreenFrameSource:
    """A track's view of the screen service: its own damage watch, shared capture."""

    def __init__(self, screen: ScreenService, watch: StreamWatch) -> None:
        self._screen = screen
        self._watch = watch

    async def changed_pixels(self) -> Pixels | None:
        return await self._screen.stream_pixels(self._watch)

    async def close(self) -> None:
        await self._screen.close_watch(self._watch)


@dataclass(eq=False, slots=True)
class _Viewer:
    session_id: str
    viewer_id: str
    pc: RTCPeerConnection
    source: ScreenFrameSource | None = None
    track: DesktopTrack | None = None


class StreamPublisher:
    def __init__(
        self,
        screen: ScreenService,
        settings: StreamSettings,
        *,
        choose_encoder: ChooseEncoder = auto_encoder,
    ) -> None:
        # Refuse at agent start, not at the first viewer: an aiortc release the encoder
        # adaptation was not written for could stream with aiortc's untuned encoder.
        aiortc_adaptation.check_aiortc_version(aiortc_adaptation.installed_aiortc_version())
        self._screen = screen
        self._settings = settings
        self._choose_encoder = choose_encoder
        self._encoder: str | None = None
        self._encoder_lock = asyncio.Lock()
        self._viewers: dict[tuple[str, str], _Viewer] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        if settings.loopback_only:
            pin_host_addresses_to_loopback()

    # ---- StreamControl --------------------------------------------------------------

    async def offer(self, request: ops.StreamOffer) -> ops.StreamAnswer:
        key = (request.session_id, request.viewer_id)
        if key in self._viewers:
            await self._close_viewer(self._viewers.pop(key))  # a renegotiation starts anew
        if len(self._viewers) >= self._settings.max_viewers:
            raise StreamError(f"{self._settings.max_viewers} viewers already watch this rig")
        try:
            offer_sdp = self._filter(prefer_h264(request.sdp))
        except UnsupportedOfferError as exc:
            raise StreamError(str(exc)) from exc
        encoder = await self._ensure_encoder()
        viewer = _Viewer(request.session_id, request.viewer_id, self._peer_connection(request))
        self._viewers[key] = viewer
        try:
            async with asyncio.timeout(_NEGOTIATION_TIMEOUT_S):
                width, height = await self._negotiate(viewer, offer_sdp, request.max_width)
        except BaseException:
            if self._viewers.get(key) is viewer:
                del self._viewers[key]
            await self._close_viewer(viewer)
            raise
        viewer.pc.on("connectionstatechange", functools.partial(self._on_state, viewer))
        answer = viewer.pc.localDescription
        _log.info("stream %s/%s: %dx%d via %s", *key, width, height, encoder)
        return ops.StreamAnswer(
            sdp=self._filter(answer.sdp), encoder=encoder, width=width, height=height
        )

    async def add_candidate(self, request: ops.StreamCandidate) -> None:
        viewer = self._viewers.get((request.session_id, request.viewer_id))
        if viewer is None:
            raise StreamError(f"no stream for viewer {request.viewer_id}")
        text = (request.candidate or "").strip()
        if not text:
            # End of candidates; a second one is harmless and ignored.
            with contextlib.suppress(ValueError):
                await viewer.pc.addIceCandidate(None)
            return
        if self._settings.loopback_only and not is_loopback_candidate(text):
            return
        try:
            candidate = aiortc_adaptation.candidate_from_sdp(
                text.removeprefix("a=").removeprefix("candidate:")
            )
        except (AssertionError, ValueError, IndexError) as exc:
            raise StreamError(f"unreadable candidate: {exc}") from exc
        candidate.sdpMid = request.sdp_mid
        candidate.sdpMLineIndex = request.sdp_mline_index
        if candidate.sdpMid is None and candidate.sdpMLineIndex is None:
            candidate.sdpMLineIndex = 0
        try:
            await viewer.pc.addIceCandidate(candidate)
        except ValueError as exc:
            raise StreamError(str(exc)) from exc

    async def close(self, session_id: str, viewer_id: str | None = None) -> int:
        keys = [
            key for key in self._viewers if key[0] == session_id and viewer_id in (None, key[1])
        ]
        viewers = [self._viewers.pop(key) for key in keys]
        await asyncio.gather(*(self._close_viewer(v) for v in viewers))
        return len(viewers)

    async def close_all(self) -> None:
        viewers = list(self._viewers.values())
        self._viewers.clear()
        await asyncio.gather(*(self._close_viewer(v) for v in viewers))
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- for tests and the benchmark ---------------------------------------------------

    @property
    def encoder(self) -> str | None:
        return self._encoder

    def viewer_count(self, session_id: str | None = None) -> int:
        return sum(1 for key in self._viewers if session_id in (None, key[0]))

    def viewer_ids(self, session_id: str) -> list[str]:
        return [viewer for session, viewer in self._viewers if session == session_id]

    def track_of(self, session_id: str, viewer_id: str) -> DesktopTrack | None:
        viewer = self._viewers.get((session_id, viewer_id))
        return None if viewer is None else viewer.track

    # ---- internals -------------------------------------------------------------------

    def _peer_connection(self, request: ops.StreamOffer) -> RTCPeerConnection:
        servers = [
            RTCIceServer(urls=s.urls, username=s.username, credential=s.credential)
            for s in request.ice_servers
        ]
        return RTCPeerConnection(RTCConfiguration(iceServers=servers))

    async def _negotiate(
        self, viewer: _Viewer, offer_sdp: str, max_width: int | None
    ) -> tuple[int, int]:
        try:
            await viewer.pc.setRemoteDescription(RTCSessionDescription(offer_sdp, "offer"))
        except (ValueError, InvalidStateError) as exc:
            # The viewer's SDP, not the rig, is at fault: invalid_request, not host_error.
            raise StreamError(f"the offer does not parse: {exc}") from exc
        cap = _min_cap(self._settings.max_width, max_width)
        native_w, native_h = await self._screen.native_size()
        viewer.source = ScreenFrameSource(self._screen, await self._screen.open_watch())
        viewer.track = DesktopTrack(
            viewer.source,
            fps=self._settings.fps,
            keepalive_s=self._settings.keepalive_s,
            max_width=cap,
        )
        viewer.pc.addTrack(viewer.track)
        await viewer.pc.setLocalDescription(await viewer.pc.createAnswer())
        return scaled_size(native_w, native_h, cap)

    async def _ensure_encoder(self) -> str:
        async with self._encoder_lock:
            if self._encoder is None:
                # Probing opens hardware encoders: seconds on a cold GPU driver, so it
                # runs off the loop, once.
                name = await asyncio.to_thread(self._choose_encoder, self._settings.encoder)
                aiortc_adaptation.install(name, self._tuning())
                self._encoder = name
            return self._encoder

    def _tuning(self) -> encoders.EncoderTuning:
        s = self._settings
        return encoders.EncoderTuning(
            preset=s.preset,
            fps=s.fps,
            keyframe_interval_s=s.keyframe_interval_s,
            bitrate=s.bitrate,
            min_bitrate=s.min_bitrate,
            max_bitrate=s.max_bitrate,
        )

    def _filter(self, sdp: str) -> str:
        return keep_loopback_candidates(sdp) if self._settings.loopback_only else sdp

    async def _on_state(self, viewer: _Viewer) -> None:
        # A viewer that vanished (tab closed, network gone) fails ICE: free its slot.
        if viewer.pc.connectionState not in ("failed", "closed"):
            return
        key = (viewer.session_id, viewer.viewer_id)
        if self._viewers.get(key) is viewer:
            del self._viewers[key]
            self._spawn(self._close_viewer(viewer))

    async def _close_viewer(self, viewer: _Viewer) -> None:
        try:
            async with asyncio.timeout(_CLOSE_TIMEOUT_S):
                await viewer.pc.close()
        except TimeoutError:
            _log.warning("stream %s/%s: close timed out", viewer.session_id, viewer.viewer_id)
        finally:
            if viewer.source is not None:
                await viewer.source.close()
                viewer.source = None

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _min_cap(agent_cap: int | None, viewer_cap: int | None) -> int | None:
    caps = [cap for cap in (agent_cap, viewer_cap) if cap is not None]
    return min(caps) if caps else None
