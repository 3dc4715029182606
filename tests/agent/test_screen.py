from __future__ import annotations

import numpy as np
import pytest
import simplejpeg

from rigway.agent.backends.base import Pixels, Rect
from rigway.agent.imaging import Mark
from rigway.agent.runner import encode_thread_count
from rigway.agent.screen import (
    MAX_DIRTY_RECTS,
    CaptureParams,
    RegionOutsideDesktopError,
    ScreenService,
    merge_rects,
)
from rigway.agent.worker import SerialWorker
from tests.agent.fakes import FakeDesktop


@pytest.fixture
def desktop() -> FakeDesktop:
    return FakeDesktop(320, 200)


@pytest.fixture
def screen(desktop: FakeDesktop, screen_worker: SerialWorker) -> ScreenService:
    return ScreenService(desktop, screen_worker)


async def test_capture_returns_jpeg_with_sizes(screen: ScreenService) -> None:
    frame = await screen.capture(CaptureParams(quality=80, max_width=160))
    height, width, _, _ = simplejpeg.decode_jpeg_header(frame.jpeg)
    assert (frame.width, frame.height, width, height) == (160, 100, 160, 100)
    assert (frame.native_width, frame.native_height) == (320, 200)
    assert not frame.cached
    assert frame.host_jpeg_ms > 0


