"""The roles `WindowsDesktop` is composed of, one per area of the platform.

Each role is pure logic over a thin platform port of its own (declared beside the
logic); the binding modules implement the ports with ctypes/comtypes/pywin32, and the
tests implement them with fakes. `WindowsDesktop` only forwards to the roles, so the
shared agent core runs over real role logic on Linux as it will on Windows.

Threads (see `backends/base.py`): the screen role runs on the agent's screen worker,
input on the input worker, accessibility on the accessibility worker; the windows and
state roles may be called from any of them and lock what they share.
"""

from __future__ import annotations

from typing import Protocol

from rigway.agent.backends.base import (
    AccessibilitySnapshot,
    DesktopState,
    MouseButton,
    Pixels,
    Rect,
    StackedWindow,
    WalkBudget,
)
from rigway.agent.backends.windows.displays import MonitorRecord
from rigway.agent.backends.windows.geometry import OutputPlacement

__all__ = [
    "AccessibilityRole",
    "DisplaysRole",
    "InputRole",
    "LocalInputRole",
    "ScreenRole",
    "StateRole",
    "WindowsRole",
]


class ScreenRole(Protocol):
    """Capture of one output: DXGI Desktop Duplication ("dxgi") or GDI ("gdi")."""

    @property
    def capture_mode(self) -> str: ...

    @property
    def has_damage(self) -> bool: ...

    def placement(self) -> OutputPlacement:
        """The captured output on the virtual desktop (changes with a mode change).
        Safe to call from any thread."""
        ...

    def grab(self) -> Pixels: ...

    def poll_damage(self) -> list[Rect]: ...

    def close(self) -> None: ...


class InputRole(Protocol):
    """SendInput. Coordinates are capture pixels; the role maps them through the
    screen role's placement. Raises `InputBlockedError` when Windows would drop the
    input (an elevated foreground window, no input desktop), never reports success."""

    def move_pointer(self, x: int, y: int) -> None: ...

    def set_button(self, button: MouseButton, down: bool) -> None: ...

    def scroll(self, dx: int, dy: int) -> None: ...

    def set_key(self, key: str, down: bool) -> None: ...

    def type_text(self, text: str) -> None: ...

    def close(self) -> None:
        """Release whatever this role still holds down."""
        ...


class LocalInputRole(Protocol):
    """When the owner last used the rig's own keyboard or mouse (`local_input.py`);
    any thread."""

    def last_local_input(self) -> float | None: ...

    def close(self) -> None: ...


class AccessibilityRole(Protocol):
    """UI Automation over the foreground window, rects in capture pixels."""

    def snapshot(self, budget: WalkBudget) -> AccessibilitySnapshot: ...

    def close(self) -> None: ...


class WindowsRole(Protocol):
    """Top-level windows (ids are HWNDs as ints)."""

    def list_windows(self) -> frozenset[int]: ...

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]: ...

    def close_windows(self, window_ids: frozenset[int]) -> None: ...

    def window_stack(self) -> list[StackedWindow]:
        """Windows that show, topmost first, in virtual-screen coordinates."""
        ...


class StateRole(Protocol):
    """Whether the desktop can be seen and driven now."""

    def desktop_state(self) -> DesktopState: ...

    def note_display_power(self, is_on: bool) -> None:
        """The display went off or on (told by the tray's window, which receives the
        power notifications; the state role has no window of its own)."""
        ...

    def close(self) -> None: ...


class DisplaysRole(Protocol):
    """The desktop's monitors as Windows reports them, on the virtual screen."""

    def monitors(self) -> list[MonitorRecord]:
        """Read afresh on each call; [] when Windows cannot list them."""
        ...
