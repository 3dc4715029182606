"""Binding for `tray`: the owner's notification-area icon, drawn with pystray (Windows).

pystray's win32 backend runs a hidden window and its message loop in the thread that
calls `Icon.run()`. That thread is ours, and not a daemon: when the agent stops, the
loop ends, pystray removes the icon, and the process does not exit with a dead icon
left in the notification area.

Every change to the icon is made on that thread:
- the image and the tooltip, through a message we register and post to pystray's window;
- the menu, rebuilt from the latest presentation when the right button is released,
  before pystray shows it (pystray 0.19's `_on_notify`), so no menu is ever destroyed
  on another thread while it is open.

Explorer restarts: pystray's win32 backend handles the `TaskbarCreated` message
(`Icon._on_taskbarcreated` re-adds a visible icon, and `_create_window` lets that
message through UIPI with `ChangeWindowMessageFilterEx`), checked in
moses-palmer/pystray `lib/pystray/_win32.py` at v0.19.5 and at master (2025-03).

`stop()` is safe at any time, before `start()`, before pystray's window exists, or
twice: calling pystray's `Icon.stop()` before its loop is ready does nothing (or raises,
in releases before 0.19: moses-palmer/pystray#125), so a stop that comes early is
remembered and carried out as soon as the loop is ready.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from PIL import Image

from rigway.agent.backends.windows._ctypes_types import BOOL, UINT
from rigway.agent.backends.windows.tray import (
    WM_RBUTTONUP,
    IconState,
    TrayAction,
    TrayPresentation,
    draw_icon,
)

assert sys.platform == "win32"

__all__ = ["PystrayTray"]

_log = logging.getLogger(__name__)

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_user32.RegisterWindowMessageW.argtypes = (ctypes.c_wchar_p,)
_user32.RegisterWindowMessageW.restype = UINT
_user32.PostMessageW.argtypes = (ctypes.c_void_p, UINT, ctypes.c_size_t, ctypes.c_ssize_t)
_user32.PostMessageW.restype = BOOL

# A private message, registered by name so that no other window's number is reused.
_REFRESH_MESSAGE: int = _user32.RegisterWindowMessageW("Rigway.Tray.Refresh")


def _post_refresh(hwnd: int) -> bool:
    return bool(_user32.PostMessageW(hwnd, _REFRESH_MESSAGE, 0, 0))


class PystrayTray:
    """`TrayView` on pystray's win32 backend; `on_menu` is called on the tray thread."""

    def __init__(self, first: TrayPresentation, on_menu: Callable[[TrayAction], None]) -> None:
        self._on_menu = on_menu
        self._lock = threading.Lock()
        self._presentation = first
        self._images: dict[IconState, Image.Image] = {
            state: draw_icon(state) for state in IconState
        }
        self._icon: Any = None  # pystray.Icon, built on the tray thread
        self._ready = False
        self._stop_requested = False
        self._thread = threading.Thread(target=self._run, name="rigway-tray", daemon=False)

    def start(self) -> None:
        self._thread.start()

    def show(self, presentation: TrayPresentation) -> None:
        with self._lock:
            self._presentation = presentation
            icon = self._icon if self._ready else None
        # Before the loop is ready there is no window to post to; the icon is then
        # shown with the latest presentation when it becomes visible.
        if icon is not None and icon._hwnd is not None:
            _post_refresh(icon._hwnd)

    def notify(self, message: str) -> None:
        with self._lock:
            icon = self._icon if self._ready else None
        if icon is not None:
            # A balloon: Shell_NotifyIcon may be called from any thread.
            icon.notify(message[:255], "Rigway")

    def stop(self) -> None:
        with self._lock:
            self._stop_requested = True
            icon = self._icon if self._ready else None
        if icon is not None:
            icon.stop()

    def join(self, timeout_s: float) -> bool:
        """Wait for the tray thread; True when it ended."""
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    # ---- the tray thread --------------------------------------------------------------

    def _run(self) -> None:
        try:
            icon = _build_icon(self)
            with self._lock:
                if self._stop_requested:
                    return
                self._icon = icon
            icon.run(setup=self._on_ready)
        except Exception:
            _log.exception("the tray icon failed; the console remains the owner's kill path")

    def _on_ready(self, icon: Any) -> None:
        # pystray calls this on a helper thread once its window exists.
        with self._lock:
            self._ready = True
            stop_now = self._stop_requested
        if stop_now:
            icon.stop()
        else:
            # Shown by the tray thread too (`_apply`), like every later change.
            _post_refresh(icon._hwnd)

    def _apply(self, icon: Any) -> None:
        """On the tray thread: the latest image and tooltip; the first call shows it."""
        with self._lock:
            presentation = self._presentation
        icon.icon = self._images[presentation.icon]
        icon.title = presentation.tooltip
        if not icon.visible:
            icon.visible = True

    def _menu_items(self) -> tuple[Any, ...]:
        import pystray

        with self._lock:
            entries = self._presentation.entries
        items: list[Any] = []
        for entry in entries:
            if not entry.visible:
                continue
            items.append(
                pystray.MenuItem(
                    entry.label,
                    self._callback(entry.action),
                    enabled=entry.enabled,
                    default=entry.action is TrayAction.OPEN_CONSOLE,
                )
            )
            if entry.action is TrayAction.END_SESSION:
                items.append(pystray.Menu.SEPARATOR)
        return tuple(items)

    def _callback(self, action: TrayAction) -> Callable[[Any, Any], None]:
        # Two named parameters: pystray inspects the arity of what it is given.
        def chosen(_icon: Any, _item: Any) -> None:
            self._on_menu(action)

        return chosen


def _build_icon(tray: PystrayTray) -> Any:
    """A pystray icon whose image, tooltip and menu follow `tray`'s presentation."""
    import pystray

    class _RigwayIcon(pystray.Icon):  # type: ignore[misc]  # pystray is untyped
        def __init__(self) -> None:
            super().__init__(
                "rigway",
                tray._images[IconState.IDLE],
                "Rigway",
                pystray.Menu(tray._menu_items),
            )
            self._message_handlers[_REFRESH_MESSAGE] = self._on_refresh

        def _on_refresh(self, _wparam: int, _lparam: int) -> None:
            tray._apply(self)

        def _on_notify(self, wparam: int, lparam: int) -> Any:
            if lparam == WM_RBUTTONUP:
                self.update_menu()
            return super()._on_notify(wparam, lparam)

    return _RigwayIcon()
