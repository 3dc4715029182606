"""One baseline JPEG made of horizontal strips: encoded on several threads, and on a
changed screen only where the screen changed.

How strips make one valid JPEG: every strip is encoded on its own with the same quality
and 4:2:0 subsampling, so its quantisation and (standard, unoptimised) Huffman tables
are byte for byte those of every other strip. Every strip but the last is a whole
number of MCU rows. The joined file declares a restart interval of exactly one strip
(DRI) and puts RSTn markers between strips: at a restart marker a decoder resets its DC
predictors and byte-aligns, which is the state an encoder starts a fresh strip in. The
decoded pixels are those of the same image encoded in one go (tested).

Why: a strip's entropy-coded bytes depend on that strip's pixels alone. So
- strips encode in parallel: libjpeg-turbo releases the GIL, and on two cores a
  1920x1080 frame encodes in about half the time;
- a new frame of the same screen reuses the bytes of every strip no damage touched,
  and re-encodes only the strips that changed (docs/decisions/0011-jpeg-in-strips.md).
"""

from __future__ import annotations

import math
import queue
import struct
import threading
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.imaging import encode_jpeg

__all__ = [
    "STRIP_ROWS",
    "StripEncoder",
    "StripJpeg",
    "StripMismatchError",
    "strips_touched",
]

# imaging.JPEG_SUBSAMPLING is 4:2:0: an MCU is 16x16 pixels. Four MCU rows per strip: a
# small change (a check box, a line of text) touches one or two of the 17 strips of a
# 1080-row screen, and a strip is still big enough (480 KB of pixels at 1920 wide) that
# the cost of a call to the encoder stays small.
MCU_SIZE = 16
STRIP_ROWS = 4 * MCU_SIZE
MAX_RESTART_INTERVAL = 0xFFFF

