"""The monitors of a Windows desktop, in the captured output's pixels: a pure mapping.

The binding (`_displays.py`) lists each monitor as Windows reports it: its rectangle on
the virtual screen (GetMonitorInfoW's rcMonitor, physical pixels under per-monitor DPI
awareness), its effective DPI (shcore's GetDpiForMonitor, MDT_EFFECTIVE_DPI: what the
user's scale setting makes of it) and the MONITORINFOF_PRIMARY flag. `to_displays` moves
each rectangle into capture pixels through the output's `OutputPlacement` and keeps what
the capture shows, clipped to it: the capture is one output, and a monitor it does not
show has no place in its pixels. When nothing is left (the binding failed, or the
placement moved under it), one display covers the capture.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from rigway.agent.backends.base import Display
from rigway.agent.backends.windows._ctypes_types import DWORD, RECT
from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.geometry import OutputPlacement

__all__ = [
    "ABI",
    "CCHDEVICENAME",
    "CONSTANTS",
    "MONITORINFOEXW",
    "MonitorRecord",
    "scale_from_dpi",
    "to_displays",
    "whole_capture",
]

CCHDEVICENAME: Final = 32
_BASE_DPI: Final = 96.0

CONSTANTS: Final = {
    "MONITORINFOF_PRIMARY": 0x00000001,
    "MDT_EFFECTIVE_DPI": 0,
    "CCHDEVICENAME": CCHDEVICENAME,
}


class MONITORINFOEXW(ctypes.Structure):
    _fields_ = (
        ("cbSize", DWORD),
        ("rcMonitor", RECT),
        ("rcWork", RECT),
        ("dwFlags", DWORD),
        # WCHAR: two bytes on Windows, where c_wchar is; not on Linux, where the ABI test runs.
        ("szDevice", ctypes.c_uint16 * CCHDEVICENAME),
    )


ABI = AbiDeclarations(
    structs=(MONITORINFOEXW,),
    constants=CONSTANTS,
    headers=("windows.h", "shellscalingapi.h"),
)


@dataclass(frozen=True, slots=True)
class MonitorRecord:
    """One monitor as Windows reports it: virtual-screen edges (right and bottom
    exclusive), effective DPI (0 when unknown) and the primary flag."""

    left: int
    top: int
    right: int
    bottom: int
    dpi: int
    primary: bool


def scale_from_dpi(dpi: int) -> float:
    """The DPI scale (1.0 = 96 dpi); 1.0 when the DPI is unknown."""
    return round(dpi / _BASE_DPI, 2) if dpi > 0 else 1.0


def whole_capture(placement: OutputPlacement) -> Display:
    return Display(0, 0, placement.width, placement.height, scale=1.0, primary=True)


def to_displays(records: Sequence[MonitorRecord], placement: OutputPlacement) -> list[Display]:
    """The monitors the capture shows, in capture pixels, clipped to the capture."""
    found: list[Display] = []
    for record in records:
        left, top = placement.from_screen(record.left, record.top)
        right, bottom = placement.from_screen(record.right, record.bottom)
        left, top = max(left, 0), max(top, 0)
        right, bottom = min(right, placement.width), min(bottom, placement.height)
        if right <= left or bottom <= top:
            continue
        scale = scale_from_dpi(record.dpi)
        found.append(Display(left, top, right - left, bottom - top, scale, record.primary))
    return found or [whole_capture(placement)]
