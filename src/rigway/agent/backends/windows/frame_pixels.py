"""Pixel buffers of the capture: read-only views of mapped surfaces, copies that are
ours to hand out, and the box of pixels that differ between two frames.

Pure (numpy).
"""

from __future__ import annotations

import numpy as np

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.backends.windows.capture_ports import MappedSurface

__all__ = ["changed_box", "copied_into", "surface_view"]


def surface_view(mapped: MappedSurface) -> Pixels:
    """The mapped rows as (height, width, 4), skipping each row's padding; no copy."""
    row_bytes = mapped.width * 4
    needed = mapped.pitch * (mapped.height - 1) + row_bytes if mapped.height > 0 else 0
    data = mapped.data
    if mapped.pitch < row_bytes or data.ndim != 1 or data.strides != (1,) or data.size < needed:
        raise ValueError(
            f"mapped surface of {data.size} bytes, pitch {mapped.pitch}, "
            f"cannot hold {mapped.width}x{mapped.height}"
        )
    return np.lib.stride_tricks.as_strided(
        data,
        shape=(mapped.height, mapped.width, 4),
        strides=(mapped.pitch, 4, 1),
        writeable=False,
    )


def changed_box(before: Pixels | None, after: Pixels) -> Rect | None:
    """The smallest rectangle holding every pixel that differs; all of `after` when the
    sizes differ; None when nothing does."""
    height, width = after.shape[:2]
    if before is None or before.shape != after.shape:
        return Rect(0, 0, width, height)
    differs = np.any(before != after, axis=2)
    rows = np.flatnonzero(differs.any(axis=1))
    if rows.size == 0:
        return None
    columns = np.flatnonzero(differs.any(axis=0))
    top, left = int(rows[0]), int(columns[0])
    return Rect(left, top, int(columns[-1]) + 1 - left, int(rows[-1]) + 1 - top)


def copied_into(buffer: Pixels | None, pixels: Pixels) -> Pixels:
    """`pixels` copied into `buffer`, or into a new buffer when the size changed."""
    if buffer is None or buffer.shape != pixels.shape:
        buffer = np.empty(pixels.shape, dtype=np.uint8)
    np.copyto(buffer, pixels)
    return buffer
