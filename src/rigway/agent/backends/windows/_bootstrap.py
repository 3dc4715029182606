"""Binding for `bootstrap`: the DPI functions (`Win32DpiPort`) and the session id.

Every DPI function is looked up when it is called, not at import: each exists only
from some Windows build on (SetProcessDpiAwarenessContext 10 1703, GetThreadDpi-
AwarenessContext and GetAwarenessFromDpiAwarenessContext 10 1607, shcore 8.1), and an
attribute set on a missing export would make this module fail to import on the older
ones.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from rigway.agent.backends.windows.bootstrap import (
    StartupFacts,
    make_per_monitor_aware,
)

assert sys.platform == "win32"

__all__ = ["Win32DpiPort", "prepare_process"]

_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_kernel32.GetCurrentProcessId.argtypes = ()
_kernel32.GetCurrentProcessId.restype = ctypes.c_uint32
_kernel32.ProcessIdToSessionId.argtypes = (ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))
_kernel32.ProcessIdToSessionId.restype = ctypes.c_int32

_S_OK = 0
_DPI_AWARENESS_INVALID = -1


def _function(dll_name: str, name: str, restype: Any, *argtypes: Any) -> Any | None:
    """The export, typed; None when the DLL or the export is missing on this Windows."""
    try:
        dll = ctypes.WinDLL(dll_name, use_last_error=True)
    except OSError:
        return None
    function = getattr(dll, name, None)
    if function is None:
        return None
    function.argtypes = argtypes
    function.restype = restype
    return function


class Win32DpiPort:
    """`bootstrap.DpiPort` over user32 and shcore."""

    def set_process_dpi_awareness_context(self, context: int) -> bool | None:
        set_context = _function(
            "user32", "SetProcessDpiAwarenessContext", ctypes.c_int32, ctypes.c_void_p
        )
        if set_context is None:
            return None
        # The context is a pseudo-handle: a small negative number, pointer-sized.
        return bool(set_context(ctypes.c_void_p(context)))

    def set_process_dpi_awareness(self, awareness: int) -> bool | None:
        set_awareness = _function(
            "shcore", "SetProcessDpiAwareness", ctypes.c_int32, ctypes.c_int32
        )
        if set_awareness is None:
            return None
        result: int = set_awareness(awareness)
        return result == _S_OK

    def thread_dpi_awareness(self) -> int | None:
        thread_context = _function("user32", "GetThreadDpiAwarenessContext", ctypes.c_void_p)
        awareness_of = _function(
            "user32", "GetAwarenessFromDpiAwarenessContext", ctypes.c_int32, ctypes.c_void_p
        )
        if thread_context is None or awareness_of is None:
            return None
        context = thread_context()
        if context is None:
            return None
        awareness: int = awareness_of(ctypes.c_void_p(context))
        return None if awareness == _DPI_AWARENESS_INVALID else awareness

    def process_dpi_awareness(self) -> int | None:
        get_awareness = _function(
            "shcore",
            "GetProcessDpiAwareness",
            ctypes.c_int32,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int32),
        )
        if get_awareness is None:
            return None
        value = ctypes.c_int32()
        # A NULL process handle asks about this process.
        if get_awareness(None, ctypes.byref(value)) != _S_OK:
            return None
        return value.value


def _session_id() -> int | None:
    session = ctypes.c_uint32()
    if not _kernel32.ProcessIdToSessionId(_kernel32.GetCurrentProcessId(), ctypes.byref(session)):
        return None
    return session.value


def prepare_process() -> StartupFacts:
    """Make the process per-monitor DPI aware (v2 where Windows has it), then report
    what holds."""
    awareness = make_per_monitor_aware(Win32DpiPort())
    return StartupFacts(session_id=_session_id(), dpi_awareness=awareness)
