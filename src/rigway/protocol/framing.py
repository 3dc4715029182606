"""Frames on the host link.

A text frame is one JSON object. A binary frame carries a JSON header and raw bytes
(a JPEG, never base64): 4 bytes big-endian header length, the UTF-8 JSON header, then
the payload. Both kinds decode to `(header, payload)`; payload is `b""` for text frames.
"""

from __future__ import annotations

import json
import struct
from typing import Any

_HEADER_LENGTH = struct.Struct(">I")
MAX_HEADER_BYTES = 1 << 20


class FramingError(ValueError):
    """A frame that cannot be decoded; the link closes on it."""


def _refuse_constant(name: str) -> float:
    raise FramingError(f"frame carries {name}, which JSON does not have")


# Built once: `json.dumps`/`json.loads` with any non-default argument build a new
# encoder or decoder (and its C scanner) on every call, a measurable part of a frame's
# cost on the screenshot path (bench/screenshot_cpu.py). Both are stateless.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def encode_text(message: dict[str, Any]) -> str:
    return _ENCODER.encode(message)


def encode_binary(message: dict[str, Any], payload: bytes) -> bytes:
    return b"".join((binary_frame_head(message), payload))


def binary_frame_head(message: dict[str, Any]) -> bytes:
    """What comes before the payload in a binary frame: the length prefix and header.
    A sender that can write the two apart spares a copy of the payload."""
    header = _ENCODER.encode(message).encode()
    return _HEADER_LENGTH.pack(len(header)) + header


def decode_frame(frame: str | bytes) -> tuple[dict[str, Any], memoryview]:
    """The header, and the payload as a view into `frame` (no copy: a JPEG goes on to
    its HTTP response as it came)."""
    if isinstance(frame, str):
        return _load_object(frame), memoryview(b"")
    if len(frame) < _HEADER_LENGTH.size:
        raise FramingError("binary frame shorter than its length prefix")
    (header_length,) = _HEADER_LENGTH.unpack_from(frame)
    end = _HEADER_LENGTH.size + header_length
    if header_length > MAX_HEADER_BYTES or end > len(frame):
        raise FramingError("binary frame header length out of range")
    try:
        header = frame[_HEADER_LENGTH.size : end].decode()
    except UnicodeDecodeError as exc:
        raise FramingError(f"binary frame header is not UTF-8: {exc}") from exc
    return _load_object(header), memoryview(frame)[end:]


def _load_object(text: str) -> dict[str, Any]:
    # Whatever a peer sends ends here as a FramingError (the link closes) and never as
    # another exception: ValueError covers malformed JSON and integers past Python's
    # digit limit, RecursionError a deeply nested document.
    try:
        value = _DECODER.decode(text)
    except FramingError:
        raise
    except (ValueError, RecursionError) as exc:
        raise FramingError(f"frame is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise FramingError("frame is not a JSON object")
    return value
