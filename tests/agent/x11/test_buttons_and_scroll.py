"""Every pointer button and wheel direction reaches an X client as the right button.

A window of our own (python-xlib, override-redirect so the window manager neither
moves nor grabs it) records the button numbers the server delivers for input batches
run through the agent's input runner, so the protocol's names (`middle`, `dx > 0`, …)
are checked end to end down to the X button numbers; a real GTK list then scrolls
sideways.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from Xlib import X

from rigway.agent.backends.base import (
    AccessibilitySnapshot,
    AccessibleElement,
    MouseButton,
    WalkBudget,
)
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.input_runner import run_batch
from rigway.agent.safety import InputGuard
from rigway.protocol import ops
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

pytestmark = pytest.mark.x11

PROBE_X, PROBE_Y, PROBE_W, PROBE_H = 200, 150, 320, 240
INSIDE = (PROBE_X + PROBE_W // 2, PROBE_Y + PROBE_H // 2)


@dataclass(frozen=True, slots=True)
class ButtonEvent:
    pressed: bool
    button: int
    root_x: int
    root_y: int


class ButtonProbe:
    """A mapped window that records the ButtonPress/ButtonRelease events it receives."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        root = conn.screen().root
        self.window = root.create_window(
            PROBE_X,
            PROBE_Y,
            PROBE_W,
            PROBE_H,
            0,
            conn.screen().root_depth,
            background_pixel=conn.screen().white_pixel,
            override_redirect=True,
            event_mask=X.ButtonPressMask | X.ButtonReleaseMask,
        )
        self.window.map()
        conn.sync()
        self.events: list[ButtonEvent] = []

    def is_viewable(self) -> bool:
        return bool(self.window.get_attributes().map_state == X.IsViewable)

    def received(self, count: int) -> list[ButtonEvent] | None:
        """Everything recorded so far once at least `count` events arrived, else None."""
        for _ in range(self._conn.pending_events()):
            event = self._conn.next_event()
            if event.type in (X.ButtonPress, X.ButtonRelease):
                pressed = event.type == X.ButtonPress
                self.events.append(ButtonEvent(pressed, event.detail, event.root_x, event.root_y))
        return list(self.events) if len(self.events) >= count else None


@pytest.fixture
def probe(x_desktop: XDesktop) -> Iterator[ButtonProbe]:
    with x_desktop.x_connection() as conn:
        window = ButtonProbe(conn)
        wait_until(window.is_viewable, message="the probe window to be mapped")
        yield window
        window.window.destroy()
        conn.sync()


def _run(backend: X11Desktop, *events: ops.InputEvent) -> None:
    guard = InputGuard(backend)
    run_batch(guard, list(events), epoch=guard.epoch)


def _clicks(button: int, count: int) -> list[tuple[bool, int]]:
    return [(pressed, button) for _ in range(count) for pressed in (True, False)]


@pytest.mark.parametrize(
    ("dx", "dy", "buttons"),
    [
        (0, 2, _clicks(4, 2)),  # dy > 0: up
        (0, -2, _clicks(5, 2)),  # dy < 0: down (docs/api.md)
        (-2, 0, _clicks(6, 2)),  # dx < 0: left
        (2, 0, _clicks(7, 2)),  # dx > 0: right
        (1, -1, _clicks(5, 1) + _clicks(7, 1)),  # both axes: vertical first
    ],
)
def test_wheel_notches_reach_a_window_as_buttons_4_to_7(
    x11_backend: X11Desktop, probe: ButtonProbe, dx: int, dy: int, buttons: list[tuple[bool, int]]
) -> None:
    x, y = INSIDE

    _run(x11_backend, ops.InputEvent(type="mouse_scroll", x=x, y=y, dx=dx, dy=dy))

    events = wait_until(lambda: probe.received(len(buttons)), message="the wheel buttons")
    assert [(e.pressed, e.button) for e in events] == buttons
    assert {(e.root_x, e.root_y) for e in events} == {INSIDE}


@pytest.mark.parametrize(("name", "number"), [("left", 1), ("middle", 2), ("right", 3)])
def test_a_click_of_each_button_reaches_a_window_as_its_x_button(
    x11_backend: X11Desktop, probe: ButtonProbe, name: MouseButton, number: int
) -> None:
    x, y = INSIDE

    _run(x11_backend, ops.InputEvent(type="mouse_click", x=x, y=y, button=name))

    events = wait_until(lambda: probe.received(2), message="the press and release")
    assert events == [ButtonEvent(True, number, x, y), ButtonEvent(False, number, x, y)]


def _horizontal_bar(backend: X11Desktop) -> AccessibleElement | None:
    snap = backend.snapshot_accessibility(WalkBudget())
    bars = [e for e in snap.elements if e.role == "scroll bar" and e.w > e.h]
    return bars[0] if len(bars) == 1 else None


def _bar_value(backend: X11Desktop) -> float:
    bar = _horizontal_bar(backend)
    assert bar is not None
    return float(bar.value or 0)


def _settled_above(backend: X11Desktop, floor: float) -> float | None:
    """The bar's value once above `floor` and unchanged over two reads (GTK animates a
    wheel scroll, so a first read may be half-way)."""
    first = _bar_value(backend)
    return first if first > floor and _bar_value(backend) == first else None


def test_wheel_right_and_left_scroll_a_gtk_list_sideways(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    # One row far wider than the window: the list gets a horizontal scroll bar only.
    apps.launch(["zenity", "--list", "--title=Wide", "--column=Name", "W" * 600, "short"])
    snap = window_titled("Wide")
    table = next(e for e in snap.elements if e.role == "table")
    bar = wait_until(lambda: _horizontal_bar(x11_backend), message="a horizontal scroll bar")
    assert float(bar.value or 0) == 0
    over_table = (table.x + table.w // 2, table.y + table.h // 2)

    _run(x11_backend, ops.InputEvent(type="mouse_scroll", x=over_table[0], y=over_table[1], dx=5))

    right = wait_until(lambda: _settled_above(x11_backend, 0.0), message="a scroll right")

    _run(x11_backend, ops.InputEvent(type="mouse_scroll", x=over_table[0], y=over_table[1], dx=-2))

    assert wait_until(lambda: _bar_value(x11_backend) < right, message="a scroll left") is True
