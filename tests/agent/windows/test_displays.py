"""Windows monitors into capture pixels (`displays.to_displays`), and the desktop's
`displays` over a fake monitor list."""

from __future__ import annotations

import pytest

from rigway.agent.backends.base import Display
from rigway.agent.backends.windows.displays import MonitorRecord, scale_from_dpi, to_displays
from rigway.agent.backends.windows.geometry import OutputPlacement
from tests.agent.conformance.windows_rig import WindowsFakeRig

# The captured output: 2560x1440 left of and above the primary.
LEFT_OUTPUT = OutputPlacement(left=-2560, top=-200, width=2560, height=1440)


def test_monitor_at_negative_origin_maps_to_the_capture_origin() -> None:
    records = [MonitorRecord(-2560, -200, 0, 1240, dpi=144, primary=False)]

    assert to_displays(records, LEFT_OUTPUT) == [Display(0, 0, 2560, 1440, 1.5, False)]


def test_dpi_144_is_scale_one_and_a_half() -> None:
    assert scale_from_dpi(144) == 1.5


@pytest.mark.parametrize(("dpi", "scale"), [(96, 1.0), (120, 1.25), (192, 2.0), (0, 1.0)])
def test_scale_is_dpi_over_96(dpi: int, scale: float) -> None:
    assert scale_from_dpi(dpi) == scale


def test_primary_flag_is_kept() -> None:
    placement = OutputPlacement(left=0, top=0, width=1920, height=1080)
    records = [MonitorRecord(0, 0, 1920, 1080, dpi=96, primary=True)]

    assert to_displays(records, placement) == [Display(0, 0, 1920, 1080, 1.0, True)]


def test_monitor_the_capture_does_not_show_is_left_out() -> None:
    records = [
        MonitorRecord(-2560, -200, 0, 1240, dpi=96, primary=False),
        MonitorRecord(0, 0, 1920, 1080, dpi=96, primary=True),
    ]

    assert [d.primary for d in to_displays(records, LEFT_OUTPUT)] == [False]


def test_monitor_straddling_the_capture_is_clipped_to_it() -> None:
    placement = OutputPlacement(left=0, top=0, width=3840, height=1080)
    records = [
        MonitorRecord(0, 0, 1920, 1080, dpi=96, primary=True),
        MonitorRecord(1920, -100, 4000, 1300, dpi=96, primary=False),
    ]

    assert to_displays(records, placement)[1] == Display(1920, 0, 1920, 1080, 1.0, False)


def test_no_monitor_in_the_capture_reads_as_one_covering_it() -> None:
    assert to_displays([], LEFT_OUTPUT) == [Display(0, 0, 2560, 1440, 1.0, True)]


def test_desktop_maps_its_monitors_through_the_output_placement() -> None:
    rig = WindowsFakeRig()
    try:
        assert rig.windows_desktop.displays() == [Display(0, 0, 1280, 800, 1.5, False)]
    finally:
        rig.close()