_SOI, _EOI = b"\xff\xd8", b"\xff\xd9"
_SOF0, _DRI, _SOS = 0xC0, 0xDD, 0xDA
# Every other start-of-frame: extended, progressive, lossless or arithmetic coding.
_OTHER_SOFS = frozenset({0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_RST = tuple(bytes((0xFF, 0xD0 + n)) for n in range(8))
_LENGTH = struct.Struct(">H")


class StripMismatchError(RuntimeError):
    """A strip came out in a form that cannot join the others (never seen with
    libjpeg-turbo's baseline encoder; raised rather than produce a corrupt file)."""


def strips_touched(rect: Rect, height: int) -> range:
    """Indexes of the strips a rectangle of a `height`-row image overlaps."""
    top, bottom = max(rect.y, 0), min(rect.y + rect.h, height)
    if bottom <= top:
        return range(0)
    return range(top // STRIP_ROWS, (bottom - 1) // STRIP_ROWS + 1)


@dataclass(frozen=True, slots=True)
class StripJpeg:
    """A JPEG kept as its parts, so that a later frame can reuse unchanged strips."""

    width: int
    height: int
    quality: int
    head: bytes  # SOI through the SOS header, with the whole height and the DRI
    tables: bytes  # every strip's headers without their height: equal for all of them
    segments: tuple[bytes, ...]  # each strip's entropy-coded bytes, without markers

    def fits(self, width: int, height: int, quality: int) -> bool:
        return (self.width, self.height, self.quality) == (width, height, quality)

    def join(self) -> bytes:
        parts = [self.head]
        last = len(self.segments) - 1
        for index, segment in enumerate(self.segments):
            parts.append(segment)
            parts.append(_EOI if index == last else _RST[index % 8])
        return b"".join(parts)


@dataclass(frozen=True, slots=True)
class _Strip:
    tables: bytes  # the strip's headers without its height: equal for every strip
    head: bytes  # its headers, SOI through SOS
    sof_at: int  # where SOF0 and SOS start in `head`
    sos_at: int
    data: bytes


class _Job:
    """Strips to encode, shared by the calling thread and any helper that joins in."""

    def __init__(self, indexes: list[int], encode_one: Callable[[int], None]) -> None:
        self._pending: Iterator[int] = iter(indexes)
        self._encode_one = encode_one
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active = 0
        self._closed = False
        self.error: BaseException | None = None

    def work(self) -> None:
        """Encode strips until none is left; a helper arriving late does nothing."""
        with self._lock:
            if self._closed:
                return
            self._active += 1
        try:
            while (index := self._next()) is not None:
                self._encode_one(index)
        except BaseException as exc:  # handed to the caller, which raises it
            self.error = exc
        finally:
            with self._lock:
                self._active -= 1
                self._idle.notify_all()

    def finish(self) -> None:
        """Called by the caller once it found no strip left: waits for helpers still
        encoding one, and turns away those that have not started."""
        with self._lock:
            self._closed = True
            while self._active:
                self._idle.wait()

    def _next(self) -> int | None:
        with self._lock:
            if self.error is not None:
                return None
            return next(self._pending, None)


class StripEncoder:
    """Encodes frames strip by strip on the calling thread and `helpers` more threads.

    One caller at a time (the screen worker); the helpers are daemon threads, so an
    encode stuck in C never holds the agent's exit hostage."""

    def __init__(self, helpers: int) -> None:
        if helpers < 0:
            raise ValueError("helpers must be >= 0")
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._helpers = [
            threading.Thread(target=self._serve, name=f"rigway-jpeg-{n}", daemon=True)
            for n in range(helpers)
        ]
        for thread in self._helpers:
            thread.start()

    def close(self) -> None:
        for _ in self._helpers:
            self._jobs.put(None)
        self._helpers = []

    def encode(
        self,
        image: Pixels,
        quality: int,
        *,
        reuse: StripJpeg | None = None,
        changed: Collection[int] = (),
    ) -> StripJpeg:
        """`image` (BGRA or BGR) as strips. With `reuse` (a frame of the same size and
        quality), only the strips in `changed` are encoded; every other one is taken
        from `reuse` as it is."""
        height, width = image.shape[:2]
        count = math.ceil(height / STRIP_ROWS)
        segments: list[bytes | None]
        if reuse is not None and reuse.fits(width, height, quality):
            segments = list(reuse.segments)
            indexes = sorted({index for index in changed if 0 <= index < count})
            head, tables = reuse.head, reuse.tables
        else:
            segments = [None] * count
            indexes = list(range(count))
            head, tables = b"", b""
        strips: dict[int, _Strip] = {}

        def encode_one(index: int) -> None:
            top = index * STRIP_ROWS
            strips[index] = _encode_strip(image[top : top + STRIP_ROWS], quality)

        self._run(_Job(indexes, encode_one), len(indexes))
        for index in indexes:
            strip = strips[index]
            if not head:
                tables = strip.tables
                head = _joined_head(strip, height, _restart_interval(width))
            elif strip.tables != tables:
                raise StripMismatchError("the encoder changed its tables between strips")
            segments[index] = strip.data
        joined = tuple(segment for segment in segments if segment is not None)
        assert len(joined) == count
        return StripJpeg(width, height, quality, head, tables, joined)

    def encode_whole(self, image: Pixels, quality: int) -> bytes:
        """One JPEG of `image`, in parallel strips when it has more than one."""
        height, width = image.shape[:2]
        if height <= STRIP_ROWS or _restart_interval(width) > MAX_RESTART_INTERVAL:
            return encode_jpeg(image, quality)
        return self.encode(image, quality).join()

    def _run(self, job: _Job, strips: int) -> None:
        # Each helper takes strips one at a time from the same list, so a strip of busy
        # pixels on one thread does not leave the other idle.
        for _ in range(min(len(self._helpers), strips - 1)):
            self._jobs.put(job)
        job.work()
        job.finish()
        if job.error is not None:
            raise job.error

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.work()


def _restart_interval(width: int) -> int:
    return (STRIP_ROWS // MCU_SIZE) * math.ceil(width / MCU_SIZE)


def _encode_strip(rows: Pixels, quality: int) -> _Strip:
    """A strip's JPEG taken apart: its tables, its headers, its entropy-coded bytes."""
    jpeg = encode_jpeg(rows, quality)
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
            raise StripMismatchError("only baseline JPEG can be joined")
        if marker == _SOS:
            if sof_at < 0:
                raise StripMismatchError("SOS before SOF0")
            end = pos + 2 + length
            head = jpeg[:end]
            # SOF0: FF C0, length (2), precision (1), height (2), width (2), components.
            tables = head[: sof_at + 5] + head[sof_at + 7 :]
            return _Strip(tables, head, sof_at, pos, jpeg[end:-2])
        pos += 2 + length
    raise StripMismatchError("no SOS segment")


def _joined_head(strip: _Strip, height: int, restart_interval: int) -> bytes:
    """A strip's headers with the whole image's height, and a DRI just before SOS."""
    head, sof_at, sos_at = strip.head, strip.sof_at, strip.sos_at
    patched = head[: sof_at + 5] + _LENGTH.pack(height) + head[sof_at + 7 : sos_at]
    dri = bytes((0xFF, _DRI)) + _LENGTH.pack(4) + _LENGTH.pack(restart_interval)
    return patched + dri + head[sos_at:]
