"""The ports the capture roles run over, and the records they pass.

Pure. `DuplicationPort` is one output's IDXGIOutputDuplication with its D3D11 staging
copy (`_dxgi.py` on Windows, `FakeDuplication` in tests); `GdiPort` is a BitBlt of the
same output (`_gdi.py`). Both are called from one thread at a time: the thread that
opens the desktop while the screen role is built, then the screen worker only (except
`GdiPort.locate`, from any thread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from rigway.agent.backends.base import Pixels
from rigway.agent.backends.windows.dxgi_types import DXGI_MODE_ROTATION_IDENTITY
from rigway.agent.backends.windows.geometry import OutputPlacement

__all__ = [
    "DuplicationDesc",
    "DuplicationPort",
    "FrameInfo",
    "GdiFrame",
    "GdiPort",
    "MappedSurface",
]


@dataclass(frozen=True, slots=True)
class DuplicationDesc:
    """The duplicated output: its place on the virtual desktop (desktop orientation,
    from DXGI_OUTPUT_DESC), its DXGI_MODE_ROTATION, and whether the desktop image is in
    system memory (then `map_desktop_surface` may work without a staging copy)."""

    placement: OutputPlacement
    rotation: int = DXGI_MODE_ROTATION_IDENTITY
    desktop_image_in_system_memory: bool = False


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """DXGI_OUTDUPL_FRAME_INFO, the parts we use. `last_present_time == 0` means only
    the pointer changed: there is no new image."""

    last_present_time: int
    total_metadata_bytes: int
    accumulated_frames: int = 1
    protected_content_masked_out: bool = False


@dataclass(frozen=True, slots=True)
class MappedSurface:
    """A mapped surface (not rotated): `data` is flat, rows `pitch` bytes apart, and is
    valid only until the matching unmap."""

    data: npt.NDArray[np.uint8]
    pitch: int
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class GdiFrame:
    """One GDI capture: BGRA (height, width, 4), valid until the next capture or close."""

    placement: OutputPlacement
    pixels: Pixels


class DuplicationPort(Protocol):
    """IDXGIOutputDuplication and the D3D11 staging copy, for one chosen output.

    Every failing call raises `HResultError`; WAIT_TIMEOUT from `acquire_next_frame`
    included."""

    def create(self) -> DuplicationDesc:
        """(Re)create the device and the duplication, releasing any previous ones."""
        ...

    def acquire_next_frame(self, timeout_ms: int) -> FrameInfo: ...

    def frame_move_rects(self, capacity_bytes: int) -> bytes:
        """The acquired frame's move rects (raw DXGI_OUTDUPL_MOVE_RECTs), at most
        `capacity_bytes`; DXGI_ERROR_MORE_DATA carries `required_bytes`."""
        ...

    def frame_dirty_rects(self, capacity_bytes: int) -> bytes:
        """The acquired frame's dirty rects (raw RECTs), like `frame_move_rects`."""
        ...

    def copy_frame_to_staging(self) -> None: ...

    def map_desktop_surface(self) -> MappedSurface:
        """The acquired frame in system memory; DXGI_ERROR_UNSUPPORTED when it is not."""
        ...

    def unmap_desktop_surface(self) -> None: ...

    def release_frame(self) -> None: ...

    def map_staging(self) -> MappedSurface: ...

    def unmap_staging(self) -> None: ...

    def close(self) -> None: ...


class GdiPort(Protocol):
    def capture(self) -> GdiFrame: ...

    def locate(self) -> OutputPlacement:
        """Where the output is now; safe to call from any thread."""
        ...

    def close(self) -> None: ...
