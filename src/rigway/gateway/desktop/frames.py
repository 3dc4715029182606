"""Frames: what a caller was shown by a screenshot or an observe.

A frame id names one image the gateway handed out: the native region it shows, the
size it was scaled to, and the host's damage mark when it was grabbed. An input batch
may give its points in a frame's image pixels (mapped here to native pixels) and ask
that nothing near them changed since (the damage mark). The gateway keeps the last
`per_session` frames of each session in memory; an older or unknown id is gone, and a
caller asks for a fresh frame.

An observe's frame also keeps what `observe?since=` needs to answer with only what
changed: the targets shown with it (each id with a digest of its public fields, so a
frame costs a few bytes per target, never the targets themselves) and its `scope`, the
native area the caller's picture covers (a delta's frame keeps its since frame's).
"""

from __future__ import annotations

import dataclasses
import secrets
from collections import OrderedDict
from dataclasses import dataclass

# The contract promises at least 16 frames per session; twice that costs little.
DEFAULT_FRAMES_PER_SESSION = 32
# Past this many targets a frame keeps none (a delta then lists all as added): bounds a
# session's frames to 32 * 2000 small pairs whatever a host sends.
MAX_FRAME_TARGETS = 2000

Region = tuple[int, int, int, int]
# (target id, digest of its public fields): enough to tell added, removed and changed.
TargetDigests = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Frame:
    frame_id: str
    region: tuple[int, int, int, int]  # native x, y, w, h the image shows
    image_width: int
    image_height: int
    damage_mark: int  # ScreenCaptured.damage_mark of the host
    # The native area the caller's picture covers (`region` unless set apart).
    scope: Region | None = None
    targets: TargetDigests | None = None  # None: not shown with targets (a screenshot)

    @property
    def covers(self) -> Region:
        return self.region if self.scope is None else self.scope

    def to_native(self, x: int, y: int) -> tuple[int, int]:
        """An image pixel to native pixels: `region origin + point * native / image`,
        rounded down (the native pixel at the image pixel's top-left corner), clamped
        into the region (a point past the image's edge stays on the region's edge)."""
        rx, ry, rw, rh = self.region
        return (
            rx + _scale(x, self.image_width, rw),
            ry + _scale(y, self.image_height, rh),
        )


def _scale(value: int, image_extent: int, native_extent: int) -> int:
    # Integers only, so a 1:1 frame maps every pixel to itself exactly.
    native = (value * native_extent) // image_extent
    return min(max(native, 0), native_extent - 1)


def new_frame_id() -> str:
    return f"frm_{secrets.token_hex(12)}"


class FrameRegistry:
    """Recent frames per session, least recently remembered or used dropped first.

    Plain dicts touched only from the event loop's thread, between awaits: no lock."""

    def __init__(self, per_session: int = DEFAULT_FRAMES_PER_SESSION) -> None:
        if per_session < 1:
            raise ValueError("a session keeps at least one frame")
        self._per_session = per_session
        self._frames_by_session: dict[str, OrderedDict[str, Frame]] = {}

    def remember(
        self,
        session_id: str,
        *,
        region: tuple[int, int, int, int],
        image_width: int,
        image_height: int,
        damage_mark: int,
    ) -> Frame:
        _, _, rw, rh = region
        if min(rw, rh, image_width, image_height) < 1:
            raise ValueError("a frame shows at least one pixel")
        frame = Frame(new_frame_id(), region, image_width, image_height, damage_mark)
        frames = self._frames_by_session.setdefault(session_id, OrderedDict())
        frames[frame.frame_id] = frame
        while len(frames) > self._per_session:
            frames.popitem(last=False)
        return frame

    def get(self, session_id: str, frame_id: str) -> Frame | None:
        """The frame, if this session was shown it and it is still kept."""
        frames = self._frames_by_session.get(session_id)
        if frames is None:
            return None
        frame = frames.get(frame_id)
        if frame is not None:
            frames.move_to_end(frame_id)  # in use: keep it over frames nobody refers to
        return frame

    def update(
        self,
        session_id: str,
        frame: Frame,
        *,
        damage_mark: int | None = None,
        scope: Region | None = None,
        targets: TargetDigests | None = None,
    ) -> Frame:
        """The frame under the same id with what an observe learnt besides its image
        (kept only while the frame is; too many targets are not kept)."""
        kept = targets if targets is None or len(targets) <= MAX_FRAME_TARGETS else None
        updated = dataclasses.replace(
            frame,
            damage_mark=frame.damage_mark if damage_mark is None else damage_mark,
            scope=frame.scope if scope is None else scope,
            targets=kept,
        )
        frames = self._frames_by_session.get(session_id)
        if frames is not None and frame.frame_id in frames:
            frames[frame.frame_id] = updated
        return updated

    def forget_session(self, session_id: str) -> None:
        self._frames_by_session.pop(session_id, None)

    def __len__(self) -> int:
        """Sessions with frames kept (a leak shows here)."""
        return len(self._frames_by_session)
