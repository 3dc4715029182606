"""SendInput's normalised coordinates: every pixel of the virtual desktop is reached,
whichever of the two plausible rules Windows uses to turn them back into pixels."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rigway.agent.backends.windows.geometry import ABSOLUTE_MAX, VirtualDesk

# Widths of real desktops (single 1366, 1920, 2560, 3840 monitors; three 1920s).
COMMON_WIDTHS = (1366, 1920, 2560, 3840, 5760)


def pixel_by_rounding(dx: int, extent: int) -> int:
    """round(dx * (extent - 1) / 65535), halves up: the 0..65535 range laid end to end
    on the pixels' first to last."""
    return (2 * dx * (extent - 1) + ABSOLUTE_MAX) // (2 * ABSOLUTE_MAX)


def pixel_by_flooring(dx: int, extent: int) -> int:
    """floor(dx * extent / 65536): 65536 equal steps over the whole extent."""
    return dx * extent // (ABSOLUTE_MAX + 1)


def every_pixel_round_trips(extent: int) -> bool:
    desk = VirtualDesk(0, 0, extent, 1)
    for pixel in range(extent):
        dx, _ = desk.to_absolute(pixel, 0)
        if not 0 <= dx <= ABSOLUTE_MAX:
            return False
        if pixel_by_rounding(dx, extent) != pixel or pixel_by_flooring(dx, extent) != pixel:
            return False
    return True


@given(st.integers(1, 8000))
def test_every_pixel_round_trips_under_both_models(extent: int) -> None:
    assert every_pixel_round_trips(extent)


@pytest.mark.parametrize("extent", COMMON_WIDTHS)
def test_every_pixel_of_common_widths_round_trips_under_both_models(extent: int) -> None:
    assert every_pixel_round_trips(extent)


@given(st.integers(-4000, 4000), st.integers(1, 8000))
def test_from_absolute_is_the_flooring_model(offset: int, extent: int) -> None:
    desk = VirtualDesk(-1920, 0, extent, 1)
    pixel = -1920 + min(max(offset, 0), extent - 1)
    dx, _ = desk.to_absolute(pixel, 0)
    assert desk.from_absolute(dx, 0) == (-1920 + pixel_by_flooring(dx, extent), 0)


def test_points_outside_the_desktop_are_clamped_to_its_edges() -> None:
    desk = VirtualDesk(-1920, -200, 3840, 1280)
    assert desk.from_absolute(*desk.to_absolute(-5000, -5000)) == (-1920, -200)
    assert desk.from_absolute(*desk.to_absolute(9000, 9000)) == (1919, 1079)
