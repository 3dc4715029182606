"""Window bookkeeping: new windows are found and closed, politely or by force."""

from __future__ import annotations

import os
import signal

import pytest

from rigway.agent.backends.x11 import X11Desktop, windows
from tests.support.x_desktop import LaunchedApps, wait_until

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
