"""`SimDesktop`: a deterministic in-memory desktop with one sign-in window and real state.

Used by the tests and by `rigway up` on machines with no display. Every input goes
through the same path: mutate the form state, then `_refresh` compares each control's
view with the one last drawn and repaints (and reports as damage) only those that
differ. So damage is exact: a pointer move, a scroll past the end of the list or typing
with no text field focused change no view and report nothing. The pointer is not drawn.

Threading: one lock guards the state and the pixel buffer; the input, screen and
accessibility workers each take it briefly (a full grab holds it for one ~1.5 ms copy).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from typing import Final

import numpy as np

from rigway.agent.backends.base import (
    DESKTOP_STATES,
    AccessibilitySnapshot,
    AccessibleElement,
    DesktopState,
    Display,
    MouseButton,
    Pixels,
    Rect,
    StackedWindow,
    WalkBudget,
)
from rigway.agent.backends.sim import form, widgets
from rigway.agent.backends.sim.app_windows import AppWindow, AppWindowFactory, blit
from rigway.agent.backends.sim.form import SignInForm, View
from rigway.protocol.keys import CHARACTER_KEYS, MODIFIER_KEYS, canonical_key

MAIN_WINDOW_ID: Final = 1
KEY_PREFIX: Final = "sim:"

# US-layout shifted characters, so shift+1 types "!" as on a real keyboard.
_SHIFTED: Final = dict(zip("`1234567890-=[]\\;',./", '~!@#$%^&*()_+{}|:"<>?', strict=True))
_SHORTCUT_MODIFIERS: Final = frozenset({"ctrl", "alt", "win"})
_ROLES: Final = {
    form.USERNAME: ("text", "Username"),
    form.PASSWORD: ("password text", "Password"),
    form.REMEMBER: ("check box", "Remember me"),
    form.SIGN_IN: ("push button", "Sign in"),
    form.CANCEL: ("push button", "Cancel"),
    form.RECENT: ("list", "Recent"),
}


class SimDesktop:
    """A `Desktop` drawn in memory: a solid background and one sign-in window."""

    capture_mode: str = "sim"
    has_damage: bool = True

    def __init__(self, width: int = 1920, height: int = 1080) -> None:
        if width < widgets.WINDOW_W or height < widgets.WINDOW_H:
            raise ValueError(
                f"sim desktop {width}x{height} is smaller than its window "
                f"({widgets.WINDOW_W}x{widgets.WINDOW_H})"
            )
        self._width = width
        self._height = height
        self._lock = threading.Lock()
        self._form = SignInForm()
        self._origin = ((width - widgets.WINDOW_W) // 2, (height - widgets.WINDOW_H) // 2)
        self._pixels: Pixels = np.empty((height, width, 4), dtype=np.uint8)
        self._pixels[:] = widgets.DESKTOP_BGRA
        widgets.paint_chrome(self._window_canvas())
        self._drawn: dict[str, View] = {}
        self._damage: list[Rect] = []
        self._pointer = (0, 0)
        self._keys: set[str] = set()
        self._buttons: set[MouseButton] = set()
        self._press_target: str | None = None
        # Windows launched apps opened (`app_windows.py`), bottom to top, over the form.
        self._app_windows: list[AppWindow] = []
        self._app_window_factory = AppWindowFactory()
        # Set by tests (`set_desktop_state`); the sim itself never locks.
        self._desktop_state: DesktopState = "normal"
        # Set by tests (`set_displays`); None: one 96-dpi monitor, the whole canvas.
        self._displays: list[Display] | None = None
        # Set by tests (`record_local_input`): the sim has no keyboard of its own.
        self._last_local_input: float | None = None
        # The `reduce_motion` option's flag (the sim draws no animations to turn off),
        # and every change of it, for tests of its lifecycle.
        self._motion_changed = threading.Condition(self._lock)
        self._reduce_motion = False
        self._motion_history: list[bool] = []
        # The first paint is the desktop's starting picture, not a change: no damage.
        self._refresh()
        self._damage.clear()

    # ---- Desktop protocol -------------------------------------------------------

    def native_size(self) -> tuple[int, int]:
        return (self._width, self._height)

    def grab(self) -> Pixels:
        # A private copy: callers may draw marks on it or hand it to another thread.
        with self._lock:
            pixels = self._pixels.copy()
            for window in self._app_windows:
                blit(pixels, window.pixels, window.rect.x, window.rect.y)
            return pixels

    def poll_damage(self) -> list[Rect]:
        with self._lock:
            taken = list(dict.fromkeys(self._damage))
            self._damage.clear()
        return taken

    def move_pointer(self, x: int, y: int) -> None:
        with self._lock:
            # Clamped like a real pointer, which cannot leave the screen.
            self._pointer = (min(max(x, 0), self._width - 1), min(max(y, 0), self._height - 1))

    def set_button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            if down:
                self._buttons.add(button)
                if button == "left":
                    self._left_down()
            else:
                self._buttons.discard(button)
                if button == "left":
                    self._left_up()
            self._refresh()

    def scroll(self, dx: int, dy: int) -> None:
        with self._lock:
            # Only the list scrolls, and only vertically; dy < 0 is down.
            if self._hit() == form.RECENT:
                self._form.scroll(-dy)
                self._refresh()

    def set_key(self, key: str, down: bool) -> None:
        name = canonical_key(key)
        with self._lock:
            if not down:
                self._keys.discard(name)
                return
            self._keys.add(name)
            self._key_down(name)
            self._refresh()

    def type_text(self, text: str) -> None:
        with self._lock:
            for char in text:
                self._type_char(char)
            self._refresh()

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        with self._lock:
            if self._app_windows:
                top = self._app_windows[-1]  # the topmost app window has the focus
                return AccessibilitySnapshot(
                    top.title, "frame", [top.element()][: max(budget.max_elements, 0)],
                    truncated=budget.max_elements < 1, window_pid=top.pid,
                )  # fmt: skip
            elements = self._elements()
        limit = max(budget.max_elements, 0)
        return AccessibilitySnapshot(
            window_title=widgets.WINDOW_TITLE,
            window_role="dialog",
            elements=elements[:limit],
            truncated=len(elements) > limit,
        )

    def list_windows(self) -> frozenset[int]:
        with self._lock:
            return frozenset({MAIN_WINDOW_ID, *(w.window_id for w in self._app_windows)})

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        # The sign-in window belongs to no process the session launched.
        with self._lock:
            owners: dict[int, int | None] = {w.window_id: w.pid for w in self._app_windows}
        owners[MAIN_WINDOW_ID] = None
        return {w: pid for w, pid in owners.items() if w in window_ids}

    def close_windows(self, window_ids: frozenset[int]) -> None:
        """Closes app windows; the sign-in window is the sim's fixture, present for its
        whole life (closing it would leave later sessions nothing to drive)."""
        with self._lock:
            self._drop_app_windows([w for w in self._app_windows if w.window_id in window_ids])

    def window_stack(self) -> list[StackedWindow]:
        # The topmost window has the focus (a click raises the window it lands on).
        with self._lock:
            apps = [StackedWindow(w.window_id, w.pid, w.rect) for w in reversed(self._app_windows)]
        stack = [*apps, StackedWindow(MAIN_WINDOW_ID, None, self.window_rect())]
        return [dataclasses.replace(stack[0], has_focus=True), *stack[1:]]

    def desktop_state(self) -> DesktopState:
        with self._lock:
            return self._desktop_state

    def last_local_input(self) -> float | None:
        with self._lock:
            return self._last_local_input

    def displays(self) -> list[Display]:
        with self._lock:
            if self._displays is not None:
                return list(self._displays)
        return [Display(0, 0, self._width, self._height, scale=1.0, primary=True)]

    def set_reduce_motion(self, on: bool) -> None:
        """Records the flag (`reduces_motion`, `motion_history`): the sim does not animate."""
        with self._motion_changed:
            if on != self._reduce_motion:
                self._reduce_motion = on
                self._motion_history.append(on)
                self._motion_changed.notify_all()

    def close(self) -> None:
        """Nothing to release: the sim holds no OS resources."""

    # ---- Control for tests ---------------------------------------------------------

    def set_desktop_state(self, state: DesktopState) -> None:
        """Pretend the desktop is locked, behind a screensaver, … (`DesktopState`): the
        agent then refuses input and reports the state. The picture does not change."""
        if state not in DESKTOP_STATES:
            raise ValueError(f"unknown desktop state {state!r}; one of {DESKTOP_STATES}")
        with self._lock:
            self._desktop_state = state

    def record_local_input(self, at: float | None = None) -> None:
        """Pretend the owner used the rig's own keyboard or mouse at `at`
        (`time.monotonic()` seconds; None: now). Nothing else changes."""
        with self._lock:
            self._last_local_input = time.monotonic() if at is None else at

    def set_displays(self, displays: list[Display] | None) -> None:
        """Pretend the monitors are these (None: back to one covering the canvas); the
        picture does not change."""
        with self._lock:
            self._displays = None if displays is None else list(displays)

    def open_app_window(self, pid: int, title: str, rect: Rect | None = None) -> int:
        """Open a window owned by `pid` on top of the others (`app_windows.py`; a
        cascaded place when `rect` is None); its id."""
        with self._lock:
            window = self._app_window_factory.make(pid, title, rect)
            self._app_windows.append(window)
            self._damage.append(window.rect)
            return window.window_id

    def close_app_windows_of(self, pids: Sequence[int]) -> None:
        with self._lock:
            self._drop_app_windows([w for w in self._app_windows if w.pid in pids])

    # ---- Observation for tests ----------------------------------------------------

    def field_text(self, name: str) -> str:
        """The text of field "username" or "password" (the password too: this is the
        fixture's own state, never exposed through pixels or accessibility)."""
        with self._lock:
            return self._form.fields[name]

    @property
    def checkbox_checked(self) -> bool:
        with self._lock:
            return self._form.remember

    @property
    def list_top_index(self) -> int:
        with self._lock:
            return self._form.top

    @property
    def list_selected_index(self) -> int | None:
        with self._lock:
            return self._form.selected

    @property
    def visible_items(self) -> tuple[str, ...]:
        with self._lock:
            return self._form.visible_items()

    @property
    def focused_control(self) -> str | None:
        with self._lock:
            return self._form.focus

    @property
    def status_text(self) -> str:
        with self._lock:
            return self._form.status

    @property
    def pointer(self) -> tuple[int, int]:
        with self._lock:
            return self._pointer

    @property
    def reduces_motion(self) -> bool:
        """Whether the agent has the desktop's animations off now."""
        with self._lock:
            return self._reduce_motion

    @property
    def motion_history(self) -> tuple[bool, ...]:
        """Each change of `reduces_motion`, in order (True: turned off animations)."""
        with self._lock:
            return tuple(self._motion_history)

    def wait_reduce_motion(self, on: bool, timeout_s: float = 5.0) -> None:
        """Until `reduces_motion` is `on`; TimeoutError after `timeout_s`."""
        with self._motion_changed:
            if not self._motion_changed.wait_for(lambda: self._reduce_motion == on, timeout_s):
                raise TimeoutError(f"reduce motion still {self._reduce_motion}, not {on}")

    @property
    def pressed_keys(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._keys)

    @property
    def pressed_buttons(self) -> frozenset[MouseButton]:
        with self._lock:
            return frozenset(self._buttons)

    def control_rect(self, key: str) -> Rect:
        """Screen rectangle of a control ("username", …, "recent", "status")."""
        return self._to_screen(widgets.CONTROL_RECTS[key])

    def window_rect(self) -> Rect:
        return self._to_screen(Rect(0, 0, widgets.WINDOW_W, widgets.WINDOW_H))

    # ---- Internals (called with the lock held) -------------------------------------

    def _window_canvas(self) -> Pixels:
        x, y = self._origin
        return self._pixels[y : y + widgets.WINDOW_H, x : x + widgets.WINDOW_W]

    def _to_screen(self, rect: Rect) -> Rect:
        return Rect(rect.x + self._origin[0], rect.y + self._origin[1], rect.w, rect.h)

    def _drop_app_windows(self, windows: list[AppWindow]) -> None:
        for window in windows:
            self._app_windows.remove(window)
            self._damage.append(window.rect)

    def _app_window_at(self, x: int, y: int) -> AppWindow | None:
        for window in reversed(self._app_windows):
            r = window.rect
            if r.x <= x < r.x + r.w and r.y <= y < r.y + r.h:
                return window
        return None

    def _refresh(self) -> None:
        canvas = self._window_canvas()
        for key, view in self._form.views().items():
            if self._drawn.get(key) == view:
                continue
            rect = widgets.CONTROL_RECTS[key]
            widgets.paint_view(canvas, rect, view)
            self._drawn[key] = view
            self._damage.append(self._to_screen(rect))

    def _hit(self) -> str | None:
        """The control under the pointer (window-relative hit test), if any."""
        x = self._pointer[0] - self._origin[0]
        y = self._pointer[1] - self._origin[1]
        for key in form.CONTROL_KEYS:
            rect = widgets.CONTROL_RECTS[key]
            if rect.x <= x < rect.x + rect.w and rect.y <= y < rect.y + rect.h:
                return key
        return None

    def _hit_row(self) -> int | None:
        y = self._pointer[1] - self._origin[1]
        for row in range(form.VISIBLE_ROWS):
            cell = widgets.row_rect(row)
            if cell.y <= y < cell.y + cell.h:
                return row
        return None

    def _left_down(self) -> None:
        window = self._app_window_at(*self._pointer)
        if window is not None:
            # A click on an app window raises it (and never reaches the form below).
            self._app_windows.remove(window)
            self._app_windows.append(window)
            self._damage.append(window.rect)
            self._press_target = None
            return
        # Focus moves on press, as on real desktops; the action waits for the release.
        target = self._hit()
        self._press_target = target
        if target is None:
            return
        self._form.focus_on(target)
        row = self._hit_row() if target == form.RECENT else None
        if row is not None:
            self._form.select_index(self._form.top + row)

    def _left_up(self) -> None:
        target, self._press_target = self._press_target, None
        # A click counts only when released over the control it was pressed on.
        if target is not None and self._hit() == target:
            self._form.activate(target)

    def _key_down(self, name: str) -> None:
        if name in MODIFIER_KEYS:
            return
        if self._keys & _SHORTCUT_MODIFIERS:
            return  # the sim defines no shortcuts; a chord must not type its letter
        shift = "shift" in self._keys
        if name in CHARACTER_KEYS:
            self._form.insert(_SHIFTED.get(name, name.upper()) if shift else name)
        else:
            self._form.press(name, shift)

    def _type_char(self, char: str) -> None:
        if char in "\r\n":
            self._form.press("enter", shift=False)
        elif char == "\t":
            self._form.press("tab", shift=False)
        elif char.isprintable():
            self._form.insert(char)
        # Other control characters have no text to insert and are dropped.

    def _elements(self) -> list[AccessibleElement]:
        focus = self._form.focus
        elements: list[AccessibleElement] = []
        for key in form.CONTROL_KEYS:
            role, name = _ROLES[key]
            rect = self._to_screen(widgets.CONTROL_RECTS[key])
            elements.append(
                AccessibleElement(
                    key=KEY_PREFIX + key,
                    role=role,
                    name=name,
                    x=rect.x,
                    y=rect.y,
                    w=rect.w,
                    h=rect.h,
                    focused=focus == key,
                    masked=key == form.PASSWORD,
                    value=self._value_of(key),
                )
            )
        elements.extend(self._list_item_elements())
        return elements

    def _value_of(self, key: str) -> str | None:
        if key == form.USERNAME:
            return self._form.fields[form.USERNAME]
        if key == form.REMEMBER:
            return "checked" if self._form.remember else "unchecked"
        if key == form.RECENT and self._form.selected is not None:
            return form.LIST_ITEMS[self._form.selected]
        # The password's value is never read out: masked elements carry None.
        return None

    def _list_item_elements(self) -> list[AccessibleElement]:
        elements = []
        for row, item in enumerate(self._form.visible_items()):
            index = self._form.top + row
            rect = self._to_screen(widgets.row_rect(row))
            elements.append(
                AccessibleElement(
                    key=f"{KEY_PREFIX}{form.RECENT}:{index:02d}",
                    role="list item",
                    name=item,
                    x=rect.x,
                    y=rect.y,
                    w=rect.w,
                    h=rect.h,
                    value="selected" if index == self._form.selected else None,
                )
            )
        return elements
