"""The notification-area icon's Win32 side, as pure logic: layouts, constants, decisions.

`_tray.py` draws the owner's tray with Shell_NotifyIconW on a hidden window of its own;
everything it decides without calling Windows is here, tested on Linux:

- the layouts it passes (NOTIFYICONDATAW in its Vista+ form, WNDCLASSEXW, MSG,
  ICONINFO, POWERBROADCAST_SETTING, GUID) and the constants it uses, declared in `ABI`;
- which of the window's messages means what (`classify_message`): with
  NOTIFYICON_VERSION_4 the icon's callback carries the event in LOWORD(lParam) and the
  anchor point in wParam; the menu opens on WM_CONTEXTMENU (a right click, or the menu
  key on a focused icon), a left click (NIN_SELECT) runs the default item;
- the popup menu to build from the tray's entries and which command id is which action
  (`plan_menu`);
- what the session and power notifications say (`decode_session_change`,
  `decode_power_setting`);
- the icon's bitmaps from a Pillow image (`prepare_icon`): straight-alpha BGRA rows, top
  down, for a 32-bit DIB section, and the monochrome AND mask that CreateIconIndirect
  still requires (https://devblogs.microsoft.com/oldnewthing/20101021-00/?p=12483).

GUID_CONSOLE_DISPLAY_STATE is a GUID value, which the ABI declarations cannot express
(they hold integers, layouts and interface ids); this module's tests compare it with the
DEFINE_GUID line of mingw-w64's winnt.h instead.
"""

from __future__ import annotations

import ctypes
import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from PIL import Image

from rigway.agent.backends.windows._ctypes_types import (
    BOOL,
    BYTE,
    DWORD,
    HANDLE,
    INT,
    POINT,
    UINT,
    WORD,
)
from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.gdi_types import BITMAPINFO
from rigway.agent.backends.windows.tray import MenuEntry, TrayAction

__all__ = [
    "ABI",
    "CONSTANTS",
    "GUID",
    "GUID_CONSOLE_DISPLAY_STATE",
    "ICONINFO",
    "ICON_CALLBACK_MESSAGE",
    "ICON_ID",
    "LPARAM",
    "LRESULT",
    "MASK_OPAQUE_FROM_ALPHA",
    "MSG",
    "NOTIFYICONDATAW",
    "POWERBROADCAST_SETTING",
    "WNDCLASSEXW",
    "WPARAM",
    "DisplayPower",
    "IconBitmaps",
    "MenuItem",
    "MenuPlan",
    "SessionChange",
    "TrayEvent",
    "WindowMessages",
    "anchor_point",
    "classify_message",
    "colour_bitmap_info",
    "command_id",
    "decode_power_setting",
    "decode_session_change",
    "icon_data",
    "plan_menu",
    "prepare_icon",
    "split_power_setting",
    "utf16_units",
]

CONSTANTS: Final[Mapping[str, int]] = {
    # shellapi.h
    "NIM_ADD": 0x0,
    "NIM_MODIFY": 0x1,
    "NIM_DELETE": 0x2,
    "NIM_SETVERSION": 0x4,
    "NIF_MESSAGE": 0x1,
    "NIF_ICON": 0x2,
    "NIF_TIP": 0x4,
    "NIF_INFO": 0x10,
    "NIF_SHOWTIP": 0x80,
    "NIIF_WARNING": 0x2,
    "NOTIFYICON_VERSION_4": 4,
    "NIN_SELECT": 0x400,
    "NIN_KEYSELECT": 0x401,
    # winuser.h: messages
    "WM_NULL": 0x0000,
    "WM_DESTROY": 0x0002,
    "WM_CLOSE": 0x0010,
    "WM_CONTEXTMENU": 0x007B,
    "WM_LBUTTONUP": 0x0202,
    "WM_RBUTTONUP": 0x0205,
    "WM_POWERBROADCAST": 0x0218,
    "WM_WTSSESSION_CHANGE": 0x02B1,
    "WM_USER": 0x0400,
    "WM_APP": 0x8000,
    "PBT_POWERSETTINGCHANGE": 0x8013,
    "WTS_SESSION_LOCK": 0x7,
    "WTS_SESSION_UNLOCK": 0x8,
    "DEVICE_NOTIFY_WINDOW_HANDLE": 0x0,
    "MSGFLT_ALLOW": 1,
    # winuser.h: the window, the menu, the icon size
    "WS_OVERLAPPED": 0x0,
    "WS_EX_TOOLWINDOW": 0x80,
    "MF_STRING": 0x0,
    "MF_GRAYED": 0x1,
    "MF_SEPARATOR": 0x800,
    "TPM_RIGHTBUTTON": 0x2,
    "TPM_BOTTOMALIGN": 0x20,
    "TPM_NONOTIFY": 0x80,
    "TPM_RETURNCMD": 0x100,
    "SM_CXSMICON": 49,
    # wingdi.h
    "BI_RGB": 0,
    "DIB_RGB_COLORS": 0,
    # wtsapi32.h
    "NOTIFY_FOR_THIS_SESSION": 0,
}

