"""`TunedH264Encoder`: aiortc's encoder interface over an H.264 encoder we open.

aiortc's sender drives an encoder through the public `aiortc.codecs.base.Encoder`
interface: `encode(frame, force_keyframe)` for each frame the track returns (the flag
is set by a receiver's keyframe request, PLI or FIR), `target_bitrate` for each
receiver estimate (REMB), `pack(packet)` for pre-encoded packets. This class keeps that
contract and opens the encoder itself (`encoders.open_h264_context`): any of PyAV's
H.264 encoders, with our options. The RTP packetisation (RFC 6184, FU-A and STAP-A) is
aiortc's own, through the public `H264Encoder.pack`.

How aiortc's sender comes to build this class: `aiortc_adaptation`.
"""

from __future__ import annotations

from typing import Any

import av
from aiortc.codecs.base import Encoder
from aiortc.codecs.h264 import H264Encoder
from aiortc.mediastreams import VIDEO_TIME_BASE, convert_timebase
from av.frame import Frame
from av.packet import Packet
from av.video.codeccontext import VideoCodecContext
from av.video.frame import PictureType

from rigway.agent.stream.encoders import EncoderTuning, open_h264_context

__all__ = ["TunedH264Encoder"]

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
        timestamp = convert_timebase(frame.pts, frame.time_base, VIDEO_TIME_BASE)
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
