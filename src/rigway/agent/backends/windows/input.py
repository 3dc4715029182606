"""The input role: pointer, buttons, wheel, keys and text through SendInput.

Pure logic over `InputPort`, the thin platform layer (`_sendinput.py` on Windows, a
fake in the tests). Coordinates arrive in capture pixels and leave as SendInput's
normalised absolute coordinates over the virtual desktop (`geometry.py`).

Windows drops injected input in two ways this role makes visible instead of claiming
success:

- UIPI: input aimed at a window of a higher integrity level (an elevated program) is
  discarded, and neither SendInput's return value nor GetLastError says so
  (https://learn.microsoft.com/windows/win32/api/winuser/nf-winuser-sendinput). So
  before each operation the target's integrity is compared with ours: the foreground
  window's for keys and text, the window under the pointer's for the mouse (a click
  on an ordinary window still works while an elevated one has the focus, and is the
  way out of it). Unreadable counts as higher: a process whose token we may not
  query is, in practice, elevated. Releases are never checked: a key-up or button-up
  Windows drops costs nothing, a refused one leaves the key stuck down.
- SendInput inserting fewer records than given (no input desktop: a lock screen, a
  UAC prompt, a disconnected remote session): raised with the Win32 error.

Windows keeps an injected key down after its sender exits, so the role tracks what it
holds and `close()` releases it, sending every key-up even when it looks redundant.
A key or button counts as held only once its press was inserted whole (a failed press
is pressed again next time); `close()` also releases every press that was attempted,
so half a press (Shift inserted, the key not) is not left down either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rigway.agent.backends.base import MouseButton
from rigway.agent.backends.windows import sendinput
from rigway.agent.backends.windows.errors import InputBlockedError
from rigway.agent.backends.windows.geometry import OutputPlacement, VirtualDesk
from rigway.agent.backends.windows.keymap import (
    SHIFT,
    KeyStroke,
    Stroke,
    UnicodeStroke,
    key_stroke,
    text_strokes,
    wire_scan,
)
from rigway.agent.backends.windows.sendinput import INPUT

__all__ = ["MAX_RECORDS_PER_SEND", "InputPort", "WindowsInput", "short_send_message"]

# Text is sent in slices of this many records (whole down/up pairs): one SendInput
# call is never interleaved with other input, but a slice keeps a long text from
# flooding the input queue in one go.
MAX_RECORDS_PER_SEND = 256


class InputPort(Protocol):
    """The platform under `WindowsInput`; every call comes from the input thread.

    Coordinates are virtual-screen pixels. Integrity levels are the RIDs
    SECURITY_MANDATORY_*_RID (medium 0x2000, high 0x3000, system 0x4000)."""

    def send(self, records: Sequence[INPUT]) -> int:
        """SendInput(records); how many it inserted."""
        ...

    def last_error(self) -> int:
        """The Win32 error `send` left behind (meaningful after a short count)."""
        ...

    def virtual_desk(self) -> VirtualDesk:
        """The virtual desktop's bounds now (GetSystemMetrics SM_*VIRTUALSCREEN)."""
        ...

    def scan_code(self, vk: int) -> int:
        """MapVirtualKeyW(vk, MAPVK_VK_TO_VSC_EX): 0xE0 in the high byte for E0 keys,
        0 when the layout has no key for it."""
        ...

    def key_scan(self, char: str) -> int:
        """VkKeyScanExW(char) on the foreground window's keyboard layout: VK in the low
        byte, shift state in the high byte, -1 when no key types it."""
        ...

    def foreground_integrity(self) -> int | None:
        """The foreground window's process integrity; None when it cannot be read.
        No foreground window at all: SECURITY_MANDATORY_UNTRUSTED_RID (nothing there
        can outrank us)."""
        ...

    def integrity_at(self, x: int, y: int) -> int | None:
        """The integrity of the process owning the window at that point (WindowFromPoint);
        None when it cannot be read; no window: SECURITY_MANDATORY_UNTRUSTED_RID."""
        ...

    def cursor_position(self) -> tuple[int, int]:
        """Where the pointer is (GetCursorPos)."""
        ...

    def own_integrity(self) -> int:
        """This process's integrity level."""
        ...


def short_send_message(inserted: int, given: int, error: int) -> str:
    """Why SendInput inserted only `inserted` of `given` records, for the caller."""
    if error == sendinput.ERROR_ACCESS_DENIED:
        reason = (
            "access denied: this session does not own the input desktop (a lock screen, "
            "a UAC prompt or a disconnected remote session)"
        )
    elif error == 0:
        reason = "Windows gave no reason"
    else:
        reason = f"Win32 error {error}"
    return f"SendInput inserted {inserted} of {given} input events: {reason}"


