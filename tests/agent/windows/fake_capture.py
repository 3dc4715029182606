"""A scriptable Desktop Duplication and GDI, with real pixels, for tests on any platform.

`FakeDuplication` keeps the desktop as the user sees it (`desktop`, BGRA) and serves
it the way DXGI does: frames queued by the test (`paint`, `move`, `pointer_only`,
`fail_acquire`, `change_mode`, or raw `FakeFrame`s) come out of `acquire_next_frame`,
each holding the unrotated *surface* and its metadata as raw DXGI bytes; an empty queue
is a WAIT_TIMEOUT. It checks the rules DXGI enforces (one frame held at a time, no
metadata or copy without a held frame, no acquire before a duplication exists) by
answering DXGI_ERROR_INVALID_CALL, and records what was called.

Each `create` makes a new `FakeOutputDuplication`, the object DuplicateOutput hands
out, and drops the last one, as the binding does; a call's frame refers to it while
the call runs, as the binding's does to the COM method it calls, so an exception kept
past its handler keeps it alive. Like DXGI, `create` refuses a second duplication of
the output (E_INVALIDARG) while an earlier one is still alive anywhere.

The surface of a rotated output is derived with numpy alone (ROTATE90: the desktop is
the surface turned clockwise, as in Microsoft's DesktopDuplication sample), so the
fake does not lean on the code under test.
"""

from __future__ import annotations

import struct
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.windows import dxgi_types as dx
from rigway.agent.backends.windows.capture import (
    DuplicationDesc,
    FrameInfo,
    GdiFrame,
    MappedSurface,
    open_screen_over,
)
from rigway.agent.backends.windows.dxgi_policy import DUPLICATE_OUTPUT, HResultError
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.roles import ScreenRole

__all__ = [
    "FakeClock",
    "FakeDuplication",
    "FakeFrame",
    "FakeGdi",
    "FakeOutputDuplication",
    "fake_screen",
]

