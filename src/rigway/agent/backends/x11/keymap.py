"""Key names and characters → X keysyms, the plain keyboard layout, and the spare keycodes.

Pure bookkeeping, no X connection: `input.py` feeds it the server's keyboard mapping.

Characters that the layout cannot produce are typed by binding their keysym to a
*spare* keycode (one with no keysyms at all; Xvfb has 19) and pressing that. Rebinding
broadcasts a MappingNotify to every X client and the window manager re-grabs its keys
on each one, so `SpareKeycodes` keeps bindings in an LRU cache (repeated characters
never remap) and plans one batch of bindings per run of text.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rigway.protocol.keys import CHARACTER_KEYS

NO_SYMBOL = 0
XK_RETURN = 0xFF0D
XK_TAB = 0xFF09
XK_SHIFT_L = 0xFFE1
# Keysyms for code points outside Latin-1 (X11 keysym encoding, appendix A).
UNICODE_KEYSYM_OFFSET = 0x01000000

# Canonical named keys (rigway.protocol.keys.NAMED_KEYS) → X keysyms.
_NAMED_KEYSYMS: dict[str, int] = {
    "enter": XK_RETURN,
    "tab": XK_TAB,
    "escape": 0xFF1B,
    "backspace": 0xFF08,
    "delete": 0xFFFF,
    "insert": 0xFF63,
    "space": 0x0020,
    "up": 0xFF52,
    "down": 0xFF54,
    "left": 0xFF51,
    "right": 0xFF53,
    "home": 0xFF50,
    "end": 0xFF57,
    "pageup": 0xFF55,
    "pagedown": 0xFF56,
    "ctrl": 0xFFE3,
    "alt": 0xFFE9,
    "shift": XK_SHIFT_L,
    "win": 0xFFEB,
    "capslock": 0xFFE5,
    "printscreen": 0xFF61,
    "menu": 0xFF67,
    # F1 is 0xFFBE and F1…F35 are consecutive.
    **{f"f{n}": 0xFFBE + n - 1 for n in range(1, 25)},
}


def keysym_for_key(canonical: str) -> int:
    """The keysym of one canonical key name; raises KeyError for a non-canonical name."""
    named = _NAMED_KEYSYMS.get(canonical)
    if named is not None:
        return named
    if canonical in CHARACTER_KEYS:
        return keysym_for_char(canonical)
    raise KeyError(canonical)


def keysym_for_char(char: str) -> int:
    """The keysym that types one character (Latin-1 keysyms equal their code point)."""
    if char == "\n":
        return XK_RETURN
    if char == "\t":
        return XK_TAB
    code_point = ord(char)
    if 0x20 <= code_point <= 0x7E or 0xA0 <= code_point <= 0xFF:
        return code_point
    return UNICODE_KEYSYM_OFFSET | code_point


def is_typeable(char: str) -> bool:
    """False for control characters and lone surrogates, which no key produces."""
    if char in "\n\t":
        return True
    code_point = ord(char)
    if code_point < 0x20 or 0x7F <= code_point < 0xA0:
        return False
    return not 0xD800 <= code_point <= 0xDFFF


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True, slots=True)
class KeyStroke:
    keycode: int
    needs_shift: bool


class KeyboardLayout:
    """Where each keysym sits in the server's keyboard mapping (group 1, levels 1 and 2)."""

    def __init__(self, first_keycode: int, rows: Sequence[Sequence[int]], exclude: Iterable[int]):
        excluded = set(exclude)
        self._strokes: dict[int, KeyStroke] = {}
        keyed = [(first_keycode + i, row) for i, row in enumerate(rows)]
        keyed = [(code, row) for code, row in keyed if code not in excluded]
        # Unshifted positions win over shifted ones anywhere on the keyboard.
        for code, row in keyed:
            if len(row) > 0 and row[0] != NO_SYMBOL:
                self._strokes.setdefault(row[0], KeyStroke(code, needs_shift=False))
        for code, row in keyed:
            for keysym in self._shifted_keysyms(row):
                self._strokes.setdefault(keysym, KeyStroke(code, needs_shift=True))

    @staticmethod
    def _shifted_keysyms(row: Sequence[int]) -> list[int]:
        if len(row) > 1 and row[1] != NO_SYMBOL:
            return [row[1]]
        # Core protocol rule: a lone lowercase letter implies its capital on level 2.
        if len(row) > 0 and 0 < row[0] < 0x100 and chr(row[0]).islower():
            upper = chr(row[0]).upper()
            return [ord(upper)] if len(upper) == 1 and ord(upper) < 0x100 else []
        return []

    def find(self, keysym: int) -> KeyStroke | None:
        return self._strokes.get(keysym)


