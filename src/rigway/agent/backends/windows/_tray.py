"""Binding for `tray` and `notify_icon`: the owner's notification-area icon, drawn with
Shell_NotifyIconW on a hidden window of our own (Windows).

One thread of ours, not a daemon, owns everything: it registers a window class, creates
a hidden top-level window (not a message-only one: those never receive the
"TaskbarCreated" broadcast Explorer sends when it restarts), adds the icon, and runs the
window's message loop until the window is destroyed. When the agent stops, the icon is
removed before the thread ends, so no dead icon is left in the notification area.

Every change is made on that thread. Other threads store what to show and post a private
registered message (`show`, `notify`), or post WM_CLOSE (`stop`). The menu is built
afresh from the latest presentation each time it opens, with Microsoft's documented
pattern for a notification icon's menu: SetForegroundWindow before TrackPopupMenu, and a
WM_NULL posted after it, or the menu does not close when the user clicks elsewhere
(https://learn.microsoft.com/windows/win32/api/winuser/nf-winuser-trackpopupmenu).

The window also hosts the notifications a message loop is needed for: session lock and
unlock (WTSRegisterSessionNotification) and the console display's power
(RegisterPowerSettingNotification, GUID_CONSOLE_DISPLAY_STATE, which reports the current
state at once on registration); they reach the callbacks given at construction, on the
tray thread.

`stop()` is safe before `start()`, twice, and from any thread, the tray's own included.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rigway.agent.backends.windows._ctypes_types import BOOL, DWORD, HANDLE, INT, UINT, WORD
from rigway.agent.backends.windows.gdi_types import BITMAPINFO
from rigway.agent.backends.windows.notify_icon import (
    CONSTANTS,
    GUID,
    GUID_CONSOLE_DISPLAY_STATE,
    ICONINFO,
    LPARAM,
    LRESULT,
    MSG,
    NOTIFYICONDATAW,
    POWERBROADCAST_SETTING,
    WNDCLASSEXW,
    WPARAM,
    IconBitmaps,
    TrayEvent,
    WindowMessages,
    anchor_point,
    classify_message,
    colour_bitmap_info,
    decode_power_setting,
    decode_session_change,
    icon_data,
    plan_menu,
    prepare_icon,
    split_power_setting,
)
from rigway.agent.backends.windows.tray import (
    IconState,
    TrayAction,
    TrayPresentation,
    draw_icon,
)

assert sys.platform == "win32"

__all__ = ["NotifyIconTray"]

_log = logging.getLogger(__name__)
_C = CONSTANTS

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_shell32 = ctypes.WinDLL("shell32", use_last_error=True)
_gdi32 = ctypes.WinDLL("gdi32", use_last_error=True)
_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_wtsapi32 = ctypes.WinDLL("wtsapi32", use_last_error=True)

_VOIDP = ctypes.c_void_p
_WSTR = ctypes.c_wchar_p
_P = ctypes.POINTER
_WNDPROC = ctypes.WINFUNCTYPE(LRESULT, HANDLE, UINT, WPARAM, LPARAM)


def _declare(dll: ctypes.WinDLL, name: str, restype: object, *argtypes: object) -> None:
    function = getattr(dll, name)
    function.argtypes = argtypes
    function.restype = restype


# One line per function, as in the headers: (DLL, name, result, *arguments).
# fmt: off
_declare(_user32, "RegisterClassExW", WORD, _P(WNDCLASSEXW))
_declare(_user32, "UnregisterClassW", BOOL, _WSTR, HANDLE)
_declare(_user32, "CreateWindowExW", HANDLE,
         DWORD, _WSTR, _WSTR, DWORD, INT, INT, INT, INT, HANDLE, HANDLE, HANDLE, _VOIDP)
_declare(_user32, "DestroyWindow", BOOL, HANDLE)
_declare(_user32, "DefWindowProcW", LRESULT, HANDLE, UINT, WPARAM, LPARAM)
_declare(_user32, "GetMessageW", BOOL, _P(MSG), HANDLE, UINT, UINT)
_declare(_user32, "TranslateMessage", BOOL, _P(MSG))
_declare(_user32, "DispatchMessageW", LRESULT, _P(MSG))
_declare(_user32, "PostMessageW", BOOL, HANDLE, UINT, WPARAM, LPARAM)
_declare(_user32, "PostQuitMessage", None, INT)
_declare(_user32, "RegisterWindowMessageW", UINT, _WSTR)
_declare(_user32, "ChangeWindowMessageFilterEx", BOOL, HANDLE, UINT, DWORD, _VOIDP)
_declare(_user32, "CreatePopupMenu", HANDLE)
_declare(_user32, "AppendMenuW", BOOL, HANDLE, UINT, ctypes.c_size_t, _WSTR)
_declare(_user32, "SetMenuDefaultItem", BOOL, HANDLE, UINT, UINT)
_declare(_user32, "DestroyMenu", BOOL, HANDLE)
_declare(_user32, "TrackPopupMenu", BOOL, HANDLE, UINT, INT, INT, INT, HANDLE, _VOIDP)
_declare(_user32, "EndMenu", BOOL)
_declare(_user32, "SetForegroundWindow", BOOL, HANDLE)
_declare(_user32, "CreateIconIndirect", HANDLE, _P(ICONINFO))
_declare(_user32, "DestroyIcon", BOOL, HANDLE)
_declare(_user32, "GetSystemMetrics", INT, INT)
_declare(_user32, "RegisterPowerSettingNotification", HANDLE, HANDLE, _P(GUID), DWORD)
_declare(_user32, "UnregisterPowerSettingNotification", BOOL, HANDLE)
_declare(_shell32, "Shell_NotifyIconW", BOOL, DWORD, _P(NOTIFYICONDATAW))
_declare(_gdi32, "CreateDIBSection", HANDLE,
         HANDLE, _P(BITMAPINFO), UINT, _P(_VOIDP), HANDLE, DWORD)
_declare(_gdi32, "CreateBitmap", HANDLE, INT, INT, UINT, UINT, _VOIDP)
_declare(_gdi32, "DeleteObject", BOOL, HANDLE)
_declare(_kernel32, "GetModuleHandleW", HANDLE, _WSTR)
_declare(_wtsapi32, "WTSRegisterSessionNotification", BOOL, HANDLE, DWORD)
_declare(_wtsapi32, "WTSUnRegisterSessionNotification", BOOL, HANDLE)
# fmt: on

_APPLY_MESSAGE_NAME = "Rigway.NotifyIcon.Apply"
_TASKBAR_CREATED_NAME = "TaskbarCreated"
_FALLBACK_ICON_SIZE_PX = 16
_MAX_PENDING_NOTICES = 8
_MAX_POWER_DATA_BYTES = 64
_class_numbers = itertools.count(1)


def _last_error(what: str) -> OSError:
    error = ctypes.get_last_error()
    return OSError(error, f"{what} failed: {ctypes.FormatError(error)}")


def _post(hwnd: int, message: int) -> bool:
    return bool(_user32.PostMessageW(hwnd, message, 0, 0))


def _shell_notify(message: int, data: NOTIFYICONDATAW) -> bool:
    return bool(_shell32.Shell_NotifyIconW(message, ctypes.byref(data)))


def _register_message(name: str) -> int:
    number: int = _user32.RegisterWindowMessageW(name)
    return number


def _create_icon(bitmaps: IconBitmaps) -> int:
    """An HICON from `bitmaps` (the caller destroys it). CreateIconIndirect copies both
    bitmaps, so they are deleted here."""
    info = colour_bitmap_info(bitmaps.width, bitmaps.height)
    bits = _VOIDP()
    colour = _gdi32.CreateDIBSection(
        None, ctypes.byref(info), _C["DIB_RGB_COLORS"], ctypes.byref(bits), None, 0
    )
    if not colour or bits.value is None:
        raise _last_error("CreateDIBSection")
    try:
        ctypes.memmove(bits.value, bitmaps.colour_bgra, len(bitmaps.colour_bgra))
        mask_bits = ctypes.create_string_buffer(bitmaps.mask, len(bitmaps.mask))
        mask = _gdi32.CreateBitmap(bitmaps.width, bitmaps.height, 1, 1, mask_bits)
        if not mask:
            raise _last_error("CreateBitmap")
        try:
            icon_info = ICONINFO(fIcon=1, xHotspot=0, yHotspot=0, hbmMask=mask, hbmColor=colour)
            icon: int | None = _user32.CreateIconIndirect(ctypes.byref(icon_info))
            if not icon:
                raise _last_error("CreateIconIndirect")
            return icon
        finally:
            _gdi32.DeleteObject(mask)
    finally:
        _gdi32.DeleteObject(colour)


def _pump_messages() -> None:
    """The thread's message loop, until WM_QUIT."""
    message = MSG()
    while True:
        result = _user32.GetMessageW(ctypes.byref(message), None, 0, 0)
        if result == 0:
            return
        if result == -1:
            raise _last_error("GetMessageW")
        _user32.TranslateMessage(ctypes.byref(message))
        _user32.DispatchMessageW(ctypes.byref(message))