# The display power setting (winnt.h): its data is a DWORD, 0 off, 1 on, 2 dimmed
# (https://learn.microsoft.com/windows/win32/power/power-setting-guids).
GUID_CONSOLE_DISPLAY_STATE: Final = uuid.UUID("6fe69556-704a-47a0-8f24-c28d936fda47")

# The icon's callback message: WM_APP's range belongs to the window's own class.
ICON_CALLBACK_MESSAGE: Final = CONSTANTS["WM_APP"] + 1
# The one icon the window owns (with hWnd, it names the icon to the shell).
ICON_ID: Final = 1
# A pixel at least this opaque is opaque in the AND mask (used where alpha is not).
MASK_OPAQUE_FROM_ALPHA: Final = 128

WCHAR = ctypes.c_uint16
WPARAM = ctypes.c_size_t
LPARAM = ctypes.c_ssize_t
LRESULT = ctypes.c_ssize_t
_TIP_CHARS = 128
_INFO_CHARS = 256
_INFO_TITLE_CHARS = 64


class GUID(ctypes.Structure):
    _fields_ = (("Data1", DWORD), ("Data2", WORD), ("Data3", WORD), ("Data4", BYTE * 8))


class _NOTIFYICONDATAW_TIMEOUT_OR_VERSION(ctypes.Union):
    _fields_ = (("uTimeout", UINT), ("uVersion", UINT))


class NOTIFYICONDATAW(ctypes.Structure):
    """The full Vista+ layout (hBalloonIcon included): NOTIFYICON_VERSION_4 needs it."""

    _anonymous_ = ("DUMMYUNIONNAME",)
    _fields_ = (
        ("cbSize", DWORD),
        ("hWnd", HANDLE),
        ("uID", UINT),
        ("uFlags", UINT),
        ("uCallbackMessage", UINT),
        ("hIcon", HANDLE),
        ("szTip", WCHAR * _TIP_CHARS),
        ("dwState", DWORD),
        ("dwStateMask", DWORD),
        ("szInfo", WCHAR * _INFO_CHARS),
        ("DUMMYUNIONNAME", _NOTIFYICONDATAW_TIMEOUT_OR_VERSION),
        ("szInfoTitle", WCHAR * _INFO_TITLE_CHARS),
        ("dwInfoFlags", DWORD),
        ("guidItem", GUID),
        ("hBalloonIcon", HANDLE),
    )


class WNDCLASSEXW(ctypes.Structure):
    # lpfnWndProc: the binding's WINFUNCTYPE callback, as its address.
    _fields_ = (
        ("cbSize", UINT),
        ("style", UINT),
        ("lpfnWndProc", ctypes.c_void_p),
        ("cbClsExtra", INT),
        ("cbWndExtra", INT),
        ("hInstance", HANDLE),
        ("hIcon", HANDLE),
        ("hCursor", HANDLE),
        ("hbrBackground", HANDLE),
        ("lpszMenuName", ctypes.c_wchar_p),
        ("lpszClassName", ctypes.c_wchar_p),
        ("hIconSm", HANDLE),
    )


