"""RFC 6455 frames where the host link's hot path builds or reads them itself, beside
websockets, which does everything else on both ends.

`masked_binary_frame` (agent) builds a client's binary frame from parts without first
joining them: the screen worker frames a JPEG reply with it. websockets'
`Frame.serialize` would copy the JPEG three times more: joined to its header, masked,
then joined to the frame's header.

`FrameHead` and `BulkFrame` (gateway) read a client's stream: where each frame ends, and
a large binary frame without websockets' parser.

websockets' sans-I/O parser copies a frame's payload three times on its way in: into
its stream buffer, out of it as a slice, and once more to unmask it. For a 160 KB
screenshot that cost about 100 µs of the gateway's time per shot, warm
(docs/decisions/0009-screenshot-answered-from-the-reply.md). `BulkFrame` unmasks each
piece of such a frame straight from the bytes the socket gave, one copy.

`FrameHead` reads only what is needed to know where a frame ends and whether it is such
a frame. Everything else about every frame (opcodes, reserved bits, control frames,
sizes, fragmentation, closing) stays websockets' to check: a frame that is not taken
whole goes to it untouched (`DirectMessageWebSocketProtocol` in the gateway's
`http_server.py`). Decision: docs/decisions/0009-screenshot-answered-from-the-reply.md.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

try:  # the library's own C masking, else its Python fallback
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - the C extension ships in every wheel we use
    from websockets.utils import apply_mask

__all__ = ["BULK_FRAME_MIN", "BulkFrame", "FrameHead", "masked_binary_frame"]

# A final, masked binary frame without reserved bits, at least this long, is read by
# `BulkFrame`. Below it websockets' copies cost little, and its parser reads the frame.
BULK_FRAME_MIN: Final = 16 * 1024

_OPCODE_BINARY: Final = 0x2
_FIN_BINARY: Final = 0x80 | _OPCODE_BINARY
_MASKED: Final = 0x80
_LENGTH_16 = struct.Struct("!H")
_LENGTH_64 = struct.Struct("!Q")


def masked_binary_frame(parts: Sequence[bytes]) -> list[bytes]:
    """One final, unfragmented binary frame whose payload is `parts` joined, masked with a
    fresh key as a client's frames must be (RFC 6455 5.3), as buffers to write in order.

    Each part is masked on its own, the key rotated to where the part starts, so a large
    part (a JPEG) is read once and copied once. The frame is what
    `Frame(Opcode.BINARY, b"".join(parts)).serialize(mask=True)` gives for the same key
    (tests/agent/test_link_connection.py)."""
    length = sum(len(part) for part in parts)
    if length < 126:
        head = struct.pack("!BB", _FIN_BINARY, _MASKED | length)
    elif length < 1 << 16:
        head = struct.pack("!BBH", _FIN_BINARY, _MASKED | 126, length)
    else:
        head = struct.pack("!BBQ", _FIN_BINARY, _MASKED | 127, length)
    key = secrets.token_bytes(4)
    frame = [head + key]
    offset = 0
    for part in parts:
        frame.append(apply_mask(part, _turned(key, offset)))
        offset += len(part)
    return frame


def _turned(key: bytes, offset: int) -> bytes:
    """The masking key for bytes that start `offset` bytes into a payload."""
    turn = offset % 4
    return key[turn:] + key[:turn]


@dataclass(frozen=True, slots=True)
class FrameHead:
    """The fixed part of a frame, up to and including its masking key."""

    size: int  # bytes of the head itself
    length: int  # bytes of payload after it
    fin: bool
    rsv: int
    opcode: int
    key: bytes | None  # None: the frame is not masked

    @classmethod
    def read(cls, data: memoryview) -> FrameHead | None:
        """The head at the start of `data`, or None while `data` holds only part of it."""
        if len(data) < 2:
            return None
        first, second = data[0], data[1]
        size, length = 2, second & 0x7F
        if length == 126:
            if len(data) < 4:
                return None
            (length,) = _LENGTH_16.unpack_from(data, 2)
            size = 4
        elif length == 127:
            if len(data) < 10:
                return None
            (length,) = _LENGTH_64.unpack_from(data, 2)
            size = 10
        key = None
        if second & 0x80:
            if len(data) < size + 4:
                return None
            key = bytes(data[size : size + 4])
            size += 4
        return cls(size, length, bool(first & 0x80), first & 0x70, first & 0x0F, key)

    @property
    def is_bulk(self) -> bool:
        """A whole binary message in one masked frame, long enough to read ourselves."""
        return (
            self.fin
            and self.rsv == 0
            and self.opcode == _OPCODE_BINARY
            and self.key is not None
            and self.length >= BULK_FRAME_MIN
        )


class BulkFrame:
    """The payload of one masked frame, unmasked piece by piece as it arrives."""

    __slots__ = ("_key", "_pieces", "_received", "length")

    def __init__(self, head: FrameHead) -> None:
        if head.key is None:
            raise ValueError("only a masked frame is read in bulk")
        self._key = head.key
        self._pieces: list[bytes] = []
        self._received = 0
        self.length = head.length

    @property
    def complete(self) -> bool:
        return self._received == self.length

    def take(self, data: memoryview, start: int) -> int:
        """Take what `data[start:]` holds of this frame; returns where the frame ended
        in `data`, or `len(data)` when it goes on in the next bytes."""
        count = min(self.length - self._received, len(data) - start)
        key = _turned(self._key, self._received)
        self._pieces.append(apply_mask(data[start : start + count], key))
        self._received += count
        return start + count

    def payload(self) -> bytes:
        pieces = self._pieces
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
