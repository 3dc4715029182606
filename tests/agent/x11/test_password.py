"""A password field is masked: its text is never requested and never appears."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.atspi import AtspiConnection
from tests.support.x_desktop import LaunchedApps

pytestmark = pytest.mark.x11

SECRET = "s3cr€t ✓ pässwörd"


def test_password_is_masked_never_read_and_typed_exactly(
    x11_backend: X11Desktop,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zenity = apps.launch(["zenity", "--password", "--title=Secret"], capture_stdout=True)
    window_titled("Secret")
    x11_backend.type_text(SECRET)
    sent: list[tuple[str, str]] = []
    real_call_many = AtspiConnection.call_many

    def recording(self: AtspiConnection, messages: Sequence[Any], deadline: float) -> Any:
        sent.extend((m.path, m.member) for m in messages)
        return real_call_many(self, messages, deadline)

    monkeypatch.setattr(AtspiConnection, "call_many", recording)

    snap = x11_backend.snapshot_accessibility(WalkBudget())

    masked = [e for e in snap.elements if e.masked]
    assert [(e.role, e.value) for e in masked] == [("password text", None)]
    assert all(SECRET not in (e.value or "") and SECRET not in e.name for e in snap.elements)
    password_path = masked[0].key[masked[0].key.index("/") :]
    assert (password_path, "GetText") not in sent
    x11_backend.set_key("enter", down=True)
    x11_backend.set_key("enter", down=False)
    out, _ = zenity.communicate(timeout=10)
    assert out == SECRET + "\n"