class MSG(ctypes.Structure):
    _fields_ = (
        ("hwnd", HANDLE),
        ("message", UINT),
        ("wParam", WPARAM),
        ("lParam", LPARAM),
        ("time", DWORD),
        ("pt", POINT),
    )


class ICONINFO(ctypes.Structure):
    _fields_ = (
        ("fIcon", BOOL),
        ("xHotspot", DWORD),
        ("yHotspot", DWORD),
        ("hbmMask", HANDLE),
        ("hbmColor", HANDLE),
    )


class POWERBROADCAST_SETTING(ctypes.Structure):
    # Data is DataLength bytes long; C declares its first byte only.
    _fields_ = (("PowerSetting", GUID), ("DataLength", DWORD), ("Data", BYTE * 1))


ABI = AbiDeclarations(
    structs=(GUID, NOTIFYICONDATAW, WNDCLASSEXW, MSG, ICONINFO, POWERBROADCAST_SETTING),
    constants=CONSTANTS,
    headers=("windows.h", "shellapi.h", "wtsapi32.h"),
)


# ---- text ---------------------------------------------------------------------------


def utf16_units(text: str, capacity: int) -> list[int]:
    """`text` as UTF-16 code units, cut to leave room for the terminating NUL of a
    `capacity`-unit WCHAR array, never between the halves of a surrogate pair."""
    encoded = text.encode("utf-16-le")
    units = [int.from_bytes(encoded[i : i + 2], "little") for i in range(0, len(encoded), 2)]
    units = units[: max(capacity - 1, 0)]
    if units and 0xD800 <= units[-1] <= 0xDBFF:  # a high surrogate whose pair was cut
        units.pop()
    return units


def _put_text(array: ctypes.Array[ctypes.c_uint16], text: str) -> None:
    units = utf16_units(text, len(array))
    for index, unit in enumerate(units):
        array[index] = unit
    array[len(units)] = 0


def icon_data(
    hwnd: int,
    flags: int = 0,
    *,
    hicon: int | None = None,
    tip: str | None = None,
    info: str | None = None,
    info_title: str = "",
    version: int | None = None,
) -> NOTIFYICONDATAW:
    """A NOTIFYICONDATAW for the window's one icon; the callback message is set with
    NIF_MESSAGE, the texts are cut to their arrays."""
    data = NOTIFYICONDATAW()
    data.cbSize = ctypes.sizeof(NOTIFYICONDATAW)
    data.hWnd = hwnd
    data.uID = ICON_ID
    data.uFlags = flags
    if flags & CONSTANTS["NIF_MESSAGE"]:
        data.uCallbackMessage = ICON_CALLBACK_MESSAGE
    data.hIcon = hicon
    if tip is not None:
        _put_text(data.szTip, tip)
    if info is not None:
        _put_text(data.szInfo, info)
        _put_text(data.szInfoTitle, info_title)
        data.dwInfoFlags = CONSTANTS["NIIF_WARNING"]
    if version is not None:
        data.uVersion = version
    return data


# ---- the window's messages ----------------------------------------------------------


class TrayEvent(enum.Enum):
    SHOW_MENU = "show_menu"
    DEFAULT_ACTION = "default_action"
    APPLY = "apply"  # our private message: show the latest state
    TASKBAR_CREATED = "taskbar_created"  # Explorer (re)started: add the icon again
    SESSION_CHANGE = "session_change"
    POWER_SETTING = "power_setting"
    CLOSE = "close"
    DESTROY = "destroy"
    IGNORED = "ignored"  # the icon's other callbacks: handled by doing nothing
    UNHANDLED = "unhandled"  # DefWindowProcW's


@dataclass(frozen=True, slots=True)
class WindowMessages:
    """The message numbers known only at run time (0: RegisterWindowMessageW failed)."""

    apply: int
    taskbar_created: int


