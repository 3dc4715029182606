"""Held keys and buttons are visible to the server, and releasing leaves nothing down."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, MouseButton
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, XDesktop

pytestmark = pytest.mark.x11

# A modifier, an F-key, a letter, shifted punctuation, and F13 (not on Xvfb's layout,
# so it is held on a spare keycode).
KEYS = ["ctrl", "shift", "f5", "a", "+", "f13"]
BUTTONS: list[MouseButton] = ["left", "middle", "right"]


@pytest.fixture
def harmless_target(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    """A focused dialog under the pointer, so held keys and clicks do nothing else."""
    apps.launch(["zenity", "--info", "--title=Target", "--text=Keys and buttons land here"])
    snap = window_titled("Target")
    x11_backend.move_pointer(min(e.x for e in snap.elements), min(e.y for e in snap.elements) - 40)


@pytest.mark.usefixtures("harmless_target")
def test_keys_held_down_show_in_query_keymap(x11_backend: X11Desktop, x_desktop: XDesktop) -> None:
    with x_desktop.x_connection() as conn:
        expected = {conn.keysym_to_keycode(sym) for sym in (0xFFE3, 0xFFE1, 0xFFC2, ord("a"))}

    for key in KEYS:
        x11_backend.set_key(key, down=True)

    held = set(x_desktop.held_keycodes())
    # ctrl, shift, F5, a: their layout keycodes; "+" is shift+equal; F13: one more keycode.
    assert expected <= held
    assert len(held) == len(expected) + 2


@pytest.mark.usefixtures("harmless_target")
def test_releasing_every_key_and_button_leaves_nothing_held(
    x11_backend: X11Desktop, x_desktop: XDesktop
) -> None:
    for key in KEYS:
        x11_backend.set_key(key, down=True)
    for button in BUTTONS:
        x11_backend.set_button(button, down=True)
    assert x_desktop.held_buttons() == [1, 2, 3]

    for key in reversed(KEYS):
        x11_backend.set_key(key, down=False)
    for button in BUTTONS:
        x11_backend.set_button(button, down=False)

    assert x_desktop.held_keycodes() == []
    assert x_desktop.held_buttons() == []
