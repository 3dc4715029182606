"""Screen capture on a real X server: our MIT-SHM segment, and the mss fallback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.x11.capture import ScreenCapture
from tests.support.x_desktop import XDesktop, wait_until

pytestmark = pytest.mark.x11

# 0xRRGGBB on the depth-24 TrueColor root: distinct bytes, so a swapped channel shows.
TEAL = 0x123456
TEAL_BGR = (0x56, 0x34, 0x12)
ORANGE = 0xF08010
ORANGE_BGR = (0x10, 0x80, 0xF0)
BOX = Rect(200, 150, 64, 48)


@pytest.fixture
def capture(x_desktop: XDesktop) -> Iterator[ScreenCapture]:
    shot = ScreenCapture(x_desktop.display)
    yield shot
    shot.close()


@contextmanager
def _solid_window(desk: XDesktop, rect: Rect, rgb: int) -> Iterator[None]:
    """A window the server fills with `rgb` when it is mapped, gone when this ends.

    Override-redirect, so the window manager neither moves nor frames it; closing the
    connection destroys it.
    """
    with desk.x_connection() as conn:
        screen = conn.screen()
        window = screen.root.create_window(
            rect.x,
            rect.y,
            rect.w,
            rect.h,
            0,
            screen.root_depth,
            background_pixel=rgb,
            override_redirect=True,
        )
        window.map()
        conn.sync()
        yield


def _bgr_at(pixels: Pixels, x: int, y: int) -> tuple[int, ...]:
    return tuple(int(v) for v in pixels[y, x, :3])


def _shows(capture: ScreenCapture, x: int, y: int, bgr: tuple[int, ...]) -> Pixels | None:
    pixels = capture.grab()
    return pixels if _bgr_at(pixels, x, y) == bgr else None


def test_shared_memory_is_used_on_a_local_display(capture: ScreenCapture) -> None:
    opened_before = capture.uses_shared_memory  # nothing opens before the first grab

    pixels = capture.grab()

    assert (opened_before, capture.uses_shared_memory) == (False, True)
    assert pixels.shape == (1080, 1920, 4)
    assert pixels.dtype == np.uint8
    assert pixels.flags.c_contiguous


def test_shared_memory_pixels_equal_the_mss_fallback(
    x_desktop: XDesktop, capture: ScreenCapture
) -> None:
    fallback = ScreenCapture(x_desktop.display, shared_memory=False)
    try:
        with (
            _solid_window(x_desktop, BOX, TEAL),
            _solid_window(x_desktop, Rect(1800, 1000, 120, 80), ORANGE),
        ):
            wait_until(lambda: _shows(capture, BOX.x, BOX.y, TEAL_BGR), message="the window")
            ours = capture.grab()[..., :3]
            theirs = fallback.grab()[..., :3]

            assert not fallback.uses_shared_memory
            assert theirs.shape == ours.shape
            assert np.array_equal(ours, theirs)
    finally:
        fallback.close()


def test_a_drawing_appears_where_it_was_drawn(x_desktop: XDesktop, capture: ScreenCapture) -> None:
    with _solid_window(x_desktop, BOX, TEAL):
        pixels = wait_until(
            lambda: _shows(capture, BOX.x, BOX.y, TEAL_BGR), message="the window to be drawn"
        )

        inside = pixels[BOX.y : BOX.y + BOX.h, BOX.x : BOX.x + BOX.w, :3]
        assert (inside == TEAL_BGR).all()
        # The pixels just outside each edge are the desktop's, not the window's.
        right, bottom = BOX.x + BOX.w, BOX.y + BOX.h
        for x, y in ((BOX.x - 1, BOX.y), (right, BOX.y), (BOX.x, BOX.y - 1), (BOX.x, bottom)):
            assert _bgr_at(pixels, x, y) != TEAL_BGR, (x, y)


def test_the_next_grab_overwrites_the_previous_view(
    x_desktop: XDesktop, capture: ScreenCapture
) -> None:
    before = capture.grab()
    assert _bgr_at(before, BOX.x, BOX.y) != ORANGE_BGR

    with _solid_window(x_desktop, BOX, ORANGE):
        after = wait_until(
            lambda: _shows(capture, BOX.x, BOX.y, ORANGE_BGR), message="the window to be drawn"
        )

    # The documented contract: both are views over the one segment, so the earlier array
    # now holds the new content; a caller that needs the old pixels must have copied them.
    assert np.shares_memory(before, after)
    assert _bgr_at(before, BOX.x, BOX.y) == ORANGE_BGR


def test_close_twice_then_grab_again(x_desktop: XDesktop, capture: ScreenCapture) -> None:
    capture.grab()

    capture.close()
    capture.close()
    opened_after_close = capture.uses_shared_memory

    with _solid_window(x_desktop, BOX, TEAL):
        pixels = wait_until(
            lambda: _shows(capture, BOX.x, BOX.y, TEAL_BGR), message="a grab after close"
        )
    assert (opened_after_close, capture.uses_shared_memory) == (False, True)
    assert pixels.shape == (1080, 1920, 4)
