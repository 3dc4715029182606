"""Binding for `input.py`: `SendInputPort`, the `InputPort` over user32, kernel32 and
advapi32.

Only calls, each wrapped once with its argument and result types; what the records
hold and when input is refused is decided in `input.py`, `keymap.py` and `sendinput.py`.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence

from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE, INT, POINT, UINT
from rigway.agent.backends.windows.errors import InputBlockedError
from rigway.agent.backends.windows.geometry import VirtualDesk
from rigway.agent.backends.windows.sendinput import (
    INPUT,
    MAPVK_VK_TO_VSC_EX,
    PROCESS_QUERY_LIMITED_INFORMATION,
    SECURITY_MANDATORY_UNTRUSTED_RID,
    SM_CXVIRTUALSCREEN,
    SM_CYVIRTUALSCREEN,
    SM_XVIRTUALSCREEN,
    SM_YVIRTUALSCREEN,
    TOKEN_MANDATORY_LABEL,
    TOKEN_QUERY,
    TokenIntegrityLevel,
)

assert sys.platform == "win32"

__all__ = ["SendInputPort"]

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_advapi32 = ctypes.WinDLL("advapi32", use_last_error=True)

HWND = HANDLE
HKL = HANDLE

_SendInput = _user32.SendInput
_SendInput.argtypes = (UINT, ctypes.POINTER(INPUT), INT)
_SendInput.restype = UINT
_MapVirtualKeyExW = _user32.MapVirtualKeyExW
_MapVirtualKeyExW.argtypes = (UINT, UINT, HKL)
_MapVirtualKeyExW.restype = UINT
_VkKeyScanExW = _user32.VkKeyScanExW
_VkKeyScanExW.argtypes = (ctypes.c_wchar, HKL)
_VkKeyScanExW.restype = ctypes.c_int16
_GetKeyboardLayout = _user32.GetKeyboardLayout
_GetKeyboardLayout.argtypes = (DWORD,)
_GetKeyboardLayout.restype = HKL
_GetSystemMetrics = _user32.GetSystemMetrics
_GetSystemMetrics.argtypes = (INT,)
_GetSystemMetrics.restype = INT
_GetForegroundWindow = _user32.GetForegroundWindow
_GetForegroundWindow.argtypes = ()
_GetForegroundWindow.restype = HWND
_WindowFromPoint = _user32.WindowFromPoint
_WindowFromPoint.argtypes = (POINT,)
_WindowFromPoint.restype = HWND
_GetWindowThreadProcessId = _user32.GetWindowThreadProcessId
_GetWindowThreadProcessId.argtypes = (HWND, ctypes.POINTER(DWORD))
_GetWindowThreadProcessId.restype = DWORD
_GetCursorPos = _user32.GetCursorPos
_GetCursorPos.argtypes = (ctypes.POINTER(POINT),)
_GetCursorPos.restype = BOOL

_GetCurrentProcess = _kernel32.GetCurrentProcess
_GetCurrentProcess.argtypes = ()
_GetCurrentProcess.restype = HANDLE
_GetCurrentProcessId = _kernel32.GetCurrentProcessId
_GetCurrentProcessId.argtypes = ()
_GetCurrentProcessId.restype = DWORD
_OpenProcess = _kernel32.OpenProcess
_OpenProcess.argtypes = (DWORD, BOOL, DWORD)
_OpenProcess.restype = HANDLE
_CloseHandle = _kernel32.CloseHandle
_CloseHandle.argtypes = (HANDLE,)
_CloseHandle.restype = BOOL

_OpenProcessToken = _advapi32.OpenProcessToken
_OpenProcessToken.argtypes = (HANDLE, DWORD, ctypes.POINTER(HANDLE))
_OpenProcessToken.restype = BOOL
_GetTokenInformation = _advapi32.GetTokenInformation
_GetTokenInformation.argtypes = (HANDLE, INT, ctypes.c_void_p, DWORD, ctypes.POINTER(DWORD))
_GetTokenInformation.restype = BOOL
_GetSidSubAuthorityCount = _advapi32.GetSidSubAuthorityCount
_GetSidSubAuthorityCount.argtypes = (ctypes.c_void_p,)
_GetSidSubAuthorityCount.restype = ctypes.POINTER(ctypes.c_uint8)
_GetSidSubAuthority = _advapi32.GetSidSubAuthority
_GetSidSubAuthority.argtypes = (ctypes.c_void_p, DWORD)
_GetSidSubAuthority.restype = ctypes.POINTER(DWORD)


def _window_thread_and_process(hwnd: int | None) -> tuple[int, int]:
    """(thread id, process id) of a window; (0, 0) when it is gone."""
    pid = DWORD()
    thread_id = int(_GetWindowThreadProcessId(hwnd, ctypes.byref(pid)))
    return thread_id, pid.value


def _token_integrity(process: int | None) -> int | None:
    """The integrity RID of a process handle's token; None when it cannot be read."""
    token = HANDLE()
    if not _OpenProcessToken(process, TOKEN_QUERY, ctypes.byref(token)):
        return None
    try:
        needed = DWORD()
        # The first call only sizes the buffer (it fails with ERROR_INSUFFICIENT_BUFFER).
        _GetTokenInformation(token, TokenIntegrityLevel, None, 0, ctypes.byref(needed))
        if needed.value < ctypes.sizeof(TOKEN_MANDATORY_LABEL):
            return None
        buffer = ctypes.create_string_buffer(needed.value)
        if not _GetTokenInformation(
            token, TokenIntegrityLevel, buffer, needed.value, ctypes.byref(needed)
        ):
            return None
        sid = TOKEN_MANDATORY_LABEL.from_buffer(buffer).Label.Sid
        count = int(_GetSidSubAuthorityCount(sid).contents.value)
        if count == 0:
            return None
        rid: int = _GetSidSubAuthority(sid, count - 1).contents.value
        return rid
    finally:
        _CloseHandle(token)


