"""The D-Bus reply decoder agrees with jeepney's on every shape AT-SPI answers with."""

from __future__ import annotations

from typing import Any

import pytest
from jeepney import (
    DBusAddress,
    HeaderFields,
    Message,
    new_error,
    new_method_call,
    new_method_return,
)
from jeepney.low_level import Endianness

from rigway.agent.backends.x11.atspi import _decode

CALL = new_method_call(DBusAddress("/a/b", bus_name=":1.7", interface="org.x.Y"), "M")


def _reply(signature: str, body: tuple[Any, ...], endianness: Endianness) -> bytes:
    CALL.header.serial = 41
    reply = new_method_return(CALL, signature, body)
    reply.header.endianness = endianness
    reply.header.fields[HeaderFields.sender] = ":1.7"
    reply.header.fields[HeaderFields.destination] = ":1.1234"
    return bytes(reply.serialise(serial=9))


def _body_start(raw: bytes, endianness: Endianness) -> int:
    fields_len = raw[12:16] if endianness == Endianness.big else raw[15:11:-1]
    header_end = 16 + int.from_bytes(fields_len, "big")
    return header_end + -header_end % 8


SHAPES: list[tuple[str, tuple[Any, ...]]] = [
    ("u", (61,)),
    ("au", ([1 << 31 | 5, 0],)),
    ("au", ([],)),
    ("(iiii)", ((-3, 20, 640, 480),)),
    ("s", ("héllo ●●",)),
    ("v", (("s", "OK"),)),
    ("v", (("d", 0.25),)),
    ("v", (("i", -1),)),
    ("a(so)", ([(":1.7", "/org/a11y/atspi/accessible/12")],)),
    ("a(so)", ([],)),
    # Names of every length mod 8, so each struct's padding is exercised.
    ("a(so)", ([(f":1.{'9' * n}", f"/org/a11y/atspi/accessible/{n}") for n in range(1, 17)],)),
    ("a(so)", ([("org.gnome.Épreuve", "/org/a11y/atspi/accessible/root")],)),
    ("", ()),
]


@pytest.mark.parametrize("endianness", [Endianness.little, Endianness.big])
@pytest.mark.parametrize(("signature", "body"), SHAPES)
def test_replies_decode_as_jeepney_does(
    signature: str, body: tuple[Any, ...], endianness: Endianness
) -> None:
    raw = _reply(signature, body, endianness)
    expected = tuple(Message.from_buffer(raw).body)

    reply_serial, decoded = _decode(raw, _body_start(raw, endianness))

    assert reply_serial == 41
    assert decoded is not None
    assert _plain(decoded[0]) == _plain(expected)


@pytest.mark.parametrize(
    ("signature", "body"), [shape for shape in SHAPES if shape[0] in ("u", "au", "s", "a(so)")]
)
def test_the_walks_common_little_endian_replies_never_reach_jeepney(
    signature: str, body: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _reply(signature, body, Endianness.little)
    expected = tuple(Message.from_buffer(raw).body)

    def refuse(*_args: object) -> Any:
        raise AssertionError("decoded by jeepney, the slow path")

    # jeepney's two ways in: a whole message, or a body by its signature.
    monkeypatch.setattr(Message, "from_buffer", refuse)
    monkeypatch.setattr("rigway.agent.backends.x11.atspi.parse_signature", refuse)
    _, decoded = _decode(raw, _body_start(raw, Endianness.little))

    assert decoded is not None
    assert _plain(decoded[0]) == _plain(expected)


def test_an_error_reply_decodes_as_no_reply() -> None:
    CALL.header.serial = 42
    error = new_error(CALL, "org.freedesktop.DBus.Error.UnknownMethod", "s", ("no",))
    raw = bytes(error.serialise(serial=10))

    assert _decode(raw, _body_start(raw, Endianness.little)) == (42, None)


def _plain(value: Any) -> Any:
    """Lists and tuples compare alike: the decoders differ only in which they build."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def test_a_string_running_past_the_message_is_an_empty_answer_not_an_error() -> None:
    """An application frames its own replies: a string whose length runs past the
    message is no reply for that call (jeepney's fallback asserts on it), never a name
    cut to what the buffer held, and never an exception out of the walk."""
    raw = bytearray(
        _reply("a(so)", ([(":1.7", "/org/a11y/atspi/accessible/12")],), Endianness.little)
    )
    start = _body_start(bytes(raw), Endianness.little)
    first_string = start + 8  # the array's byte length, padding to 8, then the string
    raw[first_string : first_string + 4] = (1 << 20).to_bytes(4, "little")

    assert _decode(bytes(raw), start) == (41, None)
