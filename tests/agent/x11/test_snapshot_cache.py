"""The fast walk: remembered roles and cached wire bytes never make a snapshot stale."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import astuple
from typing import Any

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, AccessibleElement, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.atspi import AtspiConnection, Call
from tests.support.x_desktop import LaunchedApps, wait_until

pytestmark = pytest.mark.x11

FACTORY = "gtk3-widget-factory"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every call any backend sends on the accessibility bus from now on."""
    calls: list[Call] = []
    real_call_many = AtspiConnection.call_many

    def recording(self: AtspiConnection, messages: Sequence[Call], deadline: float) -> Any:
        calls.extend(messages)
        return real_call_many(self, messages, deadline)

    monkeypatch.setattr(AtspiConnection, "call_many", recording)
    return calls


def _path(element: AccessibleElement) -> str:
    return element.key[element.key.index("/") :]


def test_remembered_roles_describe_the_window_as_a_fresh_walk_does(
    x11_backend: X11Desktop,
    second_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
    sent: list[Call],
) -> None:
    apps.launch([FACTORY])
    window_titled(FACTORY)
    x11_backend.snapshot_accessibility(WalkBudget())  # every role is remembered now
    sent.clear()

    remembered = x11_backend.snapshot_accessibility(WalkBudget())
    role_asked = {c.path for c in sent if c.member == "GetRole"}
    fresh = second_backend.snapshot_accessibility(WalkBudget())  # a new backend: no memory

    assert [astuple(e) for e in remembered.elements] == [astuple(e) for e in fresh.elements]
    assert (remembered.window_title, remembered.window_role) == (
        fresh.window_title,
        fresh.window_role,
    )
    buttons = [_path(e) for e in remembered.elements if e.role == "push button"]
    texts = [_path(e) for e in remembered.elements if e.role == "text"]
    assert buttons
    assert texts
    assert not role_asked & set(buttons)  # a button's role came from memory
    assert set(texts) <= role_asked  # a text control's role is asked every time


def test_a_check_box_change_shows_in_the_next_snapshot_with_remembered_roles(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
    sent: list[Call],
) -> None:
    apps.launch([FACTORY])
    snap = window_titled(FACTORY)
    # The factory's lower column of check boxes is insensitive: take the upper one.
    unchecked = [e for e in snap.elements if e.role == "check box" and e.value == "unchecked"]
    box = min(unchecked, key=lambda e: e.y)

    def value_becomes(expected: str) -> Callable[[], AccessibleElement | None]:
        def probe() -> AccessibleElement | None:
            elements = x11_backend.snapshot_accessibility(WalkBudget()).elements
            current = next((e for e in elements if e.key == box.key), None)
            return current if current is not None and current.value == expected else None

        return probe

    for expected in ("checked", "unchecked"):
        x11_backend.move_pointer(box.x + box.w // 2, box.y + box.h // 2)
        x11_backend.set_button("left", down=True)
        x11_backend.set_button("left", down=False)
        sent.clear()
        changed = wait_until(value_becomes(expected), message=f"the box {expected}")
        assert changed.role == "check box"
        assert (_path(box), "GetRole") not in {(c.path, c.member) for c in sent}
