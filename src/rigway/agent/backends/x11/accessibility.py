"""The accessibility snapshot: interactive controls of the active window, via AT-SPI.

The walk, in four pipelined steps, all bounded by the budget's deadline:
1. the active window: every application's windows and their states (STATE_ACTIVE);
   toolkits that never set it (Chromium) are found through X11 `_NET_ACTIVE_WINDOW` →
   owner pid → the AT-SPI application with that pid. The window found last time is
   asked first, inside step 2's round trip: while it is still active, this step costs
   nothing;
2. `Collection.GetMatches` on that window: showing controls with interactive roles,
   plus the focused object, walked inside the app in one round trip (with the window's
   name and role);
3. role, state, name and screen extents of each match (a role is asked once per object
   path and remembered for that application, except for text controls, whose role decides
   whether their text may be read: theirs is asked every time);
4. values: the text of text controls (never of a `password text`: that role is masked
   and its text is never requested), the state of toggles, the number of ranges.

Steps 2 to 4 talk to the application straight over the D-Bus server it runs for
accessibility clients (as libatspi does), not through the bus daemon, when it offers
one and its socket belongs to the process that owns the application's bus name.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from Xlib import X, display, error

from rigway.agent.backends.base import AccessibilitySnapshot, AccessibleElement, WalkBudget
from rigway.agent.backends.x11 import roles
from rigway.agent.backends.x11.atspi import (
    REGISTRY,
    STATE_ACTIVE,
    STATE_CHECKED,
    STATE_FOCUSED,
    STATE_INDETERMINATE,
    STATE_PRESSED,
    STATE_SHOWING,
    AtspiConnection,
    AtspiUnavailableError,
    Ref,
    accessibility_bus_address,
    bitset,
    bus_method,
    get_property,
    has_state,
    method,
)
from rigway.agent.backends.x11.windows import window_owner_pid, window_title

logger = logging.getLogger(__name__)
T = TypeVar("T")

# One step may not take more than this even when the budget's deadline is later: a hung
# application should cost a bounded time.
STEP_TIMEOUT_S = 1.0
CONNECT_TIMEOUT_S = 1.0
MAX_VALUE_CHARS = 10_000
MATCH_ALL, MATCH_ANY = 1, 2
SORT_CANONICAL = 1
MATCH_RULE_SIGNATURE = "(aiia{ss}iaiiasib)uib"
# Remembered roles, per application bus name; past this many the memory starts over.
MAX_CACHED_ROLES = 10_000
# Roles that are asked again every snapshot: they decide whether a text is read.
FRESH_ROLES: frozenset[int] = roles.TEXTUAL | {roles.PASSWORD_TEXT}
# Peer-to-peer connections kept open, one per application; past this the oldest closes.
MAX_PEERS = 8
# Applications whose pid is remembered (a walk asks for it once per application).
MAX_CACHED_APP_PIDS = 64
APP_ROOT_PATH = "/org/a11y/atspi/accessible/root"


@dataclass(frozen=True, slots=True)
class _Window:
    app: Ref
    ref: Ref


@dataclass(slots=True)
class _Walk:
    bus: AtspiConnection
    deadline: float
    # Told about an application whose own connection failed, as soon as it does.
    peer_failed: Callable[[str], None]
    # The walked application and its own connection, when it has one (`app_calls`).
    app: str = ""
    peer: AtspiConnection | None = None
    truncated: bool = False

    def talk_to(self, app: str, peer: AtspiConnection | None) -> None:
        self.app, self.peer = app, peer

    def step_deadline(self) -> float:
        return min(self.deadline, time.monotonic() + STEP_TIMEOUT_S)

    def calls(self, messages: Sequence[Any]) -> list[tuple[Any, ...] | None]:
        return self._collect(self.bus, messages)

    def app_calls(self, messages: Sequence[Any]) -> list[tuple[Any, ...] | None]:
        """Calls to the walked application: over its own connection while that works,
        else over the bus (the same calls, one hop longer)."""
        if self.peer is not None:
            try:
                return self._collect(self.peer, messages)
            except OSError as exc:
                logger.info("peer connection to %s lost (%s): using the bus", self.app, exc)
                self.peer = None
                self.peer_failed(self.app)
        return self._collect(self.bus, messages)

    def _collect(
        self, connection: AtspiConnection, messages: Sequence[Any]
    ) -> list[tuple[Any, ...] | None]:
        replies = connection.call_many(messages, self.step_deadline())
        if time.monotonic() >= self.deadline and any(r is None for r in replies):
            self.truncated = True
        return replies


def _match_rule(states: Sequence[int], role_set: Sequence[int]) -> tuple[Any, ...]:
    # "Don't care" is MATCH_ALL of an empty set (MATCH_EMPTY matches nothing).
    return (
        bitset(states, 2),
        MATCH_ALL,
        {},
        MATCH_ALL,
        bitset(role_set, 5),
        MATCH_ANY if role_set else MATCH_ALL,
        [],
        MATCH_ALL,
        False,
    )


class X11Accessibility:
    """The accessibility role: its own a11y-bus and X connections, opened lazily."""

    def __init__(
        self, display_name: str, session_bus_address: str | None, screen_size: tuple[int, int]
    ) -> None:
        self._display_name = display_name
        self._session_bus = session_bus_address
        self._screen_w, self._screen_h = screen_size
        self._lock = threading.Lock()
        self._bus: AtspiConnection | None = None
        self._x: Any = None
        # Object path -> role, for the application with this unique bus name (unique
        # names are never reused on a bus, so a new app never sees another's roles).
        self._roles_app = ""
        self._roles: dict[str, int] = {}
        # Application bus name -> its peer connection, or None when it has none we use.
        self._peers: dict[str, AtspiConnection | None] = {}
        self._app_pids: dict[str, int] = {}
        # The active window of the last walk, asked first by the next one.
        self._last_window: _Window | None = None

    def snapshot(self, budget: WalkBudget) -> AccessibilitySnapshot:
        deadline = time.monotonic() + budget.deadline_s
        with self._lock:
            try:
                bus = self._connect(deadline)
            except (AtspiUnavailableError, OSError, TimeoutError, KeyError) as exc:
                logger.warning("no accessibility bus: %s", exc)
                return AccessibilitySnapshot("", "", [], truncated=time.monotonic() >= deadline)
            walk = _Walk(bus, deadline, peer_failed=self._forget_peer)
            try:
                return self._walk(walk, budget.max_elements)
            except (OSError, ConnectionError) as exc:
                logger.warning("accessibility bus lost: %s", exc)
                self._drop_bus()
                return AccessibilitySnapshot("", "", [], truncated=True)

    def _walk(self, walk: _Walk, max_elements: int) -> AccessibilitySnapshot:
        window = self._last_window
        found = None
        if window is not None:
            found = self._matches(walk, window, max_elements, still_active=True)
        if found is None:
            window = self._active_window(walk)
            if window is not None:
                found = self._matches(walk, window, max_elements, still_active=False)
        self._last_window = window
        if window is None or found is None:
            return AccessibilitySnapshot("", "", [], truncated=walk.truncated)
        name, role, refs = found
        if window.app[0] != self._roles_app or len(self._roles) > MAX_CACHED_ROLES:
            self._roles_app, self._roles = window.app[0], {}
        elements = self._describe(walk, refs)
        return AccessibilitySnapshot(
            window_title=self._title(walk, window, name),
            window_role="" if role is None else roles.role_name(int(role[0])),
            elements=elements,
            truncated=walk.truncated,
            window_pid=self._app_pid(walk, window.app[0]),
        )

    # -- peer-to-peer connections ------------------------------------------------------
    def _peer_of(self, walk: _Walk, app: str) -> AtspiConnection | None:
        if app not in self._peers:
            if len(self._peers) >= MAX_PEERS:
                self._close_peer(next(iter(self._peers)))
            self._peers[app] = self._open_peer(walk, app)
        return self._peers[app]

    def _open_peer(self, walk: _Walk, app: str) -> AtspiConnection | None:
        """The application's own D-Bus server, if it runs one and the socket it names
        is served by the process that owns its bus name; else None (use the bus)."""
        address, pid = walk.calls(
            [
                method((app, APP_ROOT_PATH), "Application", "GetApplicationBusAddress"),
                bus_method("GetConnectionUnixProcessID", "s", (app,)),
            ]
        )
        if pid is not None:
            self._remember_pid(app, int(pid[0]))  # `_title` needs it too: asked once
        if address is None or pid is None or not str(address[0]):
            return None
        timeout_s = max(0.05, min(CONNECT_TIMEOUT_S, walk.deadline - time.monotonic()))
        try:
            peer = AtspiConnection.to_peer(str(address[0]), timeout_s)
        except (OSError, RuntimeError, ValueError) as exc:
            # RuntimeError: not a Unix socket address; ValueError: authentication failed.
            logger.info("no peer connection to %s (%s): using the bus", app, exc)
            return None
        if peer.peer_pid() != int(pid[0]):
            logger.warning("%s named a socket that another process serves: not used", app)
            peer.close()
            return None
        return peer

    def _forget_peer(self, app: str) -> None:
        """Close a peer that failed; a unique bus name is not reused while the bus
        lives, so this application is asked over the bus from now on."""
        self._close_peer(app)
        self._peers[app] = None

    def _close_peer(self, app: str) -> None:
        peer = self._peers.pop(app, None)
        if peer is not None:
            peer.close()

    # -- step 1: the active window ---------------------------------------------------
    def _active_window(self, walk: _Walk) -> _Window | None:
        apps_reply = walk.calls([method(REGISTRY, "Accessible", "GetChildren")])[0]
        apps: list[Ref] = [] if apps_reply is None else [tuple(a) for a in apps_reply[0]]
        children = walk.calls([method(app, "Accessible", "GetChildren") for app in apps])
        windows = [
            _Window(app, tuple(ref))
            for app, reply in zip(apps, children, strict=True)
            if reply is not None
            for ref in reply[0]
        ]
        states = walk.calls([method(w.ref, "Accessible", "GetState") for w in windows])
        showing = []
        for window, state in zip(windows, states, strict=True):
            if state is not None and has_state(state[0], STATE_ACTIVE):
                return window
            if state is not None and has_state(state[0], STATE_SHOWING):
                showing.append(window)
        return self._window_of_x_active_pid(walk, showing)

    def _window_of_x_active_pid(self, walk: _Walk, showing: list[_Window]) -> _Window | None:
        """Fallback for toolkits that never set STATE_ACTIVE (seen: Chromium)."""
        pid = self._x_active_window_pid()
        if pid is None or not showing:
            return None
        apps = list(dict.fromkeys(w.app for w in showing))
        pids = walk.calls([bus_method("GetConnectionUnixProcessID", "s", (a[0],)) for a in apps])
        owned = {app for app, reply in zip(apps, pids, strict=True) if reply == (pid,)}
        candidates = [w for w in showing if w.app in owned]
        return candidates[0] if candidates else None

    def _x_active_window_pid(self) -> int | None:
        window_id = self._x_active_window()
        return None if window_id is None else self._x_guarded(window_owner_pid, window_id)

    def _title(self, walk: _Walk, window: _Window, name: tuple[Any, ...] | None) -> str:
        """The window's AT-SPI name, or else (GTK often leaves it empty) the window
        manager's title of the active X window, if that window is this application's.

        While focus moves, X and AT-SPI disagree for a moment: X already names the new
        window while AT-SPI still marks the old one active. Taking X's title then would
        label one window's controls with another's name, so the title stays empty."""
        title = "" if name is None else str(name[0][1])
        if title != "":
            return title
        window_id = self._x_active_window()
        if window_id is None:
            return ""
        owner = self._x_guarded(window_owner_pid, window_id)
        if owner is None or owner != self._app_pid(walk, window.app[0]):
            return ""
        x_title = self._x_guarded(window_title, window_id)
        return "" if x_title is None else x_title

    def _app_pid(self, walk: _Walk, app: str) -> int | None:
        """The pid behind an application's bus name; remembered, since a unique bus
        name is not reused while the bus lives (`_drop_bus` forgets them all)."""
        if app not in self._app_pids:
            reply = walk.calls([bus_method("GetConnectionUnixProcessID", "s", (app,))])[0]
            if reply is None:
                return None  # not remembered: the next walk asks again
            self._remember_pid(app, int(reply[0]))
        return self._app_pids[app]

    def _remember_pid(self, app: str, pid: int) -> None:
        if app not in self._app_pids and len(self._app_pids) >= MAX_CACHED_APP_PIDS:
            self._app_pids.clear()
        self._app_pids[app] = pid

    def _x_active_window(self) -> int | None:
        def read(conn: Any) -> int | None:
            atom = conn.intern_atom("_NET_ACTIVE_WINDOW")
            active = conn.screen().root.get_full_property(atom, X.AnyPropertyType)
            if active is None or len(active.value) == 0 or int(active.value[0]) == 0:
                return None
            return int(active.value[0])

        return self._x_guarded(read)

    def _x_guarded(self, query: Callable[..., T | None], *args: Any) -> T | None:
        """Run an X query on this role's own connection; None when X fails."""
        try:
            if self._x is None:
                self._x = display.Display(self._display_name)
            return query(self._x, *args)
        except (error.DisplayError, error.ConnectionClosedError, error.XError, OSError):
            self._drop_x()
            return None

    # -- step 2: the matches ---------------------------------------------------------
    def _matches(
        self, walk: _Walk, window: _Window, max_elements: int, *, still_active: bool
    ) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, list[Ref]] | None:
        """The window's name and role replies, and its matches (in one round trip).

        With `still_active`, the window's state is asked in the same round trip and
        None is returned unless it is still the active window."""
        # From here on the walk talks to this window's application.
        walk.talk_to(window.app[0], self._peer_of(walk, window.app[0]))
        cap = max(0, max_elements)
        interactive_rule = _match_rule([STATE_SHOWING], sorted(roles.INTERACTIVE))
        focused_rule = _match_rule([STATE_FOCUSED], [])
        messages = [
            get_property(window.ref, "Accessible", "Name"),
            method(window.ref, "Accessible", "GetRole"),
            method(
                window.ref,
                "Collection",
                "GetMatches",
                MATCH_RULE_SIGNATURE,
                (interactive_rule, SORT_CANONICAL, cap + 1, True),
            ),
            method(
                window.ref,
                "Collection",
                "GetMatches",
                MATCH_RULE_SIGNATURE,
                (focused_rule, SORT_CANONICAL, 1, True),
            ),
        ]
        if still_active:
            messages.append(method(window.ref, "Accessible", "GetState"))
        replies = walk.app_calls(messages)
        if still_active:
            state = replies.pop()
            if state is None or not has_state(state[0], STATE_ACTIVE):
                return None
        name, role, interactive, focused = replies
        refs: list[Ref] = [] if interactive is None else [tuple(r) for r in interactive[0]]
        if len(refs) > cap:
            walk.truncated = True
            refs = refs[:cap]
        for ref in [] if focused is None else [tuple(r) for r in focused[0]]:
            if ref not in refs and cap > 0:
                # The focused control matters most: it displaces the last match at the cap.
                if len(refs) == cap:
                    walk.truncated = True
                    refs = refs[:-1]
                refs.append(ref)
        return name, role, refs

    # -- steps 3 and 4: describe -----------------------------------------------------
    def _describe(self, walk: _Walk, refs: list[Ref]) -> list[AccessibleElement]:
        messages = []
        asked_roles = []
        for ref in refs:
            known = self._known_role(ref)
            if known is None or known in FRESH_ROLES:
                asked_roles.append(ref)
                messages.append(method(ref, "Accessible", "GetRole"))
            messages += [
                method(ref, "Accessible", "GetState"),
                get_property(ref, "Accessible", "Name"),
                method(ref, "Component", "GetExtents", "u", (0,)),  # 0: screen coordinates
            ]
        replies = iter(walk.app_calls(messages))
        asked = set(asked_roles)
        described = []
        for ref in refs:
            role_reply = next(replies) if ref in asked else (self._known_role(ref),)
            state, name, extents = next(replies), next(replies), next(replies)
            if role_reply is None or state is None or name is None or extents is None:
                continue  # the object went away between calls, or time ran out
            role = int(role_reply[0])
            if ref in asked and ref[0] == self._roles_app:
                self._roles[ref[1]] = role
            box = self._clip(extents[0])
            if box is not None:
                described.append((ref, role, list(state[0]), str(name[0][1]), box))
        values = self._values(walk, [(ref, role, state) for ref, role, state, _, _ in described])
        return [
            AccessibleElement(
                key=f"{ref[0]}{ref[1]}",
                role=roles.role_name(role),
                name=name,
                x=box[0],
                y=box[1],
                w=box[2],
                h=box[3],
                focused=has_state(state, STATE_FOCUSED),
                masked=role == roles.PASSWORD_TEXT,
                value=values.get(ref),
            )
            for ref, role, state, name, box in described
        ]

    def _known_role(self, ref: Ref) -> int | None:
        return self._roles.get(ref[1]) if ref[0] == self._roles_app else None

    def _clip(self, extents: Sequence[int]) -> tuple[int, int, int, int] | None:
        """Screen extents clipped to the desktop; None when nothing of it is on screen."""
        x, y, w, h = (int(v) for v in extents)
        left, top = max(0, x), max(0, y)
        right, bottom = min(self._screen_w, x + w), min(self._screen_h, y + h)
        if w <= 0 or h <= 0 or right <= left or bottom <= top:
            return None
        return (left, top, right - left, bottom - top)

    def _values(self, walk: _Walk, described: list[tuple[Ref, int, list[int]]]) -> dict[Ref, str]:
        values: dict[Ref, str] = {}
        asked: list[tuple[Ref, int]] = []
        messages = []
        for ref, role, state in described:
            if role in roles.TOGGLES:
                values[ref] = _toggle_value(role, state)
            elif role in roles.TEXTUAL:  # never PASSWORD_TEXT: it is not in TEXTUAL
                asked.append((ref, role))
                messages.append(method(ref, "Text", "GetText", "ii", (0, -1)))
            elif role in roles.RANGES:
                asked.append((ref, role))
                messages.append(get_property(ref, "Value", "CurrentValue"))
        for (ref, role), reply in zip(asked, walk.app_calls(messages), strict=True):
            if reply is None:
                continue
            if role in roles.RANGES:
                values[ref] = f"{float(reply[0][1]):g}"
            else:
                values[ref] = str(reply[0])[:MAX_VALUE_CHARS]
        return values

    # -- connections -----------------------------------------------------------------
    def _connect(self, deadline: float) -> AtspiConnection:
        if self._bus is None:
            timeout_s = max(0.05, min(CONNECT_TIMEOUT_S, deadline - time.monotonic()))
            session = self._session_bus if self._session_bus is not None else "SESSION"
            self._bus = AtspiConnection.to_bus(accessibility_bus_address(session, timeout_s))
        return self._bus

    def _drop_bus(self) -> None:
        self._roles_app, self._roles = "", {}
        self._last_window = None
        # Bus names are unique for one bus daemon's life only: a new daemon reuses them.
        self._app_pids.clear()
        for app in list(self._peers):
            self._close_peer(app)
        bus, self._bus = self._bus, None
        if bus is not None:
            bus.close()

    def _drop_x(self) -> None:
        conn, self._x = self._x, None
        if conn is not None:
            try:
                conn.close()
            except (error.ConnectionClosedError, OSError):
                logger.debug("X connection already closed")

    def close(self) -> None:
        with self._lock:
            self._drop_bus()
            self._drop_x()


def _toggle_value(role: int, state: list[int]) -> str:
    if has_state(state, STATE_INDETERMINATE):
        return "mixed"
    on = has_state(state, STATE_CHECKED) or (
        role == roles.TOGGLE_BUTTON and has_state(state, STATE_PRESSED)
    )
    return "checked" if on else "unchecked"
