"""The `Desktop` protocol: what a platform backend gives the host agent.

A backend is only the platform: capture, damage, input primitives, the accessibility
snapshot and window bookkeeping. Everything shared (the link, dispatch, JPEG encoding,
the last-frame cache, dirty-rect accumulation, held-input tracking, launched-process
tracking, redaction) lives outside `backends/` and works the same for every backend.

Threading contract: the agent calls a backend from three worker threads, never the
event loop: one for input (`move_pointer` … `type_text`, in order), one for the screen
(`grab`, `poll_damage`), one for accessibility (`snapshot_accessibility`). A backend
must be safe under that split (e.g. one X connection per thread) but need not be
re-entrant within one role. `desktop_state` and `last_local_input` are the exceptions:
they may be called from any worker thread, concurrently with every role. `close` is
called once, after the workers stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

# Whether the desktop can be seen and driven now: one definition, on the wire's side,
# re-exported for the backends.
from rigway.protocol.ops import DESKTOP_STATES as DESKTOP_STATES
from rigway.protocol.ops import DesktopState as DesktopState

MouseButton = Literal["left", "right", "middle"]

# BGRA pixels, shape (height, width, 4), dtype uint8, C-contiguous.
Pixels = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class Rect:
    x: int
    y: int
    w: int
    h: int

    def as_list(self) -> tuple[int, int, int, int]:
        return (self.x, self.y, self.w, self.h)


@dataclass(frozen=True, slots=True)
class Display:
    """One monitor, in native capture pixels (the space of `grab`), origin top-left.

    `scale` is the display's DPI scale (1.0 = 96 dpi, 1.5 = 144 dpi); `primary` marks the
    platform's primary display (at most one)."""

    x: int
    y: int
    width: int
    height: int
    scale: float = 1.0
    primary: bool = False


@dataclass(frozen=True, slots=True)
class StackedWindow:
    """One top-level window on screen, as `Desktop.window_stack` lists it.

    `rect` is what the window covers on screen (its frame included), in native capture
    pixels; it may reach past the capture. `pid` owns the window (None when the backend
    cannot tell). `is_popup` marks a menu, tooltip or other transient surface that no
    window manager frames (X11 override-redirect, a Windows tool or owned popup): such a
    surface is never taken for an app's own window, but an app's popups stay visible
    over it in an app session. `has_focus` marks the window keys go to (at most one;
    none when the backend cannot tell)."""

    window_id: int
    pid: int | None
    rect: Rect
    is_popup: bool = False
    has_focus: bool = False


@dataclass(frozen=True, slots=True)
class AccessibleElement:
    """One interactive control of the focused window, in native screen pixels.

    `key` is the control's runtime identity (e.g. an AT-SPI object path, a UIA
    RuntimeId); the agent hashes it into the public stable target id. `masked` is
    decided by the backend from the platform's own password flag; a masked element's
    `value` must be None (the backend never reads a password's text).
    """

    key: str
    role: str
    name: str
    x: int
    y: int
    w: int
    h: int
    focused: bool = False
    masked: bool = False
    value: str | None = None


@dataclass(frozen=True, slots=True)
class AccessibilitySnapshot:
    window_title: str
    window_role: str
    elements: list[AccessibleElement] = field(default_factory=list)
    # True when the walk stopped at the budget (element cap or deadline).
    truncated: bool = False
    # The process owning the walked window, when the backend knows it: an app session
    # shows the targets of its own apps' windows only.
    window_pid: int | None = None


@dataclass(frozen=True, slots=True)
class WalkBudget:
    max_elements: int = 500
    deadline_s: float = 1.5


