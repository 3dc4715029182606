"""The one place the agent adapts aiortc beyond its documented API, and the aiortc
version it was written for.

aiortc offers no supported way to choose or configure the encoder its `RTCRtpSender`
uses (docs/decisions/0014-aiortc-encoder.md): the sender builds one through
`aiortc.codecs.get_encoder`, a name that `aiortc.rtcrtpsender` imports into its own
module. `install` rebinds that one name there, so an H.264 sender builds our
`TunedH264Encoder` and every other codec still gets aiortc's own encoder. Nothing else
of aiortc is touched: packetisation, keyframe requests and bit-rate estimates reach our
encoder through aiortc's public `Encoder` interface.

That rebinding relies on how aiortc's sender is written, which no release promises to
keep: it was checked against the aiortc versions in `WRITTEN_FOR` and refuses any other
(`UnsupportedAiortcError`), at agent start and at `install`. To support a new aiortc
release, read its `rtcrtpsender.py` (`get_encoder` imported by name, called once per
sender with the negotiated codec; `encode`, `pack` and `target_bitrate` used as
`aiortc.codecs.base.Encoder` declares them), run tests/stream, then widen `WRITTEN_FOR`
and the `stream` extra's pin together.

`TunedH264Encoder` is aiortc's encoder interface over an H.264 encoder we open: aiortc's
sender calls `encode(frame, force_keyframe)` for each frame the track returns (the flag
is set by a receiver's keyframe request, PLI or FIR), sets `target_bitrate` for each
receiver estimate (REMB), and calls `pack(packet)` for pre-encoded packets. It keeps that
contract and opens the encoder itself (`encoders.open_h264_context`): any of PyAV's
H.264 encoders, with our options. The RTP packetisation (RFC 6184, FU-A and STAP-A) is
aiortc's own, through `H264Encoder.pack`. It lives here, beside the rebinding, because
both lean on aiortc's inside (its codec base class and packetiser): one module to check
against a new aiortc release.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import re
from typing import Any

import aiortc.codecs
import aiortc.rtcrtpsender
import av
from aiortc import RTCRtpCodecParameters
from aiortc.codecs.base import Encoder
from aiortc.codecs.h264 import H264Encoder

# A viewer's trickled ICE candidate arrives as SDP text; aiortc documents RTCIceCandidate
# but not the parser of its SDP form, so the publisher takes it from here.
from aiortc.sdp import candidate_from_sdp
from av.frame import Frame
from av.packet import Packet
from av.video.codeccontext import VideoCodecContext
from av.video.frame import PictureType

from rigway.agent.stream.encoders import (
    VIDEO_TIME_BASE,
    EncoderTuning,
    open_h264_context,
    rebase_timestamp,
)

__all__ = [
    "WRITTEN_FOR",
    "TunedH264Encoder",
    "UnsupportedAiortcError",
    "candidate_from_sdp",
    "check_aiortc_version",
    "install",
    "installed_aiortc_version",
    "uninstall",
]

_log = logging.getLogger(__name__)

# (major, minor) releases of aiortc whose sender this module was checked against.
WRITTEN_FOR: frozenset[tuple[int, int]] = frozenset({(1, 16)})
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")


class UnsupportedAiortcError(RuntimeError):
    """The installed aiortc is not a release the encoder adaptation was written for."""


def installed_aiortc_version() -> str:
    return importlib.metadata.version("aiortc")


def check_aiortc_version(version: str) -> None:
    """Raise `UnsupportedAiortcError` unless `version` is a final release of a series in
    `WRITTEN_FOR` (a pre-release of it may still differ, so it is refused too)."""
    match = _RELEASE.fullmatch(version)
    if match is None or (int(match[1]), int(match[2])) not in WRITTEN_FOR:
        supported = ", ".join(f"{major}.{minor}.x" for major, minor in sorted(WRITTEN_FOR))
        raise UnsupportedAiortcError(
            f"live video needs aiortc {supported}, and aiortc {version} is installed: "
            f"install a supported release (pip install 'rigway[stream]'), or check "
            f"rigway.agent.stream.aiortc_adaptation against aiortc {version} and widen "
            f"its WRITTEN_FOR"
        )


def install(name: str, tuning: EncoderTuning, *, aiortc_version: str | None = None) -> None:
    """Make every H.264 sender created from now on encode with `name` and `tuning`.

    Process-wide, like the name it rebinds: the last `install` wins. `aiortc_version`
    defaults to the installed one."""
    check_aiortc_version(installed_aiortc_version() if aiortc_version is None else aiortc_version)
    # An import inside aiortc's sender module, not one of its exports: the one
    # unsupported step, hence the version check above.
    aiortc.rtcrtpsender.get_encoder = functools.partial(  # type: ignore[attr-defined]
        _encoder_for, name, tuning
    )
    _log.info("H.264 encoder: %s (%s)", name, tuning)


def uninstall() -> None:
    """Senders created from now on use aiortc's own encoders again."""
    aiortc.rtcrtpsender.get_encoder = aiortc.codecs.get_encoder  # type: ignore[attr-defined]


