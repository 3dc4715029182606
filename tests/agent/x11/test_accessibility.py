"""The AT-SPI walk: stable keys, and a budget that bounds it even against a hung app."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.x11 import X11Desktop, open_x11_desktop
from tests.support.x_desktop import LaunchedApps, XDesktop

pytestmark = pytest.mark.x11

FACTORY = "gtk3-widget-factory"


def test_widget_factory_snapshot_has_stable_keys_and_screen_boxes(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch([FACTORY])
    window_titled(FACTORY)

    first = x11_backend.snapshot_accessibility(WalkBudget())
    second = x11_backend.snapshot_accessibility(WalkBudget())

    assert first.truncated is False
    assert len(first.elements) > 50
    assert [e.key for e in first.elements] == [e.key for e in second.elements]
    assert len({e.key for e in first.elements}) == len(first.elements)
    assert {"push button", "check box", "slider", "text"} <= {e.role for e in first.elements}
    assert all(
        e.x >= 0 and e.y >= 0 and e.x + e.w <= 1920 and e.y + e.h <= 1080 for e in first.elements
    )
    assert sum(e.focused for e in first.elements) == 1


def test_tiny_element_budget_truncates_the_walk(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch([FACTORY])
    window_titled(FACTORY)

    snap = x11_backend.snapshot_accessibility(WalkBudget(max_elements=3))

    assert snap.truncated is True
    assert len(snap.elements) <= 3
    # The focused control is kept even at the cap.
    assert any(e.focused for e in snap.elements)


def test_zero_deadline_returns_at_once_truncated(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch([FACTORY])
    window_titled(FACTORY)
    started = time.monotonic()

    snap = x11_backend.snapshot_accessibility(WalkBudget(deadline_s=0.0))

    assert time.monotonic() - started < 0.5
    assert snap.truncated is True


def test_hung_app_costs_the_deadline_not_a_hang(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    zenity = apps.launch(["zenity", "--entry", "--title=Hung", "--text=I stop answering"])
    window_titled("Hung")
    os.kill(zenity.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        snap = x11_backend.snapshot_accessibility(WalkBudget(deadline_s=0.4))
        elapsed = time.monotonic() - started
    finally:
        os.kill(zenity.pid, signal.SIGCONT)

    assert elapsed < 1.0
    assert snap.truncated is True


def test_unreachable_session_bus_gives_an_empty_snapshot_quickly(x_desktop: XDesktop) -> None:
    backend = open_x11_desktop(x_desktop.display, session_bus_address="unix:path=/nonexistent/bus")
    try:
        started = time.monotonic()
        snap = backend.snapshot_accessibility(WalkBudget())
        elapsed = time.monotonic() - started
    finally:
        backend.close()

    assert snap.elements == []
    assert elapsed < 1.5