@dataclass(frozen=True, slots=True)
class _PostTarget:
    hwnd: int
    apply_message: int


class NotifyIconTray:
    """`StartableTrayView` over Shell_NotifyIconW. `on_menu`, `on_display_power` (True:
    the console display is on or dimmed) and `on_session_lock` (True: locked) are called
    on the tray thread; the last two only when given."""

    def __init__(
        self,
        first: TrayPresentation,
        on_menu: Callable[[TrayAction], None],
        *,
        on_display_power: Callable[[bool], None] | None = None,
        on_session_lock: Callable[[bool], None] | None = None,
    ) -> None:
        self.on_menu = on_menu
        self.on_display_power = on_display_power
        self.on_session_lock = on_session_lock
        self._lock = threading.Lock()
        self._presentation = first
        self._notices: deque[str] = deque(maxlen=_MAX_PENDING_NOTICES)
        self._target: _PostTarget | None = None
        self._stop_requested = False
        self._thread = threading.Thread(target=self._run, name="rigway-tray", daemon=False)

    def start(self) -> None:
        self._thread.start()

    def show(self, presentation: TrayPresentation) -> None:
        with self._lock:
            self._presentation = presentation
            target = self._target
        # Before the window exists it is shown with the latest presentation anyway.
        if target is not None:
            _post(target.hwnd, target.apply_message)

    def notify(self, message: str) -> None:
        with self._lock:
            self._notices.append(message)
            target = self._target
        if target is not None:
            _post(target.hwnd, target.apply_message)

    def stop(self) -> None:
        with self._lock:
            self._stop_requested = True
            target = self._target
        if target is not None:
            _post(target.hwnd, _C["WM_CLOSE"])

    def join(self, timeout_s: float) -> bool:
        """Wait for the tray thread; True when it ended (or never started)."""
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    # ---- for the window, on the tray thread ---------------------------------------------

    def latest(self) -> TrayPresentation:
        with self._lock:
            return self._presentation

    def take_notices(self) -> list[str]:
        with self._lock:
            notices = list(self._notices)
            self._notices.clear()
        return notices

    def window_opened(self, target: _PostTarget) -> bool:
        """Publish the window for other threads; False when a stop came first."""
        with self._lock:
            self._target = target
            return not self._stop_requested

    def window_closing(self) -> None:
        with self._lock:
            self._target = None

    def _run(self) -> None:
        with self._lock:
            if self._stop_requested:
                return
        window = _IconWindow(self)
        try:
            window.open()
            if self.window_opened(_PostTarget(window.hwnd, window.messages.apply)):
                window.apply()
            else:
                window.close()
            _pump_messages()
        except Exception:
            _log.exception("the tray icon failed; the console remains the owner's kill path")
        finally:
            self.window_closing()
            window.release()


