"""The rig's own keyboard and mouse on Windows (`Desktop.last_local_input`).

Low-level hooks (WH_KEYBOARD_LL, WH_MOUSE_LL) on a thread of their own see every
keyboard and mouse event of the desktop before it is delivered, each with a flag saying
whether it was injected (`LLKHF_INJECTED`, `LLMHF_INJECTED`: SendInput, the agent's own
input among it) or came from a device. An event without the flag is the owner's.

Why hooks and not GetLastInputInfo: that one gives the time of the last input of any
kind, the agent's own SendInput included, so telling the owner's apart would mean
guessing from the times of our own sends: a key the owner pressed while a batch typed
would be taken for ours, and our own event read a moment late for theirs. The hooks
tell each event's origin exactly. Their cost: Windows waits for the hook thread on every
event (up to `LowLevelHooksTimeout`), so the callback only reads a flag and the clock
and hands on; the thread does nothing else but pump its messages. Input other software
injects (an on-screen keyboard, a remote-control tool sending SendInput) does not count
either, as on X11 (XTEST).

Pure: the hook records (checked against the mingw-w64 headers through `ABI`) and the
logic over a thin port (`InputHookPort`), whose binding is `_local_input.py`; the tests
drive the logic through a fake port.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable
from typing import Final, Literal, Protocol

from rigway.agent.backends.windows._ctypes_types import DWORD, POINT, ULONG_PTR
from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = [
    "ABI",
    "HC_ACTION",
    "KBDLLHOOKSTRUCT",
    "LLKHF_INJECTED",
    "LLMHF_INJECTED",
    "MSLLHOOKSTRUCT",
    "WH_KEYBOARD_LL",
    "WH_MOUSE_LL",
    "WM_QUIT",
    "HookKind",
    "InputHookPort",
    "LocalInputHooks",
    "is_injected",
]

_log = logging.getLogger(__name__)

HookKind = Literal["keyboard", "mouse"]

WH_KEYBOARD_LL: Final = 13
WH_MOUSE_LL: Final = 14
HC_ACTION: Final = 0
# KBDLLHOOKSTRUCT.flags / MSLLHOOKSTRUCT.flags: the event was injected (SendInput,
# keybd_event, mouse_event), from any integrity level.
LLKHF_INJECTED: Final = 0x10
LLMHF_INJECTED: Final = 0x01
WM_QUIT: Final = 0x0012
PM_NOREMOVE: Final = 0x0000
# How long `start` waits for the hooks to be in place.
_START_TIMEOUT_S: Final = 5.0
_STOP_TIMEOUT_S: Final = 2.0


class KBDLLHOOKSTRUCT(ctypes.Structure):
    _fields_ = (
        ("vkCode", DWORD),
        ("scanCode", DWORD),
        ("flags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


class MSLLHOOKSTRUCT(ctypes.Structure):
    _fields_ = (
        ("pt", POINT),
        ("mouseData", DWORD),
        ("flags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


def is_injected(kind: HookKind, flags: int) -> bool:
    """Whether a hooked event with these flags was injected rather than typed or moved."""
    return bool(flags & (LLKHF_INJECTED if kind == "keyboard" else LLMHF_INJECTED))


class InputHookPort(Protocol):
    """Low-level keyboard and mouse hooks, run on the thread that calls `run`."""

    def run(
        self,
        on_event: Callable[[HookKind, int], None],
        on_ready: Callable[[bool], None],
    ) -> None:
        """Install both hooks, tell `on_ready` whether they are in, then pump this
        thread's messages until `stop`, calling `on_event(kind, flags)` for each event;
        remove the hooks before returning. Returns at once when they could not go in."""
        ...

    def stop(self) -> None:
        """From any thread, once `run` told it is ready: make `run` return."""
        ...


class LocalInputHooks:
    """The time of the last event without the injected flag; safe from any thread.

    `last_local_input` reads a float the hook thread writes whole. When the hooks cannot
    be installed the owner never counts as active (logged), as before the agent could
    tell."""

    def __init__(self, port: InputHookPort, *, clock: Callable[[], float] = time.monotonic):
        self._port = port
        self._clock = clock
        self._last: float | None = None
        self._ready = threading.Event()
        self._installed = False
        self._thread = threading.Thread(target=self._run, name="rigway-input-hooks", daemon=True)

    @property
    def is_listening(self) -> bool:
        return self._installed

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT_S):
            _log.warning("the input hooks did not start in time: the owner's input may not count")

    def last_local_input(self) -> float | None:
        return self._last

    def close(self) -> None:
        """Remove the hooks and stop their thread; safe to call twice."""
        if self._installed and self._thread.is_alive():
            self._port.stop()
            self._thread.join(_STOP_TIMEOUT_S)
        self._installed = False

    def _run(self) -> None:
        try:
            self._port.run(self._on_event, self._on_ready)
        except Exception:
            _log.exception("the input hooks failed: the owner's input no longer counts")
        finally:
            self._ready.set()

    def _on_ready(self, installed: bool) -> None:
        self._installed = installed
        if not installed:
            _log.warning("cannot hook the keyboard and mouse: the owner's input never counts")
        self._ready.set()

    def _on_event(self, kind: HookKind, flags: int) -> None:
        # On the hook thread, inside Windows' wait for it: nothing slow here.
        if not is_injected(kind, flags):
            self._last = self._clock()


ABI = AbiDeclarations(
    structs=(KBDLLHOOKSTRUCT, MSLLHOOKSTRUCT),
    constants={
        "WH_KEYBOARD_LL": WH_KEYBOARD_LL,
        "WH_MOUSE_LL": WH_MOUSE_LL,
        "HC_ACTION": HC_ACTION,
        "LLKHF_INJECTED": LLKHF_INJECTED,
        "LLMHF_INJECTED": LLMHF_INJECTED,
        "WM_QUIT": WM_QUIT,
        "PM_NOREMOVE": PM_NOREMOVE,
    },
    headers=("windows.h",),
)
