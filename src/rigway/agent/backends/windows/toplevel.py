"""Top-level windows on Windows: the list, who owns each, and closing some of them.

`TopLevelWindows` is the windows role (`roles.WindowsRole`), pure logic over a
`WindowPort` that the binding (`_toplevel.py`) implements with EnumWindows and friends.

Listed are the windows a user sees as apps: visible, without an owner window (an owned
window is a dialog or a tool palette of another), not WS_EX_TOOLWINDOW (floating
toolbars, tray flyouts) and not cloaked (DWMWA_CLOAKED: suspended UWP apps and windows
on another virtual desktop). Ids are HWNDs as ints.

Closing escalates as on X11: WM_CLOSE (posted, so an app may still ask "save
changes?"), a grace period, then the owner process is terminated, but only an owner
that passes the same rules as X11's (`backends/x11/windows.py`): it owns no window
outside the set being closed (it would take the user's own windows with it), and
`protect.is_protected` lets it go. For the "window outside the set" rule a cloaked
window counts: a window on another virtual desktop is still the user's.

The guard context comes from the app tracker (`JobAppTracker.guard_context`): at the
session end the tracker has already killed and forgotten its apps, so only owners still
carrying the session's launch tag pass the guard, which is the careful outcome for a
window whose app survived the kill.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from rigway.agent.backends.base import Rect, StackedWindow
from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.protect import GuardContext, ProcessInfo, is_protected

__all__ = [
    "ABI",
    "CLOSE_GRACE_S",
    "CONSTANTS",
    "KILL_GRACE_S",
    "MENU_CLASS",
    "TopLevelWindow",
    "TopLevelWindows",
    "WindowPort",
    "is_listed",
    "stacked",
]

_log = logging.getLogger(__name__)

CONSTANTS: Final[Mapping[str, int]] = {
    "GW_OWNER": 4,
    "GWL_EXSTYLE": -20,
    "WS_EX_TOOLWINDOW": 0x80,
    "DWMWA_CLOAKED": 14,
    "DWMWA_EXTENDED_FRAME_BOUNDS": 9,
    "WM_CLOSE": 0x10,
    "S_OK": 0,
}

ABI = AbiDeclarations(constants=CONSTANTS, headers=("windows.h", "dwmapi.h"))

# How long a window gets to close after WM_CLOSE, and its owner to end once terminated.
CLOSE_GRACE_S: Final = 2.0
KILL_GRACE_S: Final = 1.0


@dataclass(frozen=True, slots=True)
class TopLevelWindow:
    """One top-level window as EnumWindows finds it. `pid` is None when the window is
    gone before its owner could be read."""

    hwnd: int
    pid: int | None
    is_visible: bool
    owner_hwnd: int
    ex_style: int
    is_cloaked: bool
    class_name: str
    # On the virtual screen: the frame as drawn (DWMWA_EXTENDED_FRAME_BOUNDS, without
    # the invisible resize borders), else GetWindowRect; None when it cannot be read.
    bounds: Rect | None = None
    is_minimised: bool = False
    # GetForegroundWindow's: the window keys go to.
    is_foreground: bool = False


def _is_user_window(window: TopLevelWindow) -> bool:
    is_tool = window.ex_style & CONSTANTS["WS_EX_TOOLWINDOW"] != 0
    return window.is_visible and window.owner_hwnd == 0 and not is_tool


def is_listed(window: TopLevelWindow) -> bool:
    """Whether the window is one of `list_windows`' (an app window a user sees now)."""
    return _is_user_window(window) and not window.is_cloaked


# The class of a menu's popup window.
MENU_CLASS: Final = "#32768"


def stacked(window: TopLevelWindow) -> StackedWindow | None:
    """The window as `Desktop.window_stack` lists it (virtual-screen coordinates), or
    None when it shows nothing: hidden, minimised, cloaked or without bounds. Tool
    windows (tooltips, floating palettes) and menus are popups; a dialog owned by an
    app's window is a window of its own."""
    if not window.is_visible or window.is_minimised or window.is_cloaked:
        return None
    if window.bounds is None or window.bounds.w <= 0 or window.bounds.h <= 0:
        return None
    is_tool = window.ex_style & CONSTANTS["WS_EX_TOOLWINDOW"] != 0
    is_popup = is_tool or window.class_name == MENU_CLASS
    return StackedWindow(
        window.hwnd, window.pid, window.bounds, is_popup=is_popup, has_focus=window.is_foreground
    )


class WindowPort(Protocol):
    """The Win32 calls `TopLevelWindows` needs."""

    def top_level_windows(self) -> list[TopLevelWindow]: ...

    def post_close(self, hwnd: int) -> None:
        """PostMessageW(WM_CLOSE); a window gone meanwhile is no error."""
        ...

    def is_window(self, hwnd: int) -> bool: ...

    def wait_windows_closed(self, hwnds: frozenset[int], timeout_s: float) -> frozenset[int]:
        """Wait until these windows are all gone or `timeout_s` passed; returns those
        still open."""
        ...

    def process_info(self, pid: int) -> ProcessInfo | None: ...

    def terminate_pid(self, info: ProcessInfo) -> bool:
        """As `JobPort.terminate_pid`: only the process `info` describes; never raises."""
        ...


class TopLevelWindows:
    """The windows role. No state of its own: safe to call from any thread."""

    def __init__(
        self,
        port: WindowPort,
        guard_context: Callable[[], GuardContext],
        *,
        close_grace_s: float = CLOSE_GRACE_S,
        kill_grace_s: float = KILL_GRACE_S,
    ) -> None:
        self._port = port
        self._guard_context = guard_context
        self._close_grace_s = close_grace_s
        self._kill_grace_s = kill_grace_s

    def list_windows(self) -> frozenset[int]:
        return frozenset(w.hwnd for w in self._port.top_level_windows() if is_listed(w))

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        """The owner pid of each of these windows still open; None when unknown."""
        return {w.hwnd: w.pid for w in self._port.top_level_windows() if w.hwnd in window_ids}

    def window_stack(self) -> list[StackedWindow]:
        """Windows that show, topmost first (EnumWindows' z-order), on the virtual
        screen."""
        shown = (stacked(w) for w in self._port.top_level_windows())
        return [w for w in shown if w is not None]

    def close_windows(self, window_ids: frozenset[int]) -> None:
        owners = self.window_owners(window_ids)
        if not owners:
            return
        for hwnd in owners:
            self._port.post_close(hwnd)
        left = self._port.wait_windows_closed(frozenset(owners), self._close_grace_s)
        if not left:
            return
        killable = self._killable(left, owners, window_ids)
        for info in killable:
            if not self._port.terminate_pid(info):
                _log.info("owner pid %d (%s) was not terminated", info.pid, info.name)
        if killable:
            self._port.wait_windows_closed(left, self._kill_grace_s)

    def _killable(
        self, left: frozenset[int], owners: dict[int, int | None], closing: frozenset[int]
    ) -> list[ProcessInfo]:
        pids = {pid for hwnd, pid in owners.items() if hwnd in left and pid is not None}
        # An owner of a window we keep is spared (see the module docstring).
        for window in self._port.top_level_windows():
            if window.hwnd not in closing and _is_user_window(window) and window.pid is not None:
                pids.discard(window.pid)
        context = self._guard_context()
        killable = []
        for pid in sorted(pids):
            info = self._port.process_info(pid)
            if info is None:
                continue
            reason = is_protected(info, context)
            if reason is None:
                killable.append(info)
            else:
                _log.warning("not killing window owner %d (%s): %s", pid, info.name, reason)
        return killable
