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
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import re

import aiortc.codecs
import aiortc.rtcrtpsender
from aiortc import RTCRtpCodecParameters
from aiortc.codecs.base import Encoder

from rigway.agent.stream.encoders import EncoderTuning
from rigway.agent.stream.h264_encoder import TunedH264Encoder

__all__ = [
    "WRITTEN_FOR",
    "UnsupportedAiortcError",
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
