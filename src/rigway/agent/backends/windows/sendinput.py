"""SendInput's records, the constants around them, and builders of one operation's records.

Pure: importable and tested on Linux (the layouts are checked against the mingw-w64
headers through `ABI`). The binding (`_sendinput.py`) hands the built records to
`SendInput` as they are; everything that decides their fields is here.

Layout (x64): `INPUT` is a DWORD `type`, 4 bytes of padding, then a union of
MOUSEINPUT (32 bytes, the largest), KEYBDINPUT (24) and HARDWAREINPUT (8): 40 bytes.
SendInput refuses a `cbSize` other than `sizeof(INPUT)`, so the union must be complete
even though HARDWAREINPUT is never sent.

`MOUSEINPUT.mouseData` is a DWORD, as in C (the ABI test checks signedness too), so a
wheel turned towards the user (-120) is stored as its 32-bit two's complement;
`signed_mouse_data` reads it back.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping

from rigway.agent.backends.base import MouseButton
from rigway.agent.backends.windows._ctypes_types import DWORD, LONG, ULONG_PTR, WORD
from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = [
    "ABI",
    "ERROR_ACCESS_DENIED",
    "HARDWAREINPUT",
    "INPUT",
    "INPUT_KEYBOARD",
    "INPUT_MOUSE",
    "KEYBDINPUT",
    "KEYEVENTF_EXTENDEDKEY",
    "KEYEVENTF_KEYUP",
    "KEYEVENTF_SCANCODE",
    "KEYEVENTF_UNICODE",
    "MAPVK_VK_TO_VSC_EX",
    "MOUSEEVENTF_ABSOLUTE",
    "MOUSEEVENTF_HWHEEL",
    "MOUSEEVENTF_LEFTDOWN",
    "MOUSEEVENTF_LEFTUP",
    "MOUSEEVENTF_MIDDLEDOWN",
    "MOUSEEVENTF_MIDDLEUP",
    "MOUSEEVENTF_MOVE",
    "MOUSEEVENTF_RIGHTDOWN",
    "MOUSEEVENTF_RIGHTUP",
    "MOUSEEVENTF_VIRTUALDESK",
    "MOUSEEVENTF_WHEEL",
    "MOUSEINPUT",
    "PROCESS_QUERY_LIMITED_INFORMATION",
    "SECURITY_MANDATORY_HIGH_RID",
    "SECURITY_MANDATORY_LOW_RID",
    "SECURITY_MANDATORY_MEDIUM_RID",
    "SECURITY_MANDATORY_SYSTEM_RID",
    "SECURITY_MANDATORY_UNTRUSTED_RID",
    "SID_AND_ATTRIBUTES",
    "SM_CXVIRTUALSCREEN",
    "SM_CYVIRTUALSCREEN",
    "SM_XVIRTUALSCREEN",
    "SM_YVIRTUALSCREEN",
    "TOKEN_MANDATORY_LABEL",
    "TOKEN_QUERY",
    "WHEEL_DELTA",
    "TokenIntegrityLevel",
    "absolute_move",
    "button",
    "key",
    "signed_mouse_data",
    "unicode_unit",
    "wheel",
]

# ---- records -------------------------------------------------------------------------


class MOUSEINPUT(ctypes.Structure):
    _fields_ = (
        ("dx", LONG),
        ("dy", LONG),
        ("mouseData", DWORD),
        ("dwFlags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


class KEYBDINPUT(ctypes.Structure):
    _fields_ = (
        ("wVk", WORD),
        ("wScan", WORD),
        ("dwFlags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


class HARDWAREINPUT(ctypes.Structure):
    _fields_ = (("uMsg", DWORD), ("wParamL", WORD), ("wParamH", WORD))


class _INPUT_UNION(ctypes.Union):
    # Anonymous in C (no typedef name), so not listed in ABI.structs on its own: its
    # members are checked as INPUT's fields `mi`, `ki`, `hi`.
    _fields_ = (("mi", MOUSEINPUT), ("ki", KEYBDINPUT), ("hi", HARDWAREINPUT))


class INPUT(ctypes.Structure):
    _anonymous_ = ("DUMMYUNIONNAME",)
    _fields_ = (("type", DWORD), ("DUMMYUNIONNAME", _INPUT_UNION))


# TokenIntegrityLevel's answer: the label SID whose last sub-authority is the RID.
class SID_AND_ATTRIBUTES(ctypes.Structure):
    _fields_ = (("Sid", ctypes.c_void_p), ("Attributes", DWORD))


class TOKEN_MANDATORY_LABEL(ctypes.Structure):
    _fields_ = (("Label", SID_AND_ATTRIBUTES),)


# ---- constants (winuser.h, winnt.h) --------------------------------------------------

INPUT_MOUSE = 0
INPUT_KEYBOARD = 1

KEYEVENTF_EXTENDEDKEY = 0x0001
KEYEVENTF_KEYUP = 0x0002
KEYEVENTF_UNICODE = 0x0004
KEYEVENTF_SCANCODE = 0x0008

MOUSEEVENTF_MOVE = 0x0001
MOUSEEVENTF_LEFTDOWN = 0x0002
MOUSEEVENTF_LEFTUP = 0x0004
MOUSEEVENTF_RIGHTDOWN = 0x0008
MOUSEEVENTF_RIGHTUP = 0x0010
MOUSEEVENTF_MIDDLEDOWN = 0x0020
MOUSEEVENTF_MIDDLEUP = 0x0040
MOUSEEVENTF_WHEEL = 0x0800
MOUSEEVENTF_HWHEEL = 0x1000
MOUSEEVENTF_VIRTUALDESK = 0x4000
MOUSEEVENTF_ABSOLUTE = 0x8000

# One wheel notch; positive WHEEL is away from the user (up), positive HWHEEL is right.
WHEEL_DELTA = 120

SM_XVIRTUALSCREEN = 76
SM_YVIRTUALSCREEN = 77
SM_CXVIRTUALSCREEN = 78
SM_CYVIRTUALSCREEN = 79

# MapVirtualKeyW: the scan code, with 0xE0 / 0xE1 in the high byte for extended keys.
MAPVK_VK_TO_VSC_EX = 4

SECURITY_MANDATORY_UNTRUSTED_RID = 0x0000
SECURITY_MANDATORY_LOW_RID = 0x1000
SECURITY_MANDATORY_MEDIUM_RID = 0x2000
SECURITY_MANDATORY_HIGH_RID = 0x3000
SECURITY_MANDATORY_SYSTEM_RID = 0x4000

PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
TOKEN_QUERY = 0x0008
# TOKEN_INFORMATION_CLASS enumerator.
TokenIntegrityLevel = 25

# Win32 errors SendInput's callers see (winerror.h).
ERROR_ACCESS_DENIED = 5

_BUTTON_FLAGS: Mapping[MouseButton, tuple[int, int]] = {
    "left": (MOUSEEVENTF_LEFTDOWN, MOUSEEVENTF_LEFTUP),
    "right": (MOUSEEVENTF_RIGHTDOWN, MOUSEEVENTF_RIGHTUP),
    "middle": (MOUSEEVENTF_MIDDLEDOWN, MOUSEEVENTF_MIDDLEUP),
}

# ---- builders ------------------------------------------------------------------------


def _mouse(dx: int, dy: int, mouse_data: int, flags: int) -> INPUT:
    record = INPUT(type=INPUT_MOUSE)
    record.mi = MOUSEINPUT(dx=dx, dy=dy, mouseData=mouse_data & 0xFFFFFFFF, dwFlags=flags)
    return record


def signed_mouse_data(record: MOUSEINPUT) -> int:
    """`mouseData` as the signed wheel delta Windows reads it as."""
    value: int = record.mouseData
    return value - (1 << 32) if value & 0x80000000 else value


def _keyboard(vk: int, scan: int, flags: int) -> INPUT:
    record = INPUT(type=INPUT_KEYBOARD)
    record.ki = KEYBDINPUT(wVk=vk, wScan=scan, dwFlags=flags)
    return record


def absolute_move(dx: int, dy: int) -> INPUT:
    """Pointer to normalised (dx, dy), 0..65535 over the whole virtual desktop."""
    if not (0 <= dx <= 0xFFFF and 0 <= dy <= 0xFFFF):
        raise ValueError(f"absolute coordinates ({dx}, {dy}) outside 0..65535")
    flags = MOUSEEVENTF_MOVE | MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK
    return _mouse(dx, dy, 0, flags)


def button(which: MouseButton, down: bool) -> INPUT:
    """A button press or release where the pointer is. No ABSOLUTE flag: with it and
    dx = dy = 0, Windows would move the pointer to the desktop's top-left corner."""
    down_flag, up_flag = _BUTTON_FLAGS[which]
    return _mouse(0, 0, 0, down_flag if down else up_flag)


