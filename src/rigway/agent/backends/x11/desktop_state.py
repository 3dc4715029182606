"""Whether an X desktop can be driven now: a session lock and the X screen saver.

Two sources, each skipped where the machine does not have it:
- logind's `LockedHint` of the login session that owns this display (matched by the
  session's `Display` property). Lockers that speak to logind set it: GNOME and KDE,
  light-locker, xss-lock behind `loginctl lock-session`. No logind, no system bus, or
  no session for the display (Xvfb, a container): skipped, looked for again every
  `SESSION_SEARCH_INTERVAL_S`. → "locked"
- the MIT-SCREEN-SAVER extension's `QueryInfo` on the root: the server's own screen
  saver is showing (blanked, or a saver such as xscreensaver drawing over it). A key
  press would only wake it, and its picture is not the desktop. → "screensaver"

A lock wins over the screen saver: behind a locked saver a key press wakes a password
prompt, never the desktop. Neither: "normal". A display that cannot be reached:
"no_display"; anything else unexpected: "unknown". Never raises.

One lock serialises the reads: the agent asks from several worker threads, and each
source keeps one connection of its own (xcffib for X, jeepney for the system bus).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import xcffib
import xcffib.screensaver
import xcffib.xproto
from jeepney import DBusAddress, Properties, new_method_call
from jeepney.io.blocking import DBusConnection, open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

from rigway.agent.backends.base import DesktopState

__all__ = [
    "LOGIND",
    "SESSION_SEARCH_INTERVAL_S",
    "LogindLock",
    "ScreenSaverQuery",
    "X11DesktopState",
    "display_number",
]

_log = logging.getLogger(__name__)

SCREEN_SAVER_EXTENSION: Final = "MIT-SCREEN-SAVER"
SCREEN_SAVER_VERSION: Final = (1, 1)
# QueryInfo's state: On is a saver showing. Cycle is documented for the notify event
# (the saver changed its picture), which also means it is showing.
_SAVER_SHOWING: Final = frozenset({xcffib.screensaver.State.On, xcffib.screensaver.State.Cycle})

LOGIND: Final = "org.freedesktop.login1"
_MANAGER = DBusAddress("/org/freedesktop/login1", bus_name=LOGIND, interface=LOGIND + ".Manager")
_SESSION_INTERFACE: Final = LOGIND + ".Session"
# A D-Bus round trip to a local daemon takes well under a millisecond; a bus that takes
# longer than this is stuck, and the state is "unknown" for that read.
DBUS_TIMEOUT_S: Final = 0.25
# How often a lock source that found no session for the display looks again.
SESSION_SEARCH_INTERVAL_S: Final = 30.0


def display_number(display_name: str) -> int | None:
    """The display number of a local X display name (":0", ":1.0", "unix:2"); None for
    a remote one ("host:0"), which no local login session can own."""
    host, colon, rest = display_name.rpartition(":")
    if colon == "" or host not in ("", "unix"):
        return None
    number = rest.partition(".")[0]
    return int(number) if number.isdigit() else None


class ScreenSaverQuery:
    """`QueryInfo` of the MIT-SCREEN-SAVER extension over a connection of its own."""

    def __init__(self, display_name: str) -> None:
        self._display_name = display_name
        self._conn: Any = None
        self._extension: Any = None
        self._root = 0

    def is_showing(self) -> bool:
        """True while the screen saver shows; False too when the server has no such
        extension. Raises xcffib's errors (the connection is then dropped)."""
        if self._conn is None:
            self._connect()
        if self._extension is None:
            return False
        try:
            state = self._extension.QueryInfo(self._root).reply().state
        except xcffib.XcffibException:
            self.close()
            raise
        return int(state) in _SAVER_SHOWING

    def _connect(self) -> None:
        conn: Any = xcffib.connect(display=self._display_name)  # type: ignore[no-untyped-call]
        try:
            name = SCREEN_SAVER_EXTENSION
            if conn.core.QueryExtension(len(name), name).reply().present:
                extension: Any = conn(xcffib.screensaver.key)
                extension.QueryVersion(*SCREEN_SAVER_VERSION).reply()
                self._extension = extension
            self._root = int(conn.get_setup().roots[conn.pref_screen].root)
        except BaseException:
            conn.disconnect()
            self._extension = None
            raise
        self._conn = conn

    def close(self) -> None:
        conn, self._conn, self._extension = self._conn, None, None
        if conn is not None:
            conn.disconnect()


