"""Which H.264 encoder, and aiortc's encoder tuned for latency without forking aiortc.

aiortc's `H264Encoder` hard-codes libx264 with x264's default preset (medium: 41 fps
at 1080p here), level 3.1, 0.5 to 3 Mbit/s and 30 fps. `install` wraps
the CodecContext that aiortc creates: the
codec name, pixel format and options become ours, everything else stays aiortc's
(packetisation, keyframe requests, bit-rate estimates). It is process-wide, like the
encoder class it wraps: the last `install` wins.

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
from typing import Any, Literal, cast

import aiortc.codecs.h264 as aiortc_h264
import av
from av.video.codeccontext import VideoCodecContext

__all__ = [
    "HARDWARE_H264",
    "SOFTWARE_H264",
    "EncoderTuning",
    "choose_h264_encoder",
    "encoder_options",
    "h264_level",
    "install",
    "pixel_format",
    "probe_h264_encoder",
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


@functools.cache
def probe_h264_encoder(name: str) -> bool:
    """True when PyAV has `name` and it opens here (a GPU and its driver are present)."""
    if name not in av.codecs_available:
        return False
    try:
        context = cast(VideoCodecContext, av.CodecContext.create(name, "w"))
        context.width, context.height = _PROBE_SIZE
        context.pix_fmt = pixel_format(name)
        context.time_base = fractions.Fraction(1, 30)
        context.framerate = fractions.Fraction(30, 1)
        context.bit_rate = 1_000_000
        context.options = encoder_options(name, EncoderTuning(), *_PROBE_SIZE)
        context.open()
    except Exception as exc:
        # Every failure means "not here": no device, no driver, no licence slot.
        _log.debug("encoder %s does not open: %s", name, exc)
        return False
    return True


def install(name: str, tuning: EncoderTuning) -> None:
    """Make aiortc's H.264 encoder use `name` with low-latency options and our bit rates."""
    aiortc_h264.MIN_BITRATE = tuning.min_bitrate
    aiortc_h264.DEFAULT_BITRATE = tuning.bitrate
    aiortc_h264.MAX_BITRATE = tuning.max_bitrate
    aiortc_h264.MAX_FRAME_RATE = tuning.fps
    setattr(aiortc_h264, "av", _AvWithTunedH264(name, tuning))  # noqa: B010 (not exported)
    _log.info("H.264 encoder: %s (%s)", name, tuning)


class _TunedContext:
    """aiortc's encoder context, with our codec, pixel format and options."""

    def __init__(self, context: Any, name: str, tuning: EncoderTuning) -> None:
        object.__setattr__(self, "_context", context)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_tuning", tuning)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._context, attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        if attribute == "options":
            ours = encoder_options(
                self._name, self._tuning, self._context.width, self._context.height
            )
            # libx264: aiortc's options with ours on top; a hardware encoder would
            # reject x264's option names, so it gets ours alone.
            value = {**value, **ours} if self._name == SOFTWARE_H264 else ours
        elif attribute == "pix_fmt":
            value = pixel_format(self._name)
        elif attribute == "profile" and self._name != SOFTWARE_H264:
            return  # set through the options above, in the encoder's own spelling
        setattr(self._context, attribute, value)


class _TunedCodecContext:
    """Stands in for `av.CodecContext` inside aiortc's h264 module."""

    def __init__(self, name: str, tuning: EncoderTuning) -> None:
        self._name = name
        self._tuning = tuning

    def create(self, codec: str, mode: Literal["r", "w"] = "r") -> Any:
        if codec == SOFTWARE_H264 and mode == "w":
            return _TunedContext(av.CodecContext.create(self._name, "w"), self._name, self._tuning)
        return av.CodecContext.create(codec, mode)


class _AvWithTunedH264:
    """The `av` module as aiortc's h264 module sees it: all of PyAV, tuned encoders."""

    def __init__(self, name: str, tuning: EncoderTuning) -> None:
        self.CodecContext = _TunedCodecContext(name, tuning)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(av, attribute)
