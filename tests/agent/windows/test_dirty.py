"""Move/dirty buffers parsed, rotated to the desktop and clipped."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rigway.agent.backends.base import Rect
from rigway.agent.backends.windows.dirty import (
    DIRTY_RECT_BYTES,
    MOVE_RECT_BYTES,
    MoveRect,
    clip_rect,
    desktop_size,
    frame_damage,
    move_damage,
    parse_dirty_rects,
    parse_move_rects,
    rotate_pixels,
    rotate_rect,
    surface_size,
)
from rigway.agent.backends.windows.dxgi_types import (
    DXGI_MODE_ROTATION_IDENTITY,
    DXGI_MODE_ROTATION_ROTATE90,
    DXGI_MODE_ROTATION_ROTATE180,
    DXGI_MODE_ROTATION_ROTATE270,
)

ROTATIONS = (
    DXGI_MODE_ROTATION_IDENTITY,
    DXGI_MODE_ROTATION_ROTATE90,
    DXGI_MODE_ROTATION_ROTATE180,
    DXGI_MODE_ROTATION_ROTATE270,
)


def ltrb(left: int, top: int, right: int, bottom: int) -> bytes:
    return struct.pack("<4i", left, top, right, bottom)


def move(source_x: int, source_y: int, left: int, top: int, right: int, bottom: int) -> bytes:
    return struct.pack("<2i", source_x, source_y) + ltrb(left, top, right, bottom)


def test_record_sizes_are_windows_sizes() -> None:
    assert (MOVE_RECT_BYTES, DIRTY_RECT_BYTES) == (24, 16)


def test_dirty_buffer_byte_count_bounds_parse() -> None:
    buffer = ltrb(1, 2, 11, 22) + ltrb(5, 5, 6, 6) + b"\xff" * 16
    assert parse_dirty_rects(buffer, 32) == [Rect(1, 2, 10, 20), Rect(5, 5, 1, 1)]


def test_dirty_buffer_empty_rect_dropped() -> None:
    assert parse_dirty_rects(ltrb(4, 4, 4, 9) + ltrb(3, 3, 1, 5), 32) == []


def test_dirty_buffer_trailing_partial_record_ignored() -> None:
    buffer = ltrb(0, 0, 2, 2) + b"\x01" * 7
    assert parse_dirty_rects(buffer, len(buffer)) == [Rect(0, 0, 2, 2)]


def test_move_buffer_source_takes_destination_size() -> None:
    moves = parse_move_rects(move(100, 50, 0, 0, 30, 40), MOVE_RECT_BYTES)
    assert moves == [MoveRect(source=Rect(100, 50, 30, 40), destination=Rect(0, 0, 30, 40))]


def test_move_damage_reports_destination_and_source() -> None:
    moves = [MoveRect(source=Rect(10, 10, 5, 5), destination=Rect(0, 0, 5, 5))]
    assert move_damage(moves) == [Rect(0, 0, 5, 5), Rect(10, 10, 5, 5)]


def test_frame_damage_rotated_90_maps_to_desktop() -> None:
    # Surface 100x200 shows a 200x100 desktop; the surface's top-left 10x20 corner is
    # the desktop's top-right 20x10 corner after a clockwise turn.
    rects = frame_damage(
        b"",
        ltrb(0, 0, 10, 20),
        rotation=DXGI_MODE_ROTATION_ROTATE90,
        surface_width=100,
        surface_height=200,
    )
    assert rects == [Rect(180, 0, 20, 10)]


def test_frame_damage_clips_to_desktop() -> None:
    rects = frame_damage(
        move(-5, 0, 90, 90, 120, 95),
        b"",
        rotation=DXGI_MODE_ROTATION_IDENTITY,
        surface_width=100,
        surface_height=100,
    )
    assert rects == [Rect(90, 90, 10, 5), Rect(0, 0, 25, 5)]


def test_surface_size_swaps_at_quarter_turns() -> None:
    assert surface_size(1920, 1080, DXGI_MODE_ROTATION_ROTATE270) == (1080, 1920)
    assert surface_size(1920, 1080, DXGI_MODE_ROTATION_ROTATE180) == (1920, 1080)
    assert desktop_size(1080, 1920, DXGI_MODE_ROTATION_ROTATE90) == (1920, 1080)


sizes = st.integers(min_value=1, max_value=12)


@st.composite
def surface_and_pixel_rect(draw: st.DrawFn) -> tuple[int, int, Rect, int, int]:
    width, height = draw(sizes), draw(sizes)
    x, y = draw(st.integers(0, width - 1)), draw(st.integers(0, height - 1))
    w, h = draw(st.integers(1, width - x)), draw(st.integers(1, height - y))
    px, py = draw(st.integers(x, x + w - 1)), draw(st.integers(y, y + h - 1))
    return width, height, Rect(x, y, w, h), px, py


@given(surface_and_pixel_rect(), st.sampled_from(ROTATIONS))
def test_pixel_inside_rect_lands_inside_rotated_rect(
    case: tuple[int, int, Rect, int, int], rotation: int
) -> None:
    width, height, rect, px, py = case
    surface = np.zeros((height, width, 4), dtype=np.uint8)
    surface[py, px] = 255
    desktop = rotate_pixels(surface, rotation)
    assert desktop.shape[:2][::-1] == desktop_size(width, height, rotation)
    (ys, xs) = np.nonzero(desktop[:, :, 0])
    marked_x, marked_y = int(xs[0]), int(ys[0])
    rotated = rotate_rect(rect, rotation, width, height)
    assert rotated.x <= marked_x < rotated.x + rotated.w
    assert rotated.y <= marked_y < rotated.y + rotated.h


@given(surface_and_pixel_rect(), st.sampled_from(ROTATIONS))
def test_rotated_rect_stays_on_desktop(
    case: tuple[int, int, Rect, int, int], rotation: int
) -> None:
    width, height, rect, _, _ = case
    desktop_width, desktop_height = desktop_size(width, height, rotation)
    assert clip_rect(rotate_rect(rect, rotation, width, height), desktop_width, desktop_height) == (
        rotate_rect(rect, rotation, width, height)
    )


@given(surface_and_pixel_rect())
def test_four_quarter_turns_are_identity(case: tuple[int, int, Rect, int, int]) -> None:
    width, height, rect, _, _ = case
    turned = rect
    for _ in range(4):
        turned = rotate_rect(turned, DXGI_MODE_ROTATION_ROTATE90, width, height)
        width, height = height, width
    assert turned == rect


@given(
    st.integers(-50, 50),
    st.integers(-50, 50),
    st.integers(0, 60),
    st.integers(0, 60),
    sizes,
    sizes,
)
def test_clip_stays_within_bounds(x: int, y: int, w: int, h: int, width: int, height: int) -> None:
    clipped = clip_rect(Rect(x, y, w, h), width, height)
    if clipped is None:
        return
    assert 0 <= clipped.x < clipped.x + clipped.w <= width
    assert 0 <= clipped.y < clipped.y + clipped.h <= height
    assert x <= clipped.x
    assert clipped.x + clipped.w <= x + w


def test_unknown_rotation_refused() -> None:
    with pytest.raises(ValueError, match="DXGI_MODE_ROTATION"):
        rotate_rect(Rect(0, 0, 1, 1), 7, 4, 4)