class LogindLock:
    """`LockedHint` of the logind session whose `Display` is this X display.

    `bus_address` is the system bus ("SYSTEM": the standard lookup); tests pass the
    address of a private bus that serves a fake logind."""

    def __init__(
        self,
        display_name: str,
        bus_address: str = "SYSTEM",
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._display = display_number(display_name)
        self._bus_address = bus_address
        self._monotonic = monotonic
        self._conn: DBusConnection | None = None
        self._session_path: str | None = None
        self._next_search_at = 0.0

    def is_locked(self) -> bool | None:
        """True or False for the display's session; None when there is none to ask
        (no logind, no bus, no session for this display). Raises on a stuck or broken
        bus (TimeoutError, OSError, …), after which the next read connects afresh."""
        if self._session_path is None and not self._search_due():
            return None
        try:
            if self._session_path is None:
                self._session_path = self._find_session()
                if self._session_path is None:
                    return None
            return bool(self._property(self._session_path, "LockedHint"))
        except DBusErrorResponse:
            # The session ended (or logind went away): look for one again, later.
            self._session_path = None
            return None
        except Exception:
            self.close()
            raise

    def _search_due(self) -> bool:
        now = self._monotonic()
        if now < self._next_search_at:
            return False
        self._next_search_at = now + SESSION_SEARCH_INTERVAL_S
        return True

    def _find_session(self) -> str | None:
        if self._display is None:
            return None
        try:
            sessions = self._call(new_method_call(_MANAGER, "ListSessions"))[0]
        except (OSError, DBusErrorResponse) as exc:
            _log.debug("no logind to ask about session locks: %s", exc)
            self.close()
            return None
        for _id, _uid, _user, _seat, path in sessions:
            try:
                display = self._property(path, "Display")
            except DBusErrorResponse:
                continue  # the session ended while we looked
            if isinstance(display, str) and display_number(display) == self._display:
                return str(path)
        return None

    def _property(self, path: str, name: str) -> object:
        session = DBusAddress(path, bus_name=LOGIND, interface=_SESSION_INTERFACE)
        _signature, value = self._call(Properties(session).get(name))[0]
        return value

    def _call(self, message: Any) -> tuple[Any, ...]:
        if self._conn is None:
            self._conn = open_dbus_connection(self._bus_address, auth_timeout=DBUS_TIMEOUT_S)
        reply = self._conn.send_and_get_reply(message, timeout=DBUS_TIMEOUT_S)
        body: tuple[Any, ...] = unwrap_msg(reply)
        return body

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class X11DesktopState:
    """`Desktop.desktop_state` of the x11 backend (see the module docstring)."""

    def __init__(self, display_name: str, *, system_bus_address: str = "SYSTEM") -> None:
        self._lock = threading.Lock()
        self._screen_saver = ScreenSaverQuery(display_name)
        self._session_lock = LogindLock(display_name, system_bus_address)

    def read(self) -> DesktopState:
        with self._lock:
            try:
                if self._session_lock.is_locked():
                    return "locked"
            except Exception as exc:  # never raises: the contract
                _log.debug("cannot read the session lock: %s", exc)
                return "unknown"
            try:
                return "screensaver" if self._screen_saver.is_showing() else "normal"
            except xcffib.ConnectionException as exc:
                _log.debug("cannot reach the X display: %s", exc)
                return "no_display"
            except Exception as exc:
                _log.debug("cannot read the X screen saver: %s", exc)
                return "unknown"

    def close(self) -> None:
        with self._lock:
            self._screen_saver.close()
            self._session_lock.close()