def classify_message(message: int, wparam: int, lparam: int, ids: WindowMessages) -> TrayEvent:
    """What a message to the tray's window asks for."""
    if message == ICON_CALLBACK_MESSAGE:
        return _icon_event(lparam & 0xFFFF)
    if ids.apply != 0 and message == ids.apply:
        return TrayEvent.APPLY
    if ids.taskbar_created != 0 and message == ids.taskbar_created:
        return TrayEvent.TASKBAR_CREATED
    if message == CONSTANTS["WM_WTSSESSION_CHANGE"]:
        return TrayEvent.SESSION_CHANGE
    if message == CONSTANTS["WM_POWERBROADCAST"] and wparam == CONSTANTS["PBT_POWERSETTINGCHANGE"]:
        return TrayEvent.POWER_SETTING
    if message == CONSTANTS["WM_CLOSE"]:
        return TrayEvent.CLOSE
    if message == CONSTANTS["WM_DESTROY"]:
        return TrayEvent.DESTROY
    return TrayEvent.UNHANDLED


def _icon_event(event: int) -> TrayEvent:
    # Version 4 still forwards the raw mouse messages; WM_CONTEXTMENU follows a right
    # button release, so showing the menu on both would show it twice. NIN_KEYSELECT is
    # left alone: Enter on a focused icon sends it twice, and the menu key already
    # sends WM_CONTEXTMENU.
    if event == CONSTANTS["WM_CONTEXTMENU"]:
        return TrayEvent.SHOW_MENU
    if event == CONSTANTS["NIN_SELECT"]:
        return TrayEvent.DEFAULT_ACTION
    return TrayEvent.IGNORED


def anchor_point(wparam: int) -> tuple[int, int]:
    """The screen point a version-4 icon callback carries in wParam (signed 16-bit
    x and y: a monitor left of or above the primary has negative coordinates)."""

    def signed16(value: int) -> int:
        value &= 0xFFFF
        return value - 0x10000 if value & 0x8000 else value

    return signed16(wparam), signed16(wparam >> 16)


# ---- the menu -----------------------------------------------------------------------


def command_id(action: TrayAction) -> int:
    """A menu command's id: fixed per action, from 1 (TrackPopupMenu's 0 is no choice)."""
    return list(TrayAction).index(action) + 1


@dataclass(frozen=True, slots=True)
class MenuItem:
    """One AppendMenuW call: a separator has command id 0 and no label."""

    command_id: int
    label: str
    flags: int


@dataclass(frozen=True, slots=True)
class MenuPlan:
    items: tuple[MenuItem, ...]
    actions: Mapping[int, TrayAction] = field(default_factory=dict)
    # The bold item, run by a left click on the icon; None while it is not available.
    default_action: TrayAction | None = None

    @property
    def default_command_id(self) -> int | None:
        return None if self.default_action is None else command_id(self.default_action)

    def action_for(self, chosen_id: int) -> TrayAction | None:
        return self.actions.get(chosen_id)


def plan_menu(
    entries: Sequence[MenuEntry], default: TrayAction = TrayAction.OPEN_CONSOLE
) -> MenuPlan:
    """The popup menu of the visible entries, in order, a separator after "End session"
    (the one destructive item), greyed where disabled; `default` is the default item
    when it is shown and enabled."""
    shown = [entry for entry in entries if entry.visible]
    items: list[MenuItem] = []
    actions: dict[int, TrayAction] = {}
    for index, entry in enumerate(shown):
        flags = CONSTANTS["MF_STRING"] | (0 if entry.enabled else CONSTANTS["MF_GRAYED"])
        # A lone "&" would underline the next letter as a mnemonic.
        items.append(MenuItem(command_id(entry.action), entry.label.replace("&", "&&"), flags))
        if entry.enabled:
            actions[command_id(entry.action)] = entry.action
        if entry.action is TrayAction.END_SESSION and index < len(shown) - 1:
            items.append(MenuItem(0, "", CONSTANTS["MF_SEPARATOR"]))
    default_action = default if command_id(default) in actions else None
    return MenuPlan(tuple(items), actions, default_action)


