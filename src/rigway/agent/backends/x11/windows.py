"""Top-level windows through EWMH: the list, who owns each, and closing some of them.

The session end closes only the windows its launched processes own; the dispatcher
decides that from `window_owners` (asked before the apps are killed: afterwards a
window's owner may be gone) and hands the result to `close_windows`.

Closing escalates: `_NET_CLOSE_WINDOW` (the window manager sends WM_DELETE_WINDOW, so an
app may still ask "save changes?"), then, after a grace period, the owner process is
terminated (its pid from X-Resource, which the server knows even without `_NET_WM_PID`),
and last `XKillClient`, which drops the owner's X connection.

An owner that also has windows *outside* the set (a user's editor that opened one new
dialog) is never killed: that would take the user's own windows with it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psutil
from Xlib import X, display, error, protocol
from Xlib.ext import res as xres

from rigway.agent.backends.base import Rect, StackedWindow

CLOSE_GRACE_S = 2.0
KILL_GRACE_S = 1.0
POLL_INTERVAL_S = 0.05
# _NET_CLOSE_WINDOW source indication 2: a pager or other direct user action.
SOURCE_PAGER = 2


def window_owner_pid(conn: Any, window_id: int) -> int | None:
    """Pid of the local process that created a window, or None when unknown."""
    if conn.has_extension("X-Resource"):
        with suppress(error.XError):
            spec = {"client": window_id, "mask": xres.LocalClientPIDMask}
            for client_id in conn.res_query_client_ids([spec]).ids:
                if client_id.spec.mask & xres.LocalClientPIDMask and len(client_id.value) > 0:
                    return int(client_id.value[0])
    # _NET_WM_PID is only meaningful when the client runs on this machine.
    window = conn.create_resource_object("window", window_id)
    with suppress(error.XError):
        machine = window.get_full_property(conn.intern_atom("WM_CLIENT_MACHINE"), X.AnyPropertyType)
        pid = window.get_full_property(conn.intern_atom("_NET_WM_PID"), X.AnyPropertyType)
        if pid is not None and machine is not None and _is_this_host(machine.value):
            return int(pid.value[0])
    return None


def window_title(conn: Any, window_id: int) -> str | None:
    """`_NET_WM_NAME` (UTF-8), else the legacy `WM_NAME`."""
    window = conn.create_resource_object("window", window_id)
    with suppress(error.XError):
        utf8 = conn.intern_atom("UTF8_STRING")
        name = window.get_full_property(conn.intern_atom("_NET_WM_NAME"), utf8)
        if name is not None:
            return _text(name.value)
        legacy = window.get_wm_name()
        return None if legacy is None else _text(legacy)
    return None


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _is_this_host(value: bytes | str) -> bool:
    # No getfqdn(): it can block on a DNS lookup.
    return _text(value).rstrip("\0") == socket.gethostname()


class X11Windows:
    """Window bookkeeping with its own X connection, guarded by a lock (any thread)."""

    def __init__(self, display_name: str) -> None:
        self._display_name = display_name
        self._lock = threading.Lock()
        self._conn: Any = None
        # For `window_stack`: each client's top-level ancestor (its frame, under a
        # reparenting window manager), and each shown window's owner pid.
        self._frames: dict[int, int] = {}
        self._pids: dict[int, int | None] = {}

    @contextmanager
    def _session(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None:
                self._conn = display.Display(self._display_name)
            try:
                yield self._conn
            except (error.ConnectionClosedError, OSError):
                self._drop()  # the server went away: reconnect next time
                raise

    def list_windows(self) -> frozenset[int]:
        with self._session():
            return frozenset(self._clients())

    def window_owners(self, window_ids: frozenset[int]) -> dict[int, int | None]:
        """The owner pid of each of these windows still open; None when unknown."""
        with self._session() as conn:
            return {w: window_owner_pid(conn, w) for w in self._clients() if w in window_ids}

    def window_stack(self) -> list[StackedWindow]:
        """The root's mapped children, topmost first (XQueryTree lists them bottom to
        top): frames with the client each holds, and unmanaged windows (menus,
        tooltips: override-redirect, `is_popup`). A frame's owner is its client's;
        geometry is the child's, border included, in root (capture) coordinates; the
        focus is the window manager's `_NET_ACTIVE_WINDOW`."""
        with self._session() as conn:
            active = _active_window(conn)
            children = conn.screen().root.query_tree().children
            present = {int(child.id) for child in children}
            client_of = self._clients_by_frame(conn, present)
            owners = present | set(client_of.values())
            self._pids = {w: pid for w, pid in self._pids.items() if w in owners}
            stack = []
            for child in reversed(children):
                shown = _shown_geometry(child)
                if shown is None:
                    continue
                rect, override_redirect = shown
                client = client_of.get(int(child.id))
                owner = int(child.id) if client is None else client
                if owner not in self._pids:
                    self._pids[owner] = window_owner_pid(conn, owner)
                is_popup = client is None and override_redirect
                has_focus = active is not None and owner == active
                stack.append(
                    StackedWindow(owner, self._pids[owner], rect, is_popup, has_focus=has_focus)
                )
            return stack

    def _clients_by_frame(self, conn: Any, present: set[int]) -> dict[int, int]:
        clients = self._clients()
        self._frames = {c: f for c, f in self._frames.items() if c in clients and f in present}
        for client in clients:
            if client not in self._frames:
                frame = _top_level(conn, client)
                if frame is not None:
                    self._frames[client] = frame
        return {frame: client for client, frame in self._frames.items()}

    def _clients(self) -> list[int]:
        conn = self._conn
        prop = conn.screen().root.get_full_property(
            conn.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType
        )
        return [] if prop is None else [int(w) for w in prop.value]

    def close_windows(self, window_ids: frozenset[int]) -> None:
        with self._session():
            targets = [w for w in self._clients() if w in window_ids]
            if not targets:
                return
            owners = {w: window_owner_pid(self._conn, w) for w in targets}
            for window_id in targets:
                self._request_close(window_id)
            left = self._wait_gone(targets, CLOSE_GRACE_S)
            killable = self._killable_pids(left, owners, window_ids)
            if killable:
                _terminate(killable)
                left = self._wait_gone(left, KILL_GRACE_S)
            for window_id in left:
                if owners[window_id] in killable or owners[window_id] is None:
                    # A window destroyed meanwhile answers BadValue: nothing to do then.
                    window = self._conn.create_resource_object("window", window_id)
                    window.kill_client(onerror=error.CatchError())
            self._conn.sync()

    def _request_close(self, window_id: int) -> None:
        conn = self._conn
        event = protocol.event.ClientMessage(
            window=conn.create_resource_object("window", window_id),
            client_type=conn.intern_atom("_NET_CLOSE_WINDOW"),
            data=(32, [X.CurrentTime, SOURCE_PAGER, 0, 0, 0]),
        )
        mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
        conn.screen().root.send_event(event, event_mask=mask)
        conn.flush()

    def _wait_gone(self, window_ids: list[int], timeout_s: float) -> list[int]:
        deadline = time.monotonic() + timeout_s
        while True:
            present = set(self._clients())
            left = [w for w in window_ids if w in present]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(POLL_INTERVAL_S)

    def _killable_pids(
        self, left: list[int], owners: dict[int, int | None], closing: frozenset[int]
    ) -> set[int]:
        pids = {owners[w] for w in left} - {None, 0, 1, os.getpid()}
        # An owner of a window we keep is spared (see the module docstring).
        for other in self._clients():
            if other not in closing:
                pids.discard(window_owner_pid(self._conn, other))
        return {pid for pid in pids if pid is not None}

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(error.ConnectionClosedError, OSError):
                conn.close()


