"""A minimal AT-SPI client over raw D-Bus (jeepney): any Python, no GObject.

Protocol cheat-sheet:
- session bus: `org.a11y.Bus.GetAddress` on /org/a11y/bus gives the private
  accessibility bus; `org.a11y.Status.IsEnabled = true` asks toolkits that check it
  (Qt, Chromium, Firefox) to export their trees (GTK3 always does).
- a11y bus: the registry's root `Accessible.GetChildren` lists application roots
  `(bus name, object path)`; `Collection.GetMatches` walks a window's whole tree inside
  the app in one round trip.

Calls are *pipelined*: send a batch in one socket write, then collect replies by serial,
so a hundred objects cost about one round trip. Every wait is bounded by a deadline: a
hung app costs at most the deadline, never a hang.

The Python side of a pipelined batch used to cost as much as the app answering it
(building, serialising and parsing ~340 messages with jeepney: ~19 ms of a 37 ms batch).
So a call is a plain `Call` whose wire bytes are cached (only the serial changes between
sends), and replies are framed and decoded here for the few body signatures AT-SPI
answers with, falling back to jeepney's parser for anything else.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, HeaderFields, Message, MessageType, Properties, new_method_call
from jeepney.bus import get_bus
from jeepney.io.blocking import open_dbus_connection, prep_socket
from jeepney.low_level import Endianness, parse_signature

IFACE = "org.a11y.atspi."
REGISTRY = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
AUTH_TIMEOUT_S = 1.0
# A blocking send must not wait forever on a bus that stopped reading.
SEND_TIMEOUT_S = 2.0
# Wire bytes of this many distinct calls are kept; past it the cache starts over.
MAX_CACHED_CALLS = 20_000
MAX_READ_BYTES = 1 << 20
# struct ucred (SO_PEERCRED): pid, uid, gid.
_UCRED = struct.Struct("3i")

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


@dataclass(frozen=True, slots=True)
class Call:
    """One method call: hashable when its body is, so its wire bytes can be cached."""

    bus_name: str
    path: str
    interface: str
    member: str
    signature: str | None = None
    body: tuple[Any, ...] = ()

    def message(self) -> Message:
        address = DBusAddress(self.path, bus_name=self.bus_name, interface=self.interface)
        return new_method_call(address, self.member, self.signature, self.body)


def method(
    ref: Ref, interface: str, name: str, signature: str | None = None, body: tuple[Any, ...] = ()
) -> Call:
    return Call(ref[0], ref[1], IFACE + interface, name, signature, body)


def get_property(ref: Ref, interface: str, name: str) -> Call:
    return Call(
        ref[0], ref[1], "org.freedesktop.DBus.Properties", "Get", "ss", (IFACE + interface, name)
    )


def bus_method(name: str, signature: str, body: tuple[Any, ...]) -> Call:
    return Call(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        name,
        signature,
        body,
    )


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
    """One D-Bus connection, to the accessibility bus (`to_bus`) or straight to one
    application (`to_peer`); used by one thread at a time. After authentication (and,
    on the bus, Hello) this class owns the socket."""

    def __init__(self, sock: socket.socket, *, first_serial: int = 1, pending: bytes = b"") -> None:
        self._sock = sock
        self._sock.settimeout(SEND_TIMEOUT_S)
        self._buf = bytearray(pending)
        self._serial = first_serial
        self._wire: dict[Call, bytes] = {}

    @classmethod
    def to_bus(cls, address: str) -> AtspiConnection:
        conn = open_dbus_connection(address, auth_timeout=AUTH_TIMEOUT_S)
        # What jeepney read past the Hello reply (a NameAcquired signal, say) is ours now.
        pending = conn.parser.buf
        buffered = pending.read(pending.bytes_buffered) if pending.bytes_buffered else b""
        return cls(conn.sock, first_serial=next(conn.outgoing_serial), pending=buffered)

    @classmethod
    def to_peer(cls, address: str, timeout_s: float) -> AtspiConnection:
        """A peer-to-peer connection to the D-Bus server an application runs for its
        accessibility clients (`Application.GetApplicationBusAddress`). No bus daemon
        relays the calls, so a batch is answered sooner (docs/decisions/0005). Only
        Unix sockets are dialled: jeepney refuses every other transport."""
        return cls(prep_socket(get_bus(address), timeout=timeout_s))

    def peer_pid(self) -> int:
        """The process at the other end of the socket, as the kernel saw it connect."""
        creds = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        pid, _uid, _gid = _UCRED.unpack(creds)
        return int(pid)

    def call_many(self, messages: Sequence[Call], deadline: float) -> list[tuple[Any, ...] | None]:
        """Send all, then collect replies until the deadline; None for an error or no reply."""
        first = self._serial
        self._serial += len(messages)
        chunks: list[bytes] = []
        for offset, call in enumerate(messages):
            wire = self._wire_bytes(call)
            chunks += (wire[:8], struct.pack("<I", (first + offset) & 0xFFFFFFFF), wire[12:])
        self._sock.settimeout(SEND_TIMEOUT_S)
        self._sock.sendall(b"".join(chunks))
        replies: list[tuple[Any, ...] | None] = [None] * len(messages)
        waiting = len(messages)
        while waiting:
            for reply_serial, body in self._framed():
                index = reply_serial - first
                # anything else is a late reply to an abandoned batch, or a signal
                if 0 <= index < len(messages) and replies[index] is None and body is not None:
                    replies[index] = body[0]
                    waiting -= 1
                elif 0 <= index < len(messages) and body is None:
                    waiting -= 1  # an error reply: stays None
            if waiting and not self._read(deadline):
                break
        return replies

    def call(self, message: Call, deadline: float) -> tuple[Any, ...] | None:
        return self.call_many([message], deadline)[0]

    def close(self) -> None:
        self._sock.close()

    def _wire_bytes(self, call: Call) -> bytes:
        try:
            wire = self._wire.get(call)
        except TypeError:  # an unhashable body (a match rule): serialise every time
            return bytes(call.message().serialise(serial=1))
        if wire is None:
            wire = bytes(call.message().serialise(serial=1))
            if len(self._wire) >= MAX_CACHED_CALLS:
                self._wire.clear()
            self._wire[call] = wire
        return wire

    def _read(self, deadline: float) -> bool:
        """Read what the socket has, waiting until the deadline; False when nothing came."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self._sock.settimeout(remaining)
        try:
            data = self._sock.recv(MAX_READ_BYTES)
        except (TimeoutError, BlockingIOError):
            return False
        if not data:
            raise ConnectionError("the accessibility bus closed the connection")
        self._buf += data
        return True

    def _framed(self) -> list[tuple[int, tuple[tuple[Any, ...]] | None]]:
        """Complete messages in the buffer: (reply serial, (body,) or None for an error).

        Messages that are not replies (signals) get reply serial -1.
        """
        out: list[tuple[int, tuple[tuple[Any, ...]] | None]] = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= 16:
            body_len, fields_len = struct.unpack_from("<I4xI", buf, pos + 4)
            if buf[pos] != 0x6C:  # "l": big-endian senders are decoded by jeepney
                body_len, fields_len = struct.unpack_from(">I4xI", buf, pos + 4)
            header_end = pos + 16 + fields_len
            body_start = header_end + (-header_end + pos) % 8
            end = body_start + body_len
            if end > len(buf):
                break
            out.append(_decode(bytes(buf[pos:end]), body_start - pos))
            pos = end
        del buf[:pos]
        return out


