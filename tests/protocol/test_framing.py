"""Whatever a peer sends decodes to a frame or fails as a FramingError, nothing else."""

from __future__ import annotations

import struct

import pytest
from pydantic import ValidationError

from rigway.protocol import ops
from rigway.protocol.framing import FramingError, decode_frame, encode_binary
from rigway.protocol.messages import Ping

HOSTILE: dict[str, str | bytes] = {
    "deep_nesting": "[" * 100_000,
    "huge_integer": '{"n": ' + "1" * 5000 + "}",
    "infinity": '{"t": "ping", "sent_at": Infinity}',
    "nan": '{"t": "ping", "sent_at": NaN}',
    "not_an_object": '"text"',
    "truncated": '{"t": ',
    "binary_header_not_utf8": struct.pack(">I", 2) + b"\xff\xfe",
    "binary_header_past_the_end": struct.pack(">I", 99) + b"{}",
    "binary_too_short": b"\x00\x01",
}


@pytest.mark.parametrize("frame", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_frames_fail_as_framing_errors(frame: str | bytes) -> None:
    with pytest.raises(FramingError):
        decode_frame(frame)


def test_binary_frames_round_trip() -> None:
    header, payload = decode_frame(encode_binary({"t": "res", "id": "g1"}, b"\xff\xd8jpeg"))
    assert header == {"t": "res", "id": "g1"}
    assert bytes(payload) == b"\xff\xd8jpeg"


def test_an_overflowing_float_is_refused_where_it_would_be_echoed() -> None:
    header, _ = decode_frame('{"t": "ping", "sent_at": 1e400}')  # JSON-valid: it is inf
    with pytest.raises(ValidationError):
        Ping.model_validate(header)


def test_host_durations_must_be_finite() -> None:
    captured = {"width": 1, "height": 1, "native_width": 1, "native_height": 1}
    flags = {"cached": False, "marked": False}
    with pytest.raises(ValidationError):
        ops.ScreenCaptured.model_validate(captured | flags | {"host_jpeg_ms": float("inf")})
