"""One baseline JPEG encoded as horizontal strips, each piece handed on as it is ready.

Why: the host link then carries the first strips to the gateway while the later ones
are still being encoded, so what is left after the encoder stops is one strip's worth
of transfer, not the whole image's (docs/decisions/0006-screen-parts.md).

How the pieces make one valid JPEG: every strip is encoded on its own with the same
quality and subsampling, so its quantisation and (standard, unoptimised) Huffman tables
are byte-for-byte the ones of every other strip. Every strip but the last is a whole
number of MCU rows. The stitched file declares a restart interval of exactly one strip
(DRI) and puts RSTn markers between strips: at a restart marker a decoder resets the DC
predictors and byte-aligns, which is exactly the state an encoder starts a fresh strip
in. The decoded pixels are those of the same image encoded in one go (tested).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import numpy as np

from rigway.agent.backends.base import Pixels

__all__ = ["StripMismatchError", "encode_in_strips", "strip_rows"]

# 4:2:0 chroma subsampling: an MCU is 16x16 pixels.
MCU_SIZE = 16
# About this many pieces per image; strips never get shorter than MIN_STRIP_ROWS, so
# small images go out whole.
TARGET_PIECES = 8
MIN_STRIP_ROWS = 128
MAX_RESTART_INTERVAL = 0xFFFF

_SOI, _EOI = b"\xff\xd8", b"\xff\xd9"
_SOF0, _DRI, _SOS = 0xC0, 0xDD, 0xDA
# Every other start-of-frame: extended, progressive, lossless or arithmetic coding.
_OTHER_SOFS = frozenset({0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_RST0 = 0xD0
_LENGTH = struct.Struct(">H")


class StripMismatchError(RuntimeError):
    """Two strips came out with different tables: they cannot form one JPEG."""


def strip_rows(height: int) -> int:
    """Rows per strip for an image this tall (the whole height: one piece)."""
    rows = max(MIN_STRIP_ROWS, math.ceil(height / TARGET_PIECES / MCU_SIZE) * MCU_SIZE)
    return min(rows, height)


def encode_in_strips(
    image: Pixels, encode: Callable[[Pixels], bytes], on_piece: Callable[[bytes], None]
) -> tuple[bytes, int]:
    """The whole JPEG, and how many of its leading bytes went to `on_piece` already.

    `encode` turns rows of `image` into a baseline 4:2:0 JPEG with fixed tables;
    `on_piece` receives every piece but the last, in order, on the calling thread."""
    height, width = image.shape[:2]
    rows = strip_rows(height)
    restart_interval = (rows // MCU_SIZE) * math.ceil(width / MCU_SIZE)
    if rows >= height or restart_interval > MAX_RESTART_INTERVAL:
        return encode(np.ascontiguousarray(image)), 0
    pieces: list[bytes] = []
    tables = b""
    sent = 0
    tops = range(0, height, rows)
    for index, top in enumerate(tops):
        strip = encode(np.ascontiguousarray(image[top : top + rows]))
        strip_tables, sof_at, sos_at, data = _split(strip)
        if index == 0:
            tables = _without_height(strip_tables, sof_at)
            head = _stitched_head(strip_tables, sof_at, sos_at, height, restart_interval)
            piece = head + data
        elif _without_height(strip_tables, sof_at) != tables:
            raise StripMismatchError("the encoder changed its tables between strips")
        else:
            piece = data
        if index == len(tops) - 1:
            pieces.append(piece + _EOI)
            break
        piece += bytes((0xFF, _RST0 + index % 8))
        on_piece(piece)
        sent += len(piece)
        pieces.append(piece)
    return b"".join(pieces), sent


def _split(jpeg: bytes) -> tuple[bytes, int, int, bytes]:
    """(the segments from SOI through the SOS header, where SOF0 and SOS start in them,
    the entropy-coded data without EOI)."""
    if not jpeg.startswith(_SOI) or not jpeg.endswith(_EOI):
        raise StripMismatchError("not a whole JPEG")
    pos, sof_at = 2, -1
    while pos + 4 <= len(jpeg):
        if jpeg[pos] != 0xFF:
            raise StripMismatchError(f"no marker at byte {pos}")
        marker = jpeg[pos + 1]
        (length,) = _LENGTH.unpack_from(jpeg, pos + 2)
        if marker == _SOF0:
            sof_at = pos
        elif marker in _OTHER_SOFS:
            raise StripMismatchError("only baseline JPEG can be stitched")
        if marker == _SOS:
            if sof_at < 0:
                raise StripMismatchError("SOS before SOF0")
            end = pos + 2 + length
            return jpeg[:end], sof_at, pos, jpeg[end:-2]
        pos += 2 + length
    raise StripMismatchError("no SOS segment")


def _without_height(tables: bytes, sof_at: int) -> bytes:
    # SOF0: FF C0, length (2), precision (1), height (2), width (2), components…
    return tables[: sof_at + 5] + tables[sof_at + 7 :]


def _stitched_head(
    tables: bytes, sof_at: int, sos_at: int, height: int, restart_interval: int
) -> bytes:
    """The first strip's headers with the whole image's height and a DRI before SOS."""
    patched = tables[: sof_at + 5] + _LENGTH.pack(height) + tables[sof_at + 7 : sos_at]
    dri = bytes((0xFF, _DRI)) + _LENGTH.pack(4) + _LENGTH.pack(restart_interval)
    return patched + dri + tables[sos_at:]
