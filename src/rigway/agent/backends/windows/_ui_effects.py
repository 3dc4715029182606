"""Binding for `ui_effects.py`: `Win32UiEffects`, the `UiEffectsPort` over user32's
SystemParametersInfoW, with the constants `ui_effects.ABI` declares."""

from __future__ import annotations

import ctypes
import sys

from rigway.agent.backends.windows._ctypes_types import BOOL, UINT
from rigway.agent.backends.windows.ui_effects import CONSTANTS, WindowsUiEffects

assert sys.platform == "win32"

__all__ = ["Win32UiEffects", "open_ui_effects"]

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_user32.SystemParametersInfoW.argtypes = (UINT, UINT, ctypes.c_void_p, UINT)
_user32.SystemParametersInfoW.restype = BOOL


class Win32UiEffects:
    """`UiEffectsPort` on Windows."""

    def get_flag(self, action: int) -> bool:
        value = BOOL(0)
        if not _user32.SystemParametersInfoW(action, 0, ctypes.byref(value), 0):
            raise ctypes.WinError(ctypes.get_last_error())
        return bool(value.value)

    def set_flag(self, action: int, on: bool) -> None:
        # The SET actions of these effects take the value itself as pvParam.
        value = ctypes.c_void_p(1 if on else None)
        if not _user32.SystemParametersInfoW(action, 0, value, CONSTANTS["SPIF_SENDCHANGE"]):
            raise ctypes.WinError(ctypes.get_last_error())


def open_ui_effects() -> WindowsUiEffects:
    return WindowsUiEffects(Win32UiEffects())