class _IconWindow:
    """The hidden window, its icon and its notifications; used on the tray thread only."""

    def __init__(self, tray: NotifyIconTray) -> None:
        self._tray = tray
        self._class_name = f"Rigway.NotifyIcon.{next(_class_numbers)}"
        self._instance: int | None = _kernel32.GetModuleHandleW(None)
        # Referenced for the window's life: Windows calls it until the class is gone.
        self._procedure = _WNDPROC(self._window_procedure)
        self._class_registered = False
        self.hwnd = 0
        self.messages = WindowMessages(apply=0, taskbar_created=0)
        self._icon_size_px = _FALLBACK_ICON_SIZE_PX
        self._hicon: int | None = None
        self._icon_state: IconState | None = None
        self._icon_added = False
        self._session_registered = False
        self._power_notification: int | None = None
        self._menu_open = False
        self._close_pending = False

    def open(self) -> None:
        self.messages = WindowMessages(
            apply=_register_message(_APPLY_MESSAGE_NAME),
            taskbar_created=_register_message(_TASKBAR_CREATED_NAME),
        )
        if self.messages.apply == 0:
            raise _last_error("RegisterWindowMessageW")
        window_class = WNDCLASSEXW(
            cbSize=ctypes.sizeof(WNDCLASSEXW),
            lpfnWndProc=ctypes.cast(self._procedure, _VOIDP).value,
            hInstance=self._instance,
            lpszClassName=self._class_name,
        )
        if not _user32.RegisterClassExW(ctypes.byref(window_class)):
            raise _last_error("RegisterClassExW")
        self._class_registered = True
        hwnd: int | None = _user32.CreateWindowExW(
            _C["WS_EX_TOOLWINDOW"],
            self._class_name,
            "Rigway tray",
            _C["WS_OVERLAPPED"],
            0,
            0,
            0,
            0,
            None,
            None,
            self._instance,
            None,
        )
        if not hwnd:
            raise _last_error("CreateWindowExW")
        self.hwnd = hwnd
        # Explorer runs at medium integrity; an elevated agent would not receive its
        # broadcast without this (UIPI).
        if self.messages.taskbar_created and not _user32.ChangeWindowMessageFilterEx(
            hwnd, self.messages.taskbar_created, _C["MSGFLT_ALLOW"], None
        ):
            _log.warning(
                "TaskbarCreated stays filtered: %s", _last_error("ChangeWindowMessageFilterEx")
            )
        size: int = _user32.GetSystemMetrics(_C["SM_CXSMICON"])
        self._icon_size_px = size if size > 0 else _FALLBACK_ICON_SIZE_PX
        self._register_notifications()

    def close(self) -> None:
        if self._menu_open:
            # DestroyWindow under an open menu's modal loop is not safe: end the menu
            # first; the window goes when TrackPopupMenu returns.
            self._close_pending = True
            _user32.EndMenu()
        elif self.hwnd:
            _user32.DestroyWindow(self.hwnd)

    def release(self) -> None:
        """After the loop: whatever is left (all of it when the loop failed)."""
        if self.hwnd:
            _user32.DestroyWindow(self.hwnd)
        if self._hicon is not None:
            _user32.DestroyIcon(self._hicon)
            self._hicon = None
        if self._class_registered:
            _user32.UnregisterClassW(self._class_name, self._instance)
            self._class_registered = False

    def apply(self) -> None:
        """Show the latest presentation (adding the icon if it is not there) and the
        notices waiting."""
        presentation = self._tray.latest()
        replaced = None
        if self._hicon is None or presentation.icon is not self._icon_state:
            bitmaps = prepare_icon(draw_icon(presentation.icon), self._icon_size_px)
            replaced, self._hicon = self._hicon, _create_icon(bitmaps)
            self._icon_state = presentation.icon
        flags = _C["NIF_MESSAGE"] | _C["NIF_ICON"] | _C["NIF_TIP"] | _C["NIF_SHOWTIP"]
        data = icon_data(self.hwnd, flags, hicon=self._hicon, tip=presentation.tooltip)
        # A failed modify means the icon is gone (Explorer died and has not said so yet).
        if not (self._icon_added and _shell_notify(_C["NIM_MODIFY"], data)):
            self._add(data)
        if replaced is not None:
            _user32.DestroyIcon(replaced)
        for notice in self._tray.take_notices():
            if self._icon_added:
                balloon = icon_data(self.hwnd, _C["NIF_INFO"], info=notice, info_title="Rigway")
                _shell_notify(_C["NIM_MODIFY"], balloon)

    def _add(self, data: NOTIFYICONDATAW) -> None:
        self._icon_added = _shell_notify(_C["NIM_ADD"], data)
        if not self._icon_added:
            # At logon the taskbar may not exist yet; TaskbarCreated brings the icon.
            _log.info("no notification area for the tray icon yet: %s", _last_error("NIM_ADD"))
            return
        version = icon_data(self.hwnd, version=_C["NOTIFYICON_VERSION_4"])
        if not _shell_notify(_C["NIM_SETVERSION"], version):
            _log.warning("the tray icon keeps the old callbacks: %s", _last_error("NIM_SETVERSION"))

    def _register_notifications(self) -> None:
        if self._tray.on_session_lock is not None:
            self._session_registered = bool(
                _wtsapi32.WTSRegisterSessionNotification(self.hwnd, _C["NOTIFY_FOR_THIS_SESSION"])
            )
            if not self._session_registered:
                _log.warning(
                    "no session lock notifications: %s",
                    _last_error("WTSRegisterSessionNotification"),
                )
        if self._tray.on_display_power is not None:
            guid = GUID.from_buffer_copy(GUID_CONSOLE_DISPLAY_STATE.bytes_le)
            self._power_notification = _user32.RegisterPowerSettingNotification(
                self.hwnd, ctypes.byref(guid), _C["DEVICE_NOTIFY_WINDOW_HANDLE"]
            )
            if not self._power_notification:
                _log.warning(
                    "no display power notifications: %s",
                    _last_error("RegisterPowerSettingNotification"),
                )

    def _unregister_notifications(self) -> None:
        if self._session_registered:
            _wtsapi32.WTSUnRegisterSessionNotification(self.hwnd)
            self._session_registered = False
        if self._power_notification:
            _user32.UnregisterPowerSettingNotification(self._power_notification)
            self._power_notification = None

    # ---- the window procedure ------------------------------------------------------------

    def _window_procedure(self, hwnd: int | None, message: int, wparam: int, lparam: int) -> int:
        try:
            result = self._handle(message, wparam, lparam)
        except Exception:  # never let an exception unwind into user32
            _log.exception("the tray window failed on message %#x", message)
            result = None
        if result is None:
            default: int = _user32.DefWindowProcW(hwnd, message, wparam, lparam)
            return default
        return result

    def _handle(self, message: int, wparam: int, lparam: int) -> int | None:
        """The message's result, or None for DefWindowProcW's."""
        match classify_message(message, wparam, lparam, self.messages):
            case TrayEvent.APPLY:
                self.apply()
            case TrayEvent.TASKBAR_CREATED:
                self._icon_added = False
                self.apply()
            case TrayEvent.SHOW_MENU:
                self._show_menu(*anchor_point(wparam))
            case TrayEvent.DEFAULT_ACTION:
                default = plan_menu(self._tray.latest().entries).default_action
                if default is not None:
                    self._tray.on_menu(default)
            case TrayEvent.SESSION_CHANGE:
                self._session_changed(wparam)
            case TrayEvent.POWER_SETTING:
                self._power_setting_changed(lparam)
                return 1  # TRUE: the broadcast was handled
            case TrayEvent.CLOSE:
                self.close()
            case TrayEvent.DESTROY:
                self._destroyed()
            case TrayEvent.IGNORED:
                pass
            case TrayEvent.UNHANDLED:
                return None
        return 0

    def _show_menu(self, x: int, y: int) -> None:
        plan = plan_menu(self._tray.latest().entries)
        menu: int | None = _user32.CreatePopupMenu()
        if not menu:
            raise _last_error("CreatePopupMenu")
        try:
            for item in plan.items:
                label = item.label if item.command_id else None
                _user32.AppendMenuW(menu, item.flags, item.command_id, label)
            if plan.default_command_id is not None:
                _user32.SetMenuDefaultItem(menu, plan.default_command_id, 0)
            # Without the foreground the menu would not close on a click elsewhere.
            _user32.SetForegroundWindow(self.hwnd)
            flags = _C["TPM_RIGHTBUTTON"] | _C["TPM_BOTTOMALIGN"]
            flags |= _C["TPM_RETURNCMD"] | _C["TPM_NONOTIFY"]
            self._menu_open = True
            try:
                chosen: int = _user32.TrackPopupMenu(menu, flags, x, y, 0, self.hwnd, None)
            finally:
                self._menu_open = False
            # The task switch that lets the menu open again the next time.
            _post(self.hwnd, _C["WM_NULL"])
        finally:
            _user32.DestroyMenu(menu)
        if self._close_pending:
            _user32.DestroyWindow(self.hwnd)
            return
        action = plan.action_for(chosen)
        if action is not None:
            self._tray.on_menu(action)

    def _session_changed(self, wparam: int) -> None:
        change = decode_session_change(wparam)
        if change is not None and self._tray.on_session_lock is not None:
            self._tray.on_session_lock(change == "locked")

    def _power_setting_changed(self, lparam: int) -> None:
        if not lparam or self._tray.on_display_power is None:
            return
        guid_bytes, data_length = split_power_setting(
            ctypes.string_at(lparam, POWERBROADCAST_SETTING.Data.offset)
        )
        # The display state is one DWORD; a longer setting is not ours to read whole.
        data_length = min(data_length, _MAX_POWER_DATA_BYTES)
        data_bytes = ctypes.string_at(lparam + POWERBROADCAST_SETTING.Data.offset, data_length)
        power = decode_power_setting(guid_bytes, data_bytes)
        if power is not None:
            self._tray.on_display_power(power.is_on)

    def _destroyed(self) -> None:
        try:
            self._tray.window_closing()
            if self._icon_added:
                _shell_notify(_C["NIM_DELETE"], icon_data(self.hwnd))
                self._icon_added = False
            self._unregister_notifications()
        finally:
            self.hwnd = 0
            _user32.PostQuitMessage(0)
