"""Window bookkeeping: new windows are found and closed, politely or by force."""

from __future__ import annotations

import os
import signal

import pytest

from rigway.agent.backends.base import StackedWindow
from rigway.agent.backends.x11 import X11Desktop, windows
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

pytestmark = pytest.mark.x11


def _new_windows(backend: X11Desktop, baseline: frozenset[int]) -> frozenset[int] | None:
    new = backend.list_windows() - baseline
    return new if new else None


def test_close_windows_closes_a_zenity_dialog_politely(
    x11_backend: X11Desktop, apps: LaunchedApps
) -> None:
    baseline = x11_backend.list_windows()
    zenity = apps.launch(["zenity", "--info", "--title=Close me", "--text=Bye"])
    new = wait_until(lambda: _new_windows(x11_backend, baseline), message="the dialog window")

    x11_backend.close_windows(new)

    assert x11_backend.list_windows() == baseline
    # zenity exits 1 when its window is closed (0 would mean OK was pressed).
    assert zenity.wait(timeout=5) == 1


def test_close_windows_kills_an_app_that_does_not_answer(
    x11_backend: X11Desktop, apps: LaunchedApps
) -> None:
    baseline = x11_backend.list_windows()
    zenity = apps.launch(["zenity", "--info", "--title=Frozen", "--text=I ignore you"])
    new = wait_until(lambda: _new_windows(x11_backend, baseline), message="the dialog window")
    os.kill(zenity.pid, signal.SIGSTOP)  # it can neither close nor handle SIGTERM

    x11_backend.close_windows(new)

    assert x11_backend.list_windows() == baseline
    assert zenity.wait(timeout=5) == -signal.SIGKILL


def test_close_windows_disconnects_a_frozen_client_whose_pid_is_unknown(
    x11_backend: X11Desktop, apps: LaunchedApps, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A remote client (over TCP) has no local pid: only XKillClient can remove it.
    monkeypatch.setattr(windows, "window_owner_pid", lambda conn, window_id: None)
    baseline = x11_backend.list_windows()
    zenity = apps.launch(["zenity", "--info", "--title=Remote", "--text=No pid"])
    new = wait_until(lambda: _new_windows(x11_backend, baseline), message="the dialog window")
    os.kill(zenity.pid, signal.SIGSTOP)

    x11_backend.close_windows(new)

    assert wait_until(lambda: x11_backend.list_windows() == baseline, message="no window") is True


def test_the_stack_lists_frames_topmost_first_with_their_clients_owner_and_the_focus(
    x11_backend: X11Desktop, apps: LaunchedApps, x_desktop: XDesktop
) -> None:
    first = apps.launch(["zenity", "--info", "--title=Below", "--text=1"])
    stack_of = _stack_waiting_for(x11_backend, {first.pid})
    second = apps.launch(["zenity", "--info", "--title=Above", "--text=2"])
    # Mapped, then raised and focused by the window manager: wait for both, not the map.
    stack_of = _stack_waiting_for(x11_backend, {first.pid, second.pid}, focused=second.pid)

    ours = [w for w in stack_of if w.pid in {first.pid, second.pid}]
    assert [w.pid for w in ours] == [second.pid, first.pid]  # the newer one on top
    assert [w.has_focus for w in ours] == [True, False]
    assert not any(w.is_popup for w in ours)
    with x_desktop.x_connection() as conn:
        for window in ours:
            # The rect is the frame's: the root's child that holds the client.
            frame = conn.create_resource_object("window", window.window_id)
            while int(frame.query_tree().parent.id) != int(conn.screen().root.id):
                frame = frame.query_tree().parent
            geometry = frame.get_geometry()
            assert (window.rect.x, window.rect.y) == (geometry.x, geometry.y)
            assert (window.rect.w, window.rect.h) == (geometry.width, geometry.height)


def _stack_waiting_for(
    backend: X11Desktop, pids: set[int], focused: int | None = None
) -> list[StackedWindow]:
    """The stack once every one of `pids` shows a window (and `focused`'s is the topmost
    of theirs, with the focus)."""

    def probe() -> list[StackedWindow] | None:
        stack = backend.window_stack()
        theirs = [w for w in stack if w.pid in pids and not w.is_popup]
        if not pids <= {w.pid for w in theirs}:
            return None
        settled = focused is None or (theirs[0].pid == focused and theirs[0].has_focus)
        return stack if settled else None

    return wait_until(probe, timeout_s=15.0, message=f"windows of {sorted(pids)}")