async def test_second_capture_without_damage_is_cached(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    first = await screen.capture(CaptureParams())
    second = await screen.capture(CaptureParams())
    assert desktop.grab_count == 1
    assert second.cached
    assert second.jpeg == first.jpeg


async def test_damage_invalidates_the_cache(screen: ScreenService, desktop: FakeDesktop) -> None:
    await screen.capture(CaptureParams())
    desktop.damage(Rect(0, 0, 10, 10))
    again = await screen.capture(CaptureParams())
    assert desktop.grab_count == 2
    assert not again.cached


async def test_damage_after_the_grab_is_never_hidden_by_the_new_frame(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    # The reply is out; the screen changes before the next poll.
    await screen.capture(CaptureParams(), lambda _: desktop.damage(Rect(0, 0, 5, 5)))
    again = await screen.capture(CaptureParams())
    assert not again.cached
    assert desktop.grab_count == 2
    dirty = await screen.take_dirty()
    assert [list(rect) for rect in dirty.rects] == [[0, 0, 5, 5]]


async def test_different_params_reencode(screen: ScreenService, desktop: FakeDesktop) -> None:
    await screen.capture(CaptureParams(quality=85))
    other_quality = await screen.capture(CaptureParams(quality=60))
    other_region = await screen.capture(CaptureParams(quality=60, region=Rect(0, 0, 50, 50)))
    with_marks = await screen.capture(
        CaptureParams(quality=60, region=Rect(0, 0, 50, 50), marks=(Mark("t_1", 1, 1, 5, 5),))
    )
    assert not (other_quality.cached)
    assert not (other_region.cached)
    assert not (with_marks.cached)
    assert with_marks.marked
    assert desktop.grab_count == 4


async def test_without_damage_support_every_capture_grabs(
    screen_worker: SerialWorker,
) -> None:
    desktop = FakeDesktop(has_damage=False)
    screen = ScreenService(desktop, screen_worker)
    await screen.capture(CaptureParams())
    second = await screen.capture(CaptureParams())
    assert not second.cached
    assert desktop.grab_count == 2


async def test_region_outside_desktop_is_refused(screen: ScreenService) -> None:
    with pytest.raises(RegionOutsideDesktopError):
        await screen.capture(CaptureParams(region=Rect(300, 0, 21, 10)))


async def test_region_touching_the_edge_is_accepted(screen: ScreenService) -> None:
    frame = await screen.capture(CaptureParams(region=Rect(300, 190, 20, 10)))
    assert (frame.width, frame.height) == (20, 10)


async def test_dirty_is_consumed_on_read(screen: ScreenService, desktop: FakeDesktop) -> None:
    desktop.damage(Rect(5, 5, 10, 10))
    first = await screen.take_dirty()
    second = await screen.take_dirty()
    assert first.available
    assert first.rects == [(5, 5, 10, 10)]
    assert second.available
    assert second.rects == []


async def test_capture_does_not_consume_dirty(screen: ScreenService, desktop: FakeDesktop) -> None:
    desktop.damage(Rect(5, 5, 10, 10))
    await screen.capture(CaptureParams())
    dirty = await screen.take_dirty()
    assert dirty.rects == [(5, 5, 10, 10)]


async def test_returned_dirty_merges_into_the_next_take(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    desktop.damage(Rect(5, 5, 10, 10))
    taken = await screen.take_dirty()
    desktop.damage(Rect(15, 5, 5, 5), Rect(200, 100, 4, 4))
    await screen.return_dirty([Rect(*rect) for rect in taken.rects])
    dirty = await screen.take_dirty()
    assert dirty.rects == [(5, 5, 15, 10), (200, 100, 4, 4)]
    assert (await screen.take_dirty()).rects == []


async def test_returned_dirty_is_clipped_to_the_desktop(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    await screen.return_dirty([Rect(310, 190, 50, 50), Rect(1000, 1000, 5, 5)])
    assert (await screen.take_dirty()).rects == [(310, 190, 10, 10)]


async def test_dirty_accumulates_merged_and_clipped(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    desktop.damage(Rect(0, 0, 10, 10), Rect(5, 5, 10, 10), Rect(310, 190, 50, 50))
    await screen.capture(CaptureParams())  # polls once, the rest arrive at the read
    desktop.damage(Rect(100, 100, 1, 1))
    dirty = await screen.take_dirty()
    assert dirty.rects == [(0, 0, 15, 15), (100, 100, 1, 1), (310, 190, 10, 10)]


async def test_dirty_unavailable_without_damage(screen_worker: SerialWorker) -> None:
    screen = ScreenService(FakeDesktop(has_damage=False), screen_worker)
    dirty = await screen.take_dirty()
    assert not dirty.available
    assert dirty.rects == []
    assert dirty.capture_mode == "fake"


async def test_reset_forgets_damage_and_frame(screen: ScreenService, desktop: FakeDesktop) -> None:
    await screen.capture(CaptureParams())
    desktop.damage(Rect(1, 1, 2, 2))
    await screen.reset()
    assert (await screen.take_dirty()).rects == []
    assert not (await screen.capture(CaptureParams())).cached


def _decoded(jpeg: bytes) -> Pixels:
    pixels: Pixels = simplejpeg.decode_jpeg(jpeg, colorspace="BGR")
    return pixels


def _paint(desktop: FakeDesktop, top: int, value: int) -> None:
    desktop.pixels[top : top + 16, 40:120, :3] = value


async def test_a_changed_whole_desktop_is_encoded_again_where_damage_says(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    await screen.capture(CaptureParams())
    _paint(desktop, 8, 0)  # strip 0
    _paint(desktop, 136, 0)  # strip 2
    desktop.damage(Rect(40, 8, 80, 16), Rect(40, 136, 80, 16))
    fresh = await screen.capture(CaptureParams())
    expected = simplejpeg.encode_jpeg(
        desktop.pixels, quality=85, colorspace="BGRA", colorsubsampling="420"
    )
    assert np.array_equal(_decoded(fresh.jpeg), _decoded(expected))
    # Damage is what decides: a strip changed without damage keeps its old bytes, which
    # shows the others were not encoded again (a real backend reports every change).
    _paint(desktop, 72, 0)  # strip 1, not reported
    _paint(desktop, 8, 255)  # strip 0, reported
    desktop.damage(Rect(40, 8, 80, 16))
    partial = _decoded((await screen.capture(CaptureParams())).jpeg)
    assert partial[72:88, 40:120].mean() > 150  # still the old light grey
    assert partial[8:24, 40:120].mean() > 240


async def test_region_and_scaled_captures_leave_the_whole_desktop_strips_right(
    screen: ScreenService, desktop: FakeDesktop
) -> None:
    await screen.capture(CaptureParams())
    _paint(desktop, 136, 0)
    desktop.damage(Rect(40, 136, 80, 16))
    await screen.capture(CaptureParams(region=Rect(0, 0, 64, 64)))
    await screen.capture(CaptureParams(max_width=100))
    whole = await screen.capture(CaptureParams())
    assert not whole.cached
    assert _decoded(whole.jpeg)[136:152, 40:120].mean() < 10


async def test_without_damage_every_whole_capture_is_encoded_whole(
    screen_worker: SerialWorker,
) -> None:
    desktop = FakeDesktop(320, 200, has_damage=False)
    screen = ScreenService(desktop, screen_worker)
    await screen.capture(CaptureParams())
    _paint(desktop, 72, 0)  # nothing can report it
    again = await screen.capture(CaptureParams())
    assert _decoded(again.jpeg)[72:88, 40:120].mean() < 10


async def test_reset_forgets_the_strips(screen: ScreenService, desktop: FakeDesktop) -> None:
    await screen.capture(CaptureParams())
    _paint(desktop, 72, 0)  # unreported, so only a whole encode shows it
    await screen.reset()
    desktop.damage(Rect(0, 0, 1, 1))
    again = await screen.capture(CaptureParams())
    assert _decoded(again.jpeg)[72:88, 40:120].mean() < 10


class _LaggingSizeDesktop(FakeDesktop):
    """Learns its size from its grabs, as the x11 backend does: after a resize,
    `native_size` and the damage clipped to it are stale until the next grab."""

    def __init__(self, width: int, height: int) -> None:
        super().__init__(width, height)
        self.size = (width, height)

    def resize_to(self, height: int, value: int) -> None:
        self.pixels = np.full((height, self.pixels.shape[1], 4), value, dtype=np.uint8)

    def grab(self) -> Pixels:
        self.size = (self.pixels.shape[1], self.pixels.shape[0])
        return super().grab()


async def test_strips_from_before_a_resize_are_never_reused(
    screen_worker: SerialWorker,
) -> None:
    desktop = _LaggingSizeDesktop(320, 256)
    screen = ScreenService(desktop, screen_worker)
    await screen.capture(CaptureParams())  # strips of the 256-row desktop
    desktop.resize_to(128, 90)
    desktop.damage(Rect(0, 0, 320, 128))
    await screen.capture(CaptureParams(region=Rect(0, 0, 16, 16)))  # learns 128 rows
    desktop.resize_to(256, 30)
    desktop.damage(Rect(0, 0, 320, 128))  # clipped to the size the backend knew
    whole = _decoded((await screen.capture(CaptureParams())).jpeg)
    assert whole.shape[0] == 256
    assert abs(float(whole[128:].mean()) - 30) < 3  # not the 200 of the first frame


class _SharedBufferDesktop(FakeDesktop):
    """Hands out its live buffer, as a zero-copy capture does."""

    def grab(self) -> Pixels:
        self.grab_count += 1
        return self.pixels


async def test_stream_pixels_are_the_streams_own(screen_worker: SerialWorker) -> None:
    desktop = _SharedBufferDesktop(64, 32)
    screen = ScreenService(desktop, screen_worker)
    watch = await screen.open_watch()
    pixels = await screen.stream_pixels(watch)
    assert pixels is not None
    desktop.pixels[:] = 0  # the next grab overwrites the live buffer
    assert int(pixels.min()) == 200


def test_the_runner_encodes_with_one_thread_per_cpu_up_to_four() -> None:
    assert encode_thread_count(3) == 3
    assert 1 <= encode_thread_count(None) <= 4


def test_merge_joins_touching_rects_transitively() -> None:
    # c touches only the union of a and b.
    a, b, c = Rect(0, 0, 10, 10), Rect(20, 0, 10, 10), Rect(5, 0, 20, 5)
    assert merge_rects([a, b, c], 100, 100) == [Rect(0, 0, 30, 10)]


def test_merge_collapses_to_bounds_past_the_cap() -> None:
    rects = [Rect(i * 3, 0, 1, 1) for i in range(MAX_DIRTY_RECTS + 1)]
    assert merge_rects(rects, 1000, 10) == [Rect(0, 0, MAX_DIRTY_RECTS * 3 + 1, 1)]


def test_merge_drops_rects_outside() -> None:
    assert merge_rects([Rect(200, 200, 5, 5), Rect(0, 0, 0, 5)], 100, 100) == []
