from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import cv2
import numpy as np
import pytest
import simplejpeg
from PIL import Image

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.jpeg_strips import STRIP_ROWS, StripEncoder, strips_touched


def _desktop_like(width: int, height: int, channels: int = 4, seed: int = 7) -> Pixels:
    """Flat panels with edges and a little noise: busy enough that a wrong strip shows."""
    rng = np.random.default_rng(seed)
    image = np.full((height, width, channels), 236, dtype=np.uint8)
    for _ in range(40):
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        w, h = int(rng.integers(4, 200)), int(rng.integers(4, 80))
        image[y : y + h, x : x + w, :3] = rng.integers(0, 256, 3, dtype=np.uint8)
    noise = rng.integers(-6, 7, (height, width, 3))
    image[..., :3] = np.clip(image[..., :3].astype(np.int16) + noise, 0, 255).astype(np.uint8)
    return image


def _one_go(image: Pixels, quality: int = 85) -> bytes:
    colorspace = "BGRA" if image.shape[2] == 4 else "BGR"
    jpeg: bytes = simplejpeg.encode_jpeg(
        image, quality=quality, colorspace=colorspace, colorsubsampling="420"
    )
    return jpeg


def _decoded(jpeg: bytes) -> Pixels:
    pixels: Pixels = simplejpeg.decode_jpeg(jpeg, colorspace="BGR")
    return pixels


@pytest.fixture(params=[0, 2], ids=["alone", "two-helpers"])
def encoder(request: pytest.FixtureRequest) -> Iterator[StripEncoder]:
    strip_encoder = StripEncoder(helpers=request.param)
    yield strip_encoder
    strip_encoder.close()


@pytest.mark.parametrize(
    ("width", "height", "channels"),
    [(1920, 1080, 4), (1366, 768, 4), (1001, 1001, 4), (640, 130, 3), (100, 64, 4), (17, 9, 4)],
)
def test_joined_strips_decode_to_the_pixels_of_a_one_go_encode(
    encoder: StripEncoder, width: int, height: int, channels: int
) -> None:
    image = _desktop_like(width, height, channels)
    joined = encoder.encode(image, 85).join()
    assert np.array_equal(_decoded(joined), _decoded(_one_go(image)))
    # Other decoders agree (libjpeg through OpenCV, Pillow's own reader).
    via_cv2 = cv2.imdecode(np.frombuffer(joined, np.uint8), cv2.IMREAD_COLOR)
    assert via_cv2 is not None
    assert np.array_equal(via_cv2, _decoded(joined))
    with Image.open(io.BytesIO(joined)) as pillow:
        assert pillow.size == (width, height)
        pillow.load()
    assert encoder.encode_whole(image, 85)[:2] == b"\xff\xd8"


def test_whole_encodes_are_valid_for_every_size(encoder: StripEncoder) -> None:
    for width, height in [(1, 1), (16, 16), (300, 64), (300, 65), (1920, 1080)]:
        image = _desktop_like(width, height)
        whole = encoder.encode_whole(image, 70)
        assert np.array_equal(_decoded(whole), _decoded(_one_go(image, 70)))


def test_only_changed_strips_are_encoded_again(encoder: StripEncoder) -> None:
    before = _desktop_like(1920, 1080)
    first = encoder.encode(before, 85)
    after = before.copy()
    after[300:340, 500:700, :3] = (10, 200, 30)  # strips 4 and 5
    touched = set(strips_touched(Rect(500, 300, 200, 40), 1080))
    assert touched == {4, 5}
    second = encoder.encode(after, 85, reuse=first, changed=touched)
    assert np.array_equal(_decoded(second.join()), _decoded(_one_go(after)))
    for index, (old, new) in enumerate(zip(first.segments, second.segments, strict=True)):
        if index in touched:
            assert old != new
        else:
            assert old is new  # reused as it was, not encoded again


def test_reuse_trusts_the_changed_set(encoder: StripEncoder) -> None:
    # A change outside `changed` keeps the old strip: reuse really skips the encode,
    # so the caller's damage must be complete (the screen service's is).
    before = _desktop_like(640, 256)
    first = encoder.encode(before, 85)
    after = before.copy()
    after[0:STRIP_ROWS, :, :3] = 0  # strip 0, not reported
    after[STRIP_ROWS : 2 * STRIP_ROWS, :, :3] = 255  # strip 1, reported
    second = _decoded(encoder.encode(after, 85, reuse=first, changed={1}).join())
    # The decoder's chroma upsampling blends a row or two across a strip edge: compare
    # away from it.
    edge = 4
    expected = _decoded(_one_go(after))
    assert np.array_equal(second[STRIP_ROWS + edge :], expected[STRIP_ROWS + edge :])
    old = _decoded(_one_go(before))
    assert np.array_equal(second[: STRIP_ROWS - edge], old[: STRIP_ROWS - edge])


@pytest.mark.parametrize(("size", "quality"), [((640, 320), 85), ((640, 256), 60)])
def test_a_frame_of_another_size_or_quality_is_encoded_whole(
    encoder: StripEncoder, size: tuple[int, int], quality: int
) -> None:
    first = encoder.encode(_desktop_like(640, 256), 85)
    image = _desktop_like(*size, seed=3)
    again = encoder.encode(image, quality, reuse=first, changed=())
    assert np.array_equal(_decoded(again.join()), _decoded(_one_go(image, quality)))


def test_changed_indexes_outside_the_image_are_ignored(encoder: StripEncoder) -> None:
    image = _desktop_like(320, 200)
    first = encoder.encode(image, 85)
    again = encoder.encode(image, 85, reuse=first, changed={-1, 4, 99})
    assert again.join() == first.join()


@pytest.mark.parametrize(
    ("rect", "expected"),
    [
        (Rect(0, 0, 10, 1), range(0, 1)),
        (Rect(0, 63, 10, 2), range(0, 2)),
        (Rect(0, 64, 10, 64), range(1, 2)),
        (Rect(0, 1070, 10, 50), range(16, 17)),  # clipped to the height
        (Rect(0, 1080, 10, 5), range(0)),
        (Rect(0, -5, 10, 5), range(0)),
    ],
)
def test_strips_touched(rect: Rect, expected: range) -> None:
    assert strips_touched(rect, 1080) == expected


def test_an_encoder_error_reaches_the_caller_and_the_encoder_goes_on(
    encoder: StripEncoder,
) -> None:
    wrong_type = np.zeros((300, 200, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=r"(?i)uint8|dtype|type"):
        encoder.encode(wrong_type, 85)  # type: ignore[arg-type]
    image = _desktop_like(200, 300)
    assert np.array_equal(_decoded(encoder.encode(image, 85).join()), _decoded(_one_go(image)))


def test_close_ends_the_helper_threads() -> None:
    encoder = StripEncoder(helpers=2)
    helpers = [t for t in threading.enumerate() if t.name.startswith("rigway-jpeg-")]
    assert len(helpers) >= 2
    encoder.close()
    for thread in helpers:
        thread.join(timeout=5)
    assert not any(t.is_alive() for t in helpers)
    # Closed, it still encodes, on the caller's thread alone.
    image = _desktop_like(200, 300)
    assert np.array_equal(_decoded(encoder.encode(image, 85).join()), _decoded(_one_go(image)))


def test_helpers_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="helpers"):
        StripEncoder(helpers=-1)
