"""Opening the backend fails with a clear reason when there is no usable display."""

from __future__ import annotations

import pytest

from rigway.agent.backends.x11 import X11UnavailableError, open_x11_desktop

pytestmark = pytest.mark.x11


def test_unset_display_fails_saying_display_is_unset() -> None:
    with pytest.raises(X11UnavailableError, match="DISPLAY is unset"):
        open_x11_desktop(None)


@pytest.mark.parametrize("bogus", [":4095", "not a display", "no-such-host.invalid:0"])
def test_bogus_display_fails_saying_it_cannot_be_opened(bogus: str) -> None:
    with pytest.raises(X11UnavailableError, match="cannot open X display"):
        open_x11_desktop(bogus)
