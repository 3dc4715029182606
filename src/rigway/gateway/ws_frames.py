"""Frame boundaries in a client's WebSocket byte stream, and a large binary frame read
without websockets' parser.

websockets' sans-I/O parser copies a frame's payload three times on its way in: into
its stream buffer, out of it as a slice, and once more to unmask it. For a 160 KB
screenshot that cost about 100 µs of the gateway's time per shot, warm
(docs/decisions/0009-screenshot-answered-from-the-reply.md). `BulkFrame` unmasks each
piece of such a frame straight from the bytes the socket gave, one copy.

`FrameHead` reads only what is needed to know where a frame ends and whether it is such
a frame. Everything else about every frame (opcodes, reserved bits, control frames,
sizes, fragmentation, closing) stays websockets' to check: a frame that is not taken
whole goes to it untouched (`DirectMessageWebSocketProtocol` in `http_server.py`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

try:  # the library's own C masking, else its Python fallback
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - the C extension ships in every wheel we use
    from websockets.utils import apply_mask

__all__ = ["BULK_FRAME_MIN", "BulkFrame", "FrameHead"]

# A final, masked binary frame without reserved bits, at least this long, is read by
# `BulkFrame`. Below it websockets' copies cost little, and its parser reads the frame.
BULK_FRAME_MIN: Final = 16 * 1024

_OPCODE_BINARY: Final = 0x2
_LENGTH_16 = struct.Struct("!H")
_LENGTH_64 = struct.Struct("!Q")


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
        assert head.key is not None, "only a masked frame is read in bulk"
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
        turn = self._received % 4
        key = self._key[turn:] + self._key[:turn]
        self._pieces.append(apply_mask(data[start : start + count], key))
        self._received += count
        return start + count

    def payload(self) -> bytes:
        pieces = self._pieces
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