# np.rot90 turns (counter-clockwise) from the desktop back to the surface.
_DESKTOP_TO_SURFACE_TURNS = {
    dx.DXGI_MODE_ROTATION_IDENTITY: 0,
    dx.DXGI_MODE_ROTATION_ROTATE90: 1,
    dx.DXGI_MODE_ROTATION_ROTATE180: 2,
    dx.DXGI_MODE_ROTATION_ROTATE270: -1,
}
_KILLS_DUPLICATION = frozenset(
    {dx.DXGI_ERROR_ACCESS_LOST, dx.DXGI_ERROR_DEVICE_REMOVED, dx.WAIT_ABANDONED}
)
# Rows of the mapped staging texture are padded like a driver's.
PITCH_PADDING_BYTES = 64


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def monotonic(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


@dataclass
class FakeFrame:
    """One acquired frame: `surface` is the full image it presents (None: pointer only)."""

    info: FrameInfo
    surface: Pixels | None = None
    move_bytes: bytes = b""
    dirty_bytes: bytes = b""


def ltrb(rect: Rect) -> bytes:
    return struct.pack("<4i", rect.x, rect.y, rect.x + rect.w, rect.y + rect.h)


def move_record(source_x: int, source_y: int, destination: Rect) -> bytes:
    return struct.pack("<2i", source_x, source_y) + ltrb(destination)


class FakeOutputDuplication:
    """One duplication object: alive while anything refers to it."""

    def __init__(self, serial: int) -> None:
        self.serial = serial


@dataclass
class FakeDuplication:
    """A duplication of one output of `width` x `height` desktop pixels."""

    width: int
    height: int
    rotation: int = dx.DXGI_MODE_ROTATION_IDENTITY
    left: int = 0
    top: int = 0
    system_memory: bool = False
    # Whether a fresh duplication's first acquire returns the whole desktop (DXGI does).
    first_frame_on_create: bool = True
    desktop: Pixels = field(init=False)
    frames: deque[FakeFrame | HResultError] = field(default_factory=deque)
    create_failures: deque[HResultError] = field(default_factory=deque)
    # Errors the next call of a method raises (by method name), once each.
    failures: dict[str, HResultError] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    acquire_timeouts_ms: list[int] = field(default_factory=list)
    created: int = 0
    released: int = 0
    is_closed: bool = False
    holding: FakeFrame | None = None
    staging: Pixels | None = None
    is_staging_mapped: bool = False
    last_mapped: MappedSurface | None = None
    # Every duplication object made, first first; dead once nothing refers to it.
    made: list[weakref.ref[FakeOutputDuplication]] = field(default_factory=list)
    _object: FakeOutputDuplication | None = None
    _is_live: bool = False
    _present_time: int = 0
    _pending_mode: tuple[int, int, int] | None = None

    def __post_init__(self) -> None:
        self.desktop = np.zeros((self.height, self.width, 4), dtype=np.uint8)

    # -- scripting ------------------------------------------------------------------------
    def paint(self, rect: Rect, bgra: tuple[int, int, int, int]) -> None:
        """Fill `rect` of the desktop and queue the frame that reports it as dirty."""
        self.desktop[rect.y : rect.y + rect.h, rect.x : rect.x + rect.w] = bgra
        self.frames.append(self._image_frame(dirty=[self._surface_rect(rect)]))

    def move(self, source: Rect, destination_x: int, destination_y: int) -> None:
        """Copy `source` to (x, y) on an unrotated desktop, queued as a move rect."""
        assert self.rotation == dx.DXGI_MODE_ROTATION_IDENTITY, "moves are scripted unrotated"
        block = self.desktop[source.y : source.y + source.h, source.x : source.x + source.w].copy()
        destination = Rect(destination_x, destination_y, source.w, source.h)
        self.desktop[
            destination.y : destination.y + source.h, destination.x : destination.x + source.w
        ] = block
        record = move_record(source.x, source.y, destination)
        self.frames.append(self._image_frame(moves=record))

    def pointer_only(self) -> None:
        self.frames.append(FakeFrame(FrameInfo(last_present_time=0, total_metadata_bytes=0)))

    def fail_acquire(self, code: int) -> None:
        self.frames.append(HResultError(code, "AcquireNextFrame"))

    def change_mode(self, width: int, height: int, rotation: int | None = None) -> None:
        """A display mode change: the live duplication is lost, and the next one has the
        new size (and rotation); the desktop is repainted black."""
        self._pending_mode = (width, height, self.rotation if rotation is None else rotation)
        self.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)

    def surface(self) -> Pixels:
        """The desktop as the unrotated surface holds it."""
        turns = _DESKTOP_TO_SURFACE_TURNS[self.rotation]
        return np.ascontiguousarray(np.rot90(self.desktop, k=turns, axes=(0, 1)))

    # -- DuplicationPort -----------------------------------------------------------------
    def create(self) -> DuplicationDesc:
        self.calls.append("create")
        self.holding = None
        self._is_live = False
        self._object = None
        if self.create_failures:
            raise self.create_failures.popleft()
        if any(made() is not None for made in self.made):
            # "The calling application is already duplicating this desktop output."
            raise HResultError(dx.E_INVALIDARG, DUPLICATE_OUTPUT)
        if self._pending_mode is not None:
            self.width, self.height, self.rotation = self._pending_mode
            self._pending_mode = None
            self.desktop = np.zeros((self.height, self.width, 4), dtype=np.uint8)
        self.created += 1
        self._object = FakeOutputDuplication(self.created)
        self.made.append(weakref.ref(self._object))
        self._is_live = True
        if self.first_frame_on_create:
            whole = Rect(0, 0, self.width, self.height)
            self.frames.appendleft(self._image_frame(dirty=[self._surface_rect(whole)]))
        return DuplicationDesc(
            placement=OutputPlacement(self.left, self.top, self.width, self.height),
            rotation=self.rotation,
            desktop_image_in_system_memory=self.system_memory,
        )

    def acquire_next_frame(self, timeout_ms: int) -> FrameInfo:
        self._call("acquire_next_frame")
        duplication = self._object  # noqa: F841 (referred to while the call runs)
        self.acquire_timeouts_ms.append(timeout_ms)
        if not self._is_live or self.holding is not None:
            raise HResultError(dx.DXGI_ERROR_INVALID_CALL, "AcquireNextFrame")
        if not self.frames:
            raise HResultError(dx.DXGI_ERROR_WAIT_TIMEOUT, "AcquireNextFrame")
        head = self.frames[0]
        if isinstance(head, HResultError):
            if head.hresult in _KILLS_DUPLICATION:
                self._is_live = False
            del head
            _raise_scripted(self.frames)
        frame = self.frames.popleft()
        assert isinstance(frame, FakeFrame)
        self.holding = frame
        return frame.info

    def frame_move_rects(self, capacity_bytes: int) -> bytes:
        return self._metadata("frame_move_rects", self._held().move_bytes, capacity_bytes)

    def frame_dirty_rects(self, capacity_bytes: int) -> bytes:
        return self._metadata("frame_dirty_rects", self._held().dirty_bytes, capacity_bytes)

    def copy_frame_to_staging(self) -> None:
        self._call("copy_frame_to_staging")
        surface = self._held().surface
        assert surface is not None, "a pointer-only frame has no image to copy"
        self.staging = surface.copy()

    def map_desktop_surface(self) -> MappedSurface:
        self._call("map_desktop_surface")
        surface = self._held().surface
        if not self.system_memory or surface is None:
            raise HResultError(dx.DXGI_ERROR_UNSUPPORTED, "MapDesktopSurface")
        self.last_mapped = _padded(surface)
        return self.last_mapped

    def unmap_desktop_surface(self) -> None:
        self._call("unmap_desktop_surface")

    def release_frame(self) -> None:
        self._call("release_frame")
        if self.holding is None:
            raise HResultError(dx.DXGI_ERROR_INVALID_CALL, "ReleaseFrame")
        self.holding = None
        self.released += 1

    def map_staging(self) -> MappedSurface:
        self._call("map_staging")
        assert self.staging is not None, "mapped a staging texture nothing was copied into"
        self.is_staging_mapped = True
        self.last_mapped = _padded(self.staging)
        return self.last_mapped

    def unmap_staging(self) -> None:
        self._call("unmap_staging")
        self.is_staging_mapped = False

    def close(self) -> None:
        self.calls.append("close")
        self.is_closed = True
        self._is_live = False
        self._object = None

    # -- inside ---------------------------------------------------------------------------
    def _call(self, name: str) -> None:
        self.calls.append(name)
        duplication = self._object  # noqa: F841 (referred to while the call runs)
        if name in self.failures:
            if self.failures[name].hresult in _KILLS_DUPLICATION:
                self._is_live = False
            _raise_scripted(self.failures, name)

    def _held(self) -> FakeFrame:
        if self.holding is None:
            raise HResultError(dx.DXGI_ERROR_INVALID_CALL, "no frame held")
        return self.holding

    def _metadata(self, name: str, data: bytes, capacity_bytes: int) -> bytes:
        self._call(name)
        self._held()
        if capacity_bytes < len(data):
            raise HResultError(dx.DXGI_ERROR_MORE_DATA, name, required_bytes=len(data))
        return data

    def _image_frame(self, *, dirty: list[Rect] | None = None, moves: bytes = b"") -> FakeFrame:
        self._present_time += 1
        dirty_bytes = b"".join(ltrb(rect) for rect in dirty or [])
        info = FrameInfo(
            last_present_time=self._present_time,
            total_metadata_bytes=len(moves) + len(dirty_bytes),
        )
        return FakeFrame(info, surface=self.surface(), move_bytes=moves, dirty_bytes=dirty_bytes)

    def _surface_rect(self, rect: Rect) -> Rect:
        mask = np.zeros((self.height, self.width), dtype=np.uint8)
        mask[rect.y : rect.y + rect.h, rect.x : rect.x + rect.w] = 1
        turns = _DESKTOP_TO_SURFACE_TURNS[self.rotation]
        ys, xs = np.nonzero(np.rot90(mask, k=turns))
        x, y = int(xs.min()), int(ys.min())
        return Rect(x, y, int(xs.max()) + 1 - x, int(ys.max()) + 1 - y)