_REPLY_SERIAL_FIELD = 5
_METHOD_RETURN = MessageType.method_return.value
_ERROR = MessageType.error.value
_SIGNATURE_FIELD = 8


# What decoding an application's malformed reply may raise. jeepney checks a string's
# terminating NUL with `assert`, so AssertionError is among them: an application on the
# accessibility bus is not trusted to frame its replies.
_UNDECODABLE = (ValueError, IndexError, KeyError, struct.error, AssertionError)


def _decode(raw: bytes, body_start: int) -> tuple[int, tuple[tuple[Any, ...]] | None]:
    kind = raw[1]
    if kind not in (_METHOD_RETURN, _ERROR):
        return -1, None
    reply_serial = -1
    if raw[0] == 0x6C:
        try:
            reply_serial, signature = _reply_fields(raw)
            if kind == _ERROR:
                return reply_serial, None
            return reply_serial, (_body(raw, body_start, signature),)
        except _UNDECODABLE:
            pass  # not the shape the fast path expects: jeepney decodes it
    try:
        message = Message.from_buffer(raw)
    except _UNDECODABLE:
        # Undecodable: its call gets no reply at once when its serial was read, else
        # none at all (bounded by the deadline).
        return reply_serial, None
    reply_serial = int(message.header.fields.get(HeaderFields.reply_serial, -1))
    return reply_serial, None if kind == _ERROR else (tuple(message.body),)