@runtime_checkable
class Desktop(Protocol):
    """A platform desktop. Coordinates are native capture pixels, origin top-left."""

    @property
    def capture_mode(self) -> str:
        """e.g. "sim", "x11-damage", "dxgi", "gdi": reported as the session's capture_mode.
        May change while the backend runs (Windows falls back from DXGI to GDI)."""
        ...

    @property
    def has_damage(self) -> bool:
        """False when the platform cannot report damage (a GDI fallback): dirty reads say
        `available: false` and every screenshot captures afresh."""
        ...

    def native_size(self) -> tuple[int, int]:
        """(width, height) of the desktop in native pixels."""
        ...

    def grab(self) -> Pixels:
        """A fresh full-desktop capture, BGRA (height, width, 4).

        Valid until the next `grab` or `close`: a backend may hand out a view over its
        capture buffer (x11's shared memory), so a caller that keeps the pixels past
        that, or hands them to another thread, copies them."""
        ...

    def poll_damage(self) -> list[Rect]:
        """Rectangles that changed since the previous call (each call consumes them).

        Clipped to the desktop; may overlap. Backends without damage return [].
        """
        ...

    def move_pointer(self, x: int, y: int) -> None: ...

    def set_button(self, button: MouseButton, down: bool) -> None: ...

    def scroll(self, dx: int, dy: int) -> None:
        """Wheel notches at the pointer: dy < 0 scrolls down, dx > 0 scrolls right."""
        ...

    def set_key(self, key: str, down: bool) -> None:
        """Press or release one canonical key name (`rigway.protocol.keys`)."""
        ...

    def type_text(self, text: str) -> None:
        """Type any Unicode text as text (not key names), in order."""
        ...

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        """Interactive controls of the focused window, within the budget; never hangs."""
        ...

    def list_windows(self) -> frozenset[int]:
        """Ids of the top-level windows now open (a baseline for the safety restore)."""
        ...

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        """The pid of the process owning each of these windows still open; None when the
        backend cannot tell (the session end then leaves that window alone)."""
        ...

    def close_windows(self, window_ids: frozenset[int]) -> None:
        """Close these top-level windows politely, then by force."""
        ...

    def window_stack(self) -> list[StackedWindow]:
        """The windows shown now (mapped, not minimised or cloaked), topmost first.

        An app session crops to its app's window and blacks out what lies over it, from
        this list: a window missing from it would show through. Asked before every
        screen read of an app session, from the screen or accessibility worker (any
        thread): it must be cheap (a few round trips to the window system)."""
        ...

    def desktop_state(self) -> DesktopState:
        """Whether the desktop can be seen and driven now (`DesktopState`).

        May be called from any worker thread, concurrently with the roles. Must be cheap
        (well under a millisecond where the platform allows): the agent calls it before
        every input batch, with every dirty take (so every observe) and about once a
        second while connected. Never raises: "unknown" when it cannot tell."""
        ...

    def last_local_input(self) -> float | None:
        """When the rig's own keyboard or mouse was last used, in `time.monotonic()`
        seconds; None when not since the backend opened, or when it cannot tell.

        Local input only: what this backend injects (its own `move_pointer` …
        `type_text`) never counts. May be called from any thread, concurrently with the
        roles, and must be cheap (what a listener recorded, at most after a bounded
        catch-up with the input source): the agent asks before every input batch and
        event and refuses input while the owner is active. Never raises."""
        ...

    def displays(self) -> list[Display]:
        """The monitors that make up the capture, in native capture pixels.

        Called at each connect and every few seconds while connected (changes go to the
        gateway), from any worker thread, concurrently with the roles. Never raises: when
        the platform cannot tell, one display covering the whole capture, scale 1.0,
        primary."""
        ...

    def set_reduce_motion(self, on: bool) -> None:
        """Turn the desktop's UI animations off (`on`), or back to what they were.

        The agent's `reduce_motion` option: on while an API session is live, off again
        at every way out of it (`rigway.agent.reduce_motion`). Called from the input
        worker; idempotent both ways. A desktop whose animations someone else decides
        (another settings manager) leaves them alone and logs why; a platform without
        the notion does nothing. Best effort: raises only what it could not undo."""
        ...

    def close(self) -> None: ...
