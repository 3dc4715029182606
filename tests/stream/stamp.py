"""A sim desktop that shows the wall clock as a bar code: the stream tests' animation
and the benchmark's glass-to-glass probe.

`StampedDesktop` wraps a `SimDesktop`: every grab draws the current time (ms, 40
bits, one 16x16 block per bit, white = 1) at the top left, and every damage poll
reports that strip when the clock moved since the previous poll. So the desktop
really changes and says so: the stream encodes new frames because there is damage,
not because anything forces it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.sim import SimDesktop

BITS = 40
BLOCK = 16
ORIGIN = (16, 16)
STRIP = Rect(ORIGIN[0], ORIGIN[1], BITS * BLOCK, BLOCK)


def stamp_of(now_s: float) -> int:
    return int(now_s * 1000) % (1 << BITS)


def draw_stamp(pixels: Pixels, value: int) -> None:
    x0, y0 = ORIGIN
    for bit in range(BITS):
        level = 255 if (value >> (BITS - 1 - bit)) & 1 else 0
        left = x0 + bit * BLOCK
        pixels[y0 : y0 + BLOCK, left : left + BLOCK, :3] = level


def read_stamp(rgb: npt.NDArray[np.uint8]) -> int:
    """The value from a decoded picture (RGB or RGBA rows), read at block centres."""
    x0, y0 = ORIGIN
    value = 0
    for bit in range(BITS):
        sample = rgb[y0 + BLOCK // 2, x0 + bit * BLOCK + BLOCK // 2, :3]
        value = (value << 1) | int(int(sample.mean()) > 127)
    return value


def latency_ms(stamp: int, now_s: float) -> float:
    """Milliseconds from the stamp to `now_s` (modulo the stamp's 40-bit range)."""
    return float((stamp_of(now_s) - stamp) % (1 << BITS))


class StampedDesktop:
    capture_mode = "sim"
    has_damage = True

    def __init__(self, inner: SimDesktop, clock: Callable[[], float] = time.time) -> None:
        self.inner = inner
        self._clock = clock
        self._last_stamp = -1

    def grab(self) -> Pixels:
        pixels = self.inner.grab()
        draw_stamp(pixels, stamp_of(self._clock()))
        return pixels

    def poll_damage(self) -> list[Rect]:
        rects = self.inner.poll_damage()
        stamp = stamp_of(self._clock())
        if stamp != self._last_stamp:
            self._last_stamp = stamp
            rects.append(STRIP)
        return rects

    def __getattr__(self, name: str) -> Any:
        # Everything else (size, input, accessibility, windows) is the sim's.
        return getattr(self.inner, name)
