"""Binding for `desktop_state.py`: `Win32StatePort`, the `StatePort` over user32,
wtsapi32 and kernel32.

Only reads, each wrapped once with its argument and result types, from the layouts and
constants `desktop_state.ABI` declares; what they mean is decided by
`desktop_state.classify`.
"""

from __future__ import annotations

import ctypes
import os
import sys

from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE
from rigway.agent.backends.windows.desktop_state import (
    CONSTANTS,
    SessionInfo,
    WindowsDesktopState,
    parse_session_info,
)

assert sys.platform == "win32"

__all__ = ["Win32StatePort", "open_desktop_state"]

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_wtsapi32 = ctypes.WinDLL("wtsapi32", use_last_error=True)

HDESK = HANDLE
_NAME_BYTES = 256 * 2  # desktop names are short; a longer one is read on a second try

_user32.OpenInputDesktop.argtypes = (DWORD, BOOL, DWORD)
_user32.OpenInputDesktop.restype = HDESK
_user32.GetUserObjectInformationW.argtypes = (
    HANDLE,
    ctypes.c_int,
    ctypes.c_void_p,
    DWORD,
    ctypes.POINTER(DWORD),
)
_user32.GetUserObjectInformationW.restype = BOOL
_user32.CloseDesktop.argtypes = (HDESK,)
_user32.CloseDesktop.restype = BOOL
_wtsapi32.WTSQuerySessionInformationW.argtypes = (
    HANDLE,
    DWORD,
    ctypes.c_int,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(DWORD),
)
_wtsapi32.WTSQuerySessionInformationW.restype = BOOL
_wtsapi32.WTSFreeMemory.argtypes = (ctypes.c_void_p,)
_wtsapi32.WTSFreeMemory.restype = None
_kernel32.ProcessIdToSessionId.argtypes = (DWORD, ctypes.POINTER(DWORD))
_kernel32.ProcessIdToSessionId.restype = BOOL
_kernel32.WTSGetActiveConsoleSessionId.argtypes = ()
_kernel32.WTSGetActiveConsoleSessionId.restype = DWORD


def _object_name(handle: int) -> str | None:
    size = _NAME_BYTES
    for _attempt in range(2):
        buffer = ctypes.create_string_buffer(size)
        needed = DWORD(0)
        name_index = CONSTANTS["UOI_NAME"]
        if _user32.GetUserObjectInformationW(
            handle, name_index, buffer, size, ctypes.byref(needed)
        ):
            text = buffer.raw[: needed.value].decode("utf-16-le", errors="replace")
            return text.split("\0", 1)[0]
        if ctypes.get_last_error() != CONSTANTS["ERROR_INSUFFICIENT_BUFFER"]:
            return None
        size = int(needed.value)
    return None


class Win32StatePort:
    """`StatePort` on Windows."""

    def input_desktop_name(self) -> tuple[str | None, int | None]:
        desktop: int | None = _user32.OpenInputDesktop(0, False, CONSTANTS["DESKTOP_READOBJECTS"])
        if desktop is None:
            # ERROR_ACCESS_DENIED while the secure desktop is the input desktop.
            return None, ctypes.get_last_error()
        try:
            name = _object_name(desktop)
            return (name, None) if name is not None else (None, ctypes.get_last_error())
        finally:
            _user32.CloseDesktop(desktop)

    def session_info(self) -> SessionInfo | None:
        buffer = ctypes.c_void_p()
        size = DWORD(0)
        ok = _wtsapi32.WTSQuerySessionInformationW(
            None,  # WTS_CURRENT_SERVER_HANDLE
            CONSTANTS["WTS_CURRENT_SESSION"],
            CONSTANTS["WTSSessionInfoEx"],
            ctypes.byref(buffer),
            ctypes.byref(size),
        )
        if not ok or buffer.value is None:
            return None
        try:
            return parse_session_info(ctypes.string_at(buffer.value, size.value))
        finally:
            _wtsapi32.WTSFreeMemory(buffer)

    def own_session_id(self) -> int | None:
        session = DWORD(0)
        if not _kernel32.ProcessIdToSessionId(os.getpid(), ctypes.byref(session)):
            return None
        return int(session.value)

    def active_console_session_id(self) -> int | None:
        console: int = _kernel32.WTSGetActiveConsoleSessionId()
        return console

    def os_version(self) -> tuple[int, int] | None:
        # Python's own manifest declares Windows 10 and 11, so this is not the
        # compatibility lie GetVersionEx tells unmanifested programs.
        version = sys.getwindowsversion()
        return version.major, version.minor


def open_desktop_state() -> WindowsDesktopState:
    """The state role. The tray's hidden window reports display power to it
    (`note_display_power`)."""
    return WindowsDesktopState(Win32StatePort())
