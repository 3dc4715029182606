"""A fake `InputPort`: a US keyboard layout, a scriptable virtual desktop and integrity
levels, and a record of what SendInput was given, decoded back into events.

`FakeInputPort` also plays the part of Windows' input state: where the pointer is,
which virtual keys and buttons are down, what text arrived, so a test (or a backend
conformance suite) can ask what the input did rather than which records were built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rigway.agent.backends.base import MouseButton
from rigway.agent.backends.windows import sendinput as si
from rigway.agent.backends.windows.geometry import VirtualDesk
from rigway.agent.backends.windows.sendinput import INPUT

__all__ = [
    "US_KEY_SCAN",
    "US_SCAN_CODES",
    "ButtonEvent",
    "Decoded",
    "FakeInputPort",
    "KeyEvent",
    "MoveEvent",
    "Region",
    "UnicodeEvent",
    "WheelEvent",
    "decode",
]


@dataclass(frozen=True, slots=True)
class MoveEvent:
    """The pointer sent to virtual-screen pixel (x, y)."""

    x: int
    y: int


@dataclass(frozen=True, slots=True)
class ButtonEvent:
    button: MouseButton
    down: bool


@dataclass(frozen=True, slots=True)
class WheelEvent:
    delta: int  # signed, in WHEEL_DELTA units of 120
    horizontal: bool


@dataclass(frozen=True, slots=True)
class KeyEvent:
    vk: int
    down: bool
    scan: int
    extended: bool


@dataclass(frozen=True, slots=True)
class UnicodeEvent:
    code_unit: int
    down: bool


Decoded = MoveEvent | ButtonEvent | WheelEvent | KeyEvent | UnicodeEvent

_BUTTON_FLAGS: dict[int, tuple[MouseButton, bool]] = {
    si.MOUSEEVENTF_LEFTDOWN: ("left", True),
    si.MOUSEEVENTF_LEFTUP: ("left", False),
    si.MOUSEEVENTF_RIGHTDOWN: ("right", True),
    si.MOUSEEVENTF_RIGHTUP: ("right", False),
    si.MOUSEEVENTF_MIDDLEDOWN: ("middle", True),
    si.MOUSEEVENTF_MIDDLEUP: ("middle", False),
}
_ABSOLUTE_MOVE = si.MOUSEEVENTF_MOVE | si.MOUSEEVENTF_ABSOLUTE | si.MOUSEEVENTF_VIRTUALDESK


def decode(record: INPUT, desk: VirtualDesk) -> Decoded:
    """One INPUT record → the event it asks Windows for; AssertionError for a record
    this backend should never build (a relative move, a mixed flag set)."""
    if record.type == si.INPUT_KEYBOARD:
        ki = record.ki
        flags = int(ki.dwFlags)
        down = not flags & si.KEYEVENTF_KEYUP
        if flags & si.KEYEVENTF_UNICODE:
            assert flags & ~(si.KEYEVENTF_UNICODE | si.KEYEVENTF_KEYUP) == 0, hex(flags)
            assert ki.wVk == 0
            return UnicodeEvent(int(ki.wScan), down)
        extended = bool(flags & si.KEYEVENTF_EXTENDEDKEY)
        return KeyEvent(int(ki.wVk), down, int(ki.wScan), extended)
    assert record.type == si.INPUT_MOUSE, record.type
    mi = record.mi
    flags = int(mi.dwFlags)
    if flags == _ABSOLUTE_MOVE:
        x, y = desk.from_absolute(int(mi.dx), int(mi.dy))
        return MoveEvent(x, y)
    if flags in (si.MOUSEEVENTF_WHEEL, si.MOUSEEVENTF_HWHEEL):
        return WheelEvent(si.signed_mouse_data(mi), flags == si.MOUSEEVENTF_HWHEEL)
    assert flags in _BUTTON_FLAGS, f"unexpected mouse flags {flags:#x}"
    assert (mi.dx, mi.dy) == (0, 0)
    button, down = _BUTTON_FLAGS[flags]
    return ButtonEvent(button, down)


# MapVirtualKeyW(vk, MAPVK_VK_TO_VSC_EX) on a US layout.
US_SCAN_CODES: dict[int, int] = {
    **{ord(c): s for c, s in zip("QWERTYUIOP", range(0x10, 0x1A), strict=True)},
    **{ord(c): s for c, s in zip("ASDFGHJKL", range(0x1E, 0x27), strict=True)},
    **{ord(c): s for c, s in zip("ZXCVBNM", range(0x2C, 0x33), strict=True)},
    **{ord(c): s for c, s in zip("1234567890", range(0x02, 0x0C), strict=True)},
    0x08: 0x0E,  # backspace
    0x09: 0x0F,  # tab
    0x0D: 0x1C,  # return
    0x14: 0x3A,  # caps lock
    0x1B: 0x01,  # escape
    0x20: 0x39,  # space
    0x21: 0xE049,  # page up
    0x22: 0xE051,  # page down
    0x23: 0xE04F,  # end
    0x24: 0xE047,  # home
    0x25: 0xE04B,  # left
    0x26: 0xE048,  # up
    0x27: 0xE04D,  # right
    0x28: 0xE050,  # down
    0x2C: 0x54,  # print screen: SysRq's code, which is why keymap overrides it
    0x2D: 0xE052,  # insert
    0x2E: 0xE053,  # delete
    0x5B: 0xE05B,  # left win
    0x5D: 0xE05D,  # apps
    **{0x70 + n: 0x3B + n for n in range(10)},  # F1..F10
    0x7A: 0x57,  # F11
    0x7B: 0x58,  # F12
    **{0x7C + n: 0x64 + n for n in range(11)},  # F13..F23
    0x87: 0x76,  # F24
    0xA0: 0x2A,  # left shift
    0xA2: 0x1D,  # left ctrl
    0xA4: 0x38,  # left alt
    0xBA: 0x27,  # ;
    0xBB: 0x0D,  # =
    0xBC: 0x33,  # ,
    0xBD: 0x0C,  # -
    0xBE: 0x34,  # .
    0xBF: 0x35,  # /
    0xC0: 0x29,  # `
    0xDB: 0x1A,  # [
    0xDC: 0x2B,  # backslash
    0xDD: 0x1B,  # ]
    0xDE: 0x28,  # '
}

_SHIFT = 0x100
# VkKeyScanExW on a US layout, for the ASCII punctuation.
_US_OEM_VKS = (0xC0, 0xBD, 0xBB, 0xDB, 0xDD, 0xDC, 0xBA, 0xDE, 0xBC, 0xBE, 0xBF)
US_KEY_SCAN: dict[str, int] = {
    **dict(zip("`-=[]\\;',./", _US_OEM_VKS, strict=True)),
    **{c: _SHIFT | vk for c, vk in zip('~_+{}|:"<>?', _US_OEM_VKS, strict=True)},
    **{c: _SHIFT | ord(d) for c, d in zip("!@#$%^&*()", "1234567890", strict=True)},
}


@dataclass(frozen=True, slots=True)
class Region:
    """A window's rectangle in virtual-screen pixels and its process's integrity
    (None: unreadable)."""

    left: int
    top: int
    width: int
    height: int
    integrity: int | None

    def contains(self, x: int, y: int) -> bool:
        return self.left <= x < self.left + self.width and self.top <= y < self.top + self.height


@dataclass
class FakeInputPort:
    """`InputPort` over scripted platform facts; records and applies what it is sent.

    `insert_limit` makes SendInput insert only that many more records (ever), then
    fail with `error`: a lost input desktop."""

    desk: VirtualDesk = field(default_factory=lambda: VirtualDesk(0, 0, 1920, 1080))
    own: int = si.SECURITY_MANDATORY_MEDIUM_RID
    foreground: int | None = si.SECURITY_MANDATORY_MEDIUM_RID
    # Topmost first; a point in none of them is on a window of `desktop_integrity`.
    windows: list[Region] = field(default_factory=list)
    desktop_integrity: int | None = si.SECURITY_MANDATORY_MEDIUM_RID
    scan_codes: dict[int, int] = field(default_factory=lambda: dict(US_SCAN_CODES))
    layout: dict[str, int] = field(default_factory=lambda: dict(US_KEY_SCAN))
    insert_limit: int | None = None
    error: int = si.ERROR_ACCESS_DENIED
    cursor: tuple[int, int] = (0, 0)
    # What Windows took, in order, and the batch sizes it was handed.
    events: list[Decoded] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    keys_down: list[int] = field(default_factory=list)
    buttons_down: set[MouseButton] = field(default_factory=set)
    integrity_reads: int = 0
    _last_error: int = 0

    # -- InputPort -------------------------------------------------------------------
    def send(self, records: Sequence[INPUT]) -> int:
        self.batch_sizes.append(len(records))
        taken = len(records)
        if self.insert_limit is not None:
            taken = min(taken, self.insert_limit)
            self.insert_limit -= taken
        for record in records[:taken]:
            self._apply(decode(record, self.desk))
        self._last_error = self.error if taken < len(records) else 0
        return taken

    def last_error(self) -> int:
        return self._last_error

    def virtual_desk(self) -> VirtualDesk:
        return self.desk

    def scan_code(self, vk: int) -> int:
        return self.scan_codes.get(vk, 0)

    def key_scan(self, char: str) -> int:
        return self.layout.get(char, -1)

    def foreground_integrity(self) -> int | None:
        self.integrity_reads += 1
        return self.foreground

    def integrity_at(self, x: int, y: int) -> int | None:
        self.integrity_reads += 1
        for region in self.windows:
            if region.contains(x, y):
                return region.integrity
        return self.desktop_integrity

    def cursor_position(self) -> tuple[int, int]:
        return self.cursor

    def own_integrity(self) -> int:
        return self.own

    # -- what happened ---------------------------------------------------------------
    def _apply(self, event: Decoded) -> None:
        self.events.append(event)
        if isinstance(event, MoveEvent):
            self.cursor = (event.x, event.y)
        elif isinstance(event, ButtonEvent):
            if event.down:
                self.buttons_down.add(event.button)
            else:
                self.buttons_down.discard(event.button)
        elif isinstance(event, KeyEvent):
            if event.down and event.vk not in self.keys_down:
                self.keys_down.append(event.vk)
            elif not event.down and event.vk in self.keys_down:
                self.keys_down.remove(event.vk)

    @property
    def typed_text(self) -> str:
        """The text Windows would deliver: Unicode units pressed, Enter as "\\n", Tab as
        "\\t" (each on its key-down)."""
        units: list[int] = []
        for event in self.events:
            if isinstance(event, UnicodeEvent) and event.down:
                units.append(event.code_unit)
            elif isinstance(event, KeyEvent) and event.down and event.vk in (0x0D, 0x09):
                units.append(0x0A if event.vk == 0x0D else 0x09)
        return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")

    def key_events(self) -> list[tuple[int, bool]]:
        """(vk, down) of every key event, in order."""
        return [(e.vk, e.down) for e in self.events if isinstance(e, KeyEvent)]
