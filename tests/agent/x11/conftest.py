"""One Xvfb desktop and one x11 backend for the whole X11 test package.

Each test launches its apps through `apps`, which stops them when the test ends, and
every test ends with no key or button held, so tests never see each other's windows or
input. Tests skip only when `skip_reason()` says X11 cannot run on this machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from tests.support.x_desktop import LaunchedApps, XDesktop, desktop_or_skip, wait_until

APP_START_TIMEOUT_S = 15.0


@pytest.fixture(scope="session")
def x_desktop() -> Iterator[XDesktop]:
    with desktop_or_skip() as desk:
        yield desk


@pytest.fixture(scope="session")
def x11_backend(x_desktop: XDesktop) -> Iterator[X11Desktop]:
    backend = x_desktop.open_backend()
    yield backend
    backend.close()


@pytest.fixture
def second_backend(x_desktop: XDesktop) -> Iterator[X11Desktop]:
    """Another backend on the same display, for state that starts at open.

    Not for typing: its input would unbind the spare keycodes `x11_backend` has cached.
    """
    backend = x_desktop.open_backend()
    yield backend
    backend.close()


@pytest.fixture
def apps(x_desktop: XDesktop) -> Iterator[LaunchedApps]:
    launched = LaunchedApps(x_desktop)
    yield launched
    launched.stop_all()
    # The window manager drops closed windows a moment after their process ends.
    wait_until(lambda: x_desktop.client_windows() == [], message="an empty desktop")


@pytest.fixture
def window_titled(x11_backend: X11Desktop) -> Callable[[str], AccessibilitySnapshot]:
    """Wait until the active window has this title and a focused control; its snapshot.

    The focused control also says the window has the X keyboard focus (GTK only reports
    a focused widget in the active toplevel), so typed keys go to it.
    """

    def wait(title: str) -> AccessibilitySnapshot:
        def probe() -> AccessibilitySnapshot | None:
            snap = x11_backend.snapshot_accessibility(WalkBudget())
            is_ready = snap.window_title == title and any(e.focused for e in snap.elements)
            return snap if is_ready else None

        return wait_until(probe, timeout_s=APP_START_TIMEOUT_S, message=f"window {title!r}")

    return wait


@pytest.fixture(autouse=True)
def _nothing_held_afterwards(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "x_desktop" in request.fixturenames:
        request.getfixturevalue("x_desktop").release_everything()
