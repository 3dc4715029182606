"""A fake logind on a private D-Bus bus: just enough of org.freedesktop.login1 for the
x11 backend's session-lock check (`ListSessions`, a session's `Display` and
`LockedHint`), served from a thread over jeepney."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jeepney import HeaderFields, Message, MessageType, new_error, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

from rigway.agent.backends.x11.desktop_state import LOGIND

MANAGER_PATH = "/org/freedesktop/login1"
# How long the serving thread waits for a message before it looks at its stop flag.
_RECEIVE_TIMEOUT_S = 0.05


@dataclass
class FakeSession:
    session_id: str
    display: str
    locked: bool = False

    @property
    def path(self) -> str:
        return f"{MANAGER_PATH}/session/_{self.session_id}"


class FakeLogind:
    def __init__(self, sessions: list[FakeSession]) -> None:
        self.sessions = sessions

    def _answer(self, call: Message) -> Message:
        fields = call.header.fields
        path, member = fields.get(HeaderFields.path), fields.get(HeaderFields.member)
        if path == MANAGER_PATH and member == "ListSessions":
            listing = [(s.session_id, 1000, "user", "seat0", s.path) for s in self.sessions]
            return new_method_return(call, "a(susso)", (listing,))
        session = next((s for s in self.sessions if s.path == path), None)
        if session is not None and member == "Get":
            _interface, name = call.body
            if name == "Display":
                return new_method_return(call, "v", (("s", session.display),))
            if name == "LockedHint":
                return new_method_return(call, "v", (("b", session.locked),))
        return new_error(call, "org.freedesktop.DBus.Error.UnknownObject")

    @contextmanager
    def serving(self, bus_address: str) -> Iterator[FakeLogind]:
        conn = open_dbus_connection(bus_address)
        conn.send_and_get_reply(message_bus.RequestName(LOGIND), timeout=5.0)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    message: Any = conn.receive(timeout=_RECEIVE_TIMEOUT_S)
                except TimeoutError:
                    continue
                if message.header.message_type == MessageType.method_call:
                    conn.send(self._answer(message))

        thread = threading.Thread(target=serve, name="fake-logind", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            conn.close()
