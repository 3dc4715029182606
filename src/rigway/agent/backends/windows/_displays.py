"""Binding for `displays.py`: `list_monitors`, over user32's EnumDisplayMonitors and
GetMonitorInfoW and shcore's GetDpiForMonitor.

Only reads, with the layouts and constants `displays.ABI` declares; the mapping into
capture pixels is `displays.to_displays`.
"""

from __future__ import annotations

import ctypes
import logging
import sys

from rigway.agent.backends.windows._ctypes_types import BOOL, HANDLE, RECT, UINT
from rigway.agent.backends.windows.displays import CONSTANTS, MONITORINFOEXW, MonitorRecord

assert sys.platform == "win32"

__all__ = ["Win32Displays"]

_log = logging.getLogger(__name__)

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_shcore = ctypes.WinDLL("shcore", use_last_error=True)

HMONITOR = HANDLE
HDC = HANDLE
LPARAM = ctypes.c_ssize_t
_MONITORENUMPROC = ctypes.WINFUNCTYPE(BOOL, HMONITOR, HDC, ctypes.POINTER(RECT), LPARAM)

_user32.EnumDisplayMonitors.argtypes = (HDC, ctypes.POINTER(RECT), _MONITORENUMPROC, LPARAM)
_user32.EnumDisplayMonitors.restype = BOOL
_user32.GetMonitorInfoW.argtypes = (HMONITOR, ctypes.POINTER(MONITORINFOEXW))
_user32.GetMonitorInfoW.restype = BOOL
_shcore.GetDpiForMonitor.argtypes = (
    HMONITOR,
    ctypes.c_int,
    ctypes.POINTER(UINT),
    ctypes.POINTER(UINT),
)
_shcore.GetDpiForMonitor.restype = ctypes.c_long  # HRESULT


def _effective_dpi(monitor: int) -> int:
    dpi_x, dpi_y = UINT(0), UINT(0)
    result = _shcore.GetDpiForMonitor(
        monitor, CONSTANTS["MDT_EFFECTIVE_DPI"], ctypes.byref(dpi_x), ctypes.byref(dpi_y)
    )
    return int(dpi_x.value) if result == 0 else 0


def _record(monitor: int) -> MonitorRecord | None:
    info = MONITORINFOEXW()
    info.cbSize = ctypes.sizeof(MONITORINFOEXW)
    if not _user32.GetMonitorInfoW(monitor, ctypes.byref(info)):
        return None
    rect = info.rcMonitor
    return MonitorRecord(
        left=int(rect.left),
        top=int(rect.top),
        right=int(rect.right),
        bottom=int(rect.bottom),
        dpi=_effective_dpi(monitor),
        primary=bool(info.dwFlags & CONSTANTS["MONITORINFOF_PRIMARY"]),
    )


class Win32Displays:
    """`DisplaysRole` on Windows: the monitors, read afresh on each call."""

    def monitors(self) -> list[MonitorRecord]:
        handles: list[int] = []

        def collect(monitor: int | None, _dc: int | None, _rect: object, _data: int) -> int:
            if monitor:
                handles.append(monitor)
            return 1  # go on

        callback = _MONITORENUMPROC(collect)
        if not _user32.EnumDisplayMonitors(None, None, callback, 0):
            _log.warning("EnumDisplayMonitors failed: %d", ctypes.get_last_error())
            return []
        return [record for handle in handles if (record := _record(handle)) is not None]