def spare_keycodes(first_keycode: int, rows: Sequence[Sequence[int]]) -> list[int]:
    """Keycodes with no keysym at any level."""
    return [first_keycode + i for i, row in enumerate(rows) if not any(row)]


class SpareKeycodes:
    """LRU bindings of keysyms onto spare keycodes; keycodes of held keys are pinned."""

    def __init__(self, keycodes: Sequence[int]) -> None:
        if not keycodes:
            raise ValueError("no spare keycodes")
        self.keycodes: tuple[int, ...] = tuple(keycodes)
        # keysym → keycode, least recently used first.
        self._bound: OrderedDict[int, int] = OrderedDict()
        self._pinned: set[int] = set()

    @property
    def capacity(self) -> int:
        """How many distinct keysyms one run of text may bind at once."""
        return len(self.keycodes) - len(self._pinned)

    def bound_keycodes(self) -> list[int]:
        return list(self._bound.values())

    def lookup(self, keysym: int) -> int | None:
        keycode = self._bound.get(keysym)
        if keycode is not None:
            self._bound.move_to_end(keysym)
        return keycode

    def plan(self, keysyms: Iterable[int]) -> dict[int, int]:
        """New bindings {keycode: keysym} so that all `keysyms` are bound.

        Evicts least recently used bindings that `keysyms` does not need and that are
        not pinned. The caller applies the plan with `commit` after rebinding.
        """
        wanted = list(dict.fromkeys(keysyms))
        if len(wanted) > self.capacity:
            raise ValueError(f"{len(wanted)} keysyms exceed {self.capacity} spare keycodes")
        missing = [k for k in wanted if k not in self._bound]
        in_use = set(self._bound.values())
        free = [code for code in self.keycodes if code not in in_use]
        keep = {self._bound[k] for k in wanted if k in self._bound} | self._pinned
        victims = [code for code in self._bound.values() if code not in keep]
        plan: dict[int, int] = {}
        for keysym in missing:
            plan[free.pop(0) if free else victims.pop(0)] = keysym
        return plan

    def commit(self, plan: dict[int, int]) -> None:
        for keycode, keysym in plan.items():
            for old_keysym, old_keycode in list(self._bound.items()):
                if old_keycode == keycode:
                    del self._bound[old_keysym]
            self._bound[keysym] = keycode

    def pin(self, keycode: int) -> None:
        self._pinned.add(keycode)

    def unpin(self, keycode: int) -> None:
        self._pinned.discard(keycode)

    def forget_all(self) -> dict[int, int]:
        """Drop every binding; returns {keycode: NO_SYMBOL} to unbind them on the server."""
        unbind = {code: NO_SYMBOL for code in self._bound.values()}
        self._bound.clear()
        self._pinned.clear()
        return unbind


def split_runs(keysyms: Sequence[int], needs_spare: set[int], capacity: int) -> list[int]:
    """End indices of runs whose spare-needing keysyms are at most `capacity` distinct."""
    ends: list[int] = []
    distinct: set[int] = set()
    for index, keysym in enumerate(keysyms):
        if keysym in needs_spare and keysym not in distinct:
            if len(distinct) == capacity:
                ends.append(index)
                distinct = set()
            distinct.add(keysym)
    ends.append(len(keysyms))
    return ends