def _reply_fields(raw: bytes) -> tuple[int, str]:
    """The reply serial and body signature from a little-endian header's fields."""
    (fields_len,) = struct.unpack_from("<I", raw, 12)
    pos, end = 16, 16 + fields_len
    reply_serial, signature = -1, ""
    while pos < end:
        pos += -pos % 8
        code, sig_len = raw[pos], raw[pos + 1]
        type_code = raw[pos + 2 : pos + 2 + sig_len]
        pos += 3 + sig_len
        if type_code == b"g":
            length = raw[pos]
            value: Any = raw[pos + 1 : pos + 1 + length].decode()
            pos += length + 2
        elif type_code in (b"u", b"i"):
            pos += -pos % 4
            (value,) = struct.unpack_from("<I", raw, pos)
            pos += 4
        elif type_code in (b"s", b"o"):
            pos += -pos % 4
            (length,) = struct.unpack_from("<I", raw, pos)
            value = None
            pos += 4 + length + 1
        else:
            raise ValueError(f"unexpected header field type {type_code!r}")
        if code == _REPLY_SERIAL_FIELD:
            reply_serial = int(value)
        elif code == _SIGNATURE_FIELD:
            signature = str(value)
    return reply_serial, signature


def _string(raw: bytes, pos: int) -> tuple[str, int]:
    pos += -pos % 4
    (length,) = struct.unpack_from("<I", raw, pos)
    end = pos + 4 + length
    if end >= len(raw) or raw[end] != 0:
        # A length past the message, or no terminating NUL: jeepney judges it.
        raise ValueError("string runs past the message")
    return raw[pos + 4 : end].decode("utf-8"), end + 1


def _body(raw: bytes, start: int, signature: str) -> tuple[Any, ...]:
    """The body of a little-endian reply; the common AT-SPI signatures decoded here."""
    if signature == "":
        return ()
    if signature == "u":
        return struct.unpack_from("<I", raw, start)
    if signature == "(iiii)":
        return (struct.unpack_from("<4i", raw, start),)
    if signature == "au":
        (length,) = struct.unpack_from("<I", raw, start)
        return (list(struct.unpack_from(f"<{length // 4}I", raw, start + 4)),)
    if signature == "s":
        return (_string(raw, start)[0],)
    if signature == "v":
        sig_len = raw[start]
        inner = raw[start + 1 : start + 1 + sig_len]
        pos = start + sig_len + 2
        if inner == b"s":
            return ((inner.decode(), _string(raw, pos)[0]),)
        if inner == b"d":
            pos += -(pos - start) % 8
            return ((inner.decode(), struct.unpack_from("<d", raw, pos)[0]),)
    if signature == "a(so)":  # GetMatches: ~100 (bus name, path) pairs, 10x jeepney's speed
        return (_name_path_pairs(raw, start),)
    parsed, _ = parse_signature(list(f"({signature})")).parse_data(
        raw[start:], 0, Endianness.little
    )
    return tuple(parsed)


def _name_path_pairs(raw: bytes, start: int) -> list[tuple[str, str]]:
    """An `a(so)` body: the array's byte length, padding to the first struct (structs
    align to 8), then each struct's string and object path."""
    (length,) = struct.unpack_from("<I", raw, start)
    pos = start + 4
    pos += -pos % 8
    end = pos + length
    if end > len(raw):
        raise ValueError("a(so) array runs past the message")
    pairs: list[tuple[str, str]] = []
    while pos < end:
        pos += -pos % 8
        name, pos = _string(raw, pos)
        path, pos = _string(raw, pos)
        pairs.append((name, path))
    return pairs
