"""Binding for the process primitives: open a process, read its creation time, and
`Win32ProcessFacts`, the `process_facts` port over kernel32, the process token (pywin32)
and psutil, with `process_info` over it. `_jobs.py` and `_toplevel.py` build on these.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping

import psutil
import pywintypes
import win32api
import win32security

from rigway.agent.apps import LAUNCH_TAG_ENV
from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE
from rigway.agent.backends.windows.job_types import CONSTANTS, FILETIME
from rigway.agent.backends.windows.process_facts import ProcessView, read_process_info
from rigway.agent.backends.windows.protect import ProcessInfo

assert sys.platform == "win32"

__all__ = [
    "Win32ProcessFacts",
    "close_handle",
    "creation_time_100ns",
    "environment_value",
    "open_process",
    "process_info",
]

_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_QUERY = CONSTANTS["PROCESS_QUERY_LIMITED_INFORMATION"]


def _declare(dll: ctypes.WinDLL, name: str, restype: object, *argtypes: object) -> None:
    function = getattr(dll, name)
    function.argtypes = argtypes
    function.restype = restype


_declare(_kernel32, "OpenProcess", HANDLE, DWORD, BOOL, DWORD)
_declare(_kernel32, "CloseHandle", BOOL, HANDLE)
_declare(
    _kernel32,
    "GetProcessTimes",
    BOOL,
    HANDLE,
    ctypes.POINTER(FILETIME),
    ctypes.POINTER(FILETIME),
    ctypes.POINTER(FILETIME),
    ctypes.POINTER(FILETIME),
)
_declare(_kernel32, "ProcessIdToSessionId", BOOL, DWORD, ctypes.POINTER(DWORD))

# IsProcessCritical exists from Windows 8.1. Before it no user-mode query exists; the
# processes that can be critical there run as SYSTEM, which the guard spares anyway.
try:
    _declare(_kernel32, "IsProcessCritical", BOOL, HANDLE, ctypes.POINTER(BOOL))
    _HAS_IS_PROCESS_CRITICAL = True
except AttributeError:
    _HAS_IS_PROCESS_CRITICAL = False


def close_handle(handle: int) -> None:
    if not _kernel32.CloseHandle(handle):
        raise ctypes.WinError(ctypes.get_last_error())


def open_process(pid: int, access: int) -> tuple[int | None, int]:
    """(handle, 0), or (None, the Win32 error): ERROR_INVALID_PARAMETER means no such
    process, ERROR_ACCESS_DENIED that it is not ours to open."""
    handle: int | None = _kernel32.OpenProcess(access, False, pid)
    if handle is None:
        return None, ctypes.get_last_error()
    return handle, 0


def creation_time_100ns(handle: int) -> int | None:
    created, exited, kernel, user = FILETIME(), FILETIME(), FILETIME(), FILETIME()
    ok = _kernel32.GetProcessTimes(
        handle,
        ctypes.byref(created),
        ctypes.byref(exited),
        ctypes.byref(kernel),
        ctypes.byref(user),
    )
    if not ok:
        return None
    return (int(created.dwHighDateTime) << 32) | int(created.dwLowDateTime)


def _is_critical(handle: int) -> bool | None:
    if not _HAS_IS_PROCESS_CRITICAL:
        return False
    critical = BOOL(0)
    if not _kernel32.IsProcessCritical(handle, ctypes.byref(critical)):
        return None
    return bool(critical.value)


def _session_id(pid: int) -> int | None:
    session = DWORD(0)
    if not _kernel32.ProcessIdToSessionId(pid, ctypes.byref(session)):
        return None
    return int(session.value)


def _user_sid(handle: int) -> str | None:
    try:
        token = win32security.OpenProcessToken(handle, CONSTANTS["TOKEN_QUERY"])
        try:
            # pywin32 returns (PySID, attributes), untyped.
            user = win32security.GetTokenInformation(token, win32security.TokenUser)
            return win32security.ConvertSidToStringSid(user[0])
        finally:
            win32api.CloseHandle(token)
    except pywintypes.error:
        return None


def environment_value(environ: Mapping[str, str], name: str) -> str | None:
    # Windows variable names are case-insensitive; a program may re-case them.
    wanted = name.upper()
    return next((value for key, value in environ.items() if key.upper() == wanted), None)


class _PsutilView:
    """`process_facts.ProcessView` over psutil.Process; reads never raise."""

    def __init__(self, process: psutil.Process) -> None:
        self._process = process

    def create_time_s(self) -> float | None:
        try:
            return float(self._process.create_time())
        except psutil.Error:
            return None

    def name(self) -> str:
        try:
            return str(self._process.name())
        except psutil.Error:
            return ""

    def ancestor_pids(self) -> tuple[int, ...]:
        try:
            # psutil cuts the chain at a parent younger than its child (a reused pid).
            return tuple(parent.pid for parent in self._process.parents())
        except psutil.Error:
            return ()

    def launch_tag(self) -> str | None:
        try:
            return environment_value(self._process.environ(), LAUNCH_TAG_ENV)
        except psutil.Error:
            return None


class _UnreadableView:
    def create_time_s(self) -> float | None:
        return None

    def name(self) -> str:
        return ""

    def ancestor_pids(self) -> tuple[int, ...]:
        return ()

    def launch_tag(self) -> str | None:
        return None


class Win32ProcessFacts:
    """`process_facts.ProcessFactsPort` over kernel32, the process token and psutil."""

    def open_query(self, pid: int) -> tuple[int | None, int]:
        return open_process(pid, _QUERY)

    def close_handle(self, handle: int) -> None:
        close_handle(handle)

    def creation_time_100ns(self, handle: int) -> int | None:
        return creation_time_100ns(handle)

    def is_critical(self, handle: int) -> bool | None:
        return _is_critical(handle)

    def user_sid(self, handle: int) -> str | None:
        return _user_sid(handle)

    def session_id(self, pid: int) -> int | None:
        return _session_id(pid)

    def view(self, pid: int) -> ProcessView | None:
        try:
            return _PsutilView(psutil.Process(pid))
        except psutil.NoSuchProcess:
            return None
        except psutil.Error:
            # Access denied even to psutil's fallbacks: a view that reads nothing.
            return _UnreadableView()


_FACTS = Win32ProcessFacts()


def process_info(pid: int) -> ProcessInfo | None:
    """The guard's facts of `pid`, all read of one process (`process_facts`); None when
    no process has it. Facts that cannot be read are None, and the guard then spares
    the process."""
    return read_process_info(pid, _FACTS)
