"""Unicode text typed through XTest arrives exactly, read back through AT-SPI."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, wait_until

pytestmark = pytest.mark.x11


def _focused_text(backend: X11Desktop) -> str | None:
    snap = backend.snapshot_accessibility(WalkBudget())
    focused = [e for e in snap.elements if e.focused and e.role == "text"]
    return focused[0].value if focused else None


def test_unicode_text_typed_into_zenity_entry_reads_back_exactly(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch(["zenity", "--entry", "--title=Unicode entry", "--text=Type"])
    window_titled("Unicode entry")
    text = "Grüße ✓ 日本 😀 ½ €uro — Ωμέγα, 한국어 and ASCII {[(<@#$%^&*>)]} ~`|\\"

    x11_backend.type_text(text)

    assert wait_until(lambda: _focused_text(x11_backend) == text, message="typed text") is True


def test_more_distinct_characters_than_spare_keycodes_type_exactly(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    apps.launch(["zenity", "--entry", "--title=Many characters", "--text=Type"])
    window_titled("Many characters")
    # 60 distinct CJK characters, twice: three times the 19 spare keycodes of Xvfb, so
    # bindings are evicted and rebound while the app is still reading earlier keys.
    text = "".join(chr(0x4E00 + 7 * i) for i in range(60)) * 2

    x11_backend.type_text(text)

    assert wait_until(lambda: _focused_text(x11_backend) == text, message="typed text") is True