def _shown_geometry(window: Any) -> tuple[Rect, bool] | None:
    """A mapped window's rectangle (border included) and override-redirect flag; None
    when it is unmapped or gone."""
    try:
        attributes = window.get_attributes()
        if attributes.map_state != X.IsViewable:
            return None
        geometry = window.get_geometry()
    except error.XError:
        return None  # destroyed since the tree was read: it shows nothing
    border = 2 * int(geometry.border_width)
    rect = Rect(int(geometry.x), int(geometry.y), geometry.width + border, geometry.height + border)
    return rect, bool(attributes.override_redirect)


def _active_window(conn: Any) -> int | None:
    """The window manager's active window (EWMH); None without one or a manager."""
    prop = conn.screen().root.get_full_property(
        conn.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType
    )
    if prop is None or len(prop.value) == 0 or int(prop.value[0]) == 0:
        return None
    return int(prop.value[0])


def _top_level(conn: Any, window_id: int) -> int | None:
    """The root's child that holds this window (itself when unparented)."""
    root = int(conn.screen().root.id)
    current = window_id
    try:
        while True:
            parent = int(conn.create_resource_object("window", current).query_tree().parent.id)
            if parent == root:
                return current
            current = parent
    except error.XError:
        return None


def _terminate(pids: Iterable[int]) -> None:
    procs = []
    for pid in pids:
        with suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc = psutil.Process(pid)
            proc.terminate()
            procs.append(proc)
    _, alive = psutil.wait_procs(procs, timeout=KILL_GRACE_S)
    for proc in alive:
        with suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.kill()
