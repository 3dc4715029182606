"""`WindowsDesktop`: the `Desktop` protocol on Windows, composed of one role per area.

Pure: it only forwards to its roles (`roles.py`), which are pure logic over thin
platform ports. `open_windows_desktop` builds it over the real bindings on Windows;
tests build it over fakes of the same ports, so the agent core runs over the real
role logic on Linux.

Threading (see `backends/base.py`): the screen role runs on the agent's screen worker,
input on the input worker, accessibility on its own worker; each binding joins its
thread to the multithreaded COM apartment on first use. The first D3D11 device, context
and duplication are made on the thread that opens the desktop, not the screen worker
(`capture.py` says why that is harmless); later ones on the screen worker.
"""

from __future__ import annotations

import dataclasses
import logging

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
from rigway.agent.backends.windows.displays import to_displays, whole_capture
from rigway.agent.backends.windows.roles import (
    AccessibilityRole,
    DisplaysRole,
    InputRole,
    LocalInputRole,
    ScreenRole,
    StateRole,
    WindowsRole,
)
from rigway.agent.backends.windows.ui_effects import WindowsUiEffects

__all__ = ["WindowsDesktop"]

_log = logging.getLogger(__name__)


class WindowsDesktop:
    """One output of a Windows desktop, in its native (physical) pixels."""

    def __init__(
        self,
        *,
        screen: ScreenRole,
        input: InputRole,
        accessibility: AccessibilityRole,
        windows: WindowsRole,
        state: StateRole,
        displays: DisplaysRole | None = None,
        local_input: LocalInputRole | None = None,
        ui_effects: WindowsUiEffects | None = None,
    ) -> None:
        """`displays`: None reports one display covering the capture. `local_input`:
        None never tells of the owner's input. `ui_effects`: None leaves the
        animations alone (`set_reduce_motion` does nothing)."""
        self._screen = screen
        self._input = input
        self._accessibility = accessibility
        self._windows = windows
        self._state = state
        self._displays = displays
        self._local_input = local_input
        self._ui_effects = ui_effects

    @property
    def capture_mode(self) -> str:
        """ "dxgi" (Desktop Duplication, with damage) or "gdi" (the fallback)."""
        return self._screen.capture_mode

    @property
    def has_damage(self) -> bool:
        return self._screen.has_damage

    # -- screen ----------------------------------------------------------------------
    def native_size(self) -> tuple[int, int]:
        placement = self._screen.placement()
        return placement.width, placement.height

    def grab(self) -> Pixels:
        return self._screen.grab()

    def poll_damage(self) -> list[Rect]:
        return self._screen.poll_damage()

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

    # -- accessibility, windows, state -------------------------------------------------
    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        return self._accessibility.snapshot(budget)

    def list_windows(self) -> frozenset[int]:
        return self._windows.list_windows()

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        return self._windows.window_owners(window_ids)

    def close_windows(self, window_ids: frozenset[int]) -> None:
        self._windows.close_windows(window_ids)

    def window_stack(self) -> list[StackedWindow]:
        """The windows role's stack, moved from the virtual screen into capture pixels."""
        placement = self._screen.placement()
        stack = []
        for window in self._windows.window_stack():
            x, y = placement.from_screen(window.rect.x, window.rect.y)
            rect = Rect(x, y, window.rect.w, window.rect.h)
            stack.append(dataclasses.replace(window, rect=rect))
        return stack

    def desktop_state(self) -> DesktopState:
        return self._state.desktop_state()

    def last_local_input(self) -> float | None:
        return None if self._local_input is None else self._local_input.last_local_input()

    def displays(self) -> list[Display]:
        placement = self._screen.placement()
        if self._displays is None:
            return [whole_capture(placement)]
        try:
            records = self._displays.monitors()
        except Exception:  # the contract: never raises; the capture stands in
            _log.exception("listing the monitors failed")
            records = []
        return to_displays(records, placement)

    def set_reduce_motion(self, on: bool) -> None:
        """The UI effects that animate, off and back (`ui_effects.py`)."""
        if self._ui_effects is not None:
            self._ui_effects.set_reduce_motion(on)

    def note_display_power(self, is_on: bool) -> None:
        """For the tray's window, which Windows tells when the display goes off or on."""
        self._state.note_display_power(is_on)

    def close(self) -> None:
        """Release held input first (the owner's keyboard must never stay stuck), then
        the platform objects; one failing close does not skip the others."""
        errors: list[BaseException] = []
        for close in (
            self._input.close,
            self._screen.close,
            self._accessibility.close,
            self._state.close,
            *(() if self._local_input is None else (self._local_input.close,)),
            *(() if self._ui_effects is None else (self._ui_effects.close,)),
        ):
            try:
                close()
            except Exception as exc:  # collected: every role gets its close
                errors.append(exc)
        if errors:
            raise errors[0]
