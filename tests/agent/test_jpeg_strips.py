"""Strip-by-strip JPEG: the pieces form one valid file that decodes like a one-go encode."""

from __future__ import annotations

import io
from functools import partial

import numpy as np
import pytest
import simplejpeg
from PIL import Image

from rigway.agent.imaging import encode_jpeg
from rigway.agent.jpeg_strips import StripMismatchError, encode_in_strips, strip_rows


def _desktop_like(height: int, width: int, seed: int = 3) -> np.ndarray:
    """BGRA with flat areas, edges and noise: every kind of block a desktop has."""
    rng = np.random.default_rng(seed)
    image = np.full((height, width, 4), 235, dtype=np.uint8)
    image[: height // 3, :, :3] = rng.integers(0, 255, (height // 3, width, 3), dtype=np.uint8)
    image[height // 2 : height // 2 + 40, width // 4 : width // 2] = (40, 90, 200, 255)
    image[:, ::97, :3] = 0
    return image


@pytest.mark.parametrize(("height", "width"), [(1080, 1920), (1000, 1333), (300, 257), (721, 1279)])
def test_stitched_pieces_decode_to_the_pixels_of_a_one_go_encode(height: int, width: int) -> None:
    image = _desktop_like(height, width)
    pieces: list[bytes] = []

    jpeg, sent = encode_in_strips(image, partial(encode_jpeg, quality=85), pieces.append)

    assert len(pieces) == -(-height // strip_rows(height)) - 1
    assert jpeg.startswith(b"".join(pieces))
    assert sent == sum(len(p) for p in pieces)
    one_go = encode_jpeg(image, 85)
    # strict: a bad restart marker or a short scan is an error, not a warning.
    assert np.array_equal(
        simplejpeg.decode_jpeg(jpeg, strict=True), simplejpeg.decode_jpeg(one_go, strict=True)
    )
    with Image.open(io.BytesIO(jpeg)) as decoded:  # a second decoder agrees on the shape
        decoded.load()
        assert decoded.size == (width, height)


def test_a_cropped_view_is_encoded_like_the_copy_of_it() -> None:
    frame = _desktop_like(1080, 1920)
    view = frame[100:900, 300:1500]  # not C-contiguous
    jpeg, _ = encode_in_strips(view, partial(encode_jpeg, quality=80), lambda _: None)

    assert np.array_equal(
        simplejpeg.decode_jpeg(jpeg, strict=True),
        simplejpeg.decode_jpeg(encode_jpeg(np.ascontiguousarray(view), 80), strict=True),
    )


def test_a_small_image_goes_out_whole() -> None:
    image = _desktop_like(120, 320)
    pieces: list[bytes] = []

    jpeg, sent = encode_in_strips(image, partial(encode_jpeg, quality=85), pieces.append)

    assert (pieces, sent) == ([], 0)
    assert jpeg == encode_jpeg(image, 85)


def test_strips_with_different_tables_are_refused() -> None:
    qualities = iter([85, 60, 60, 60, 60, 60, 60, 60, 60])
    image = _desktop_like(1080, 1920)

    with pytest.raises(StripMismatchError):
        encode_in_strips(image, lambda rows: encode_jpeg(rows, next(qualities)), lambda _: None)


def test_every_strip_but_the_last_is_whole_mcu_rows() -> None:
    for height in (129, 256, 1080, 1081, 2160, 4320):
        rows = strip_rows(height)
        assert rows == height or rows % 16 == 0
        assert rows >= min(height, 128)
