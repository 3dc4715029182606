"""The binary interface of the GDI capture fallback: a top-down 32-bit DIB section, BitBlt,
and the monitor rectangle it copies.

Pure: importable and tested on Linux; checked against the mingw-w64 headers by the ABI
test like every other declaring module.
"""

from __future__ import annotations

import ctypes

from rigway.agent.backends.windows._ctypes_types import BYTE, DWORD, LONG, RECT, WORD
from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = ["ABI", "BITMAPINFO", "BITMAPINFOHEADER", "MONITORINFO", "RGBQUAD"]

# wingdi.h
SRCCOPY = 0x00CC0020
# Not used, on purpose: BitBlt with CAPTUREBLT makes the pointer flicker on every
# capture (https://github.com/BoboTiG/python-mss/issues/179). Declared so the ABI test
# pins the value any future use would take.
CAPTUREBLT = 0x40000000
BI_RGB = 0
DIB_RGB_COLORS = 0
# winuser.h
MONITOR_DEFAULTTOPRIMARY = 0x00000001
MONITORINFOF_PRIMARY = 0x00000001


class BITMAPINFOHEADER(ctypes.Structure):
    _fields_ = (
        ("biSize", DWORD),
        ("biWidth", LONG),
        ("biHeight", LONG),
        ("biPlanes", WORD),
        ("biBitCount", WORD),
        ("biCompression", DWORD),
        ("biSizeImage", DWORD),
        ("biXPelsPerMeter", LONG),
        ("biYPelsPerMeter", LONG),
        ("biClrUsed", DWORD),
        ("biClrImportant", DWORD),
    )


class RGBQUAD(ctypes.Structure):
    _fields_ = (("rgbBlue", BYTE), ("rgbGreen", BYTE), ("rgbRed", BYTE), ("rgbReserved", BYTE))


class BITMAPINFO(ctypes.Structure):
    _fields_ = (("bmiHeader", BITMAPINFOHEADER), ("bmiColors", RGBQUAD * 1))


class MONITORINFO(ctypes.Structure):
    _fields_ = (("cbSize", DWORD), ("rcMonitor", RECT), ("rcWork", RECT), ("dwFlags", DWORD))


ABI = AbiDeclarations(
    structs=(BITMAPINFOHEADER, RGBQUAD, BITMAPINFO, MONITORINFO),
    constants={
        "SRCCOPY": SRCCOPY,
        "CAPTUREBLT": CAPTUREBLT,
        "BI_RGB": BI_RGB,
        "DIB_RGB_COLORS": DIB_RGB_COLORS,
        "MONITOR_DEFAULTTOPRIMARY": MONITOR_DEFAULTTOPRIMARY,
        "MONITORINFOF_PRIMARY": MONITORINFOF_PRIMARY,
    },
    headers=("windows.h",),
)
