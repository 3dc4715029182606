"""What changed in a duplicated frame: move and dirty rectangles, in desktop pixels.

Pure. `IDXGIOutputDuplication` reports a frame's changes as two buffers whose sizes
are in bytes (not counts): move rectangles (DXGI_OUTDUPL_MOVE_RECT, 24 bytes each: a
source point and a destination rectangle) and dirty rectangles (RECT, 16 bytes each).
Both are in the coordinates of the duplicated *surface*, which is not rotated: on an
output turned by 90° or 270° the surface's width and height are the desktop's height
and width. Everything here maps them to the desktop the user sees, and `rotate_pixels`
turns the surface's pixels the same way, so a pixel inside a reported rectangle lands
inside the mapped one.

https://learn.microsoft.com/en-us/windows/win32/api/dxgi1_2/nf-dxgi1_2-idxgioutputduplication-getframemoverects
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.windows._ctypes_types import RECT
from rigway.agent.backends.windows.dxgi_types import (
    DXGI_MODE_ROTATION_IDENTITY,
    DXGI_MODE_ROTATION_ROTATE90,
    DXGI_MODE_ROTATION_ROTATE180,
    DXGI_MODE_ROTATION_ROTATE270,
    DXGI_MODE_ROTATION_UNSPECIFIED,
    DXGI_OUTDUPL_MOVE_RECT,
)

__all__ = [
    "DIRTY_RECT_BYTES",
    "MOVE_RECT_BYTES",
    "MoveRect",
    "clip_rect",
    "desktop_size",
    "frame_damage",
    "move_damage",
    "parse_dirty_rects",
    "parse_move_rects",
    "rotate_pixels",
    "rotate_rect",
    "surface_size",
]

MOVE_RECT_BYTES = ctypes.sizeof(DXGI_OUTDUPL_MOVE_RECT)
DIRTY_RECT_BYTES = ctypes.sizeof(RECT)

# np.rot90's k (counter-clockwise quarter turns) that turns the surface into the
# desktop. ROTATE90 turns the surface clockwise, as Microsoft's DesktopDuplication
# sample maps a dirty rect's left to `desktop_width - bottom` for it.
_QUARTER_TURNS = {
    DXGI_MODE_ROTATION_UNSPECIFIED: 0,
    DXGI_MODE_ROTATION_IDENTITY: 0,
    DXGI_MODE_ROTATION_ROTATE90: -1,
    DXGI_MODE_ROTATION_ROTATE180: 2,
    DXGI_MODE_ROTATION_ROTATE270: 1,
}


@dataclass(frozen=True, slots=True)
class MoveRect:
    """Pixels copied within the surface: from `source` (same size) to `destination`."""

    source: Rect
    destination: Rect


def parse_move_rects(buffer: bytes, byte_count: int) -> list[MoveRect]:
    """The move rectangles in the first `byte_count` bytes (as Windows reported it).

    A trailing partial record (never seen from Windows) is ignored. Empty or inverted
    destinations are dropped."""
    count = min(byte_count, len(buffer)) // MOVE_RECT_BYTES
    records = (DXGI_OUTDUPL_MOVE_RECT * count).from_buffer_copy(buffer[: count * MOVE_RECT_BYTES])
    moves: list[MoveRect] = []
    for record in records:
        destination = _from_ltrb(record.DestinationRect)
        if destination is None:
            continue
        source = Rect(record.SourcePoint.x, record.SourcePoint.y, destination.w, destination.h)
        moves.append(MoveRect(source=source, destination=destination))
    return moves


def parse_dirty_rects(buffer: bytes, byte_count: int) -> list[Rect]:
    """The dirty rectangles in the first `byte_count` bytes; empty ones dropped."""
    count = min(byte_count, len(buffer)) // DIRTY_RECT_BYTES
    records = (RECT * count).from_buffer_copy(buffer[: count * DIRTY_RECT_BYTES])
    rects = (_from_ltrb(record) for record in records)
    return [rect for rect in rects if rect is not None]


def move_damage(moves: list[MoveRect]) -> list[Rect]:
    """Every pixel a move touched: its destination and its source (which may now show
    something else). Over-reporting costs a re-encode, under-reporting a stale frame."""
    rects: list[Rect] = []
    for move in moves:
        rects.append(move.destination)
        rects.append(move.source)
    return rects


def surface_size(desktop_width: int, desktop_height: int, rotation: int) -> tuple[int, int]:
    """(width, height) of the duplicated surface of a desktop of this size."""
    if _is_quarter_turned(rotation):
        return desktop_height, desktop_width
    return desktop_width, desktop_height


def desktop_size(surface_width: int, surface_height: int, rotation: int) -> tuple[int, int]:
    """(width, height) of the desktop a surface of this size shows."""
    # A quarter turn swaps the axes both ways.
    return surface_size(surface_width, surface_height, rotation)


def rotate_rect(rect: Rect, rotation: int, surface_width: int, surface_height: int) -> Rect:
    """A rectangle of the surface → the same pixels on the desktop."""
    turns = _turns(rotation)
    if turns == 0:
        return rect
    right, bottom = rect.x + rect.w, rect.y + rect.h
    if turns == -1:  # clockwise: surface (x, y) → desktop (surface_height - 1 - y, x)
        return Rect(surface_height - bottom, rect.x, rect.h, rect.w)
    if turns == 2:
        return Rect(surface_width - right, surface_height - bottom, rect.w, rect.h)
    # counter-clockwise: surface (x, y) → desktop (y, surface_width - 1 - x)
    return Rect(rect.y, surface_width - right, rect.h, rect.w)


def rotate_pixels(surface: Pixels, rotation: int) -> Pixels:
    """The surface's pixels (height, width, 4) as the desktop shows them: a view, no copy."""
    turns = _turns(rotation)
    if turns == 0:
        return surface
    return np.rot90(surface, k=turns, axes=(0, 1))


def clip_rect(rect: Rect, width: int, height: int) -> Rect | None:
    """The part of `rect` inside a width x height capture, None when nothing is."""
    left, top = max(rect.x, 0), max(rect.y, 0)
    right, bottom = min(rect.x + rect.w, width), min(rect.y + rect.h, height)
    if right <= left or bottom <= top:
        return None
    return Rect(left, top, right - left, bottom - top)


def frame_damage(
    move_buffer: bytes,
    dirty_buffer: bytes,
    *,
    rotation: int,
    surface_width: int,
    surface_height: int,
) -> list[Rect]:
    """A frame's changes in desktop pixels, clipped to the desktop: moves (source and
    destination) first, as Windows says they apply before the dirty rectangles."""
    surface_rects = move_damage(parse_move_rects(move_buffer, len(move_buffer)))
    surface_rects += parse_dirty_rects(dirty_buffer, len(dirty_buffer))
    width, height = desktop_size(surface_width, surface_height, rotation)
    rects: list[Rect] = []
    for rect in surface_rects:
        clipped = clip_rect(
            rotate_rect(rect, rotation, surface_width, surface_height), width, height
        )
        if clipped is not None:
            rects.append(clipped)
    return rects


def _from_ltrb(record: RECT) -> Rect | None:
    width, height = record.right - record.left, record.bottom - record.top
    if width <= 0 or height <= 0:
        return None
    return Rect(record.left, record.top, width, height)


def _turns(rotation: int) -> int:
    turns = _QUARTER_TURNS.get(rotation)
    if turns is None:
        raise ValueError(f"not a DXGI_MODE_ROTATION: {rotation}")
    return turns


def _is_quarter_turned(rotation: int) -> bool:
    return _turns(rotation) in (-1, 1)
