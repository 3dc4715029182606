"""Reduce motion on X11: the agent as the XSETTINGS manager, seen by a real GTK 3 app.

The app is GTK 3 itself through ctypes (the system has no GTK typelib for
PyGObject): it prints its `gtk-enable-animations` setting at start and on every change
it takes from the settings manager, so the test reads what GTK decided.
"""

from __future__ import annotations

import logging
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from Xlib import X

from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.backends.x11.xsettings import (
    ENABLE_ANIMATIONS,
    XSettingsMotion,
    encode_settings,
)
from tests.support.x_desktop import XDesktop, wait_until

LINE_TIMEOUT_S = 10.0

GTK_ANIMATIONS_PROBE = r"""
import ctypes, sys, time
gtk = ctypes.CDLL("libgtk-3.so.0")
gobject = ctypes.CDLL("libgobject-2.0.so.0")
glib = ctypes.CDLL("libglib-2.0.so.0")
if not gtk.gtk_init_check(None, None):
    sys.exit("GTK cannot open the display")
gtk.gtk_settings_get_default.restype = ctypes.c_void_p
gobject.g_object_get.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)
glib.g_main_context_pending.argtypes = (ctypes.c_void_p,)
glib.g_main_context_iteration.argtypes = (ctypes.c_void_p, ctypes.c_int)
settings = gtk.gtk_settings_get_default()

def animations():
    value = ctypes.c_int(-1)
    gobject.g_object_get(settings, b"gtk-enable-animations", ctypes.byref(value), None)
    return value.value

last = animations()
print(last, flush=True)
while True:  # the app's main loop: X events in, settings changes out
    while glib.g_main_context_pending(None):
        glib.g_main_context_iteration(None, 0)
    now = animations()
    if now != last:
        last = now
        print(now, flush=True)
    time.sleep(0.01)
"""


