"""The x11 backend's displays: RandR's monitors of the Xvfb screen, in root pixels."""

from __future__ import annotations

from typing import Any

import pytest
import xcffib
import xcffib.randr

from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.displays import read_displays, scale_from_size
from tests.support.x_desktop import XDesktop

pytestmark = pytest.mark.x11


def _monitor_width_mm(display_name: str) -> tuple[int, int]:
    """(width px, width mm) of the screen's only monitor, as RandR reports it."""
    conn: Any = xcffib.Connection(display_name)  # type: ignore[no-untyped-call]
    try:
        root = conn.get_setup().roots[conn.pref_screen].root
        (monitor,) = conn(xcffib.randr.key).GetMonitors(root, True).reply().monitors
        return int(monitor.width), int(monitor.width_in_millimeters)
    finally:
        conn.disconnect()


def test_one_screen_lists_one_primary_display_of_the_screen_size(
    x11_backend: X11Desktop,
) -> None:
    (display,) = x11_backend.displays()

    assert (display.x, display.y) == (0, 0)
    assert (display.width, display.height) == x11_backend.native_size()
    assert display.primary is True


def test_scale_follows_the_monitor_size_randr_reports(
    x_desktop: XDesktop, x11_backend: X11Desktop
) -> None:
    width_px, width_mm = _monitor_width_mm(x_desktop.display)
    expected = round(width_px / (width_mm / 25.4) / 96, 2) if width_mm > 0 else 1.0

    (display,) = x11_backend.displays()

    assert display.scale == expected


def test_unreachable_display_reads_as_no_monitors() -> None:
    assert read_displays(":4093") == []


@pytest.mark.parametrize(
    ("width_px", "width_mm", "scale"),
    [(1920, 508, 1.0), (2880, 508, 1.5), (1920, 0, 1.0), (3840, 344, 2.95)],
)
def test_scale_from_size_is_dpi_over_96(width_px: int, width_mm: int, scale: float) -> None:
    assert scale_from_size(width_px, width_mm) == scale
