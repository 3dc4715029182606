"""Pure image steps of a screenshot: crop, downscale, set-of-mark, JPEG.

Every function here is CPU work meant for the screen worker thread, never the event
loop. Frames are BGRA `(height, width, 4)` uint8 arrays as backends deliver them; the
encoder takes BGRA directly, so no colour conversion copy is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import simplejpeg

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.mark_layout import Box, LabelBox, place_labels
from rigway.protocol import ops

__all__ = [
    "JPEG_SUBSAMPLING",
    "DrawnMark",
    "EncodedImage",
    "Mark",
    "MarkedImage",
    "crop",
    "downscale",
    "draw_marks",
    "encode_jpeg",
    "index_marks",
    "label_font_scale",
    "mark_image",
    "render_jpeg",
    "scaled_size",
]

# simplejpeg defaults to 4:4:4 and Pillow to 4:2:0: name it so every
# backend produces the same bytes-per-frame trade-off. 4:2:0 keeps text legible at
# q85 and is ~30 % smaller than 4:4:4.
JPEG_SUBSAMPLING = "420"

# Bright magenta-red boxes stand out against typical UI greys and whites; 1 px so they
# hide no pixel of the control's own text.
_MARK_COLOUR_BGRA = (40, 0, 230, 255)
_BOX_THICKNESS = 1
# White digits on a dark red fill with a light outline read on light and dark UIs alike.
_LABEL_FILL_BGRA = (20, 0, 140, 255)
_LABEL_OUTLINE_BGRA = (255, 255, 255, 255)
_LABEL_TEXT_BGRA = (255, 255, 255, 255)
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_FONT_THICKNESS = 1
# Digit height relative to the output image: 12 px on a 1280-px image, never below 11.
_DIGIT_PX_PER_1280 = 12
_MIN_DIGIT_PX = 11
_LABEL_PAD_PX = 1
# Grey-level contrast within 3x3 pixels that counts as drawn detail.
_BUSY_CONTRAST = 40


@dataclass(frozen=True, slots=True)
class Mark:
    """One set-of-mark box in native desktop pixels. `label` is what is drawn (the
    target's 1-based index); `index` and `target_id` are what the answer reports."""

    label: str
    x: int
    y: int
    w: int
    h: int
    target_id: str = ""
    index: int = 0


@dataclass(frozen=True, slots=True)
class DrawnMark:
    """A mark inside the image; `labelled` is False when no free spot held its label."""

    index: int
    target_id: str
    labelled: bool


@dataclass(frozen=True, slots=True)
class MarkedImage:
    pixels: Pixels
    drawn: tuple[DrawnMark, ...]
    labels: tuple[LabelBox | None, ...]


@dataclass(frozen=True, slots=True)
class EncodedImage:
    jpeg: bytes
    width: int
    height: int
    marked: bool
    marks: tuple[DrawnMark, ...] = ()


def index_marks(targets: Iterable[ops.Target]) -> tuple[Mark, ...]:
    """One mark per target, labelled by its 1-based index: the number of its
    `text.targets` line. A 12-character id would hide the text a model must read."""
    return tuple(
        Mark(str(n), t.x, t.y, t.w, t.h, target_id=t.id, index=n)
        for n, t in enumerate(targets, start=1)
    )


def scaled_size(width: int, height: int, max_width: int | None) -> tuple[int, int]:
    """Output size with the long edge capped at `max_width`; never upscales.

    The API names the cap `max_width` but applies it to the long edge (docs/api.md),
    so a portrait region is capped by its height.
    """
    long_edge = max(width, height)
    if max_width is None or long_edge <= max_width:
        return width, height
    scale = max_width / long_edge
    return max(1, round(width * scale)), max(1, round(height * scale))


def crop(frame: Pixels, region: Rect | None) -> Pixels:
    """A view of `region` (already validated to lie inside the frame)."""
    if region is None:
        return frame
    return frame[region.y : region.y + region.h, region.x : region.x + region.w]


def downscale(image: Pixels, max_width: int | None) -> Pixels:
    height, width = image.shape[:2]
    size = scaled_size(width, height, max_width)
    if size == (width, height):
        return image
    # INTER_AREA averages source pixels: text stays legible (about 8 ms at 1080p).
    resized = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return np.asarray(resized, dtype=np.uint8)


def draw_marks(
    image: Pixels, marks: Sequence[Mark], *, origin: tuple[int, int], scale: tuple[float, float]
) -> Pixels:
    """`mark_image`'s pixels."""
    return mark_image(image, marks, origin=origin, scale=scale).pixels


def mark_image(
    image: Pixels, marks: Sequence[Mark], *, origin: tuple[int, int], scale: tuple[float, float]
) -> MarkedImage:
    """Boxes and labels drawn on a copy; marks map from native into image space.

    `origin` is the native top-left of the image (the region's x, y) and `scale` the
    output/native ratio per axis. Marks wholly outside the image are skipped. All boxes
    are drawn before any label, so no box line crosses a label.
    """
    canvas = np.array(image, dtype=np.uint8, order="C", copy=True)
    height, width = canvas.shape[:2]
    inside = [
        (mark, box)
        for mark in marks
        if (box := _to_image_box(mark, origin, scale, width, height)) is not None
    ]
    font_scale = label_font_scale(width, height)
    sizes = [_label_size(mark.label, font_scale) for mark, _ in inside]
    labels = place_labels([box for _, box in inside], sizes, (width, height), _busy(canvas))
    for _, box in inside:
        cv2.rectangle(
            canvas, (box.left, box.top), (box.right, box.bottom), _MARK_COLOUR_BGRA, _BOX_THICKNESS
        )
    for (mark, _), label in zip(inside, labels, strict=True):
        if label is not None:
            _draw_label(canvas, mark.label, label, font_scale)
    drawn = tuple(
        DrawnMark(mark.index, mark.target_id, label is not None)
        for (mark, _), label in zip(inside, labels, strict=True)
    )
    return MarkedImage(canvas, drawn, tuple(labels))


def _busy(image: Pixels) -> np.ndarray:
    """Pixels with drawn detail (text, icons, edges): where a label would hide something."""
    grey = cv2.cvtColor(image, cv2.COLOR_BGRA2GRAY if image.shape[2] == 4 else cv2.COLOR_BGR2GRAY)
    gradient = cv2.morphologyEx(grey, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    return np.asarray(gradient > _BUSY_CONTRAST)


def label_font_scale(width: int, height: int) -> float:
    """Sized to the output image, so labels stay legible after any downscale."""
    digit_px = max(_MIN_DIGIT_PX, round(max(width, height) * _DIGIT_PX_PER_1280 / 1280))
    (_, one_scale_h), _ = cv2.getTextSize("0", _FONT, 1.0, _FONT_THICKNESS)
    return digit_px / one_scale_h


def _label_size(label: str, font_scale: float) -> tuple[int, int]:
    (text_w, text_h), _ = cv2.getTextSize(label, _FONT, font_scale, _FONT_THICKNESS)
    # Digits have no descenders: the baseline needs no room.
    return text_w + 2 * _LABEL_PAD_PX + 2, text_h + 2 * _LABEL_PAD_PX + 2


def _to_image_box(
    mark: Mark, origin: tuple[int, int], scale: tuple[float, float], width: int, height: int
) -> Box | None:
    left = round((mark.x - origin[0]) * scale[0])
    top = round((mark.y - origin[1]) * scale[1])
    right = round((mark.x + mark.w - origin[0]) * scale[0]) - 1
    bottom = round((mark.y + mark.h - origin[1]) * scale[1]) - 1
    if right < 0 or bottom < 0 or left >= width or top >= height:
        return None
    return Box(
        min(max(left, 0), width - 1),
        min(max(top, 0), height - 1),
        min(max(right, 0), width - 1),
        min(max(bottom, 0), height - 1),
    )


def _draw_label(canvas: Pixels, text: str, spot: LabelBox, font_scale: float) -> None:
    corners = (spot.left, spot.top), (spot.right, spot.bottom)
    cv2.rectangle(canvas, *corners, _LABEL_FILL_BGRA, cv2.FILLED)
    cv2.rectangle(canvas, *corners, _LABEL_OUTLINE_BGRA, 1)
    (_, text_h), _ = cv2.getTextSize(text, _FONT, font_scale, _FONT_THICKNESS)
    origin = (spot.left + 1 + _LABEL_PAD_PX, spot.top + 1 + _LABEL_PAD_PX + text_h)
    cv2.putText(
        canvas, text, origin, _FONT, font_scale, _LABEL_TEXT_BGRA, _FONT_THICKNESS, cv2.LINE_AA
    )


def _overlaps(mark: Mark, origin: tuple[int, int], width: int, height: int) -> bool:
    return (
        mark.x < origin[0] + width
        and origin[0] < mark.x + mark.w
        and mark.y < origin[1] + height
        and origin[1] < mark.y + mark.h
    )


def encode_jpeg(image: Pixels, quality: int) -> bytes:
    """BGRA (or BGR after a backend's own conversion) straight into libjpeg-turbo."""
    colorspace = "BGRA" if image.shape[2] == 4 else "BGR"
    # A cropped view is not C-contiguous; libjpeg-turbo needs packed rows.
    jpeg: bytes = simplejpeg.encode_jpeg(
        np.ascontiguousarray(image),
        quality=quality,
        colorspace=colorspace,
        colorsubsampling=JPEG_SUBSAMPLING,
    )
    return jpeg


def render_jpeg(
    frame: Pixels,
    *,
    quality: int,
    max_width: int | None,
    region: Rect | None,
    marks: Sequence[Mark] = (),
    encode: Callable[[Pixels, int], bytes] = encode_jpeg,
) -> EncodedImage:
    """Region first, then the long-edge cap, then marks in output space, then JPEG.

    `marked` is True only when at least one mark falls inside the image. `encode` turns
    the final image (possibly a view with strided rows) and the quality into a JPEG; the
    screen service passes its strip encoder's, which encodes on several threads."""
    cropped = crop(frame, region)
    crop_h, crop_w = cropped.shape[:2]
    image = downscale(cropped, max_width)
    out_h, out_w = image.shape[:2]
    origin = (0, 0) if region is None else (region.x, region.y)
    visible = [m for m in marks if _overlaps(m, origin, crop_w, crop_h)]
    marked = len(visible) > 0
    drawn: tuple[DrawnMark, ...] = ()
    if marked:
        scale = (out_w / crop_w, out_h / crop_h)
        marked_image = mark_image(image, visible, origin=origin, scale=scale)
        image, drawn = marked_image.pixels, marked_image.drawn
    jpeg = encode(image, quality)
    return EncodedImage(jpeg=jpeg, width=out_w, height=out_h, marked=marked, marks=drawn)
