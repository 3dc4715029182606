"""Capture of one output: DXGI Desktop Duplication with damage, GDI without, and the
choice between them.

Pure: the logic runs over two thin ports (`capture_ports`): `DuplicationPort` (`_dxgi.py`,
`FakeDuplication` in tests) and `GdiPort` (`_gdi.py`). Everything runs on the screen
worker thread, except `placement()`, which any thread may call, and the constructors:
`DxgiScreen` makes the first device, context and duplication (and waits for the first
frame) on the thread that opens the desktop. That is harmless: the opener is done with
them before it hands the role over, so no two threads ever use them at once (the D3D11
device is free-threaded anyway; its immediate context and the duplication only must
not be used concurrently), and DXGI and D3D11 objects are not bound to a COM apartment
(both threads join the multithreaded one regardless). Duplications made after a loss
are made on the screen worker.

The duplication delivers *changes*: each acquired frame is copied at once into a
staging texture that accumulates the desktop, and released (holding a frame stalls
the desktop's updates, and acquiring another without releasing is an error). `grab`
maps the staging texture only when a newer frame was copied since the last grab, and
copies the rows, turned to the desktop's orientation, into a buffer of ours: nothing
handed out points into mapped memory. Damage from every frame drained (by `grab` or
`poll_damage`) accumulates until the next `poll_damage`.

While the duplication is down (a mode change, the secure desktop, a locked session)
nothing reports changes, so a poll looks through GDI itself, at most every
`GDI_PROBE_INTERVAL_S`, and reports the box of pixels that differ from the last frame:
nothing when GDI fails too or nothing changed, so a locked screen costs no re-encodes.

https://learn.microsoft.com/en-us/windows/win32/direct3ddxgi/desktop-dup-api
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.windows.capture_ports import (
    DuplicationDesc,
    DuplicationPort,
    FrameInfo,
    GdiFrame,
    GdiPort,
    MappedSurface,
)
from rigway.agent.backends.windows.dirty import (
    DIRTY_RECT_BYTES,
    frame_damage,
    rotate_pixels,
    surface_size,
)
from rigway.agent.backends.windows.dxgi_policy import (
    DEFAULT_GIVE_UP_AFTER,
    DxgiUnavailableError,
    Failure,
    HResultError,
    MonotonicClock,
    Recovery,
    classify,
)
from rigway.agent.backends.windows.dxgi_types import DXGI_ERROR_MORE_DATA, DXGI_ERROR_UNSUPPORTED
from rigway.agent.backends.windows.frame_pixels import changed_box, copied_into, surface_view
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.roles import ScreenRole

__all__ = [
    "GDI_PROBE_INTERVAL_S",
    "DuplicationDesc",
    "DuplicationPort",
    "DxgiScreen",
    "FallbackScreen",
    "FrameInfo",
    "GdiFrame",
    "GdiPort",
    "GdiScreen",
    "MappedSurface",
    "open_screen_over",
]

_log = logging.getLogger(__name__)

FIRST_FRAME_TIMEOUT_MS = 500
# A screen repainting faster than we drain must not keep a poll in the loop for ever;
# DXGI folds what is left into the next frame (AccumulatedFrames).
MAX_FRAMES_PER_DRAIN = 16
# Past this many rects pending, one whole-screen rect says the same for less.
MAX_PENDING_RECTS = 256
MAX_METADATA_REGROWS = 8
# While the duplication is down, polls (every 5 ms in a wait) look through GDI at most
# this often: a BitBlt of a whole output costs milliseconds. A change is reported up to
# this much late then, like a slow frame.
GDI_PROBE_INTERVAL_S = 0.1


class _Acquired(enum.Enum):
    NOTHING = "nothing"
    POINTER_ONLY = "pointer_only"
    IMAGE = "image"
    LOST = "lost"


class GdiScreen:
    """BitBlt of the output on every grab; no damage. Owns its port."""

    capture_mode = "gdi"
    has_damage = False

    def __init__(self, port: GdiPort) -> None:
        self._port = port
        self._buffer: Pixels | None = None

    def placement(self) -> OutputPlacement:
        return self._port.locate()

    def grab(self) -> Pixels:
        self._buffer = copied_into(self._buffer, self._port.capture().pixels)
        return self._buffer

    def poll_damage(self) -> list[Rect]:
        return []

    def close(self) -> None:
        self._buffer = None
        self._port.close()


class DxgiScreen:
    """Desktop Duplication of one output, with damage.

    Builds the duplication at once; raises `DxgiUnavailableError` when it cannot be had
    (a fatal error; or a transient one with no `gdi` to show the screen meanwhile).
    While the duplication is lost, grabs go through `gdi` when given, else return the
    last frame, and polls report what `gdi` shows changed (see the module docstring).
    `gdi` is not closed here."""

    capture_mode = "dxgi"
    has_damage = True

    def __init__(
        self,
        port: DuplicationPort,
        clock: MonotonicClock,
        gdi: GdiPort | None = None,
        *,
        first_frame_timeout_ms: int = FIRST_FRAME_TIMEOUT_MS,
        give_up_after: int = DEFAULT_GIVE_UP_AFTER,
    ) -> None:
        self._port = port
        self._gdi = gdi
        self._clock = clock
        self._gdi_probed_at_s: float | None = None
        self._first_frame_timeout_ms = first_frame_timeout_ms
        self._recovery = Recovery(clock, give_up_after)
        self._lock = threading.Lock()
        self._desc: DuplicationDesc | None = None
        self._is_live = False
        self._buffer: Pixels | None = None
        self._damage: list[Rect] = []
        self._is_whole_pending = True
        self._is_staging_newer = False
        self._is_system_memory_refused = False
        self._create()
        if not self._is_live and gdi is None:
            raise DxgiUnavailableError("no duplication yet, and no GDI to show the screen")

    def placement(self) -> OutputPlacement:
        with self._lock:
            desc = self._desc
        if desc is not None:
            return desc.placement
        assert self._gdi is not None  # the constructor refuses no desc and no GDI
        return self._gdi.locate()

    def poll_damage(self) -> list[Rect]:
        self._pump()
        if self._is_whole_pending:
            self._is_whole_pending = False
            self._damage.clear()
            return [self._whole_screen()]
        rects, self._damage = self._damage, []
        if not self._is_live and self._gdi is not None:
            rects += self._probe_gdi(self._gdi)
        return rects

    def grab(self) -> Pixels:
        self._pump()
        if self._is_live and self._is_staging_newer:
            self._read_staging()
        if not self._is_live and self._gdi is not None:
            self._grab_gdi(self._gdi)
        if self._buffer is None:
            raise DxgiUnavailableError("no frame captured yet")
        return self._buffer

    def close(self) -> None:
        self._is_live = False
        self._buffer = None
        self._port.close()

    # -- the duplication's life ---------------------------------------------------------
    def _pump(self) -> None:
        if not self._is_live:
            if not self._recovery.may_retry():
                self._raise_if_given_up(None)
                return
            self._create()
            if not self._is_live:
                return
        for _ in range(MAX_FRAMES_PER_DRAIN):
            if self._acquire(0) in (_Acquired.NOTHING, _Acquired.LOST):
                return

    def _create(self) -> None:
        try:
            desc = self._port.create()
        except HResultError as error:
            self._recovery.creation_failed(error)
            self._raise_if_given_up(error)
            return
        self._recovery.created()
        self._adopt(desc)
        self._is_live = True
        # Users see black first grabs right after DuplicateOutput: wait a little for the
        # first image, then seed from GDI (https://github.com/ra1nty/DXcam/issues/72).
        acquired = self._acquire(self._first_frame_timeout_ms)
        if acquired in (_Acquired.NOTHING, _Acquired.POINTER_ONLY) and self._gdi is not None:
            self._seed_from_gdi(self._gdi)

    def _adopt(self, desc: DuplicationDesc) -> None:
        size = (desc.placement.height, desc.placement.width)
        if self._buffer is None or self._buffer.shape[:2] != size:
            self._buffer = np.zeros((*size, 4), dtype=np.uint8)
        with self._lock:
            self._desc = desc
        self._is_whole_pending = True
        self._damage.clear()
        self._is_staging_newer = False
        self._is_system_memory_refused = False

    def _lose(self, error: HResultError) -> None:
        self._is_live = False
        self._is_staging_newer = False
        self._recovery.lost(error)
        _log.info("desktop duplication lost (%s); recreating it", error)
        self._raise_if_given_up(error)

    def _raise_if_given_up(self, error: HResultError | None) -> None:
        if self._recovery.is_exhausted:
            raise DxgiUnavailableError(f"giving up on DXGI: {self._recovery.reason}") from error

    # -- frames ---------------------------------------------------------------------------
    def _acquire(self, timeout_ms: int) -> _Acquired:
        try:
            info = self._port.acquire_next_frame(timeout_ms)
        except HResultError as error:
            if classify(error.hresult) is Failure.NO_CHANGE:
                return _Acquired.NOTHING
            self._lose(error)
            return _Acquired.LOST
        self._recovery.delivered()
        # Only the HRESULT and the operation outlive the handlers. An exception kept in
        # a local refers to this frame through its traceback: that cycle would keep the
        # frames it passed through, and the duplication they refer to, alive until the
        # cycle collector ran, and DuplicateOutput refuses a new duplication of the
        # output (E_INVALIDARG) while the old one lives.
        failed: tuple[int, str] | None = None
        acquired = _Acquired.POINTER_ONLY
        try:
            if info.last_present_time != 0:
                self._take_frame(info)
                acquired = _Acquired.IMAGE
        except HResultError as error:
            failed = (error.hresult, error.operation)
        finally:
            try:
                self._port.release_frame()
            except HResultError as error:
                failed = failed if failed is not None else (error.hresult, error.operation)
        if failed is not None:
            self._lose(HResultError(*failed))
            return _Acquired.LOST
        return acquired

    def _take_frame(self, info: FrameInfo) -> None:
        rects = self._frame_damage(info)
        self._take_image()
        self._damage.extend(rects)
        if len(self._damage) > MAX_PENDING_RECTS:
            self._is_whole_pending = True
            self._damage.clear()

    def _frame_damage(self, info: FrameInfo) -> list[Rect]:
        desc = self._current_desc()
        if info.total_metadata_bytes <= 0:
            return [self._whole_screen()]  # an image with no rects: anything may differ
        moves = _read_growing(self._port.frame_move_rects, info.total_metadata_bytes)
        remaining = max(info.total_metadata_bytes - len(moves), DIRTY_RECT_BYTES)
        dirty = _read_growing(self._port.frame_dirty_rects, remaining)
        width, height = surface_size(desc.placement.width, desc.placement.height, desc.rotation)
        return frame_damage(
            moves, dirty, rotation=desc.rotation, surface_width=width, surface_height=height
        )

    def _take_image(self) -> None:
        desc = self._current_desc()
        if desc.desktop_image_in_system_memory and not self._is_system_memory_refused:
            try:
                mapped = self._port.map_desktop_surface()
            except HResultError as error:
                if error.hresult != DXGI_ERROR_UNSUPPORTED:
                    raise
                self._is_system_memory_refused = True
            else:
                try:
                    self._copy_surface(mapped)
                finally:
                    self._port.unmap_desktop_surface()
                return
        self._port.copy_frame_to_staging()
        self._is_staging_newer = True

    def _read_staging(self) -> None:
        try:
            mapped = self._port.map_staging()
            try:
                self._copy_surface(mapped)
            finally:
                self._port.unmap_staging()
        except HResultError as error:
            self._lose(error)
            return
        self._is_staging_newer = False

    def _copy_surface(self, mapped: MappedSurface) -> None:
        desc = self._current_desc()
        desktop = rotate_pixels(surface_view(mapped), desc.rotation)
        height, width = desktop.shape[:2]
        if self._buffer is None or self._buffer.shape[:2] != (height, width):
            # The surface disagrees with the mode we were told: its pixels win.
            self._adopt(
                replace(desc, placement=replace(desc.placement, width=width, height=height))
            )
        assert self._buffer is not None
        np.copyto(self._buffer, desktop)

    # -- GDI ------------------------------------------------------------------------------
    def _seed_from_gdi(self, gdi: GdiPort) -> None:
        try:
            pixels = gdi.capture().pixels
        except OSError as error:
            _log.info("no GDI seed for the first DXGI frame: %s", error)
            return
        if self._buffer is not None and pixels.shape == self._buffer.shape:
            np.copyto(self._buffer, pixels)

    def _probe_gdi(self, gdi: GdiPort) -> list[Rect]:
        """What GDI shows changed since the last frame, kept as the last frame; nothing
        when GDI fails, shows no change, or was asked too recently."""
        now_s = self._clock.monotonic()
        last_s = self._gdi_probed_at_s
        if last_s is not None and now_s - last_s < GDI_PROBE_INTERVAL_S:
            return []
        self._gdi_probed_at_s = now_s
        try:
            pixels = gdi.capture().pixels
        except OSError as error:
            _log.debug("GDI cannot see the desktop while DXGI is lost: %s", error)
            return []
        changed = changed_box(self._buffer, pixels)
        if changed is not None:
            self._buffer = copied_into(self._buffer, pixels)
        return [] if changed is None else [changed]

    def _grab_gdi(self, gdi: GdiPort) -> None:
        try:
            self._buffer = copied_into(self._buffer, gdi.capture().pixels)
        except OSError as error:
            # The secure desktop refuses GDI too; the last frame is the best we have.
            if self._buffer is None:
                raise
            _log.debug("GDI capture failed while DXGI is lost: %s", error)

    def _current_desc(self) -> DuplicationDesc:
        with self._lock:
            desc = self._desc
        assert desc is not None  # set before the first frame is acquired
        return desc

    def _whole_screen(self) -> Rect:
        if self._buffer is not None:
            return Rect(0, 0, self._buffer.shape[1], self._buffer.shape[0])
        placement = self.placement()
        return Rect(0, 0, placement.width, placement.height)


class FallbackScreen:
    """DXGI while it works, then GDI for good: what `open_screen_over` returns.

    `capture_mode` and `has_damage` follow the screen in use (the agent reads them on
    every capture). The poll that meets the switch reports the whole screen."""

    def __init__(self, dxgi: DxgiScreen, gdi_port: GdiPort) -> None:
        self._dxgi: DxgiScreen | None = dxgi
        self._gdi_port = gdi_port
        self._active: ScreenRole = dxgi

    @property
    def capture_mode(self) -> str:
        return self._active.capture_mode

    @property
    def has_damage(self) -> bool:
        return self._active.has_damage

    def placement(self) -> OutputPlacement:
        return self._active.placement()

    def grab(self) -> Pixels:
        if self._dxgi is not None:
            try:
                return self._dxgi.grab()
            except DxgiUnavailableError as error:
                self._fall_back(error)
        return self._active.grab()

    def poll_damage(self) -> list[Rect]:
        if self._dxgi is not None:
            try:
                return self._dxgi.poll_damage()
            except DxgiUnavailableError as error:
                self._fall_back(error)
                placement = self._active.placement()
                return [Rect(0, 0, placement.width, placement.height)]
        return self._active.poll_damage()

    def close(self) -> None:
        self._active.close()
        if self._dxgi is not None:
            self._dxgi = None
            self._gdi_port.close()

    def _fall_back(self, error: DxgiUnavailableError) -> None:
        _log.warning("screen capture falls back to GDI (no damage reports): %s", error)
        assert self._dxgi is not None
        dxgi, self._dxgi = self._dxgi, None
        dxgi.close()
        self._active = GdiScreen(self._gdi_port)


def open_screen_over(
    dxgi_port_factory: Callable[[], DuplicationPort],
    gdi_port: GdiPort,
    clock: MonotonicClock,
    *,
    give_up_after: int = DEFAULT_GIVE_UP_AFTER,
) -> ScreenRole:
    """DXGI Desktop Duplication when it can be had, else GDI. Owns both ports."""
    try:
        port = dxgi_port_factory()
    except OSError as error:
        _log.warning("no DXGI Desktop Duplication (%s): capturing with GDI", error)
        return GdiScreen(gdi_port)
    try:
        dxgi = DxgiScreen(port, clock, gdi_port, give_up_after=give_up_after)
    except DxgiUnavailableError as error:
        port.close()
        _log.warning("no DXGI Desktop Duplication (%s): capturing with GDI", error)
        return GdiScreen(gdi_port)
    return FallbackScreen(dxgi, gdi_port)


def _read_growing(fetch: Callable[[int], bytes], capacity_bytes: int) -> bytes:
    """`fetch` with a buffer grown until it fits (DXGI_ERROR_MORE_DATA)."""
    capacity = max(capacity_bytes, 1)
    for _ in range(MAX_METADATA_REGROWS):
        try:
            return fetch(capacity)
        except HResultError as error:
            if error.hresult != DXGI_ERROR_MORE_DATA:
                raise
            required = error.required_bytes
            capacity = required if required is not None and required > capacity else capacity * 2
    raise HResultError(DXGI_ERROR_MORE_DATA, f"frame metadata still larger than {capacity} bytes")