def _raise_scripted(
    scripted: deque[FakeFrame | HResultError] | dict[str, HResultError], name: str = ""
) -> NoReturn:
    """Raise the scripted error at the head of `scripted` (or under `name`), taken out of
    it, the way the binding raises a fresh one: no frame of the fake keeps it (a local
    naming it would tie that frame and the traceback into a cycle, which would keep the
    duplication alive whatever the capture does)."""
    if isinstance(scripted, deque):
        error = scripted.popleft()
        assert isinstance(error, HResultError)
    else:
        error = scripted.pop(name)
    try:
        raise error
    finally:
        del error


def _padded(surface: Pixels) -> MappedSurface:
    height, width = surface.shape[:2]
    pitch = width * 4 + PITCH_PADDING_BYTES
    data = np.full(pitch * height, 0xEE, dtype=np.uint8)
    rows = data.reshape(height, pitch)
    rows[:, : width * 4] = surface.reshape(height, width * 4)
    return MappedSurface(data=data, pitch=pitch, width=width, height=height)


@dataclass
class FakeGdi:
    """BitBlt of the duplication's desktop; `failure` makes captures fail (the secure
    desktop)."""

    duplication: FakeDuplication
    failure: OSError | None = None
    captures: int = 0
    is_closed: bool = False

    def capture(self) -> GdiFrame:
        if self.failure is not None:
            raise self.failure
        self.captures += 1
        # A view GDI's next capture would overwrite: the caller must copy.
        return GdiFrame(self.locate(), self.duplication.desktop)

    def locate(self) -> OutputPlacement:
        fake = self.duplication
        return OutputPlacement(fake.left, fake.top, fake.width, fake.height)

    def close(self) -> None:
        self.is_closed = True


def fake_screen(width: int, height: int) -> tuple[ScreenRole, FakeDuplication]:
    """The screen role `open_screen_over` builds, over a fake output of this size.

    Paint with `duplication.paint(rect, bgra)`: the next `poll_damage` reports `rect`
    and the next `grab` shows it."""
    duplication = FakeDuplication(width, height)
    screen = open_screen_over(lambda: duplication, FakeGdi(duplication), FakeClock())
    return screen, duplication
