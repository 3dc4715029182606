"""XTest input over python-xlib: pointer, buttons, wheel, canonical keys, Unicode text.

Text the keyboard layout cannot produce is typed through spare keycodes (`keymap.py`).
The traps of XTest input and how this module handles them:

1. A client translates keycode → keysym when it *processes* an event, with whatever
   mapping the server has then. Rebinding a keycode too early makes it read the new
   character. A virtual model of the client's queue (`per_key_s` per key, FIFO) says
   when each key event has surely been read; a keycode is rebound `settle_s` after that.
2. Every ChangeKeyboardMapping is broadcast to all clients and the window manager
   re-grabs its keys for each one; hundreds of them froze openbox (and, through its
   pointer grab, the mouse) for half a minute. So each run of text binds all its
   characters in ONE request, and bindings stay cached (LRU) across calls. The request
   spans the lowest to the highest rebound keycode and rewrites the keys in between as
   they are; the rewrite round-trips through XKB, which can add duplicate group-2
   symbols to multi-level keys (F-keys, keypad), so the highest spares (multimedia
   keys, where the round trip is exact) are used first.
3. A crashed instance leaves characters bound, so those keycodes no longer look spare:
   the spare list is kept in a root-window property and unbound again at start.
4. The client-side keymap cache of python-xlib can "find" such a leftover binding;
   the layout is built from the server's mapping with the spares excluded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from Xlib import X, Xatom, display, error
from Xlib.ext import xtest

from rigway.agent.backends.base import MouseButton
from rigway.agent.backends.x11.keymap import (
    NO_SYMBOL,
    XK_SHIFT_L,
    KeyboardLayout,
    KeyStroke,
    SpareKeycodes,
    is_typeable,
    keysym_for_char,
    keysym_for_key,
    normalise_newlines,
    spare_keycodes,
    split_runs,
)

SPARE_PROPERTY = "_RIGWAY_SPARE_KEYCODES"
# Trap 1 margins. GTK reads a key in ~0.6 ms, ~1.8 ms once an entry holds 2,500
# characters; the recipe measured text exact at 2 ms per key and 10-30 ms settle.
SETTLE_S = 0.03
PER_KEY_S = 0.003
BUTTONS: dict[MouseButton, int] = {"left": 1, "middle": 2, "right": 3}
WHEEL_UP, WHEEL_DOWN, WHEEL_LEFT, WHEEL_RIGHT = 4, 5, 6, 7


class InputUnavailableError(RuntimeError):
    """The X server cannot take synthetic input (no XTEST, no spare keycodes)."""


@dataclass(slots=True)
class _HeldKey:
    keycode: int
    added_shift: bool
    on_spare: bool


class X11Input:
    """The input role. One X connection, opened lazily by the thread that first types."""

    def __init__(
        self, display_name: str, *, settle_s: float = SETTLE_S, per_key_s: float = PER_KEY_S
    ) -> None:
        self._display_name = display_name
        self._settle_s = settle_s
        self._per_key_s = per_key_s
        self._lock = threading.Lock()
        self._conn: Any = None
        self._layout: KeyboardLayout | None = None
        self._spares: SpareKeycodes | None = None
        self._shift_keycode = 0
        self._held: dict[str, _HeldKey] = {}
        # Virtual client queue: when the client will have read everything sent so far,
        # and when it will have read the last press of each keycode (trap 1).
        self._queue_done_at = 0.0
        self._read_at: dict[int, float] = {}

    # -- pointer ---------------------------------------------------------------------
    def move_pointer(self, x: int, y: int) -> None:
        with self._session() as conn:
            xtest.fake_input(conn, X.MotionNotify, x=int(x), y=int(y))
            conn.sync()

    def set_button(self, button: MouseButton, down: bool) -> None:
        with self._session() as conn:
            event = X.ButtonPress if down else X.ButtonRelease
            xtest.fake_input(conn, event, BUTTONS[button])
            conn.sync()

    def scroll(self, dx: int, dy: int) -> None:
        """One wheel click per notch: dy < 0 scrolls down, dx > 0 scrolls right."""
        with self._session() as conn:
            axes = ((dy, WHEEL_DOWN, WHEEL_UP), (dx, WHEEL_LEFT, WHEEL_RIGHT))
            for notches, negative, positive in axes:
                button = positive if notches > 0 else negative
                for _ in range(abs(int(notches))):
                    xtest.fake_input(conn, X.ButtonPress, button)
                    xtest.fake_input(conn, X.ButtonRelease, button)
            conn.sync()

    # -- keys ------------------------------------------------------------------------
    def set_key(self, key: str, down: bool) -> None:
        """Press or release one canonical key name (rigway.protocol.keys)."""
        with self._session() as conn:
            if down:
                self._press_key(key)
            else:
                self._release_key(key)
            conn.sync()

    def _press_key(self, key: str) -> None:
        if key in self._held:
            return
        keysym = keysym_for_key(key)
        stroke = self._layout_or_fail().find(keysym)
        on_spare = stroke is None
        if stroke is None:  # e.g. F13…F24: not on the layout, so bind it like a character
            keycode = self._bind_run([keysym])[keysym]
            self._spares_or_fail().pin(keycode)
            stroke = KeyStroke(keycode, needs_shift=False)
        added_shift = stroke.needs_shift and not self._is_shift_down()
        if added_shift:
            self._send_key(self._shift_keycode, down=True)
        self._send_key(stroke.keycode, down=True)
        self._held[key] = _HeldKey(stroke.keycode, added_shift, on_spare)

    def _release_key(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is None:
            # Not pressed by us (or before a reconnect): releasing is still harmless.
            stroke = self._layout_or_fail().find(keysym_for_key(key))
            if stroke is not None:
                self._send_key(stroke.keycode, down=False)
            return
        self._send_key(held.keycode, down=False)
        if held.on_spare:
            self._spares_or_fail().unpin(held.keycode)
        if held.added_shift and not self._is_shift_down():
            self._send_key(self._shift_keycode, down=False)

    def _is_shift_down(self) -> bool:
        return "shift" in self._held or any(h.added_shift for h in self._held.values())

    # -- text ------------------------------------------------------------------------
    def type_text(self, text: str) -> None:
        """Type any Unicode text; control characters other than newline and tab are skipped."""
        with self._session() as conn:
            layout = self._layout_or_fail()
            keysyms = [keysym_for_char(c) for c in normalise_newlines(text) if is_typeable(c)]
            needs_spare = {k for k in keysyms if layout.find(k) is None}
            start = 0
            for end in split_runs(keysyms, needs_spare, self._spares_or_fail().capacity):
                run = keysyms[start:end]
                bound = self._bind_run([k for k in run if k in needs_spare])
                for keysym in run:
                    self._tap(keysym, bound, layout)
                conn.sync()
                start = end

    def _tap(self, keysym: int, bound: dict[int, int], layout: KeyboardLayout) -> None:
        keycode = bound.get(keysym)
        stroke = KeyStroke(keycode, False) if keycode is not None else layout.find(keysym)
        if stroke is None:  # the layout changed under us; nothing sane to press
            return
        shift = stroke.needs_shift and not self._is_shift_down()
        if shift:
            self._send_key(self._shift_keycode, down=True)
        self._send_key(stroke.keycode, down=True)
        self._send_key(stroke.keycode, down=False)
        if shift:
            self._send_key(self._shift_keycode, down=False)

    def _send_key(self, keycode: int, *, down: bool) -> None:
        xtest.fake_input(self._conn, X.KeyPress if down else X.KeyRelease, keycode)
        if down:  # a press is what costs the client time (text insertion, redraw)
            self._queue_done_at = max(self._queue_done_at, time.monotonic()) + self._per_key_s
        self._read_at[keycode] = self._queue_done_at

    # -- spare keycodes --------------------------------------------------------------
    def _bind_run(self, keysyms: list[int]) -> dict[int, int]:
        """Bind every keysym of a run to a spare keycode (one request); {keysym: keycode}."""
        spares = self._spares_or_fail()
        plan = spares.plan(keysyms)
        if plan:
            self._wait_until_read(plan)
            self._change_mapping(plan)
            spares.commit(plan)
        return {k: code for k in keysyms if (code := spares.lookup(k)) is not None}

    def _wait_until_read(self, keycodes: Iterable[int]) -> None:
        read_at = max((self._read_at.get(code, 0.0) for code in keycodes), default=0.0)
        delay_s = read_at + self._settle_s - time.monotonic()
        if read_at > 0 and delay_s > 0:
            self._conn.sync()
            time.sleep(delay_s)

    def _change_mapping(self, assign: dict[int, int]) -> None:
        """Rebind {keycode: keysym or NO_SYMBOL} with a single ChangeKeyboardMapping."""
        conn = self._conn
        low, high = min(assign), max(assign)
        current = conn.get_keyboard_mapping(low, high - low + 1)
        rows = []
        for offset, row in enumerate(current):
            keysym = assign.get(low + offset)
            if keysym is None:
                rows.append(list(row))
            else:
                # The same symbol with and without Shift, so a held Shift cannot change it.
                rows.append([keysym, keysym] + [NO_SYMBOL] * (len(row) - 2))
        catcher = error.CatchError()
        conn.change_keyboard_mapping(low, rows, onerror=catcher)
        conn.sync()
        if catcher.get_error() is not None:
            raise InputUnavailableError(f"ChangeKeyboardMapping failed: {catcher.get_error()}")

    # -- connection ------------------------------------------------------------------
    @contextmanager
    def _session(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None:
                self._conn = self._open()
            try:
                yield self._conn
            except (error.ConnectionClosedError, OSError):
                self._forget_connection()  # the server went away: reconnect next time
                raise

    def _open(self) -> Any:
        conn = display.Display(self._display_name)
        try:
            if not conn.has_extension("XTEST"):
                raise InputUnavailableError("the X server has no XTEST extension")
            self._conn = conn
            self._setup_keyboard()
        except BaseException:
            self._conn = None
            conn.close()
            raise
        return conn

    def _setup_keyboard(self) -> None:
        conn = self._conn
        first = conn.display.info.min_keycode
        rows = conn.get_keyboard_mapping(first, conn.display.info.max_keycode - first + 1)
        spares = self._load_spare_list(first, rows)
        leftovers = {code: NO_SYMBOL for code in spares if any(rows[code - first])}
        if leftovers:  # trap 3: bindings left by an instance that died
            self._change_mapping(leftovers)
        self._layout = KeyboardLayout(first, rows, exclude=spares)
        shift = self._layout.find(XK_SHIFT_L)
        if shift is None:
            raise InputUnavailableError("the keyboard mapping has no Shift_L")
        self._shift_keycode = shift.keycode
        # Highest first: see trap 2 in the module docstring.
        self._spares = SpareKeycodes(sorted(spares, reverse=True))

    def _load_spare_list(self, first: int, rows: list[Any]) -> list[int]:
        conn = self._conn
        root = conn.screen().root
        atom = conn.intern_atom(SPARE_PROPERTY)
        last = first + len(rows) - 1
        stored = root.get_full_property(atom, X.AnyPropertyType)
        if stored is not None and len(stored.value) > 0:
            kept = [int(code) for code in stored.value if first <= int(code) <= last]
            if kept:
                return kept
        spares = spare_keycodes(first, rows)
        if not spares:
            raise InputUnavailableError("no unused keycodes to bind characters to")
        root.change_property(atom, Xatom.CARDINAL, 32, spares)
        conn.sync()
        return spares

    def _layout_or_fail(self) -> KeyboardLayout:
        if self._layout is None:
            raise InputUnavailableError("input is closed")
        return self._layout

    def _spares_or_fail(self) -> SpareKeycodes:
        if self._spares is None:
            raise InputUnavailableError("input is closed")
        return self._spares

    def close(self) -> None:
        """Release what we hold, unbind the spare keycodes, close the connection."""
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            try:
                for key in list(self._held):
                    self._release_key(key)
                if self._spares is not None:
                    unbind = self._spares.forget_all()
                    if unbind:
                        self._wait_until_read(list(unbind))
                        self._change_mapping(unbind)
                conn.sync()
            except (error.ConnectionClosedError, OSError):
                pass  # the server is gone, and its keymap with it
            finally:
                self._forget_connection()

    def _forget_connection(self) -> None:
        conn, self._conn = self._conn, None
        self._layout = None
        self._spares = None
        self._held.clear()
        self._read_at.clear()
        if conn is not None:
            with suppress(error.ConnectionClosedError, OSError):
                conn.close()
