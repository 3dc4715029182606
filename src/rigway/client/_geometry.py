"""Coordinate mapping between a (scaled, cropped) image and the native desktop.

One implementation shared by `Screenshot.to_native`, `ObserveResult.to_native` and the
computer-use `ScreenGeometry`, so every path maps a pixel the same way.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["Region", "image_to_native", "native_to_image"]


class Region(NamedTuple):
    """A rectangle of the native desktop: origin `x`, `y`, size `w` x `h` (native pixels)."""

    x: int
    y: int
    w: int
    h: int


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def image_to_native(
    x: float,
    y: float,
    *,
    image_w: int,
    image_h: int,
    area: Region,
) -> tuple[int, int]:
    """Map a point of an `image_w`x`image_h` image showing `area` onto native pixels.

    Image pixel `i` covers native `[i·s, (i+1)·s)` with `s = area.w / image_w`; we return
    the native pixel under the *centre* of the image pixel, so a 2x downscale maps image
    pixel 10 to native 21 (not the edge, 20). At scale 1 the mapping is the identity.
    The result is clamped into `area`, because the gateway rejects a point outside the
    native desktop with a 400 and a model's click on the last image pixel must still land.
    """
    if image_w <= 0 or image_h <= 0:
        raise ValueError("image size must be positive")
    scale_x = area.w / image_w
    scale_y = area.h / image_h
    native_x = area.x + math.floor((x + 0.5) * scale_x)
    native_y = area.y + math.floor((y + 0.5) * scale_y)
    return (
        _clamp(native_x, area.x, area.x + area.w - 1),
        _clamp(native_y, area.y, area.y + area.h - 1),
    )


def native_to_image(
    x: float,
    y: float,
    *,
    image_w: int,
    image_h: int,
    area: Region,
) -> tuple[int, int]:
    """Inverse of `image_to_native`: the image pixel that shows native pixel (`x`, `y`).

    Maps pixel centre to pixel centre, so for a downscaled image
    `native_to_image(*image_to_native(i, j))` is exactly `(i, j)`. Clamped into the
    image, so a native point outside `area` maps to the nearest edge.
    """
    if area.w <= 0 or area.h <= 0:
        raise ValueError("area size must be positive")
    image_x = math.floor((x - area.x + 0.5) * image_w / area.w)
    image_y = math.floor((y - area.y + 0.5) * image_h / area.h)
    return (_clamp(image_x, 0, image_w - 1), _clamp(image_y, 0, image_h - 1))
