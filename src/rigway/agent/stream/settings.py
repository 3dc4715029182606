"""Stream settings and the interface the dispatcher drives (no aiortc imports here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rigway.protocol import ops

__all__ = ["StreamControl", "StreamError", "StreamSettings"]


class StreamError(Exception):
    """A stream request the agent refuses (an offer without H.264, too many viewers,
    an unknown viewer): the dispatcher answers `invalid_request`."""


@dataclass(frozen=True, slots=True)
class StreamSettings:
    # "auto": the first openable hardware H.264 encoder, else libx264; or a name.
    encoder: str = "auto"
    # x264 preset: veryfast keeps 1080p at 30 fps on two cores (measured on a 2-vCPU VM).
    preset: str = "veryfast"
    # Bit rates in bit/s: the start, and the range the receiver's estimate moves in.
    bitrate: int = 4_000_000
    min_bitrate: int = 500_000
    max_bitrate: int = 8_000_000
    # A keyframe at least this often while frames flow (a lost one is re-requested).
    keyframe_interval_s: float = 10.0
    fps: int = 30
    # Cap on the picture width (None: native); a viewer may ask for less.
    max_width: int | None = None
    # With no damage no frame is encoded; the held frame is re-sent this often so a
    # receiver's keyframe request (PLI) is served even on a still desktop.
    keepalive_s: float = 1.0
    # Each viewer costs one encoder: this bounds the agent's CPU.
    max_viewers: int = 4
    # Media on 127.0.0.1 only (tests, one-machine setups). Process-wide: it pins
    # aioice's host addresses, and drops every other candidate of either side.
    loopback_only: bool = False

    def __post_init__(self) -> None:
        # Fail closed at start-up, with a message, rather than misbehave later.
        if not 1 <= self.fps <= 60:
            raise ValueError("stream fps must be within 1..60")
        if not 0 < self.min_bitrate <= self.bitrate <= self.max_bitrate:
            raise ValueError("stream bit rates need 0 < min_bitrate <= bitrate <= max_bitrate")
        if self.keyframe_interval_s <= 0 or self.keepalive_s <= 0:
            raise ValueError("keyframe_interval_s and keepalive_s must be > 0")
        if self.max_width is not None and self.max_width < 16:
            raise ValueError("stream max_width must be >= 16")
        if self.max_viewers < 1:
            raise ValueError("stream max_viewers must be >= 1")


class StreamControl(Protocol):
    """What the dispatcher needs of the publisher."""

    async def offer(self, request: ops.StreamOffer) -> ops.StreamAnswer: ...

    async def add_candidate(self, request: ops.StreamCandidate) -> None: ...

    async def close(self, session_id: str, viewer_id: str | None = None) -> int:
        """Close one viewer, or every viewer of the session; returns how many closed."""
        ...

    async def close_all(self) -> None: ...
