"""COM for the agent's worker threads: one multithreaded apartment per thread.

UI Automation asks for calls from a thread that owns no windows and is initialised
multithreaded; the D3D11 immediate context and the duplication object are used by one
thread at a time (the opener, then the screen worker). A thread that ends leaves the
apartment (`leave_mta`) once it has dropped its COM references. Importing comtypes
initialises the *importing* thread as a single-threaded apartment unless
`sys.coinit_flags` is set first, so comtypes is only ever imported through
`import_comtypes`.
"""

from __future__ import annotations

import ctypes
import importlib
import sys
import threading
from types import ModuleType

assert sys.platform == "win32"

__all__ = ["ensure_mta", "import_comtypes", "leave_mta"]

COINIT_MULTITHREADED = 0x0
S_FALSE = 1
RPC_E_CHANGED_MODE = -0x7FFEFEFA  # 0x80010106 as a signed HRESULT

_ole32 = ctypes.WinDLL("ole32", use_last_error=True)
_ole32.CoInitializeEx.argtypes = (ctypes.c_void_p, ctypes.c_uint32)
_ole32.CoInitializeEx.restype = ctypes.c_int32
_ole32.CoUninitialize.argtypes = ()
_ole32.CoUninitialize.restype = None

_thread_state = threading.local()


def ensure_mta() -> None:
    """Join this thread to the multithreaded apartment, once per thread."""
    if getattr(_thread_state, "joined", False):
        return
    result: int = _ole32.CoInitializeEx(None, COINIT_MULTITHREADED)
    if result == RPC_E_CHANGED_MODE:
        raise RuntimeError("this thread is already a single-threaded COM apartment")
    if result < 0:
        raise OSError(f"CoInitializeEx failed: HRESULT 0x{result & 0xFFFFFFFF:08X}")
    _thread_state.joined = True


def leave_mta() -> None:
    """Balance `ensure_mta` on this thread (at the role's close)."""
    if getattr(_thread_state, "joined", False):
        _thread_state.joined = False
        _ole32.CoUninitialize()


def import_comtypes() -> ModuleType:
    """comtypes, imported so that it initialises this thread multithreaded."""
    if "comtypes" not in sys.modules:
        sys.coinit_flags = COINIT_MULTITHREADED  # type: ignore[attr-defined]
    comtypes = importlib.import_module("comtypes")
    ensure_mta()
    return comtypes
