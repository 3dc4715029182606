"""Canonical key names and text → the keystrokes SendInput sends.

Pure. A key is a virtual-key code (VK) plus its scan code; the scan code comes from
the platform (`MapVirtualKeyW(vk, MAPVK_VK_TO_VSC_EX)`, through the input port), and
E0 keys also carry KEYEVENTF_EXTENDEDKEY, or Windows reads them as their numeric-keypad
twins (an arrow becomes keypad 4, 6, 8 or 2 when Num Lock is on).

How each kind of key name is sent:

- named keys (`rigway.protocol.keys.NAMED_KEYS`): a fixed VK each; modifiers are the
  left-hand keys. PrintScreen is special: MapVirtualKeyW answers SysRq's scan code
  (0x54) for it, but the key is E0 37.
- letters and digits: their VK ('A'..'Z', '0'..'9'). Windows names these keys by
  their character on every layout, which is what shortcuts such as ctrl+1 or ctrl+z
  mean (on a French layout ctrl+1 is still the key labelled 1).
- punctuation: no VK is layout-independent (VK_OEM_2 is '/' on a US keyboard and '-'
  on a German one), so the character is looked up on the foreground window's layout
  (`VkKeyScanExW`, through the port). A key that needs Shift is pressed with Shift
  (unless Shift is already held); a character the layout types only with Ctrl or
  Alt (AltGr), or not at all, is sent as Unicode text, because pressing Ctrl+Alt
  could trigger a shortcut instead.

Text is typed as Unicode (KEYEVENTF_UNICODE), one down/up pair per UTF-16 code unit
(a character outside the BMP is two: its surrogate pair), which is independent of the
keyboard layout. Line breaks ("\\r\\n", "\\r", "\\n") are one Enter and "\\t" is Tab, sent
as keys, because edit controls act on those keys, not on the characters. Other
control characters and lone surrogates are not typed (no key produces them; the x11
backend skips the same ones).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.protocol.keys import CHARACTER_KEYS, UnknownKeyError

__all__ = [
    "ABI",
    "EXTENDED_VKS",
    "NAMED_KEYS_VK",
    "SHIFT",
    "KeyStroke",
    "Stroke",
    "UnicodeStroke",
    "key_stroke",
    "parse_key_scan",
    "text_strokes",
    "wire_scan",
]

VK_BACK = 0x08
VK_TAB = 0x09
VK_RETURN = 0x0D
VK_CAPITAL = 0x14
VK_ESCAPE = 0x1B
VK_SPACE = 0x20
VK_PRIOR = 0x21
VK_NEXT = 0x22
VK_END = 0x23
VK_HOME = 0x24
VK_LEFT = 0x25
VK_UP = 0x26
VK_RIGHT = 0x27
VK_DOWN = 0x28
VK_SNAPSHOT = 0x2C
VK_INSERT = 0x2D
VK_DELETE = 0x2E
VK_LWIN = 0x5B
VK_RWIN = 0x5C
VK_APPS = 0x5D
VK_DIVIDE = 0x6F
VK_F1 = 0x70
VK_F24 = 0x87
VK_NUMLOCK = 0x90
VK_LSHIFT = 0xA0
VK_RSHIFT = 0xA1
VK_LCONTROL = 0xA2
VK_RCONTROL = 0xA3
VK_LMENU = 0xA4
VK_RMENU = 0xA5

# PrintScreen's own scan code (E0 37); MapVirtualKeyW gives SysRq's 0x54.
PRINTSCREEN_SCAN = 0x37

# Keys whose scan code has the E0 prefix: the navigation cluster, the arrows, right
# Ctrl/Alt, both Win keys, Apps, keypad divide, Num Lock and PrintScreen
# (https://learn.microsoft.com/windows/win32/inputdev/about-keyboard-input#extended-key-flag).
EXTENDED_VKS: frozenset[int] = frozenset(
    {
        VK_PRIOR,
        VK_NEXT,
        VK_END,
        VK_HOME,
        VK_LEFT,
        VK_UP,
        VK_RIGHT,
        VK_DOWN,
        VK_SNAPSHOT,
        VK_INSERT,
        VK_DELETE,
        VK_LWIN,
        VK_RWIN,
        VK_APPS,
        VK_DIVIDE,
        VK_NUMLOCK,
        VK_RCONTROL,
        VK_RMENU,
    }
)

# VkKeyScanExW's shift-state bits (high byte of its answer).
_KEY_SCAN_SHIFT = 0x01
_KEY_SCAN_CTRL = 0x02
_KEY_SCAN_ALT = 0x04


@dataclass(frozen=True, slots=True)
class KeyStroke:
    """A key of the keyboard. `scan` replaces the layout's scan code where the layout's
    is wrong for the key (PrintScreen); `needs_shift` says the character wanted is on
    this key's shifted level."""

    vk: int
    extended: bool = False
    scan: int | None = None
    needs_shift: bool = False


