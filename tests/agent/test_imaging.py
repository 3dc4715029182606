from __future__ import annotations

import numpy as np
import pytest
import simplejpeg

from rigway.agent.backends.base import Rect
from rigway.agent.imaging import Mark, draw_marks, encode_jpeg, render_jpeg, scaled_size


def _solid(width: int, height: int, value: int = 128) -> np.ndarray:
    return np.full((height, width, 4), value, dtype=np.uint8)


@pytest.mark.parametrize(
    ("size", "max_width", "expected"),
    [
        ((1920, 1080), 1280, (1280, 720)),
        ((1920, 1080), None, (1920, 1080)),
        ((1920, 1080), 1920, (1920, 1080)),
        ((800, 600), 1280, (800, 600)),  # never upscales
        ((1080, 1920), 960, (540, 960)),  # the cap applies to the long edge
        ((3000, 10), 16, (16, 1)),  # never collapses to zero
    ],
)
def test_scaled_size_caps_long_edge(
    size: tuple[int, int], max_width: int | None, expected: tuple[int, int]
) -> None:
    assert scaled_size(*size, max_width) == expected


def test_render_downscales_and_encodes_420() -> None:
    image = render_jpeg(_solid(1920, 1080), quality=85, max_width=1280, region=None)
    height, width, _, subsampling = simplejpeg.decode_jpeg_header(image.jpeg)
    assert (image.width, image.height) == (1280, 720)
    assert (width, height) == (1280, 720)
    assert subsampling == "420"
    assert not image.marked


def test_render_region_then_cap() -> None:
    frame = _solid(400, 300)
    image = render_jpeg(frame, quality=85, max_width=50, region=Rect(100, 50, 200, 100))
    assert (image.width, image.height) == (50, 25)


def test_render_small_region_is_not_upscaled() -> None:
    image = render_jpeg(_solid(400, 300), quality=85, max_width=1000, region=Rect(0, 0, 64, 32))
    assert (image.width, image.height) == (64, 32)


def test_encode_keeps_colours_from_bgra() -> None:
    frame = np.zeros((64, 64, 4), dtype=np.uint8)
    frame[..., 2] = 255  # pure red in BGRA
    decoded = simplejpeg.decode_jpeg(encode_jpeg(frame, 95), colorspace="RGB")
    red, green, blue = decoded[32, 32]
    assert red > 240
    assert green < 20
    assert blue < 20


def test_marks_are_drawn_on_a_copy() -> None:
    image = _solid(200, 100)
    marked = draw_marks(image, [Mark("t_1", 50, 30, 40, 20)], origin=(0, 0), scale=(1.0, 1.0))
    assert np.all(image == 128)
    assert not np.array_equal(marked[30, 50], image[30, 50])  # box corner drawn
    assert np.array_equal(marked[40, 70], image[40, 70])  # box interior untouched


def test_marks_map_into_scaled_region_space() -> None:
    # Native box at (300, 200) inside region origin (200, 100), output scaled by 0.5:
    # its top-left lands at (50, 50) of the output image.
    image = _solid(100, 100)
    marked = draw_marks(image, [Mark("t_1", 300, 200, 40, 40)], origin=(200, 100), scale=(0.5, 0.5))
    assert not np.array_equal(marked[50, 50], image[50, 50])
    assert np.array_equal(marked[60, 60], image[60, 60])  # inside the 20x20 box


def test_marks_outside_the_image_are_skipped() -> None:
    image = _solid(100, 100)
    marked = draw_marks(image, [Mark("t_1", 500, 500, 10, 10)], origin=(0, 0), scale=(1.0, 1.0))
    assert np.array_equal(marked, image)


def test_render_with_marks_reports_marked() -> None:
    image = render_jpeg(
        _solid(400, 300), quality=85, max_width=None, region=None, marks=[Mark("t_1", 5, 5, 20, 20)]
    )
    assert image.marked


def test_render_with_marks_only_outside_the_region_is_unmarked() -> None:
    image = render_jpeg(
        _solid(400, 300),
        quality=85,
        max_width=None,
        region=Rect(0, 0, 100, 100),
        marks=[Mark("t_1", 200, 200, 20, 20)],
    )
    assert not image.marked
