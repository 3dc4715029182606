"""Clicks and the wheel reach real GTK widgets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, AccessibleElement, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, wait_until

pytestmark = pytest.mark.x11


def _element(backend: X11Desktop, key: str) -> AccessibleElement | None:
    snap = backend.snapshot_accessibility(WalkBudget())
    return next((e for e in snap.elements if e.key == key), None)


def _click(backend: X11Desktop, element: AccessibleElement) -> None:
    backend.move_pointer(element.x + element.w // 2, element.y + element.h // 2)
    backend.set_button("left", down=True)
    backend.set_button("left", down=False)


def test_click_toggles_a_widget_factory_check_box(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch(["gtk3-widget-factory"])
    snap = window_titled("gtk3-widget-factory")
    # The factory's lower column of check boxes is insensitive: take the upper one.
    unchecked = [e for e in snap.elements if e.role == "check box" and e.value == "unchecked"]
    box = min(unchecked, key=lambda e: e.y)

    _click(x11_backend, box)

    def now_checked() -> bool:
        current = _element(x11_backend, box.key)
        return current is not None and current.value == "checked"

    assert wait_until(now_checked, message="the check box to be checked") is True


def test_wheel_down_scrolls_a_text_view_down(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
    tmp_path: Path,
) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(f"line {n}" for n in range(500)))
    apps.launch(["zenity", "--text-info", "--title=Scrolling", f"--filename={lines}"])
    snap = window_titled("Scrolling")
    view = next(e for e in snap.elements if e.role == "text")
    bar = next(e for e in snap.elements if e.role == "scroll bar")
    assert bar.value == "0"

    def region() -> npt.NDArray[np.uint8]:
        return x11_backend.grab()[view.y : view.y + view.h, view.x : view.x + view.w].copy()

    def painted_and_still() -> npt.NDArray[np.uint8] | None:
        first, second = region(), region()
        is_blank = bool((first == first[0, 0]).all())
        return first if np.array_equal(first, second) and not is_blank else None

    before = wait_until(painted_and_still, message="the text view to be painted")
    x11_backend.move_pointer(view.x + view.w // 2, view.y + view.h // 2)

    x11_backend.scroll(0, -5)  # dy < 0: down

    def bar_moved_down() -> bool:
        current = _element(x11_backend, bar.key)
        return current is not None and float(current.value or 0) > 0

    assert wait_until(bar_moved_down, message="the scroll bar to move down") is True
    assert wait_until(lambda: not np.array_equal(region(), before), message="a repaint") is True
