"""`X11Desktop`: the `Desktop` protocol on an X server, composed from one object per role.

Threading (see `backends/base.py`): the agent calls input, screen and accessibility from
three threads. Each role owns its connections (input: python-xlib; screen: xcffib for
the MIT-SHM capture, mss as its fallback, and xcffib for DAMAGE; accessibility: the a11y
D-Bus plus python-xlib; windows: python-xlib), opens them lazily in the thread that
first uses them, and guards them with its own lock, so a call from an unexpected thread
is safe too. One exception: a grab's pixels are valid until the next grab, so grabs
belong to one thread (the agent's screen worker) while their pixels are in use.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import xcffib
import xcffib.xproto

from rigway.agent.backends.base import (
    AccessibilitySnapshot,
    DesktopState,
    Display,
    MouseButton,
    Pixels,
    Rect,
    StackedWindow,
    WalkBudget,
)
from rigway.agent.backends.x11.accessibility import X11Accessibility
from rigway.agent.backends.x11.capture import ScreenCapture
from rigway.agent.backends.x11.damage import DamageTracker
from rigway.agent.backends.x11.desktop_state import X11DesktopState
from rigway.agent.backends.x11.displays import read_displays
from rigway.agent.backends.x11.errors import X11UnavailableError
from rigway.agent.backends.x11.input import PER_KEY_S, SETTLE_S, X11Input
from rigway.agent.backends.x11.local_input import LocalInputListener, XInputRawSource
from rigway.agent.backends.x11.windows import X11Windows
from rigway.agent.backends.x11.xsettings import XSettingsMotion


class X11Desktop:
    """A live X display. Build it with `open_x11_desktop`."""

    def __init__(
        self,
        display_name: str,
        *,
        screen_size: tuple[int, int],
        has_damage: bool,
        session_bus_address: str | None = None,
        system_bus_address: str = "SYSTEM",
        typing_settle_s: float = SETTLE_S,
        typing_per_key_s: float = PER_KEY_S,
    ) -> None:
        self.display_name = display_name
        self.has_damage = has_damage
        self.capture_mode = "x11-damage" if has_damage else "x11"
        self._size = screen_size
        self._screen_lock = threading.Lock()
        self._capture = ScreenCapture(display_name)
        self._damage: DamageTracker | None = None
        self._input = X11Input(display_name, settle_s=typing_settle_s, per_key_s=typing_per_key_s)
        self._accessibility = X11Accessibility(display_name, session_bus_address, screen_size)
        self._windows = X11Windows(display_name)
        self._state = X11DesktopState(display_name, system_bus_address=system_bus_address)
        self._motion = XSettingsMotion(display_name)
        # Listens from the start, so input before the first batch counts too.
        self._local_input = LocalInputListener(partial(XInputRawSource, display_name))
        self._local_input.start()

    # -- screen ----------------------------------------------------------------------
    def native_size(self) -> tuple[int, int]:
        return self._size

    def grab(self) -> Pixels:
        """BGRA (height, width, 4), valid only until the next `grab` or `close`.

        Usually a view over the shared-memory segment the X server writes into (see
        `ScreenCapture.grab`): the next grab overwrites it in place, so a caller that keeps
        pixels past that, or hands them to another thread, must copy them first.
        """
        with self._screen_lock:
            # Damage starts with the first screen call, so nothing drawn after this grab
            # can be missed by the next poll.
            self._start_damage()
            pixels = self._capture.grab()
            size = (int(pixels.shape[1]), int(pixels.shape[0]))
            if size != self._size:
                self._size = size
                # The tracker clips to the root size it started with: after a resize
                # it would drop damage outside it. The next poll, with no tracker,
                # reports the whole screen and starts one at the new size.
                self._stop_damage()
            return pixels

    def poll_damage(self) -> list[Rect]:
        if not self.has_damage:
            return []
        with self._screen_lock:
            if self._damage is None:
                self._start_damage()
                # No baseline (no grab yet, a resize, a failed poll): anything may have
                # changed.
                return [Rect(0, 0, *self._size)]
            try:
                return self._damage.poll()
            except (xcffib.ConnectionException, xcffib.ProtocolException):
                # Damage subtracted but not read back is lost: start over, and the next
                # poll reports the whole screen.
                self._stop_damage()
                raise

    def _start_damage(self) -> None:
        if self.has_damage and self._damage is None:
            self._damage = DamageTracker(self.display_name)

    def _stop_damage(self) -> None:
        tracker, self._damage = self._damage, None
        if tracker is not None:
            tracker.close()

    # -- input -----------------------------------------------------------------------
    def move_pointer(self, x: int, y: int) -> None:
        self._input.move_pointer(x, y)

    def set_button(self, button: MouseButton, down: bool) -> None:
        self._input.set_button(button, down)

    def scroll(self, dx: int, dy: int) -> None:
        self._input.scroll(dx, dy)

    def set_key(self, key: str, down: bool) -> None:
        self._input.set_key(key, down)

    def type_text(self, text: str) -> None:
        self._input.type_text(text)

    # -- accessibility and windows ---------------------------------------------------
    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        return self._accessibility.snapshot(budget)

    def list_windows(self) -> frozenset[int]:
        return self._windows.list_windows()

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        return self._windows.window_owners(window_ids)

    def close_windows(self, window_ids: frozenset[int]) -> None:
        self._windows.close_windows(window_ids)

    def window_stack(self) -> list[StackedWindow]:
        return self._windows.window_stack()

    def desktop_state(self) -> DesktopState:
        """A session lock, else the X screen saver (`desktop_state.py`); any thread."""
        return self._state.read()

    def last_local_input(self) -> float | None:
        """The last XInput2 raw event of a device that is not XTEST's (`local_input.py`);
        any thread."""
        return self._local_input.last_local_input()

    @property
    def local_input_ready(self) -> threading.Event:
        """Set once the owner's input is listened for (or cannot be): for tests."""
        return self._local_input.ready

    @property
    def injected_input_count(self) -> int:
        """Raw events of XTEST's devices the listener read: for tests."""
        return self._local_input.injected_count

    def set_reduce_motion(self, on: bool) -> None:
        """As the XSETTINGS manager, when the desktop has none (`xsettings.py`)."""
        self._motion.set_reduce_motion(on)

    def displays(self) -> list[Display]:
        """RandR's monitors (`displays.py`), on a connection of its own; any thread."""
        found = read_displays(self.display_name)
        if found:
            return found
        width, height = self._size
        return [Display(0, 0, width, height, scale=1.0, primary=True)]

    def close(self) -> None:
        """Release every connection and unbind the spare keycodes; safe to call twice."""
        self._input.close()
        self._motion.close()
        with self._screen_lock:
            self._stop_damage()
            self._capture.close()
        self._accessibility.close()
        self._windows.close()
        self._state.close()
        self._local_input.close()


