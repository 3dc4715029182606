"""Binding for `local_input`: the low-level keyboard and mouse hooks (`Win32InputHooks`).

A low-level hook is called on the thread that installed it, from inside that thread's
GetMessageW, so `run` installs both and then only pumps: the callbacks read the
event's flags from its record, hand them on, and always pass the event on with
CallNextHookEx (a hook never swallows input). `stop` posts WM_QUIT to the thread; its
message queue exists from `run`'s first PeekMessageW on, before `on_ready` is told.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Callable

from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE, INT, UINT
from rigway.agent.backends.windows.local_input import (
    HC_ACTION,
    KBDLLHOOKSTRUCT,
    MSLLHOOKSTRUCT,
    PM_NOREMOVE,
    WH_KEYBOARD_LL,
    WH_MOUSE_LL,
    WM_QUIT,
    HookKind,
)
from rigway.agent.backends.windows.notify_icon import LPARAM, LRESULT, MSG, WPARAM

assert sys.platform == "win32"

__all__ = ["Win32InputHooks"]

_log = logging.getLogger(__name__)

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_P = ctypes.POINTER
_HOOKPROC = ctypes.WINFUNCTYPE(LRESULT, INT, WPARAM, LPARAM)


def _declare(dll: ctypes.WinDLL, name: str, restype: object, *argtypes: object) -> None:
    function = getattr(dll, name)
    function.argtypes = argtypes
    function.restype = restype


# fmt: off
_declare(_user32, "SetWindowsHookExW", HANDLE, INT, _HOOKPROC, HANDLE, DWORD)
_declare(_user32, "UnhookWindowsHookEx", BOOL, HANDLE)
_declare(_user32, "CallNextHookEx", LRESULT, HANDLE, INT, WPARAM, LPARAM)
_declare(_user32, "GetMessageW", BOOL, _P(MSG), HANDLE, UINT, UINT)
_declare(_user32, "PeekMessageW", BOOL, _P(MSG), HANDLE, UINT, UINT, UINT)
_declare(_user32, "PostThreadMessageW", BOOL, DWORD, UINT, WPARAM, LPARAM)
_declare(_kernel32, "GetCurrentThreadId", DWORD)
_declare(_kernel32, "GetModuleHandleW", HANDLE, ctypes.c_wchar_p)
# fmt: on


class Win32InputHooks:
    """`local_input.InputHookPort` over user32."""

    def __init__(self) -> None:
        self._thread_id: int | None = None

    def run(
        self,
        on_event: Callable[[HookKind, int], None],
        on_ready: Callable[[bool], None],
    ) -> None:
        message = MSG()
        # Makes this thread's message queue, so a `stop` from now on finds it.
        _user32.PeekMessageW(ctypes.byref(message), None, 0, 0, PM_NOREMOVE)
        self._thread_id = int(_kernel32.GetCurrentThreadId())
        # Kept referenced for as long as the hooks are in: Windows holds only a pointer.
        keyboard_proc = _HOOKPROC(self._callback("keyboard", KBDLLHOOKSTRUCT, on_event))
        mouse_proc = _HOOKPROC(self._callback("mouse", MSLLHOOKSTRUCT, on_event))
        module = _kernel32.GetModuleHandleW(None)
        hooks = [
            _user32.SetWindowsHookExW(WH_KEYBOARD_LL, keyboard_proc, module, 0),
            _user32.SetWindowsHookExW(WH_MOUSE_LL, mouse_proc, module, 0),
        ]
        try:
            installed = all(hooks)
            if not installed:
                _log.warning("SetWindowsHookExW failed (error %d)", ctypes.get_last_error())
            on_ready(installed)
            if not installed:
                return
            # The hooks run inside GetMessageW; WM_QUIT (from `stop`) makes it return 0.
            while _user32.GetMessageW(ctypes.byref(message), None, 0, 0) > 0:
                pass
        finally:
            for hook in hooks:
                if hook:
                    _user32.UnhookWindowsHookEx(hook)

    def stop(self) -> None:
        if self._thread_id is not None:
            _user32.PostThreadMessageW(self._thread_id, WM_QUIT, 0, 0)

    @staticmethod
    def _callback(
        kind: HookKind,
        record: type[KBDLLHOOKSTRUCT] | type[MSLLHOOKSTRUCT],
        on_event: Callable[[HookKind, int], None],
    ) -> Callable[[int, int, int], int]:
        def hook(code: int, w_param: int, l_param: int) -> int:
            if code == HC_ACTION:
                try:
                    event = ctypes.cast(l_param, _P(record)).contents
                    on_event(kind, int(event.flags))
                except Exception:  # never let an error stop the owner's input
                    _log.exception("the %s hook failed on an event", kind)
            result: int = _user32.CallNextHookEx(None, code, w_param, l_param)
            return result

        return hook