@dataclass(frozen=True, slots=True)
class UnicodeStroke:
    """One UTF-16 code unit typed as text."""

    code_unit: int


Stroke = KeyStroke | UnicodeStroke


def _named(vk: int, *, scan: int | None = None) -> KeyStroke:
    return KeyStroke(vk, extended=vk in EXTENDED_VKS, scan=scan)


# Canonical named keys (rigway.protocol.keys.NAMED_KEYS) → their keys.
NAMED_KEYS_VK: Mapping[str, KeyStroke] = {
    "enter": _named(VK_RETURN),
    "tab": _named(VK_TAB),
    "escape": _named(VK_ESCAPE),
    "backspace": _named(VK_BACK),
    "delete": _named(VK_DELETE),
    "insert": _named(VK_INSERT),
    "space": _named(VK_SPACE),
    "up": _named(VK_UP),
    "down": _named(VK_DOWN),
    "left": _named(VK_LEFT),
    "right": _named(VK_RIGHT),
    "home": _named(VK_HOME),
    "end": _named(VK_END),
    "pageup": _named(VK_PRIOR),
    "pagedown": _named(VK_NEXT),
    "ctrl": _named(VK_LCONTROL),
    "alt": _named(VK_LMENU),
    "shift": _named(VK_LSHIFT),
    "win": _named(VK_LWIN),
    "capslock": _named(VK_CAPITAL),
    "printscreen": _named(VK_SNAPSHOT, scan=PRINTSCREEN_SCAN),
    "menu": _named(VK_APPS),
    # VK_F1 … VK_F24 are consecutive.
    **{f"f{n}": _named(VK_F1 + n - 1) for n in range(1, 25)},
}

SHIFT = NAMED_KEYS_VK["shift"]


def parse_key_scan(result: int) -> tuple[int, int] | None:
    """VkKeyScanExW's SHORT → (VK, shift-state bits), or None when no key types the
    character (-1)."""
    word = result & 0xFFFF
    vk, shift_state = word & 0xFF, word >> 8
    if vk == 0xFF and shift_state == 0xFF:
        return None
    return vk, shift_state


def key_stroke(canonical: str, key_scan: Callable[[str], int]) -> Stroke:
    """The stroke of one canonical key name. `key_scan(char)` is VkKeyScanExW on the
    foreground window's layout, asked only for punctuation. Raises UnknownKeyError."""
    named = NAMED_KEYS_VK.get(canonical)
    if named is not None:
        return named
    if canonical not in CHARACTER_KEYS:
        raise UnknownKeyError(canonical)
    if canonical.isascii() and canonical.isalnum():
        return KeyStroke(ord(canonical.upper()))
    found = parse_key_scan(key_scan(canonical))
    if found is None:
        return UnicodeStroke(ord(canonical))
    vk, shift_state = found
    if shift_state & ~_KEY_SCAN_SHIFT:
        # Ctrl, Alt (AltGr = Ctrl+Alt) or an IME state: typed as text instead.
        return UnicodeStroke(ord(canonical))
    return KeyStroke(
        vk, extended=vk in EXTENDED_VKS, needs_shift=bool(shift_state & _KEY_SCAN_SHIFT)
    )


def wire_scan(stroke: KeyStroke, mapped_scan: int) -> tuple[int, bool]:
    """(wScan, extended) for a key, from MapVirtualKeyW(vk, MAPVK_VK_TO_VSC_EX)'s answer
    (0xE0 in its high byte marks an E0 key too)."""
    scan = stroke.scan if stroke.scan is not None else mapped_scan & 0xFF
    return scan, stroke.extended or (mapped_scan >> 8) == 0xE0


_ENTER = NAMED_KEYS_VK["enter"]
_TAB = NAMED_KEYS_VK["tab"]


def text_strokes(text: str) -> list[Stroke]:
    """Text → strokes, in order; see the module docstring for what is skipped."""
    strokes: list[Stroke] = []
    after_cr = False
    for char in text:
        if char == "\n" and after_cr:
            after_cr = False
            continue  # the "\n" of "\r\n": its Enter was sent for the "\r"
        after_cr = char == "\r"
        if char in "\r\n":
            strokes.append(_ENTER)
        elif char == "\t":
            strokes.append(_TAB)
        elif _is_typeable(char):
            encoded = char.encode("utf-16-le")
            strokes.extend(
                UnicodeStroke(int.from_bytes(encoded[i : i + 2], "little"))
                for i in range(0, len(encoded), 2)
            )
    return strokes


def _is_typeable(char: str) -> bool:
    code_point = ord(char)
    if code_point < 0x20 or 0x7F <= code_point < 0xA0:
        return False
    return not 0xD800 <= code_point <= 0xDFFF


ABI = AbiDeclarations(
    # Every VK_ constant above (winuser.h names them all but the letters and digits).
    constants={
        name: value
        for name, value in globals().items()
        if name.startswith("VK_") and isinstance(value, int)
    },
    headers=("windows.h",),
)