def _encoder_for(name: str, tuning: EncoderTuning, codec: RTCRtpCodecParameters) -> Encoder:
    if codec.mimeType.lower() == "video/h264":
        return TunedH264Encoder(name, tuning)
    return aiortc.codecs.get_encoder(codec)


# A receiver's estimate reopens the encoder (a keyframe) only when it moves the target by
# more than this share, as aiortc's own encoder does: estimates jitter by a few percent.
_REOPEN_BITRATE_SHARE = 0.1


class TunedH264Encoder(Encoder):
    def __init__(self, name: str, tuning: EncoderTuning) -> None:
        self._name = name
        self._tuning = tuning
        # Used for its public `pack` only: it never opens a codec of its own.
        self._packetizer = H264Encoder()
        self._context: VideoCodecContext | None = None
        self._context_bitrate = 0  # what the open context was opened with
        self._target_bitrate = tuning.bitrate

    @property
    def name(self) -> str:
        return self._name

    @property
    def target_bitrate(self) -> int:
        """Bit/s the encoder aims at; a receiver's estimate moves it within the tuning's
        range."""
        return self._target_bitrate

    @target_bitrate.setter
    def target_bitrate(self, bitrate: int) -> None:
        self._target_bitrate = max(self._tuning.min_bitrate, min(bitrate, self._tuning.max_bitrate))

    def encode(self, frame: Frame, force_keyframe: bool = False) -> tuple[list[bytes], int]:
        if not isinstance(frame, av.VideoFrame):
            raise TypeError(f"an H.264 encoder takes video frames, not {type(frame).__name__}")
        if frame.pts is None or frame.time_base is None:
            raise ValueError("a frame to send needs its pts and time_base")
        # Before encoding: PyAV rebases the frame's pts to the codec's time base.
        timestamp = rebase_timestamp(frame.pts, frame.time_base, VIDEO_TIME_BASE)
        context = self._context_for(frame)
        # NONE lets the encoder choose; a stale I from a held frame would force one again.
        frame.pict_type = PictureType.I if force_keyframe else PictureType.NONE
        data = b"".join(bytes(packet) for packet in context.encode(frame))
        if not data:
            return [], timestamp  # an encoder that buffers (a hardware queue) gave nothing yet
        packet: Packet[Any] = Packet(data)
        packet.pts, packet.time_base = timestamp, VIDEO_TIME_BASE
        return self._packetizer.pack(packet)

    def pack(self, packet: Packet[Any]) -> tuple[list[bytes], int]:
        return self._packetizer.pack(packet)

    def _context_for(self, frame: av.VideoFrame) -> VideoCodecContext:
        context = self._context
        if context is not None and (
            (frame.width, frame.height) != (context.width, context.height)
            or abs(self._target_bitrate - self._context_bitrate) / self._context_bitrate
            > _REOPEN_BITRATE_SHARE
        ):
            context = None
        if context is None:
            context = open_h264_context(
                self._name, self._tuning, frame.width, frame.height, self._target_bitrate
            )
            self._context, self._context_bitrate = context, self._target_bitrate
        return context
