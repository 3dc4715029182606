"""Binding for `toplevel.py`: `Win32WindowPort`, the `WindowPort` over user32 and
dwmapi, with the process primitives of `_jobs.py` for the guard.

Only calls, each wrapped once with its argument and result types, from the constants
`toplevel.ABI` declares; which windows are listed and whose owner may be killed is
decided in `toplevel.py` and `protect.py`.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable

from rigway.agent.backends.base import Rect

# As a module: its names exist only on Windows (after its own platform assert).
from rigway.agent.backends.windows import _jobs
from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE, HRESULT_T, INT, RECT
from rigway.agent.backends.windows.protect import GuardContext, ProcessInfo
from rigway.agent.backends.windows.toplevel import CONSTANTS, TopLevelWindow, TopLevelWindows

assert sys.platform == "win32"

__all__ = ["Win32WindowPort", "open_top_level_windows"]

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_dwmapi = ctypes.WinDLL("dwmapi", use_last_error=True)

HWND = HANDLE
LONG_PTR = ctypes.c_ssize_t
_CLASS_NAME_CHARS = 256  # the longest window class name Windows registers
# No kernel object tells another process that a window was destroyed (that takes a
# WinEvent hook and a message loop), so the wait re-checks IsWindow this often, waiting
# on the owners' process handles meanwhile: an owner that exits wakes it at once.
_RECHECK_S = 0.05

_user32.IsWindow.argtypes = (HWND,)
_user32.IsWindow.restype = BOOL
_user32.IsWindowVisible.argtypes = (HWND,)
_user32.IsWindowVisible.restype = BOOL
_user32.GetWindow.argtypes = (HWND, ctypes.c_uint32)
_user32.GetWindow.restype = HWND
_user32.GetClassNameW.argtypes = (HWND, ctypes.c_wchar_p, INT)
_user32.GetClassNameW.restype = INT
_user32.IsIconic.argtypes = (HWND,)
_user32.IsIconic.restype = BOOL
_user32.GetForegroundWindow.argtypes = ()
_user32.GetForegroundWindow.restype = HWND
_user32.GetWindowRect.argtypes = (HWND, ctypes.POINTER(RECT))
_user32.GetWindowRect.restype = BOOL
_dwmapi.DwmGetWindowAttribute.argtypes = (HWND, DWORD, ctypes.c_void_p, DWORD)
_dwmapi.DwmGetWindowAttribute.restype = HRESULT_T

# 64-bit user32 exports GetWindowLongPtrW; 32-bit only has GetWindowLongW (the same call).
try:
    _get_window_long = _user32.GetWindowLongPtrW
except AttributeError:
    _get_window_long = _user32.GetWindowLongW
_get_window_long.argtypes = (HWND, INT)
_get_window_long.restype = LONG_PTR


def is_window(hwnd: int) -> bool:
    return bool(_user32.IsWindow(hwnd))


def _is_cloaked(hwnd: int) -> bool:
    cloaked = DWORD(0)
    result: int = _dwmapi.DwmGetWindowAttribute(
        hwnd, CONSTANTS["DWMWA_CLOAKED"], ctypes.byref(cloaked), ctypes.sizeof(cloaked)
    )
    # Without composition (or for a window gone meanwhile) nothing is cloaked.
    return result == CONSTANTS["S_OK"] and cloaked.value != 0


def _bounds(hwnd: int) -> Rect | None:
    """The frame as drawn: DWM's extended frame bounds (physical pixels, without the
    invisible resize borders), else the window rect; None for a window gone."""
    rect = RECT()
    result: int = _dwmapi.DwmGetWindowAttribute(
        hwnd, CONSTANTS["DWMWA_EXTENDED_FRAME_BOUNDS"], ctypes.byref(rect), ctypes.sizeof(rect)
    )
    if result != CONSTANTS["S_OK"] and not _user32.GetWindowRect(hwnd, ctypes.byref(rect)):
        return None
    return Rect(rect.left, rect.top, rect.right - rect.left, rect.bottom - rect.top)


def _class_name(hwnd: int) -> str:
    buffer = ctypes.create_unicode_buffer(_CLASS_NAME_CHARS)
    length: int = _user32.GetClassNameW(hwnd, buffer, _CLASS_NAME_CHARS)
    return buffer.value[:length]


def _describe(hwnd: int, foreground: int | None) -> TopLevelWindow:
    owner: int | None = _user32.GetWindow(hwnd, CONSTANTS["GW_OWNER"])
    ex_style: int = _get_window_long(hwnd, CONSTANTS["GWL_EXSTYLE"])
    return TopLevelWindow(
        hwnd=hwnd,
        pid=_jobs.window_pid(hwnd),
        is_visible=bool(_user32.IsWindowVisible(hwnd)),
        owner_hwnd=0 if owner is None else owner,
        ex_style=ex_style & 0xFFFF_FFFF,
        is_cloaked=_is_cloaked(hwnd),
        class_name=_class_name(hwnd),
        bounds=_bounds(hwnd),
        is_minimised=bool(_user32.IsIconic(hwnd)),
        is_foreground=foreground is not None and hwnd == foreground,
    )


class Win32WindowPort:
    """`WindowPort` on Windows."""

    def top_level_windows(self) -> list[TopLevelWindow]:
        foreground: int | None = _user32.GetForegroundWindow()
        return [_describe(hwnd, foreground) for hwnd in _jobs.top_level_windows()]

    def post_close(self, hwnd: int) -> None:
        _jobs.post_close(hwnd)  # False only for a window gone meanwhile

    def is_window(self, hwnd: int) -> bool:
        return is_window(hwnd)

    def wait_windows_closed(self, hwnds: frozenset[int], timeout_s: float) -> frozenset[int]:
        deadline = time.monotonic() + timeout_s
        while True:
            still_open = frozenset(h for h in hwnds if is_window(h))
            remaining_s = deadline - time.monotonic()
            if not still_open or remaining_s <= 0:
                return still_open
            owners = frozenset(p for h in still_open if (p := _jobs.window_pid(h)) is not None)
            pause_s = min(remaining_s, _RECHECK_S)
            if owners:
                _jobs.wait_processes_exit(owners, pause_s)
            else:
                time.sleep(pause_s)

    def process_info(self, pid: int) -> ProcessInfo | None:
        return _jobs.process_info(pid)

    def terminate_pid(self, info: ProcessInfo) -> bool:
        try:
            return _jobs.terminate_pid(info)
        except OSError:
            return False


def open_top_level_windows(guard_context: Callable[[], GuardContext]) -> TopLevelWindows:
    """The windows role; `guard_context` is the app tracker's (`JobAppTracker.guard_context`)."""
    return TopLevelWindows(Win32WindowPort(), guard_context)