class WindowsInput:
    """`roles.InputRole` over an `InputPort`. `placement` says where the captured output
    sits on the virtual desktop now (the screen role's)."""

    def __init__(self, port: InputPort, placement: Callable[[], OutputPlacement]) -> None:
        self._port = port
        self._placement = placement
        self._own_integrity: int | None = None
        # Keys and buttons whose press was inserted whole: a press of one is skipped.
        self._held_keys: dict[str, None] = {}
        self._held_buttons: dict[MouseButton, None] = {}
        # Every key press attempted and not released since → the records that release
        # it, in press order (close() releases in reverse). Recorded before the press is
        # sent: a spurious release is harmless where a stuck key is not.
        self._key_releases: dict[str, list[INPUT]] = {}
        self._buttons_to_release: dict[MouseButton, None] = {}
        # The last text ended with "\r": a "\n" starting the next one is the rest of
        # the same "\r\n" (the agent types long text in slices).
        self._after_cr = False

    @property
    def held_keys(self) -> tuple[str, ...]:
        return tuple(self._held_keys)

    @property
    def held_buttons(self) -> tuple[MouseButton, ...]:
        return tuple(self._held_buttons)

    # -- pointer ---------------------------------------------------------------------
    def move_pointer(self, x: int, y: int) -> None:
        self._after_cr = False
        screen_x, screen_y = self._placement().to_screen(x, y)
        self._require_reachable(self._port.integrity_at(screen_x, screen_y), _POINTER_TARGET)
        dx, dy = self._port.virtual_desk().to_absolute(screen_x, screen_y)
        self._send([sendinput.absolute_move(dx, dy)])

    def set_button(self, button: MouseButton, down: bool) -> None:
        """Press or release a button where the pointer is; a release is sent whatever
        window is there."""
        self._after_cr = False
        if down:
            self._require_reachable(self._pointer_integrity(), _POINTER_TARGET)
            self._buttons_to_release[button] = None
            self._send([sendinput.button(button, True)])
            self._held_buttons[button] = None
        else:
            self._send([sendinput.button(button, False)])
            self._held_buttons.pop(button, None)
            self._buttons_to_release.pop(button, None)

    def scroll(self, dx: int, dy: int) -> None:
        """Wheel notches: dy < 0 scrolls down, dx > 0 scrolls right."""
        self._after_cr = False
        records = [*sendinput.wheel(dy, horizontal=False), *sendinput.wheel(dx, horizontal=True)]
        if not records:
            return
        self._require_reachable(self._pointer_integrity(), _POINTER_TARGET)
        self._send(records)

    def _pointer_integrity(self) -> int | None:
        return self._port.integrity_at(*self._port.cursor_position())

    # -- keys and text ---------------------------------------------------------------
    def set_key(self, key: str, down: bool) -> None:
        """Press or release one canonical key name; a key already held is not pressed
        again, and a release is sent whether or not the key is held, whatever window is
        in front."""
        self._after_cr = False
        if down:
            if key in self._held_keys:
                return
            self._require_reachable(self._port.foreground_integrity(), _KEYBOARD_TARGET)
            press, release = self._stroke_records(key_stroke(key, self._port.key_scan))
            self._key_releases[key] = release
            self._send(press)
            self._held_keys[key] = None
            return
        key_up = self._key_releases.get(key)
        if key_up is None:
            _, key_up = self._stroke_records(key_stroke(key, self._port.key_scan), alone=True)
        self._send(key_up)
        self._held_keys.pop(key, None)
        self._key_releases.pop(key, None)

    def type_text(self, text: str) -> None:
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        self._after_cr = False
        records: list[INPUT] = []
        for stroke in text_strokes(text):
            press, release = self._stroke_records(stroke, alone=True)
            records += press + release
        if records:
            self._require_reachable(self._port.foreground_integrity(), _KEYBOARD_TARGET)
            for start in range(0, len(records), MAX_RECORDS_PER_SEND):
                self._send(records[start : start + MAX_RECORDS_PER_SEND])
        self._after_cr = text.endswith("\r")

    def _stroke_records(
        self, stroke: Stroke, *, alone: bool = False
    ) -> tuple[list[INPUT], list[INPUT]]:
        """(press, release) records of one stroke. Unless `alone`, a character on the
        shifted level is pressed with Shift when Shift is not held already."""
        if isinstance(stroke, UnicodeStroke):
            return (
                [sendinput.unicode_unit(stroke.code_unit, down=True)],
                [sendinput.unicode_unit(stroke.code_unit, down=False)],
            )
        press, release = self._key_records(stroke)
        if stroke.needs_shift and not alone and "shift" not in self._held_keys:
            shift_press, shift_release = self._key_records(SHIFT)
            return shift_press + press, release + shift_release
        return press, release

    def _key_records(self, stroke: KeyStroke) -> tuple[list[INPUT], list[INPUT]]:
        scan, extended = wire_scan(stroke, self._port.scan_code(stroke.vk))
        return (
            [sendinput.key(stroke.vk, scan, extended=extended, down=True)],
            [sendinput.key(stroke.vk, scan, extended=extended, down=False)],
        )

    # -- release -----------------------------------------------------------------------
    def close(self) -> None:
        """Release every key pressed or half pressed (reverse press order), then every
        such button, whatever window is in front: a key-up Windows drops costs nothing,
        a stuck Win key costs the owner their keyboard. Every release is tried; the
        first failure is raised after."""
        failures: list[InputBlockedError] = []
        releases = list(reversed(self._key_releases.values()))
        releases += [[sendinput.button(b, False)] for b in reversed(self._buttons_to_release)]
        self._held_keys.clear()
        self._held_buttons.clear()
        self._key_releases.clear()
        self._buttons_to_release.clear()
        for records in releases:
            try:
                self._send(records)
            except InputBlockedError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]

    # -- checks ------------------------------------------------------------------------
    def _require_reachable(self, target_integrity: int | None, target: str) -> None:
        if self._own_integrity is None:
            self._own_integrity = self._port.own_integrity()
        if target_integrity is None:
            raise InputBlockedError(
                f"the integrity level of {target} cannot be read, so it likely runs "
                f"elevated; Windows would drop input to it (UIPI){_ELEVATION_HINT}"
            )
        if target_integrity > self._own_integrity:
            raise InputBlockedError(
                f"{target} runs elevated; Windows drops input to it (UIPI){_ELEVATION_HINT}"
            )

    def _send(self, records: list[INPUT]) -> None:
        inserted = self._port.send(records)
        if inserted != len(records):
            error = self._port.last_error()
            raise InputBlockedError(short_send_message(inserted, len(records), error))


_KEYBOARD_TARGET = "the foreground window"
_POINTER_TARGET = "the window under the pointer"
_ELEVATION_HINT = " (an agent started elevated can drive it)"
