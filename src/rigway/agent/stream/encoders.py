"""Which H.264 encoder, and how it is opened for low latency (PyAV only).

aiortc's own `H264Encoder` hard-codes libx264 with x264's default preset (medium: 41 fps
at 1080p here), level 3.1, 0.5 to 3 Mbit/s and 30 fps. The agent encodes with its own
encoder instead (`aiortc_adaptation.TunedH264Encoder`), opened here: the codec, pixel format,
level, preset, key-frame interval and bit rates are ours. Why this needs one adaptation
of aiortc, and where it lives: `docs/decisions/` (the aiortc encoder record).

Hardware encoders (NVENC, AMF, Quick Sync, Media Foundation) are listed by PyAV even
where no such hardware exists, so a candidate must also open: `choose_h264_encoder`
is the pure rule, `probe_h264_encoder` the real check behind it.
"""

from __future__ import annotations

import fractions
import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

import av
from av.video.codeccontext import VideoCodecContext

__all__ = [
    "HARDWARE_H264",
    "SOFTWARE_H264",
    "VIDEO_CLOCK_RATE",
    "VIDEO_TIME_BASE",
    "EncoderTuning",
    "choose_h264_encoder",
    "encoder_options",
    "h264_level",
    "open_h264_context",
    "pixel_format",
    "probe_h264_encoder",
    "rebase_timestamp",
]

_log = logging.getLogger(__name__)

# In order of preference: the first that is present and opens wins.
HARDWARE_H264: tuple[str, ...] = ("h264_nvenc", "h264_amf", "h264_qsv", "h264_mf")
SOFTWARE_H264 = "libx264"
# (max frame size in macroblocks, max macroblocks per second) of H.264 levels.
_LEVELS: tuple[tuple[str, int, int], ...] = (
    ("31", 3600, 108_000),
    ("40", 8192, 245_760),
    ("42", 8704, 522_240),
    ("50", 22_080, 589_824),
    ("51", 36_864, 983_040),
    ("52", 36_864, 2_073_600),
)
_PROBE_SIZE = (256, 144)
# RTP timestamps of video run on a 90 kHz clock (RFC 3551, section 5).
VIDEO_CLOCK_RATE = 90_000
VIDEO_TIME_BASE = fractions.Fraction(1, VIDEO_CLOCK_RATE)


def rebase_timestamp(
    timestamp: int, time_base: fractions.Fraction, new_base: fractions.Fraction
) -> int:
    """`timestamp` counted in `time_base` units, counted in `new_base` units instead."""
    return int(timestamp * time_base / new_base)


@dataclass(frozen=True, slots=True)
class EncoderTuning:
    preset: str = "veryfast"
    fps: int = 30
    keyframe_interval_s: float = 10.0
    bitrate: int = 4_000_000
    min_bitrate: int = 500_000
    max_bitrate: int = 8_000_000

    @property
    def gop(self) -> int:
        return max(1, round(self.keyframe_interval_s * self.fps))


def choose_h264_encoder(
    preference: str,
    is_available: Callable[[str], bool],
    can_open: Callable[[str], bool],
    candidates: Iterable[str] = HARDWARE_H264,
) -> str:
    """The encoder to use: `preference` if it is usable, else the first usable hardware
    encoder ("auto"), else libx264, which every PyAV wheel carries."""
    if preference not in ("auto", SOFTWARE_H264):
        if is_available(preference) and can_open(preference):
            return preference
        return SOFTWARE_H264
    if preference == SOFTWARE_H264:
        return SOFTWARE_H264
    for name in candidates:
        if is_available(name) and can_open(name):
            return name
    return SOFTWARE_H264


def pixel_format(name: str) -> str:
    # Quick Sync and Media Foundation take NV12 only; the rest take planar 4:2:0.
    return "nv12" if name in ("h264_qsv", "h264_mf") else "yuv420p"


def h264_level(width: int, height: int, fps: int) -> str:
    """The smallest level whose limits hold the picture (x264's level option)."""
    frame_mbs = ((width + 15) // 16) * ((height + 15) // 16)
    for level, max_fs, max_mbps in _LEVELS:
        if frame_mbs <= max_fs and frame_mbs * fps <= max_mbps:
            return level
    return _LEVELS[-1][0]


def encoder_options(name: str, tuning: EncoderTuning, width: int, height: int) -> dict[str, str]:
    """Low-latency options per encoder: no B-frames, no look-ahead, fast presets."""
    gop = str(tuning.gop)
    if name == SOFTWARE_H264:
        return {
            "preset": tuning.preset,
            "tune": "zerolatency",
            "level": h264_level(width, height, tuning.fps),
            "g": gop,
        }
    common = {"g": gop, "bf": "0", "profile": "baseline"}
    if name == "h264_nvenc":
        return {**common, "preset": "p1", "tune": "ull", "zerolatency": "1", "rc": "cbr"}
    if name == "h264_amf":
        return {**common, "usage": "ultralowlatency", "quality": "speed", "rc": "cbr"}
    if name == "h264_qsv":
        return {**common, "preset": "veryfast", "async_depth": "1", "look_ahead": "0"}
    if name == "h264_mf":
        return {**common, "scenario": "display_remoting", "rate_control": "cbr"}
    return common


def open_h264_context(
    name: str, tuning: EncoderTuning, width: int, height: int, bitrate: int
) -> VideoCodecContext:
    """An open encoder `name` for `width`x`height` pictures at `bitrate` bit/s, with
    the low-latency options; raises PyAV's error when it does not open here."""
    context = cast(VideoCodecContext, av.CodecContext.create(name, "w"))
    context.width, context.height = width, height
    context.pix_fmt = pixel_format(name)
    context.time_base = fractions.Fraction(1, tuning.fps)
    context.framerate = fractions.Fraction(tuning.fps, 1)
    context.bit_rate = bitrate
    context.options = encoder_options(name, tuning, width, height)
    if name == SOFTWARE_H264:
        # The profile WebRTC offers (42e01f / 42001f); hardware encoders take theirs as
        # an option, in their own spelling (`encoder_options`).
        context.profile = "Baseline"
    context.open()
    return context


@functools.cache
def probe_h264_encoder(name: str) -> bool:
    """True when PyAV has `name` and it opens here (a GPU and its driver are present)."""
    if name not in av.codecs_available:
        return False
    try:
        open_h264_context(name, EncoderTuning(), *_PROBE_SIZE, bitrate=1_000_000)
    except Exception as exc:
        # Every failure means "not here": no device, no driver, no licence slot.
        _log.debug("encoder %s does not open: %s", name, exc)
        return False
    return True
