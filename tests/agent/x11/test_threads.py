"""The threading contract: input, screen and accessibility each on their own thread."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, wait_until

pytestmark = pytest.mark.x11


def test_roles_work_concurrently_from_their_own_threads(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch(["zenity", "--entry", "--title=Threads", "--text=Type"])
    window_titled("Threads")
    text = "concurrent ✓ 並行 " * 5

    def screen() -> int:
        frames = 0
        for _ in range(30):
            x11_backend.grab()
            x11_backend.poll_damage()
            frames += 1
        return frames

    def accessibility() -> int:
        return sum(len(x11_backend.snapshot_accessibility(WalkBudget()).elements) for _ in range(5))

    with (
        ThreadPoolExecutor(1) as input_thread,
        ThreadPoolExecutor(1) as screen_thread,
        ThreadPoolExecutor(1) as a11y_thread,
    ):
        typed = input_thread.submit(x11_backend.type_text, text)
        frames = screen_thread.submit(screen)
        elements = a11y_thread.submit(accessibility)
        typed.result(timeout=30)
        assert frames.result(timeout=30) == 30
        assert elements.result(timeout=30) > 0

    def entry_text() -> str | None:
        snap = x11_backend.snapshot_accessibility(WalkBudget())
        return next((e.value for e in snap.elements if e.role == "text"), None)

    assert wait_until(lambda: entry_text() == text, message="the typed text") is True
