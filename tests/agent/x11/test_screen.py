"""Capture and damage on a real X server."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, Desktop, Rect
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, wait_until

pytestmark = pytest.mark.x11

QUIET_S = 0.5


def _covered(rects: list[Rect], height: int, width: int) -> np.ndarray:
    mask = np.zeros((height, width), dtype=bool)
    for r in rects:
        mask[r.y : r.y + r.h, r.x : r.x + r.w] = True
    return mask


def test_backend_satisfies_the_desktop_protocol(x11_backend: X11Desktop) -> None:
    assert isinstance(x11_backend, Desktop)


def test_grab_is_bgra_at_native_size(x11_backend: X11Desktop) -> None:
    pixels = x11_backend.grab()

    assert x11_backend.native_size() == (1920, 1080)
    assert pixels.shape == (1080, 1920, 4)
    assert pixels.dtype == np.uint8
    assert pixels.flags.c_contiguous
    assert (x11_backend.capture_mode, x11_backend.has_damage) == ("x11-damage", True)


def test_damage_after_typing_covers_every_changed_pixel(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch(["zenity", "--entry", "--title=Damage", "--text=Type"])
    window_titled("Damage")
    x11_backend.poll_damage()
    before = x11_backend.grab().copy()  # a grab is a view the next grab overwrites

    x11_backend.type_text("damage me")

    after = wait_until(
        lambda: (lambda now: now if not np.array_equal(now, before) else None)(x11_backend.grab()),
        message="the typed text to be drawn",
    )
    rects = x11_backend.poll_damage()
    changed = (before != after).any(axis=2)
    assert rects != []
    # Everything drawn after `before` was grabbed is in the damage taken after `after`.
    assert not (changed & ~_covered(rects, 1080, 1920)).any()
    assert all(r.x >= 0 and r.y >= 0 and r.x + r.w <= 1920 and r.y + r.h <= 1080 for r in rects)


def test_damage_is_empty_while_nothing_changes(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    # zenity --info has no text cursor and no animation (unlike the widget factory).
    apps.launch(["zenity", "--info", "--title=Idle", "--text=Nothing moves here"])
    window_titled("Idle")
    wait_until(lambda: x11_backend.poll_damage() == [], message="the desktop to settle")
    # Time passing is the point: a still desktop reports no damage however long it stays.
    time.sleep(QUIET_S)

    assert x11_backend.poll_damage() == []


def test_first_poll_without_a_grab_reports_the_whole_desktop(second_backend: X11Desktop) -> None:
    assert second_backend.poll_damage() == [Rect(0, 0, 1920, 1080)]
