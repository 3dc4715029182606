"""The pictures a caller was shown, in native pixels, by damage mark: `screen/changed_since`
reports only the damage whose pixels differ from them.

Damage says where something was drawn, not that it looks different: GTK repaints a
whole window when a menu opens or a field takes the focus, and a delta cut to that
damage resends the window. With the picture the caller holds, the host compares the
damaged pixels and answers the bounding box of those that differ in each damaged area.

Why this never misses a change: outside the damage since a mark nothing was drawn since
the poll that gave the mark, and a picture's pixels are at least as new as that poll
(its grab came after it), so there the picture and the screen agree; inside, they are
compared. A picture is the caller's exact picture: a capture's grab, or a delta's (the
picture its since frame named, with the delta's region pasted in from its grab), or the
one before it when nothing differed. Two different pictures kept under one mark (a grab
raced drawing just after the poll) make that mark untrusted: damage alone answers it.

A picture costs a copy of the desktop (8 MB at 1920x1080): the host keeps them only on a
backend with damage, only once the session has asked `screen/changed_since` (so a capture
before the session's first ask keeps nothing and that ask answers the damage unchecked),
only the last few, and drops them when the session ends.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from rigway.agent.backends.base import Pixels, Rect

# The delta's since frame, the frame a full observe showed meanwhile, and one spare.
PICTURES_KEPT = 3
# Differing pixels closer than about this many native pixels share a box.
CLUSTER_TILE = 16
# Past this many clusters in one damaged area, their bounding box.
MAX_CLUSTERS = 16


class PictureStore:
    """Pictures by damage mark, the least recently kept or used dropped first; None
    marks a mark two different pictures were kept under. Screen worker only."""

    def __init__(self, kept: int = PICTURES_KEPT) -> None:
        if kept < 1:
            raise ValueError("keep at least one picture")
        self._kept = kept
        self._pictures: OrderedDict[int, Pixels | None] = OrderedDict()

    def keep(self, mark: int, pixels: Pixels) -> None:
        """Keep `pixels` (never written to afterwards) as the picture shown at `mark`."""
        if mark in self._pictures:
            known = self._pictures[mark]
            if known is not pixels and (known is None or not np.array_equal(known, pixels)):
                self._pictures[mark] = None
            self._pictures.move_to_end(mark)
            return
        self._pictures[mark] = pixels
        while len(self._pictures) > self._kept:
            self._pictures.popitem(last=False)

    def get(self, mark: int) -> Pixels | None:
        picture = self._pictures.get(mark)
        if picture is not None:
            self._pictures.move_to_end(mark)
        return picture

    def patch(self, base_mark: int, mark: int, region: Rect, grab: Pixels) -> None:
        """Keep for `mark` the picture of `base_mark` with `region` from `grab` (a delta's
        image pasted onto the caller's picture; its further images come with `base_mark`
        equal to `mark`); nothing when that picture is gone."""
        base = self.get(base_mark)
        if base is None or base.shape != grab.shape:
            return
        picture = base.copy()
        rows, cols = slice(region.y, region.y + region.h), slice(region.x, region.x + region.w)
        picture[rows, cols] = grab[rows, cols]
        if base_mark == mark:
            # The same delta's next image: its picture grows, it is not another one.
            self._pictures[mark] = picture
            return
        self.keep(mark, picture)

    def clear(self) -> None:
        self._pictures.clear()

    def __len__(self) -> int:
        return len(self._pictures)


def differing(rects: Sequence[Rect], picture: Pixels, current: Pixels) -> list[Rect]:
    """For each rect, the bounding boxes of its clusters of pixels that differ between
    the two (rects whose pixels are all the same are left out): a menu opening and a
    button's highlight far from it are two boxes, not the window between them."""
    boxes: list[Rect] = []
    for rect in rects:
        rows, cols = slice(rect.y, rect.y + rect.h), slice(rect.x, rect.x + rect.w)
        mask = _unequal(picture[rows, cols], current[rows, cols])
        boxes.extend(Rect(rect.x + x, rect.y + y, w, h) for x, y, w, h in _clusters(mask))
    return boxes


def _unequal(before: Pixels, after: Pixels) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Per pixel, whether any channel differs. A 4-byte pixel compares as one 32-bit
    word, one pass where comparing the channels and reducing them takes two."""
    if before.ndim == 3 and before.shape[2] == 4 and before.dtype == np.uint8:
        return np.asarray(before.view(np.uint32)[..., 0] != after.view(np.uint32)[..., 0])
    unequal = before != after
    return np.asarray(unequal.any(axis=2) if unequal.ndim == 3 else unequal)


def _clusters(mask: np.ndarray[Any, np.dtype[np.bool_]]) -> list[tuple[int, int, int, int]]:
    """Bounding boxes of the set pixels, grouped by CLUSTER_TILE tiles that touch
    (8-connected): pixels within about a tile of each other share a box."""
    height, width = mask.shape
    if not mask.any():
        return []
    tiles_y, tiles_x = -(-height // CLUSTER_TILE), -(-width // CLUSTER_TILE)
    padded = np.zeros((tiles_y * CLUSTER_TILE, tiles_x * CLUSTER_TILE), dtype=np.bool_)
    padded[:height, :width] = mask
    tiles = np.asarray(
        padded.reshape(tiles_y, CLUSTER_TILE, tiles_x, CLUSTER_TILE).any(axis=(1, 3)),
        dtype=np.uint8,
    )
    count, labels, stats, _ = cv2.connectedComponentsWithStats(tiles, connectivity=8)
    if count - 1 > MAX_CLUSTERS:
        return [_box(padded, 0, 0)]  # scattered all over: one box says it as well
    boxes = []
    for label in range(1, count):
        tx, ty, tw, th = (int(v) for v in stats[label][:4])
        # Only this cluster's tiles: a neighbour's pixels may reach into its box.
        own_tiles = labels[ty : ty + th, tx : tx + tw] == label
        own = np.repeat(np.repeat(own_tiles, CLUSTER_TILE, axis=0), CLUSTER_TILE, axis=1)
        top, left = ty * CLUSTER_TILE, tx * CLUSTER_TILE
        area = padded[top : top + th * CLUSTER_TILE, left : left + tw * CLUSTER_TILE] & own
        boxes.append(_box(area, left, top))
    return boxes


def _box(
    mask: np.ndarray[Any, np.dtype[np.bool_]], left: int, top: int
) -> tuple[int, int, int, int]:
    """The bounding box of a non-empty mask's set pixels, offset by (left, top)."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    x, y = left + int(cols[0]), top + int(rows[0])
    return (x, y, left + int(cols[-1]) + 1 - x, top + int(rows[-1]) + 1 - y)