class GtkApp:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def next_setting(self) -> int:
        """The next value the app prints: its setting at start, then each change."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], LINE_TIMEOUT_S)
        if not ready:
            raise TimeoutError("the GTK app reported no setting")
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the GTK app exited ({self.proc.wait()})")
        return int(line)


@pytest.fixture
def gtk_app(x_desktop: XDesktop, tmp_path: Path) -> Iterator[GtkApp]:
    # Its own config home: no settings.ini of this machine's user decides for it.
    proc = x_desktop.launch(
        [sys.executable, "-c", GTK_ANIMATIONS_PROBE],
        capture_stdout=True,
        extra_env={"XDG_CONFIG_HOME": str(tmp_path)},
    )
    try:
        yield GtkApp(proc)
    finally:
        x_desktop.stop(proc)


def selection_owner(x_desktop: XDesktop) -> int:
    with x_desktop.x_connection() as conn:
        owner = conn.get_selection_owner(conn.intern_atom("_XSETTINGS_S0"))
        return int(getattr(owner, "id", owner))


def test_a_running_gtk_app_turns_animations_off_and_back_on(
    x_desktop: XDesktop, x11_backend: X11Desktop, gtk_app: GtkApp
) -> None:
    assert gtk_app.next_setting() == 1  # GTK's default, no settings manager
    assert selection_owner(x_desktop) == X.NONE

    x11_backend.set_reduce_motion(True)
    try:
        assert gtk_app.next_setting() == 0
        assert selection_owner(x_desktop) != X.NONE
    finally:
        x11_backend.set_reduce_motion(False)

    assert gtk_app.next_setting() == 1
    # Then the manager's window goes and the selection is free again.
    wait_until(lambda: selection_owner(x_desktop) == X.NONE, message="the selection freed")


def test_back_on_within_the_linger_keeps_the_same_manager(
    x_desktop: XDesktop, gtk_app: GtkApp
) -> None:
    assert gtk_app.next_setting() == 1
    # Long enough to outlast the steps below however busy the machine; close waits it out.
    motion = XSettingsMotion(x_desktop.display, linger_s=3.0)
    try:
        motion.set_reduce_motion(True)
        assert gtk_app.next_setting() == 0
        owner = selection_owner(x_desktop)
        motion.set_reduce_motion(False)
        assert gtk_app.next_setting() == 1
        motion.set_reduce_motion(True)
        assert gtk_app.next_setting() == 0
        assert selection_owner(x_desktop) == owner
        assert motion.reduces_motion
    finally:
        motion.close()
    assert gtk_app.next_setting() == 1
    assert selection_owner(x_desktop) == X.NONE  # close serves the linger, then frees it


def test_another_settings_manager_is_left_to_decide(
    x_desktop: XDesktop, caplog: pytest.LogCaptureFixture
) -> None:
    with x_desktop.x_connection() as conn:
        daemon = conn.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        daemon.set_selection_owner(conn.intern_atom("_XSETTINGS_S0"), X.CurrentTime)
        conn.sync()
        motion = XSettingsMotion(x_desktop.display)
        with caplog.at_level(logging.WARNING):
            motion.set_reduce_motion(True)
            motion.set_reduce_motion(False)
            motion.set_reduce_motion(True)

        assert not motion.is_manager
        assert selection_owner(x_desktop) == daemon.id
        assert caplog.text.count("another XSETTINGS manager") == 1  # said once
        motion.close()
        daemon.destroy()
        conn.sync()


def test_a_manager_that_takes_the_selection_over_is_left_to_decide(
    x_desktop: XDesktop, caplog: pytest.LogCaptureFixture
) -> None:
    motion = XSettingsMotion(x_desktop.display, linger_s=30.0)
    with x_desktop.x_connection() as conn, caplog.at_level(logging.WARNING):
        motion.set_reduce_motion(True)
        assert motion.reduces_motion
        # Values published meanwhile: their PropertyNotify events reach the manager too.
        for on in (False, True, False, True):
            motion.set_reduce_motion(on)

        # A settings daemon started with --replace takes the selection over.
        daemon = conn.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        daemon.set_selection_owner(conn.intern_atom("_XSETTINGS_S0"), X.CurrentTime)
        conn.sync()

        wait_until(lambda: not motion.is_manager, message="the agent stepped down")
        motion.set_reduce_motion(False)
        motion.set_reduce_motion(True)  # the daemon still decides: not claimed again

        assert not motion.is_manager
        assert selection_owner(x_desktop) == daemon.id
        assert caplog.text.count("another XSETTINGS manager") == 1
        motion.close()
        daemon.destroy()
        conn.sync()


def test_the_settings_property_follows_the_xsettings_format() -> None:
    encoded = encode_settings({ENABLE_ANIMATIONS: 0}, serial=7)

    name = ENABLE_ANIMATIONS.encode()
    assert encoded == (
        bytes([0, 0, 0, 0])  # LSBFirst, 3 pad bytes
        + (7).to_bytes(4, "little")  # serial
        + (1).to_bytes(4, "little")  # one setting
        + bytes([0, 0])  # XSettingsTypeInteger, pad
        + len(name).to_bytes(2, "little")
        + name
        + b"\0" * (-len(name) % 4)
        + (7).to_bytes(4, "little")  # last-change serial
        + (0).to_bytes(4, "little", signed=True)  # the value
    )


def test_the_server_frees_the_selection_when_the_agent_dies(x_desktop: XDesktop) -> None:
    """An agent killed outright: its connection closes, the server destroys the window."""
    script = (
        "import sys, os\n"
        "from rigway.agent.backends.x11.xsettings import XSettingsMotion\n"
        "motion = XSettingsMotion(sys.argv[1])\n"
        "motion.set_reduce_motion(True)\n"
        "os._exit(9 if motion.is_manager else 1)\n"
    )
    died = subprocess.run([sys.executable, "-c", script, x_desktop.display], check=False)
    assert died.returncode == 9  # it was the manager when it died
    wait_until(lambda: selection_owner(x_desktop) == X.NONE, message="the selection freed")
