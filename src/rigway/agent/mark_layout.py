"""Where set-of-mark labels go: pure geometry, no drawing.

A label names a target by its 1-based index. It sits just outside its box when there
is room (above-left, below-left, right, left), inside the box's top-left corner only
as the last resort, and at the spot that covers the least of any target's own text
area (a box shrunk by its border). Labels never overlap each other: a target with no
free spot left (a crowded screen, a control too small to hold one inside) gets no
label, and the caller reports that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Box", "LabelBox", "inner_area", "place_labels"]

# The border a control draws around its own text: the text area is the box shrunk by it.
_TEXT_INSET_PX = 2


@dataclass(frozen=True, slots=True)
class Box:
    """Inclusive pixel bounds in image space."""

    left: int
    top: int
    right: int
    bottom: int

    def intersects(self, other: Box) -> bool:
        return (
            self.left <= other.right
            and other.left <= self.right
            and self.top <= other.bottom
            and other.top <= self.bottom
        )


@dataclass(frozen=True, slots=True)
class LabelBox(Box):
    """A label's rectangle (fill and outline included); `inside` when it had to be
    placed inside its own target's box."""

    inside: bool = False


def inner_area(box: Box) -> Box | None:
    """A target's own text area: its box shrunk by the border, None when too small."""
    inner = Box(
        box.left + _TEXT_INSET_PX,
        box.top + _TEXT_INSET_PX,
        box.right - _TEXT_INSET_PX,
        box.bottom - _TEXT_INSET_PX,
    )
    return inner if inner.left <= inner.right and inner.top <= inner.bottom else None


def place_labels(
    boxes: Sequence[Box],
    sizes: Sequence[tuple[int, int]],
    image_size: tuple[int, int],
    busy: np.ndarray | None = None,
) -> list[LabelBox | None]:
    """One label rectangle (or None: omitted) per box, in order.

    `sizes` are the labels' (width, height) and `image_size` the image's (width,
    height). `busy`, a (height, width) bool mask of drawn detail (glyphs, icons,
    edges), ranks the spots: covering a target's glyphs is worst, then covering its
    text area where it is blank, then any other detail (a list's caption). Earlier
    boxes choose first, so low indexes keep their labels on a crowded screen.
    """
    width, height = image_size
    label_area = max((w * h for w, h in sizes), default=0) + 1
    cost_grid = _cost_grid(
        _text_coverage(boxes, width, height),
        np.zeros((height, width), dtype=bool) if busy is None else busy,
        label_area,
    )
    taken = np.zeros((height, width), dtype=bool)
    placed: list[LabelBox | None] = []
    for box, (label_w, label_h) in zip(boxes, sizes, strict=True):
        best: LabelBox | None = None
        best_cost = -1
        for spot in _candidates(box, label_w, label_h):
            if not _fits(spot, box, width, height) or _region(taken, spot).any():
                continue
            cost = int(_region(cost_grid, spot).sum())
            if best is None or cost < best_cost:
                best, best_cost = spot, cost
            if cost == 0:
                break  # candidates are in preference order: the first free one wins
        if best is not None and best_cost >= label_area * label_area:
            best = None  # every spot would hide a control's glyphs: no label beats that
        if best is not None:
            _region(taken, best)[...] = True
        placed.append(best)
    return placed


def _cost_grid(coverage: np.ndarray, busy: np.ndarray, label_area: int) -> np.ndarray:
    """Per pixel weights such that a worse kind of cover always outweighs any amount of
    a milder kind under one label (`label_area` pixels)."""
    in_text = coverage > 0
    # Pixels, not layers: a row inside a list is no worse to cover than a lone button.
    grid = in_text.astype(np.int64) * label_area + busy.astype(np.int64)
    grid += (busy & in_text).astype(np.int64) * label_area * label_area
    return grid


def _text_coverage(boxes: Sequence[Box], width: int, height: int) -> np.ndarray:
    """How many targets' text areas cover each pixel."""
    coverage = np.zeros((height, width), dtype=np.int64)
    for box in boxes:
        inner = inner_area(box)
        if inner is not None:
            coverage[
                max(inner.top, 0) : max(inner.bottom + 1, 0),
                max(inner.left, 0) : max(inner.right + 1, 0),
            ] += 1
    return coverage


def _candidates(box: Box, label_w: int, label_h: int) -> list[LabelBox]:
    """Above-left, below-left, right, left, then inside the top-left corner."""
    above = box.top - label_h
    below = box.bottom + 1
    right = box.right + 1
    left = box.left - label_w
    return [
        LabelBox(box.left, above, box.left + label_w - 1, box.top - 1),
        LabelBox(box.left, below, box.left + label_w - 1, below + label_h - 1),
        LabelBox(right, box.top, right + label_w - 1, box.top + label_h - 1),
        LabelBox(left, box.top, box.left - 1, box.top + label_h - 1),
        LabelBox(box.left + 1, box.top + 1, box.left + label_w, box.top + label_h, inside=True),
    ]


def _fits(spot: LabelBox, box: Box, width: int, height: int) -> bool:
    if spot.inside and (
        spot.left <= box.left or spot.right >= box.right or spot.bottom >= box.bottom
    ):
        return False  # a control too small to hold its label: none beats covering others
    return spot.left >= 0 and spot.top >= 0 and spot.right < width and spot.bottom < height


def _region(grid: np.ndarray, spot: Box) -> np.ndarray:
    return grid[spot.top : spot.bottom + 1, spot.left : spot.right + 1]
