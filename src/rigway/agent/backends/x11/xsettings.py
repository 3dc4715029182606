"""Reduce motion on X11: the agent as the XSETTINGS manager, publishing animations off.

GTK (and other XSETTINGS clients) read their desktop-wide settings from the window
that owns the `_XSETTINGS_S<screen>` selection, in its `_XSETTINGS_SETTINGS` property
(https://specifications.freedesktop.org/xsettings-spec/0.5/). A bare X server with a
window manager such as openbox has no settings manager: the selection has no owner and
every app runs on its toolkit's defaults, animations on.

While motion is reduced this module is that manager, on a connection and a window of
its own: it owns the selection (ICCCM manager selection, with a real timestamp),
publishes `Gtk/EnableAnimations` = 0 and announces itself with the MANAGER client
message on the root window. GTK 3 apps already running watch the root window for that
message and re-read their settings at once.

Restoring publishes `Gtk/EnableAnimations` = 1 (the toolkit's default, what the apps
had without a manager), then frees the selection by destroying the window a moment
later (`RELEASE_LINGER_S`): GTK keeps the last value of a setting whose manager left, so
the default has to be published, not implied (an app whose own settings.ini turned
animations off runs with them on until it restarts). Apps started afterwards find no manager
and run on their defaults. An agent killed outright cannot publish anything: the server
destroys the window as its connection closes, and apps already running keep animations
off until they restart.

When another client owns the selection (a desktop's settings daemon: gsd-xsettings,
xsettingsd, xfsettingsd), this module does nothing and says so once: that daemon
decides (on GNOME `gsettings set org.gnome.desktop.interface enable-animations false`).
A daemon that takes the selection over while this agent is the manager (a settings
daemon started with `--replace`) is left to decide too: a thread reads the manager's
connection, and its SelectionClear makes the agent step down at once (the window goes,
which is what a replacing manager waits for). The same thread drains what else the
server sends the manager window (a PropertyNotify per published value), so nothing
piles up in the connection's queue, and steps down if the X server goes away.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import struct
import threading
import time
from collections.abc import Mapping
from typing import Any

from Xlib import X, display, error
from Xlib.protocol import event

__all__ = ["ENABLE_ANIMATIONS", "XSettingsMotion", "encode_settings"]

_log = logging.getLogger(__name__)

ENABLE_ANIMATIONS = "Gtk/EnableAnimations"
# How long the manager window stays after publishing animations on again, before it
# goes: GTK keeps the last value of a setting whose manager left, so the restore is a
# published value, and a client reads the property a moment after its PropertyNotify;
# a window destroyed before that read would leave that client's animations off.
RELEASE_LINGER_S = 0.5
_TYPE_INTEGER = 0
_LSB_FIRST = 0


def _padded(length: int) -> int:
    return (length + 3) & ~3


def encode_settings(settings: Mapping[str, int], serial: int) -> bytes:
    """The `_XSETTINGS_SETTINGS` property of integer settings, little-endian: byte order,
    3 pad bytes, serial, count, then per setting its type, a pad byte, the name's length,
    the name padded to 4 bytes, the serial it last changed in, its value."""
    data = bytearray(struct.pack("<B3xII", _LSB_FIRST, serial, len(settings)))
    for name, value in settings.items():
        raw = name.encode("ascii")
        data += struct.pack("<BxH", _TYPE_INTEGER, len(raw))
        data += raw.ljust(_padded(len(raw)), b"\0")
        data += struct.pack("<Ii", serial, value)
    return bytes(data)


class XSettingsMotion:
    """`set_reduce_motion` for the x11 backend; any thread (one lock)."""

    def __init__(self, display_name: str, *, linger_s: float = RELEASE_LINGER_S) -> None:
        self._display_name = display_name
        self._linger_s = linger_s
        self._lock = threading.Lock()
        self._conn: Any = None  # open while this agent is the settings manager
        self._window: Any = None
        self._selection = 0
        # Written to, to stop the thread that reads the manager's connection.
        self._wake_watcher: int | None = None
        self._serial = 0
        # Set while animations are published on again and the window lingers.
        self._release_timer: threading.Timer | None = None
        self._release_at = 0.0
        self._told_of_other_manager = False

    @property
    def is_manager(self) -> bool:
        """Whether this agent owns the settings selection now (lingering included)."""
        with self._lock:
            return self._conn is not None

    @property
    def reduces_motion(self) -> bool:
        """Whether animations are published off now."""
        with self._lock:
            return self._conn is not None and self._release_timer is None

    def set_reduce_motion(self, on: bool) -> None:
        with self._lock:
            if on:
                if self._release_timer is not None:
                    # Back on while the window lingers: same manager, animations off.
                    self._cancel_release()
                    self._publish(animations=False)
                elif self._conn is None:
                    self._become_manager()
            elif self._conn is not None and self._release_timer is None:
                self._publish(animations=True)
                timer = threading.Timer(self._linger_s, self._release_if_due)
                timer.daemon = True
                self._release_timer = timer
                self._release_at = time.monotonic() + self._linger_s
                timer.start()

    def close(self) -> None:
        """Restore and release now, the linger served first (the agent is stopping)."""
        self.set_reduce_motion(False)
        with self._lock:
            if self._conn is None:
                return
            self._cancel_release()
            time.sleep(max(0.0, self._release_at - time.monotonic()))
            self._step_down()

    def _release_if_due(self) -> None:
        with self._lock:
            if self._release_timer is threading.current_thread():
                self._release_timer = None
                self._step_down()

    def _cancel_release(self) -> None:
        timer, self._release_timer = self._release_timer, None
        if timer is not None:
            timer.cancel()

    def _publish(self, *, animations: bool) -> None:
        self._serial += 1
        value = encode_settings({ENABLE_ANIMATIONS: int(animations)}, self._serial)
        settings = self._conn.intern_atom("_XSETTINGS_SETTINGS")
        self._window.change_property(settings, settings, 8, value)
        self._conn.sync()

    def _become_manager(self) -> None:
        conn: Any = display.Display(self._display_name)
        try:
            screen_number = conn.get_default_screen()
            root = conn.screen().root
            selection = conn.intern_atom(f"_XSETTINGS_S{screen_number}")
            owner = _owner(conn, selection)
            if owner != X.NONE:
                self._tell_of_other_manager(owner)
                conn.close()
                return
            window = root.create_window(
                -1, -1, 1, 1, 0, X.CopyFromParent, event_mask=X.PropertyChangeMask
            )
            self._conn, self._window = conn, window
            # The property is in place before the selection is taken: a client that
            # sees the new owner reads it at once. Its PropertyNotify carries the
            # server time the selection is taken at (ICCCM: never CurrentTime).
            self._publish(animations=False)
            timestamp = _property_change_time(conn, window.id)
            window.set_selection_owner(selection, timestamp)
            owner = _owner(conn, selection)
            if owner != window.id:
                # Another manager won the race: it decides.
                self._tell_of_other_manager(owner)
                self._conn = self._window = None
                conn.close()
                return
            self._selection = selection
            manager = conn.intern_atom("MANAGER")
            announce = event.ClientMessage(
                window=root,
                client_type=manager,
                data=(32, [timestamp, selection, window.id, 0, 0]),
            )
            root.send_event(announce, event_mask=X.StructureNotifyMask)
            conn.sync()
        except BaseException:
            self._conn = self._window = None
            conn.close()
            raise
        self._start_watcher(conn)
        _log.info("reduce motion: this agent is the XSETTINGS manager, animations off")

    def _start_watcher(self, conn: Any) -> None:
        wake_read, self._wake_watcher = os.pipe()
        threading.Thread(
            target=self._watch,
            args=(conn, conn.fileno(), wake_read),
            name="rigway-xsettings",
            daemon=True,
        ).start()

    def _watch(self, conn: Any, fd: int, wake: int) -> None:
        """Read the manager's connection until this agent steps down (which wakes it)."""
        try:
            while True:
                try:
                    readable, _, _ = select.select([fd, wake], [], [])
                except (OSError, ValueError):  # the connection closed under the select
                    return
                if wake in readable:
                    return
                with self._lock:
                    if self._conn is not conn or not self._handle_events():
                        return
        finally:
            os.close(wake)

    def _handle_events(self) -> bool:
        """Everything the server sent the manager; False once this agent stepped down.
        Under the lock: the connection is used by one thread at a time."""
        try:
            while self._conn.pending_events():
                received = self._conn.next_event()
                if (
                    received.type == X.SelectionClear
                    and received.window.id == self._window.id
                    and received.atom == self._selection
                ):
                    # Another manager took the selection (ICCCM manager selection):
                    # it decides; the window goes so it need not wait for us.
                    self._tell_of_other_manager(_owner(self._conn, self._selection))
                    self._step_down()
                    return False
        except (error.ConnectionClosedError, OSError):
            _log.warning("reduce motion: the X connection closed; no longer the manager")
            self._step_down()
            return False
        return True

    def _step_down(self) -> None:
        conn, self._conn, self._window = self._conn, None, None
        self._cancel_release()
        wake, self._wake_watcher = self._wake_watcher, None
        if wake is not None:
            # The watcher stops before the connection it reads closes (a watcher that
            # ended on its own closed its end already: nothing to wake).
            with contextlib.suppress(OSError):
                os.write(wake, b"x")
            os.close(wake)
        try:
            # Closing the connection destroys the manager window, which frees the
            # selection and tells the clients.
            conn.close()
        except (error.ConnectionClosedError, OSError):
            _log.warning("reduce motion: the X connection was gone already")
        _log.info("reduce motion: XSETTINGS manager released, animations as before")

    def _tell_of_other_manager(self, owner: int) -> None:
        if self._told_of_other_manager:
            return
        self._told_of_other_manager = True
        _log.warning(
            "reduce motion: another XSETTINGS manager (window 0x%x) runs on %s; it decides "
            "the animations (e.g. gsettings set org.gnome.desktop.interface "
            "enable-animations false)",
            owner,
            self._display_name,
        )


def _owner(conn: Any, selection: int) -> int:
    """The selection owner's window id (X.NONE when none); python-xlib hands a window."""
    owner = conn.get_selection_owner(selection)
    return int(getattr(owner, "id", owner))


def _property_change_time(conn: Any, window_id: int) -> int:
    """The server time of the PropertyNotify a change to this window's property caused."""
    conn.flush()
    while True:
        received = conn.next_event()
        if received.type == X.PropertyNotify and received.window.id == window_id:
            return int(received.time)
