"""Key names accepted by the input API (docs/api.md, Input), canonicalised.

Both the gateway (to reject a bad name with a 400 before anything runs) and the agent
(to map a name onto the platform's key codes) use this table.
"""

from __future__ import annotations

import string

KEY_ALIASES: dict[str, str] = {
    "return": "enter",
    "esc": "escape",
    "meta": "win",
    "super": "win",
    "cmd": "win",
    "control": "ctrl",
    "del": "delete",
    "ins": "insert",
    "pgup": "pageup",
    "pgdn": "pagedown",
    "prtsc": "printscreen",
    "option": "alt",
}

NAMED_KEYS: frozenset[str] = frozenset(
    {
        "enter",
        "tab",
        "escape",
        "backspace",
        "delete",
        "insert",
        "space",
        "up",
        "down",
        "left",
        "right",
        "home",
        "end",
        "pageup",
        "pagedown",
        "ctrl",
        "alt",
        "shift",
        "win",
        "capslock",
        "printscreen",
        "menu",
        *(f"f{n}" for n in range(1, 25)),
    }
)

MODIFIER_KEYS: frozenset[str] = frozenset({"ctrl", "alt", "shift", "win"})

# Single characters: letters, digits and the printable ASCII punctuation.
CHARACTER_KEYS: frozenset[str] = frozenset(
    string.ascii_lowercase + string.digits + string.punctuation
)


class UnknownKeyError(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown key name {name!r}")
        self.name = name


def canonical_key(name: str) -> str:
    """One key name → its canonical spelling; raises UnknownKeyError."""
    if len(name) == 1:
        lowered = name.lower()
        if lowered in CHARACTER_KEYS:
            return lowered
        raise UnknownKeyError(name)
    lowered = name.strip().lower()
    lowered = KEY_ALIASES.get(lowered, lowered)
    if lowered in NAMED_KEYS:
        return lowered
    raise UnknownKeyError(name)


def parse_chord(chord: str) -> list[str]:
    """`ctrl+shift+s` → ["ctrl", "shift", "s"]; a lone `+` is the plus key."""
    if chord == "+":
        return ["+"]
    parts = [*chord[:-2].split("+"), "+"] if chord.endswith("++") else chord.split("+")
    if any(part == "" for part in parts):
        raise UnknownKeyError(chord)
    return [canonical_key(part) for part in parts]
