"""The x11 backend's desktop state: the X screen saver (forced on with `xset s activate`)
and a session lock read from logind (a fake one on the test desktop's private bus)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.desktop_state import X11DesktopState, display_number
from tests.agent.x11.fake_logind import FakeLogind, FakeSession
from tests.support.x_desktop import XDesktop

pytestmark = pytest.mark.x11


def _xset(desk: XDesktop, *args: str) -> None:
    subprocess.run(["xset", *args], env=desk.env, check=True, timeout=10)


@pytest.fixture
def screen_saver_on(x_desktop: XDesktop) -> Iterator[None]:
    _xset(x_desktop, "s", "activate")
    try:
        yield
    finally:
        # The saver blanks the screen for every later test of the session otherwise.
        _xset(x_desktop, "s", "reset")


@pytest.fixture
def state_with_logind(x_desktop: XDesktop) -> Iterator[X11DesktopState]:
    """A state reader that asks the fake logind on the desktop's private bus."""
    reader = X11DesktopState(
        x_desktop.display, system_bus_address=x_desktop.env["DBUS_SESSION_BUS_ADDRESS"]
    )
    yield reader
    reader.close()


def test_idle_desktop_is_normal(x11_backend: X11Desktop) -> None:
    assert x11_backend.desktop_state() == "normal"


@pytest.mark.usefixtures("screen_saver_on")
def test_activated_screen_saver_is_screensaver(x11_backend: X11Desktop) -> None:
    assert x11_backend.desktop_state() == "screensaver"


def test_screen_saver_reset_is_normal_again(x11_backend: X11Desktop, x_desktop: XDesktop) -> None:
    _xset(x_desktop, "s", "activate")
    try:
        assert x11_backend.desktop_state() == "screensaver"
    finally:
        _xset(x_desktop, "s", "reset")
    assert x11_backend.desktop_state() == "normal"


def test_unreachable_display_is_no_display() -> None:
    reader = X11DesktopState(":65000", system_bus_address="unix:path=/nonexistent/bus")
    try:
        assert reader.read() == "no_display"
    finally:
        reader.close()


def test_locked_session_of_this_display_is_locked(
    x_desktop: XDesktop, state_with_logind: X11DesktopState
) -> None:
    with FakeLogind([FakeSession("c1", x_desktop.display, locked=True)]).serving(
        x_desktop.env["DBUS_SESSION_BUS_ADDRESS"]
    ):
        assert state_with_logind.read() == "locked"


def test_unlocked_session_reads_normal_after_being_locked(
    x_desktop: XDesktop, state_with_logind: X11DesktopState
) -> None:
    session = FakeSession("c1", x_desktop.display, locked=True)
    with FakeLogind([session]).serving(x_desktop.env["DBUS_SESSION_BUS_ADDRESS"]):
        assert state_with_logind.read() == "locked"
        session.locked = False
        assert state_with_logind.read() == "normal"


def test_locked_session_of_another_display_is_ignored(
    x_desktop: XDesktop, state_with_logind: X11DesktopState
) -> None:
    other = f":{(display_number(x_desktop.display) or 0) + 1}"
    with FakeLogind([FakeSession("c2", other, locked=True)]).serving(
        x_desktop.env["DBUS_SESSION_BUS_ADDRESS"]
    ):
        assert state_with_logind.read() == "normal"


@pytest.mark.usefixtures("screen_saver_on")
def test_lock_wins_over_the_screen_saver(
    x_desktop: XDesktop, state_with_logind: X11DesktopState
) -> None:
    with FakeLogind([FakeSession("c1", x_desktop.display, locked=True)]).serving(
        x_desktop.env["DBUS_SESSION_BUS_ADDRESS"]
    ):
        assert state_with_logind.read() == "locked"


def test_bus_without_logind_is_skipped(state_with_logind: X11DesktopState) -> None:
    assert state_with_logind.read() == "normal"


@pytest.mark.parametrize(
    ("name", "number"),
    [(":0", 0), (":1.0", 1), ("unix:12", 12), ("remote:0", None), ("nonsense", None)],
)
def test_display_number_reads_local_names_only(name: str, number: int | None) -> None:
    assert display_number(name) == number