def wheel(notches: int, *, horizontal: bool) -> list[INPUT]:
    """One record per notch, each of one WHEEL_DELTA: applications that read any wheel
    message as a single notch still scroll by the full amount.

    Vertical: positive scrolls up (away from the user). Horizontal: positive scrolls
    right."""
    flag = MOUSEEVENTF_HWHEEL if horizontal else MOUSEEVENTF_WHEEL
    step = WHEEL_DELTA if notches > 0 else -WHEEL_DELTA
    return [_mouse(0, 0, step, flag) for _ in range(abs(notches))]


def key(vk: int, scan: int, *, extended: bool, down: bool) -> INPUT:
    """A virtual key with its scan code (raw-input readers and RDP see the scan code)."""
    if not (0 < vk <= 0xFE):
        raise ValueError(f"virtual-key code {vk:#x} outside 1..0xFE")
    flags = (KEYEVENTF_EXTENDEDKEY if extended else 0) | (0 if down else KEYEVENTF_KEYUP)
    return _keyboard(vk, scan & 0xFF, flags)


def unicode_unit(code_unit: int, *, down: bool) -> INPUT:
    """One UTF-16 code unit typed as text (wVk 0, KEYEVENTF_UNICODE; only KEYUP may be
    combined with it)."""
    if not (0 <= code_unit <= 0xFFFF):
        raise ValueError(f"{code_unit:#x} is not a UTF-16 code unit")
    return _keyboard(0, code_unit, KEYEVENTF_UNICODE | (0 if down else KEYEVENTF_KEYUP))


