"""Screen capture on a real X server: our MIT-SHM segment, and the mss fallback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.x11 import open_x11_desktop
from rigway.agent.backends.x11.capture import ScreenCapture, shm_attachments
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


def test_a_view_outlives_close_and_a_resize_detach(x_desktop: XDesktop) -> None:
    # The screen worker may still be encoding a view when close() runs at shutdown:
    # the segment must stay mapped until that view is gone (a fault would kill the
    # process, so this runs in a child).
    script = (
        "import sys\n"
        "from rigway.agent.backends.x11.capture import ScreenCapture\n"
        "capture = ScreenCapture(sys.argv[1])\n"
        "view = capture.grab()\n"
        "checksum = int(view[::7, ::7].sum())\n"
        "capture.close()\n"
        "assert int(view[::7, ::7].sum()) == checksum\n"
        "del view\n"
        "print('ok')\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script, x_desktop.display],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (child.returncode, child.stdout.strip()) == (0, "ok"), child.stderr


SHM_TABLE = (
    "       key      shmid perms      size  cpid  lpid nattch   uid   gid\n"
    "         0         41   600   8294400   100   101      2     0     0\n"
    "         0         42   600   8294400   100   100      1     0     0\n"
)


@pytest.mark.parametrize(("shmid", "expected"), [(41, 2), (42, 1), (43, None)])
def test_attachments_are_read_from_the_kernels_table(
    tmp_path: Path, shmid: int, expected: int | None
) -> None:
    table = tmp_path / "shm"
    table.write_text(SHM_TABLE)
    assert shm_attachments(shmid, table) == expected
    assert shm_attachments(shmid, tmp_path / "absent") is None


def test_damage_follows_the_screen_when_it_grows() -> None:
    # A desktop the agent first saw small: once it grows, damage beyond the old size
    # must still be reported (the strips of the next screenshot depend on it). Its own
    # server, since the shared one must keep its size.
    with XDesktop(1920, 1080) as desk:
        # Xvfb shrinks the screen, then xrandr fails to fit its one 1920x1080 output
        # into it and exits 1: the grab below checks the size instead.
        subprocess.run(["xrandr", "--fb", "1024x768"], env=desk.env, check=False)
        backend = open_x11_desktop(desk.display)
        try:
            assert backend.grab().shape[:2] == (768, 1024)
            backend.poll_damage()
            subprocess.run(["xrandr", "--fb", "1920x1080"], env=desk.env, check=True)
            assert backend.grab().shape[:2] == (1080, 1920)
            assert backend.poll_damage() == [Rect(0, 0, 1920, 1080)]  # a new baseline
            backend.grab()
            backend.poll_damage()

            far = Rect(1500, 900, 100, 60)  # outside the old 1024x768
            with _solid_window(desk, far, TEAL):
                wait_until(
                    lambda: _bgr_at(backend.grab(), far.x, far.y) == TEAL_BGR,
                    message="the window beyond the old size",
                )
                damage = backend.poll_damage()
        finally:
            backend.close()
    assert any(
        r.x <= far.x and r.y <= far.y and r.x + r.w >= far.x + far.w and r.y + r.h >= far.y + far.h
        for r in damage
    ), damage
