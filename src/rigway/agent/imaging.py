"""Pure image steps of a screenshot: crop, downscale, set-of-mark, JPEG.

Every function here is CPU work meant for the screen worker thread, never the event
loop. Frames are BGRA `(height, width, 4)` uint8 arrays as backends deliver them; the
encoder takes BGRA directly, so no colour conversion copy is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import simplejpeg

from rigway.agent.backends.base import Pixels, Rect

__all__ = [
    "JPEG_SUBSAMPLING",
    "EncodedImage",
    "Mark",
    "crop",
    "downscale",
    "draw_marks",
    "encode_jpeg",
    "render_jpeg",
    "scaled_size",
]

# simplejpeg defaults to 4:4:4 and Pillow to 4:2:0 (TECH-NOTES): name it so every
# backend produces the same bytes-per-frame trade-off. 4:2:0 keeps text legible at
# q85 and is ~30 % smaller than 4:4:4.
JPEG_SUBSAMPLING = "420"

# Bright magenta-red boxes stand out against typical UI greys and whites.
_MARK_COLOUR_BGRA = (40, 0, 230, 255)
_LABEL_TEXT_BGRA = (255, 255, 255, 255)
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_FONT_SCALE = 0.45
_FONT_THICKNESS = 1
_LABEL_PAD_PX = 2


@dataclass(frozen=True, slots=True)
class Mark:
    """One set-of-mark box in native desktop pixels, labelled with its target id."""

    label: str
    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True, slots=True)
class EncodedImage:
    jpeg: bytes
    width: int
    height: int
    marked: bool


def scaled_size(width: int, height: int, max_width: int | None) -> tuple[int, int]:
    """Output size with the long edge capped at `max_width`; never upscales.

    The API names the cap `max_width` but applies it to the long edge (API-DECISIONS),
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
    # INTER_AREA averages source pixels: text stays legible, ~8 ms at 1080p (TECH-NOTES).
    resized = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return np.asarray(resized, dtype=np.uint8)


def draw_marks(
    image: Pixels, marks: Sequence[Mark], *, origin: tuple[int, int], scale: tuple[float, float]
) -> Pixels:
    """Boxes and labels drawn on a copy; marks map from native into image space.

    `origin` is the native top-left of the image (the region's x, y) and `scale` the
    output/native ratio per axis. Marks wholly outside the image are skipped.
    """
    canvas = np.array(image, dtype=np.uint8, order="C", copy=True)
    height, width = canvas.shape[:2]
    for mark in marks:
        box = _to_image_box(mark, origin, scale, width, height)
        if box is None:
            continue
        left, top, right, bottom = box
        cv2.rectangle(canvas, (left, top), (right, bottom), _MARK_COLOUR_BGRA, 2)
        _draw_label(canvas, mark.label, left, top)
    return canvas


def _to_image_box(
    mark: Mark, origin: tuple[int, int], scale: tuple[float, float], width: int, height: int
) -> tuple[int, int, int, int] | None:
    left = round((mark.x - origin[0]) * scale[0])
    top = round((mark.y - origin[1]) * scale[1])
    right = round((mark.x + mark.w - origin[0]) * scale[0]) - 1
    bottom = round((mark.y + mark.h - origin[1]) * scale[1]) - 1
    if right < 0 or bottom < 0 or left >= width or top >= height:
        return None
    return (
        min(max(left, 0), width - 1),
        min(max(top, 0), height - 1),
        min(max(right, 0), width - 1),
        min(max(bottom, 0), height - 1),
    )


def _draw_label(canvas: Pixels, label: str, left: int, top: int) -> None:
    (text_w, text_h), baseline = cv2.getTextSize(label, _FONT, _FONT_SCALE, _FONT_THICKNESS)
    box_h = text_h + baseline + 2 * _LABEL_PAD_PX
    # Above the box when there is room, else inside its top edge, so the label never
    # covers the control's own centre (where an agent would click).
    label_top = top - box_h if top - box_h >= 0 else top
    right = min(left + text_w + 2 * _LABEL_PAD_PX, canvas.shape[1] - 1)
    bottom = min(label_top + box_h, canvas.shape[0] - 1)
    cv2.rectangle(canvas, (left, label_top), (right, bottom), _MARK_COLOUR_BGRA, cv2.FILLED)
    origin = (left + _LABEL_PAD_PX, label_top + _LABEL_PAD_PX + text_h)
    cv2.putText(
        canvas, label, origin, _FONT, _FONT_SCALE, _LABEL_TEXT_BGRA, _FONT_THICKNESS, cv2.LINE_AA
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
    if marked:
        image = draw_marks(image, visible, origin=origin, scale=(out_w / crop_w, out_h / crop_h))
    return EncodedImage(jpeg=encode(image, quality), width=out_w, height=out_h, marked=marked)
