"""Binding for `capture.py`: `GdiCapture`, the `GdiPort` over user32 and gdi32.

BitBlt of one monitor into a top-down 32-bit DIB section, the fallback when Desktop
Duplication cannot be had. SRCCOPY without CAPTUREBLT: CAPTUREBLT adds layered windows
but makes the pointer flicker on every capture
(https://github.com/BoboTiG/python-mss/issues/179). The fourth byte of each pixel is
whatever BitBlt leaves there (0), not an opacity.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from rigway.agent.backends.windows._ctypes_types import (
    BOOL,
    DWORD,
    HANDLE,
    INT,
    POINT,
    UINT,
)
from rigway.agent.backends.windows.capture_ports import GdiFrame
from rigway.agent.backends.windows.gdi_types import (
    BI_RGB,
    BITMAPINFO,
    DIB_RGB_COLORS,
    MONITOR_DEFAULTTOPRIMARY,
    MONITORINFO,
    SRCCOPY,
)
from rigway.agent.backends.windows.geometry import OutputPlacement

assert sys.platform == "win32"

__all__ = ["GdiCapture"]

HDC = HANDLE
HWND = HANDLE
HBITMAP = HANDLE
HGDIOBJ = HANDLE
HMONITOR = HANDLE

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_gdi32 = ctypes.WinDLL("gdi32", use_last_error=True)

_GetDC = _user32.GetDC
_GetDC.argtypes = (HWND,)
_GetDC.restype = HDC
_ReleaseDC = _user32.ReleaseDC
_ReleaseDC.argtypes = (HWND, HDC)
_ReleaseDC.restype = INT
_MonitorFromPoint = _user32.MonitorFromPoint
_MonitorFromPoint.argtypes = (POINT, DWORD)
_MonitorFromPoint.restype = HMONITOR
_GetMonitorInfoW = _user32.GetMonitorInfoW
_GetMonitorInfoW.argtypes = (HMONITOR, ctypes.POINTER(MONITORINFO))
_GetMonitorInfoW.restype = BOOL

_CreateCompatibleDC = _gdi32.CreateCompatibleDC
_CreateCompatibleDC.argtypes = (HDC,)
_CreateCompatibleDC.restype = HDC
_DeleteDC = _gdi32.DeleteDC
_DeleteDC.argtypes = (HDC,)
_DeleteDC.restype = BOOL
_CreateDIBSection = _gdi32.CreateDIBSection
_CreateDIBSection.argtypes = (
    HDC,
    ctypes.POINTER(BITMAPINFO),
    UINT,
    ctypes.POINTER(ctypes.c_void_p),
    HANDLE,
    DWORD,
)
_CreateDIBSection.restype = HBITMAP
_SelectObject = _gdi32.SelectObject
_SelectObject.argtypes = (HDC, HGDIOBJ)
_SelectObject.restype = HGDIOBJ
_DeleteObject = _gdi32.DeleteObject
_DeleteObject.argtypes = (HGDIOBJ,)
_DeleteObject.restype = BOOL
_BitBlt = _gdi32.BitBlt
_BitBlt.argtypes = (HDC, INT, INT, INT, INT, HDC, INT, INT, DWORD)
_BitBlt.restype = BOOL
_GdiFlush = _gdi32.GdiFlush
_GdiFlush.argtypes = ()
_GdiFlush.restype = BOOL


def _last_error(call: str) -> OSError:
    error = ctypes.WinError(ctypes.get_last_error())
    return OSError(error.errno, f"{call}: {error.strerror}")


def monitor_placement(monitor: int | None) -> OutputPlacement:
    """The monitor's rectangle on the virtual desktop; the primary monitor when
    `monitor` is None or no longer exists (unplugged)."""
    info = MONITORINFO()
    info.cbSize = ctypes.sizeof(MONITORINFO)
    if monitor is None or not _GetMonitorInfoW(monitor, ctypes.byref(info)):
        primary = _MonitorFromPoint(POINT(0, 0), MONITOR_DEFAULTTOPRIMARY)
        if not _GetMonitorInfoW(primary, ctypes.byref(info)):
            raise _last_error("GetMonitorInfoW")
    rect = info.rcMonitor
    return OutputPlacement(rect.left, rect.top, rect.right - rect.left, rect.bottom - rect.top)


class _DibSection:
    """A memory DC with a top-down 32-bit DIB selected into it."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self._dc: int | None = _CreateCompatibleDC(None)
        if not self._dc:
            raise _last_error("CreateCompatibleDC")
        info = BITMAPINFO()
        header = info.bmiHeader
        header.biSize = ctypes.sizeof(header)
        header.biWidth = width
        header.biHeight = -height  # negative: rows top-down, as the capture hands them out
        header.biPlanes = 1
        header.biBitCount = 32
        header.biCompression = BI_RGB
        bits = ctypes.c_void_p()
        self._bitmap: int | None = _CreateDIBSection(
            self._dc, ctypes.byref(info), DIB_RGB_COLORS, ctypes.byref(bits), None, 0
        )
        if not self._bitmap or not bits.value:
            error = _last_error("CreateDIBSection")
            _DeleteDC(self._dc)
            raise error
        self._previous: int | None = _SelectObject(self._dc, self._bitmap)
        memory = (ctypes.c_uint8 * (width * height * 4)).from_address(bits.value)
        self.pixels = np.ctypeslib.as_array(memory).reshape(height, width, 4)

    @property
    def dc(self) -> int | None:
        return self._dc

    def close(self) -> None:
        _SelectObject(self._dc, self._previous)
        _DeleteObject(self._bitmap)
        _DeleteDC(self._dc)


class GdiCapture:
    """`GdiPort` for one monitor (an HMONITOR; None: the primary)."""

    def __init__(self, monitor: int | None = None) -> None:
        self._monitor = monitor
        self._dib: _DibSection | None = None
        self._lock = threading.Lock()

    def locate(self) -> OutputPlacement:
        return monitor_placement(self._monitor)

    def capture(self) -> GdiFrame:
        placement = self.locate()
        with self._lock:
            dib = self._dib_for(placement.width, placement.height)
            screen = _GetDC(None)
            if not screen:
                raise _last_error("GetDC")
            try:
                copied = _BitBlt(
                    dib.dc,
                    0,
                    0,
                    placement.width,
                    placement.height,
                    screen,
                    placement.left,
                    placement.top,
                    SRCCOPY,
                )
            finally:
                _ReleaseDC(None, screen)
            if not copied:
                # The secure desktop and a disconnected session refuse the copy.
                raise _last_error("BitBlt")
            _GdiFlush()
            return GdiFrame(placement, dib.pixels)

    def close(self) -> None:
        with self._lock:
            dib, self._dib = self._dib, None
        if dib is not None:
            dib.close()

    def _dib_for(self, width: int, height: int) -> _DibSection:
        dib = self._dib
        if dib is not None and (dib.width, dib.height) == (width, height):
            return dib
        # Callers copy each frame before the next capture, so the old DIB has no readers.
        self._dib = None
        if dib is not None:
            dib.close()
        self._dib = _DibSection(width, height)
        return self._dib
