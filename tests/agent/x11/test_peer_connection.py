"""The walk's short cuts: the application's own D-Bus socket and the remembered window.

Both must leave the snapshot exactly what the plain walk over the bus gives, and fall
back to that walk whenever they cannot be trusted.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import astuple
from typing import Any

import pytest
from Xlib import X, Xatom

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.atspi import (
    AtspiConnection,
    Call,
    accessibility_bus_address,
)
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

pytestmark = pytest.mark.x11

FACTORY = "gtk3-widget-factory"


class Answered:
    """Which process answered each call: the bus daemon, or the application itself."""

    def __init__(self) -> None:
        # (member, pid at the socket's other end, which connection object sent it)
        self.by: list[tuple[str, int, int]] = []

    def pids_answering(self, member: str) -> set[int]:
        return {pid for name, pid, _ in self.by if name == member}

    def connections_used(self) -> int:
        return len({connection for _, _, connection in self.by})

    def clear(self) -> None:
        self.by.clear()


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> Answered:
    record = Answered()
    real_call_many = AtspiConnection.call_many

    def recording(self: AtspiConnection, messages: Sequence[Call], deadline: float) -> Any:
        pid = self.peer_pid()
        record.by.extend((m.member, pid, id(self)) for m in messages)
        return real_call_many(self, messages, deadline)

    monkeypatch.setattr(AtspiConnection, "call_many", recording)
    return record


@pytest.fixture
def factory(
    apps: LaunchedApps, window_titled: Callable[[str], AccessibilitySnapshot]
) -> subprocess.Popen[str]:
    """gtk3-widget-factory, running and active."""
    process = apps.launch([FACTORY])
    window_titled(FACTORY)
    return process


@pytest.fixture
def fresh_backend(x_desktop: XDesktop) -> Iterator[X11Desktop]:
    """A backend opened inside the test, after its monkeypatches."""
    backend = x_desktop.open_backend()
    yield backend
    backend.close()


def _snapshot_of_a_new_backend(x_desktop: XDesktop) -> AccessibilitySnapshot:
    """One snapshot from a backend opened now (after the test's monkeypatches)."""
    backend = x_desktop.open_backend()
    try:
        return backend.snapshot_accessibility(WalkBudget())
    finally:
        backend.close()


def _same(a: AccessibilitySnapshot, b: AccessibilitySnapshot) -> bool:
    return (a.window_title, a.window_role, [astuple(e) for e in a.elements]) == (
        b.window_title,
        b.window_role,
        [astuple(e) for e in b.elements],
    )


def _steady(backend: X11Desktop) -> AccessibilitySnapshot:
    """Two snapshots in a row that agree: the factory has settled (its spinners move
    no control)."""
    previous: list[AccessibilitySnapshot] = []

    def probe() -> AccessibilitySnapshot | None:
        snap = backend.snapshot_accessibility(WalkBudget())
        settled = bool(previous) and _same(previous[-1], snap)
        previous.append(snap)
        return snap if settled else None

    return wait_until(probe, message="two equal snapshots")


def test_the_walk_asks_the_app_over_its_own_socket_and_sees_what_the_bus_sees(
    x11_backend: X11Desktop,
    factory: subprocess.Popen[str],
    answered: Answered,
    monkeypatch: pytest.MonkeyPatch,
    x_desktop: XDesktop,
) -> None:
    direct = _steady(x11_backend)
    assert answered.pids_answering("GetExtents") == {factory.pid}

    def refused(cls: type[AtspiConnection], address: str, timeout_s: float) -> AtspiConnection:
        raise OSError("no peer connections in this test")

    monkeypatch.setattr(AtspiConnection, "to_peer", classmethod(refused))
    answered.clear()
    over_the_bus = _snapshot_of_a_new_backend(x_desktop)

    assert factory.pid not in answered.pids_answering("GetExtents")
    assert _same(direct, over_the_bus)
    assert len(direct.elements) > 50


def test_a_socket_served_by_another_process_is_not_used(
    factory: subprocess.Popen[str],
    answered: Answered,
    monkeypatch: pytest.MonkeyPatch,
    x_desktop: XDesktop,
) -> None:
    # The app names a socket that the bus daemon serves, not itself.
    daemon = accessibility_bus_address(x_desktop.env["DBUS_SESSION_BUS_ADDRESS"], 1.0)
    real_to_peer = AtspiConnection.to_peer.__func__  # type: ignore[attr-defined]

    def elsewhere(cls: type[AtspiConnection], address: str, timeout_s: float) -> AtspiConnection:
        connection: AtspiConnection = real_to_peer(cls, daemon, timeout_s)
        return connection

    monkeypatch.setattr(AtspiConnection, "to_peer", classmethod(elsewhere))
    answered.clear()
    snap = _snapshot_of_a_new_backend(x_desktop)

    assert snap.window_title == FACTORY
    assert len(snap.elements) > 50
    assert factory.pid not in answered.pids_answering("GetExtents")
    # Every call went over the backend's bus connection: the other one was refused
    # before anything was sent on it.
    assert answered.connections_used() == 1


def test_a_peer_that_drops_mid_walk_hands_over_to_the_bus(
    fresh_backend: X11Desktop,
    factory: subprocess.Popen[str],
    answered: Answered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _steady(fresh_backend)
    assert answered.pids_answering("GetExtents") == {factory.pid}
    recording = AtspiConnection.call_many

    def dropping(self: AtspiConnection, messages: Sequence[Call], deadline: float) -> Any:
        if self.peer_pid() == factory.pid and any(m.member == "GetExtents" for m in messages):
            raise ConnectionError("the application closed the connection")
        return recording(self, messages, deadline)

    monkeypatch.setattr(AtspiConnection, "call_many", dropping)
    answered.clear()
    during = fresh_backend.snapshot_accessibility(WalkBudget())
    after = fresh_backend.snapshot_accessibility(WalkBudget())

    assert _same(before, during)
    assert _same(before, after)
    assert factory.pid not in answered.pids_answering("GetExtents")


def test_the_remembered_window_is_asked_first_and_dropped_once_inactive(
    fresh_backend: X11Desktop,
    factory: subprocess.Popen[str],
    apps: LaunchedApps,
    answered: Answered,
    x_desktop: XDesktop,
) -> None:
    _steady(fresh_backend)
    answered.clear()
    fresh_backend.snapshot_accessibility(WalkBudget())
    assert "GetChildren" not in {member for member, _, _ in answered.by}  # no discovery

    other = apps.launch(["zenity", "--info", "--title=Another app", "--text=on top"])

    def titled(title: str) -> Callable[[], AccessibilitySnapshot | None]:
        def probe() -> AccessibilitySnapshot | None:
            snap = fresh_backend.snapshot_accessibility(WalkBudget())
            return snap if snap.window_title == title else None

        return probe

    on_top = wait_until(titled("Another app"), message="the dialog's snapshot")
    assert {e.role for e in on_top.elements} >= {"push button"}
    assert all(e.role != "slider" for e in on_top.elements)  # none of the factory's

    x_desktop.stop(other)
    back = wait_until(titled(FACTORY), message="the factory's snapshot again")
    assert len(back.elements) > 50


def test_a_title_is_never_borrowed_from_another_processs_x_window(
    fresh_backend: X11Desktop,
    factory: subprocess.Popen[str],
    x_desktop: XDesktop,
) -> None:
    """While focus moves, X can name a new active window before AT-SPI lets go of the
    old one. Here `_NET_ACTIVE_WINDOW` is pointed at a window of this test's process,
    with the factory still active for AT-SPI: its snapshot keeps its own controls and
    takes no title from the other window."""
    before = _steady(fresh_backend)
    assert before.window_title == FACTORY
    with x_desktop.x_connection() as conn:
        root = conn.screen().root
        active_atom = conn.intern_atom("_NET_ACTIVE_WINDOW")
        active = root.get_full_property(active_atom, X.AnyPropertyType).value[0]
        impostor = root.create_window(0, 0, 10, 10, 0, X.CopyFromParent)  # never mapped
        impostor.set_wm_name("Impostor")
        impostor.change_property(conn.intern_atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [os.getpid()])
        root.change_property(active_atom, Xatom.WINDOW, 32, [impostor.id])
        conn.sync()
        try:
            during = fresh_backend.snapshot_accessibility(WalkBudget())
        finally:
            root.change_property(active_atom, Xatom.WINDOW, 32, [active])
            impostor.destroy()
            conn.sync()
    assert during.window_title == ""  # not "Impostor": the factory's AT-SPI name is empty
    assert [astuple(e) for e in during.elements] == [astuple(e) for e in before.elements]
    after = fresh_backend.snapshot_accessibility(WalkBudget())
    assert after.window_title == FACTORY