ABI = AbiDeclarations(
    structs=(
        MOUSEINPUT,
        KEYBDINPUT,
        HARDWAREINPUT,
        INPUT,
        SID_AND_ATTRIBUTES,
        TOKEN_MANDATORY_LABEL,
    ),
    constants={
        "INPUT_MOUSE": INPUT_MOUSE,
        "INPUT_KEYBOARD": INPUT_KEYBOARD,
        "KEYEVENTF_EXTENDEDKEY": KEYEVENTF_EXTENDEDKEY,
        "KEYEVENTF_KEYUP": KEYEVENTF_KEYUP,
        "KEYEVENTF_UNICODE": KEYEVENTF_UNICODE,
        "KEYEVENTF_SCANCODE": KEYEVENTF_SCANCODE,
        "MOUSEEVENTF_MOVE": MOUSEEVENTF_MOVE,
        "MOUSEEVENTF_LEFTDOWN": MOUSEEVENTF_LEFTDOWN,
        "MOUSEEVENTF_LEFTUP": MOUSEEVENTF_LEFTUP,
        "MOUSEEVENTF_RIGHTDOWN": MOUSEEVENTF_RIGHTDOWN,
        "MOUSEEVENTF_RIGHTUP": MOUSEEVENTF_RIGHTUP,
        "MOUSEEVENTF_MIDDLEDOWN": MOUSEEVENTF_MIDDLEDOWN,
        "MOUSEEVENTF_MIDDLEUP": MOUSEEVENTF_MIDDLEUP,
        "MOUSEEVENTF_WHEEL": MOUSEEVENTF_WHEEL,
        "MOUSEEVENTF_HWHEEL": MOUSEEVENTF_HWHEEL,
        "MOUSEEVENTF_VIRTUALDESK": MOUSEEVENTF_VIRTUALDESK,
        "MOUSEEVENTF_ABSOLUTE": MOUSEEVENTF_ABSOLUTE,
        "WHEEL_DELTA": WHEEL_DELTA,
        "SM_XVIRTUALSCREEN": SM_XVIRTUALSCREEN,
        "SM_YVIRTUALSCREEN": SM_YVIRTUALSCREEN,
        "SM_CXVIRTUALSCREEN": SM_CXVIRTUALSCREEN,
        "SM_CYVIRTUALSCREEN": SM_CYVIRTUALSCREEN,
        "MAPVK_VK_TO_VSC_EX": MAPVK_VK_TO_VSC_EX,
        "SECURITY_MANDATORY_UNTRUSTED_RID": SECURITY_MANDATORY_UNTRUSTED_RID,
        "SECURITY_MANDATORY_LOW_RID": SECURITY_MANDATORY_LOW_RID,
        "SECURITY_MANDATORY_MEDIUM_RID": SECURITY_MANDATORY_MEDIUM_RID,
        "SECURITY_MANDATORY_HIGH_RID": SECURITY_MANDATORY_HIGH_RID,
        "SECURITY_MANDATORY_SYSTEM_RID": SECURITY_MANDATORY_SYSTEM_RID,
        "PROCESS_QUERY_LIMITED_INFORMATION": PROCESS_QUERY_LIMITED_INFORMATION,
        "TOKEN_QUERY": TOKEN_QUERY,
        "TokenIntegrityLevel": TokenIntegrityLevel,
        "ERROR_ACCESS_DENIED": ERROR_ACCESS_DENIED,
    },
    headers=("windows.h",),
)
