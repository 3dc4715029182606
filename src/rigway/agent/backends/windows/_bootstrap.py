"""Binding for `bootstrap`: set per-monitor DPI awareness v2, read the session id."""

from __future__ import annotations

import ctypes
import sys

from rigway.agent.backends.windows.bootstrap import (
    DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2,
    PROCESS_PER_MONITOR_DPI_AWARE,
    StartupFacts,
)

assert sys.platform == "win32"

__all__ = ["prepare_process"]

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)

_user32.SetProcessDpiAwarenessContext.argtypes = (ctypes.c_void_p,)
_user32.SetProcessDpiAwarenessContext.restype = ctypes.c_int32
_user32.GetThreadDpiAwarenessContext.argtypes = ()
_user32.GetThreadDpiAwarenessContext.restype = ctypes.c_void_p
_user32.GetAwarenessFromDpiAwarenessContext.argtypes = (ctypes.c_void_p,)
_user32.GetAwarenessFromDpiAwarenessContext.restype = ctypes.c_int32
_kernel32.GetCurrentProcessId.argtypes = ()
_kernel32.GetCurrentProcessId.restype = ctypes.c_uint32
_kernel32.ProcessIdToSessionId.argtypes = (ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))
_kernel32.ProcessIdToSessionId.restype = ctypes.c_int32


def _set_per_monitor_v2() -> None:
    # Windows 10 1703+. Fails with ERROR_ACCESS_DENIED when the awareness was already
    # set (by a manifest or an earlier call): the check that follows tells whether
    # what was set is good enough.
    if _user32.SetProcessDpiAwarenessContext(
        ctypes.c_void_p(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2)
    ):
        return
    try:
        shcore = ctypes.WinDLL("shcore", use_last_error=True)
    except OSError:
        return
    shcore.SetProcessDpiAwareness.argtypes = (ctypes.c_int32,)
    shcore.SetProcessDpiAwareness.restype = ctypes.c_int32
    shcore.SetProcessDpiAwareness(PROCESS_PER_MONITOR_DPI_AWARE)


def _dpi_awareness() -> int | None:
    context = _user32.GetThreadDpiAwarenessContext()
    if context is None:
        return None
    awareness: int = _user32.GetAwarenessFromDpiAwarenessContext(context)
    return awareness if awareness >= 0 else None


def _session_id() -> int | None:
    session = ctypes.c_uint32()
    if not _kernel32.ProcessIdToSessionId(_kernel32.GetCurrentProcessId(), ctypes.byref(session)):
        return None
    return session.value


def prepare_process() -> StartupFacts:
    """Make the process per-monitor DPI aware (v2), then report what holds."""
    _set_per_monitor_v2()
    return StartupFacts(session_id=_session_id(), dpi_awareness=_dpi_awareness())
