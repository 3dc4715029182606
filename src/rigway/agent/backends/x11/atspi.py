"""A minimal AT-SPI client over raw D-Bus (jeepney): any Python, no GObject.

Protocol cheat-sheet:
- session bus: `org.a11y.Bus.GetAddress` on /org/a11y/bus gives the private
  accessibility bus; `org.a11y.Status.IsEnabled = true` asks toolkits that check it
  (Qt, Chromium, Firefox) to export their trees (GTK3 always does).
- a11y bus: the registry's root `Accessible.GetChildren` lists application roots
  `(bus name, object path)`; `Collection.GetMatches` walks a window's whole tree inside
  the app in one round trip.

Calls are *pipelined*: send a batch, then collect replies by serial, so a hundred
objects cost about one round trip. Every wait is bounded by a deadline: a hung app
costs at most the deadline, never a hang.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from jeepney import DBusAddress, HeaderFields, Message, MessageType, Properties, new_method_call
from jeepney.io.blocking import DBusConnection, open_dbus_connection

IFACE = "org.a11y.atspi."
REGISTRY = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
AUTH_TIMEOUT_S = 1.0
# A blocking send must not wait forever on a bus that stopped reading.
SEND_TIMEOUT_S = 2.0

# AtspiStateType bits (atspi-constants.h, a stable ABI).
STATE_ACTIVE = 1
STATE_CHECKED = 4
STATE_FOCUSED = 12
STATE_PRESSED = 20
STATE_SHOWING = 25
STATE_INDETERMINATE = 32

Ref = tuple[str, str]  # (bus name, object path)


class AtspiUnavailableError(RuntimeError):
    """No accessibility bus could be reached."""


def has_state(states: Sequence[int], bit: int) -> bool:
    word = bit // 32
    return word < len(states) and bool((states[word] >> (bit % 32)) & 1)


def bitset(bits: Sequence[int], words: int) -> list[int]:
    """A D-Bus `ai` bitset (signed 32-bit words)."""
    out = [0] * words
    for bit in bits:
        out[bit // 32] |= 1 << (bit % 32)
    return [v - (1 << 32) if v >= 1 << 31 else v for v in out]


def method(
    ref: Ref, interface: str, name: str, signature: str | None = None, body: tuple[Any, ...] = ()
) -> Message:
    address = DBusAddress(ref[1], bus_name=ref[0], interface=IFACE + interface)
    return new_method_call(address, name, signature, body)


def get_property(ref: Ref, interface: str, name: str) -> Message:
    address = DBusAddress(ref[1], bus_name=ref[0], interface=IFACE + interface)
    message: Message = Properties(address).get(name)
    return message


def bus_method(name: str, signature: str, body: tuple[Any, ...]) -> Message:
    address = DBusAddress(
        "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"
    )
    return new_method_call(address, name, signature, body)


def accessibility_bus_address(session_bus: str, timeout_s: float) -> str:
    """Ask the session bus for the a11y bus (D-Bus-activating its launcher if needed)."""
    conn = open_dbus_connection(session_bus, auth_timeout=min(AUTH_TIMEOUT_S, timeout_s))
    try:
        status = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Status")
        conn.send_and_get_reply(Properties(status).set("IsEnabled", "b", True), timeout=timeout_s)
        bus = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus")
        reply = conn.send_and_get_reply(new_method_call(bus, "GetAddress"), timeout=timeout_s)
        if reply.header.message_type == MessageType.error:
            raise AtspiUnavailableError(f"org.a11y.Bus.GetAddress failed: {reply.body}")
        return str(reply.body[0])
    finally:
        conn.close()


class AtspiConnection:
    """One connection to the accessibility bus; used by one thread at a time."""

    def __init__(self, address: str) -> None:
        self._conn: DBusConnection = open_dbus_connection(address, auth_timeout=AUTH_TIMEOUT_S)
        self._conn.sock.settimeout(SEND_TIMEOUT_S)

    def call_many(
        self, messages: Sequence[Message], deadline: float
    ) -> list[tuple[Any, ...] | None]:
        """Send all, then collect replies until the deadline; None for an error or no reply."""
        serials = []
        for message in messages:
            serial = next(self._conn.outgoing_serial)
            self._conn.send(message, serial=serial)
            serials.append(serial)
        pending = set(serials)
        replies: dict[int, tuple[Any, ...] | None] = {}
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                incoming = self._conn.receive(timeout=remaining)
            except TimeoutError:
                break
            serial = incoming.header.fields.get(HeaderFields.reply_serial)
            if serial in pending:  # anything else is a late reply to an abandoned batch
                pending.discard(serial)
                is_error = incoming.header.message_type == MessageType.error
                replies[serial] = None if is_error else tuple(incoming.body)
        return [replies.get(serial) for serial in serials]

    def call(self, message: Message, deadline: float) -> tuple[Any, ...] | None:
        return self.call_many([message], deadline)[0]

    def close(self) -> None:
        self._conn.close()
