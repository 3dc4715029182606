"""Key names of computer-use models (xdotool keysyms, OpenAI names) → Rigway key names."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .errors import UnsupportedActionError

__all__ = ["OPENAI_KEYS", "XDOTOOL_KEYS", "anthropic_key", "openai_keys", "rigway_key"]

# xdotool keysym names (lower-cased) that differ from Rigway's key names.
XDOTOOL_KEYS: dict[str, str] = {
    "return": "enter",
    "kp_enter": "enter",
    "backspace": "backspace",
    "kp_delete": "delete",
    "prior": "pageup",
    "page_up": "pageup",
    "next": "pagedown",
    "page_down": "pagedown",
    "caps_lock": "capslock",
    "print": "printscreen",
    "control": "ctrl",
    "control_l": "ctrl",
    "control_r": "ctrl",
    "alt_l": "alt",
    "alt_r": "alt",
    "shift_l": "shift",
    "shift_r": "shift",
    "super": "win",
    "super_l": "win",
    "super_r": "win",
    "meta": "win",
    "meta_l": "win",
    "meta_r": "win",
    "cmd": "win",
    "minus": "-",
    "plus": "+",
    "equal": "=",
    "comma": ",",
    "period": ".",
    "slash": "/",
    "backslash": "\\",
    "semicolon": ";",
    "colon": ":",
    "apostrophe": "'",
    "quotedbl": '"',
    "grave": "`",
    "asciitilde": "~",
    "bracketleft": "[",
    "bracketright": "]",
    "braceleft": "{",
    "braceright": "}",
    "parenleft": "(",
    "parenright": ")",
    "less": "<",
    "greater": ">",
    "question": "?",
    "exclam": "!",
    "at": "@",
    "numbersign": "#",
    "dollar": "$",
    "percent": "%",
    "asciicircum": "^",
    "ampersand": "&",
    "asterisk": "*",
    "underscore": "_",
    "bar": "|",
    "kp_add": "+",
    "kp_subtract": "-",
    "kp_multiply": "*",
    "kp_divide": "/",
    "kp_decimal": ".",
    **{f"kp_{digit}": str(digit) for digit in range(10)},
}

# OpenAI key names (lower-cased) that differ from Rigway's key names.
OPENAI_KEYS: dict[str, str] = {
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "esc": "escape",
    "return": "enter",
    "control": "ctrl",
    "cmd": "win",
    "command": "win",
    "meta": "win",
    "super": "win",
    "option": "alt",
    " ": "space",
}


def rigway_key(name: str, table: Mapping[str, str]) -> str:
    """One model key name → Rigway's, through `table` (lower-cased names)."""
    # Rigway's key names ignore case, so "S" and "s" are the same key. Unknown names
    # pass through: the gateway answers 400 naming the bad key, which is the message
    # the model needs.
    lowered = name.lower() if len(name) == 1 else name.strip().lower()
    return table.get(lowered, lowered)


def anthropic_key(text: str) -> list[str]:
    """An xdotool key string → Rigway chords: `"ctrl+Return"` → `["ctrl+enter"]`.

    Space-separated chords are pressed in turn (`"ctrl+a Delete"` → two presses), as
    `xdotool key` does.
    """
    chords = []
    for chord in text.split():
        if chord == "+":
            parts = ["+"]
        elif chord.endswith("++"):
            parts = [*chord[:-2].split("+"), "+"]
        else:
            parts = chord.split("+")
        if any(part == "" for part in parts):
            raise UnsupportedActionError(f"key: malformed chord {chord!r}")
        chords.append("+".join(rigway_key(part, XDOTOOL_KEYS) for part in parts))
    if not chords:
        raise UnsupportedActionError("key: no key names given")
    return chords


def openai_keys(keys: Iterable[str]) -> str:
    """OpenAI `keypress` keys → one Rigway chord: `["CTRL", "S"]` → `"ctrl+s"`."""
    names = [rigway_key(key, OPENAI_KEYS) for key in keys]
    if not names:
        raise UnsupportedActionError("keypress: no keys given")
    return "+".join(names)