def _process_integrity(pid: int) -> int | None:
    # PROCESS_QUERY_LIMITED_INFORMATION is granted across integrity levels; opening
    # an elevated process's token for TOKEN_QUERY is what a medium process is denied.
    process = _OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not process:
        return None
    try:
        return _token_integrity(process)
    finally:
        _CloseHandle(process)


class SendInputPort:
    """`input.InputPort` on Windows. Used from the input thread only."""

    def __init__(self) -> None:
        self._last_error = 0
        self._own_pid = int(_GetCurrentProcessId())
        self._own_integrity: int | None = None

    def send(self, records: Sequence[INPUT]) -> int:
        if len(records) == 0:
            return 0
        array = (INPUT * len(records))(*records)
        inserted = int(_SendInput(len(records), array, ctypes.sizeof(INPUT)))
        self._last_error = ctypes.get_last_error() if inserted != len(records) else 0
        return inserted

    def last_error(self) -> int:
        return self._last_error

    def virtual_desk(self) -> VirtualDesk:
        return VirtualDesk(
            x=int(_GetSystemMetrics(SM_XVIRTUALSCREEN)),
            y=int(_GetSystemMetrics(SM_YVIRTUALSCREEN)),
            width=int(_GetSystemMetrics(SM_CXVIRTUALSCREEN)),
            height=int(_GetSystemMetrics(SM_CYVIRTUALSCREEN)),
        )

    def _foreground_layout(self) -> int | None:
        # The layout is per thread: the foreground window's, not this agent thread's.
        thread_id, _ = _window_thread_and_process(_GetForegroundWindow())
        layout: int | None = _GetKeyboardLayout(thread_id)
        return layout

    def scan_code(self, vk: int) -> int:
        return int(_MapVirtualKeyExW(vk, MAPVK_VK_TO_VSC_EX, self._foreground_layout()))

    def key_scan(self, char: str) -> int:
        return int(_VkKeyScanExW(char, self._foreground_layout()))

    def foreground_integrity(self) -> int | None:
        return self._window_integrity(_GetForegroundWindow())

    def integrity_at(self, x: int, y: int) -> int | None:
        return self._window_integrity(_WindowFromPoint(POINT(x, y)))

    def _window_integrity(self, hwnd: int | None) -> int | None:
        if not hwnd:
            return SECURITY_MANDATORY_UNTRUSTED_RID
        _, pid = _window_thread_and_process(hwnd)
        if pid == 0:
            return None  # the window closed meanwhile: nothing known about its target
        if pid == self._own_pid:
            return self.own_integrity()
        return _process_integrity(pid)

    def cursor_position(self) -> tuple[int, int]:
        point = POINT()
        if not _GetCursorPos(ctypes.byref(point)):
            # Fails with access denied while another desktop (a UAC prompt, the lock
            # screen) takes the input.
            raise InputBlockedError(
                f"cannot read the pointer position: {ctypes.WinError(ctypes.get_last_error())}"
            )
        return point.x, point.y

    def own_integrity(self) -> int:
        if self._own_integrity is None:
            integrity = _token_integrity(_GetCurrentProcess())
            if integrity is None:
                raise ctypes.WinError(ctypes.get_last_error())
            self._own_integrity = integrity
        return self._own_integrity