def open_x11_desktop(
    display_name: str | None,
    *,
    session_bus_address: str | None = None,
    system_bus_address: str = "SYSTEM",
    typing_settle_s: float = SETTLE_S,
    typing_per_key_s: float = PER_KEY_S,
) -> X11Desktop:
    """Check the display and build the backend; raises X11UnavailableError with the reason.

    `display_name` is the DISPLAY the agent was configured with (None when unset).
    `session_bus_address` is the D-Bus session bus for AT-SPI; None means the standard
    lookup (DBUS_SESSION_BUS_ADDRESS) when the first snapshot runs. `system_bus_address`
    is where logind is asked about a session lock ("SYSTEM": the standard lookup, when
    first asked). The typing margins are explained in `input.py` (trap 1).
    """
    if display_name is None or display_name.strip() == "":
        raise X11UnavailableError(
            "DISPLAY is unset: the x11 backend needs an X display (for example DISPLAY=:0)"
        )
    extensions, size = _probe(display_name)
    if "XTEST" not in extensions:
        raise X11UnavailableError(
            f"X display {display_name!r} has no XTEST extension: input cannot be synthesised"
        )
    has_damage = {"DAMAGE", "XFIXES"} <= extensions
    return X11Desktop(
        display_name,
        screen_size=size,
        has_damage=has_damage,
        session_bus_address=session_bus_address,
        system_bus_address=system_bus_address,
        typing_settle_s=typing_settle_s,
        typing_per_key_s=typing_per_key_s,
    )


def _probe(display_name: str) -> tuple[frozenset[str], tuple[int, int]]:
    """Which of our extensions the display has, and its screen size (one connection).

    xcffib rather than python-xlib: python-xlib leaks its socket when a connect fails.
    """
    try:
        conn: Any = xcffib.Connection(display_name)  # type: ignore[no-untyped-call]
    except xcffib.XcffibException as exc:
        raise X11UnavailableError(f"cannot open X display {display_name!r}: {exc}") from exc
    try:
        screen = conn.get_setup().roots[conn.pref_screen]
        size = (int(screen.width_in_pixels), int(screen.height_in_pixels))
        present = frozenset(
            name
            for name in ("XTEST", "DAMAGE", "XFIXES")
            if conn.core.QueryExtension(len(name), name).reply().present
        )
    finally:
        conn.disconnect()
    return present, size