# ---- notifications ------------------------------------------------------------------

SessionChange = Literal["locked", "unlocked"]


def decode_session_change(wparam: int) -> SessionChange | None:
    """WM_WTSSESSION_CHANGE's event; None for the others (connects, logons...)."""
    if wparam == CONSTANTS["WTS_SESSION_LOCK"]:
        return "locked"
    if wparam == CONSTANTS["WTS_SESSION_UNLOCK"]:
        return "unlocked"
    return None


class DisplayPower(enum.Enum):
    OFF = 0
    ON = 1
    DIMMED = 2

    @property
    def is_on(self) -> bool:
        """A dimmed display still shows the desktop."""
        return self is not DisplayPower.OFF


def split_power_setting(header: bytes) -> tuple[bytes, int]:
    """A POWERBROADCAST_SETTING's first bytes (up to its Data) → (the setting's GUID as
    it lies in memory, DataLength)."""
    data_offset = POWERBROADCAST_SETTING.Data.offset
    if len(header) < data_offset:
        raise ValueError(f"a POWERBROADCAST_SETTING header is {data_offset} bytes")
    length_offset = POWERBROADCAST_SETTING.DataLength.offset
    guid_size = ctypes.sizeof(GUID)
    return header[:guid_size], int.from_bytes(header[length_offset:data_offset], "little")


def decode_power_setting(guid_bytes: bytes, data: bytes) -> DisplayPower | None:
    """The console display's power from a PBT_POWERSETTINGCHANGE, or None when the
    setting is another one or its data is not a known DWORD."""
    if guid_bytes != GUID_CONSOLE_DISPLAY_STATE.bytes_le or len(data) < 4:
        return None
    value = int.from_bytes(data[:4], "little")
    try:
        return DisplayPower(value)
    except ValueError:
        return None


# ---- the icon -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IconBitmaps:
    """An icon's two bitmaps: `colour_bgra` is `height` top-down rows of `width` BGRA
    pixels, straight (not premultiplied) alpha, as icons hold it; `mask` is the
    monochrome AND mask for CreateBitmap, rows of `mask_stride` bytes (a whole number
    of 16-bit words), most significant bit leftmost, 1 where the pixel is transparent."""

    width: int
    height: int
    colour_bgra: bytes
    mask: bytes
    mask_stride: int


def prepare_icon(image: Image.Image, size_px: int | None = None) -> IconBitmaps:
    """`image` (any mode) as an icon's bitmaps, resized to `size_px` square if given."""
    rgba = image.convert("RGBA")
    if size_px is not None and rgba.size != (size_px, size_px):
        # Pillow resamples RGBA premultiplied, so transparent pixels do not bleed in.
        rgba = rgba.resize((size_px, size_px), Image.Resampling.LANCZOS)
    width, height = rgba.size
    colour = rgba.tobytes("raw", "BGRA")
    alpha = rgba.getchannel("A").tobytes()
    stride = (width + 15) // 16 * 2
    mask = bytearray(stride * height)
    for y in range(height):
        for x in range(width):
            if alpha[y * width + x] < MASK_OPAQUE_FROM_ALPHA:
                mask[y * stride + x // 8] |= 0x80 >> (x % 8)
    return IconBitmaps(width, height, colour, bytes(mask), stride)


def colour_bitmap_info(width: int, height: int) -> BITMAPINFO:
    """The BITMAPINFO of a 32-bit top-down DIB section (negative height) for an icon's
    colour bitmap: its fourth byte is the alpha the window manager blends with."""
    info = BITMAPINFO()
    header = info.bmiHeader
    header.biSize = ctypes.sizeof(header)
    header.biWidth = width
    header.biHeight = -height  # top-down
    header.biPlanes = 1
    header.biBitCount = 32
    header.biCompression = CONSTANTS["BI_RGB"]
    return info
