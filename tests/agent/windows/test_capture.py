"""The capture roles over a scripted Desktop Duplication and GDI."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

from rigway.agent.backends.base import Rect
from rigway.agent.backends.windows import dxgi_types as dx
from rigway.agent.backends.windows.capture import (
    GDI_PROBE_INTERVAL_S,
    MAX_PENDING_RECTS,
    DxgiScreen,
    FrameInfo,
    GdiScreen,
    open_screen_over,
)
from rigway.agent.backends.windows.dxgi_policy import DxgiUnavailableError, HResultError
from rigway.agent.backends.windows.geometry import OutputPlacement
from tests.agent.windows.fake_capture import (
    FakeClock,
    FakeDuplication,
    FakeFrame,
    FakeGdi,
    fake_screen,
    ltrb,
)

RED = (0, 0, 255, 255)
GREEN = (0, 255, 0, 255)
WHOLE = Rect(0, 0, 64, 48)


def dxgi_screen(
    duplication: FakeDuplication, clock: FakeClock | None = None, *, gdi: bool = True
) -> DxgiScreen:
    port = FakeGdi(duplication) if gdi else None
    return DxgiScreen(duplication, clock or FakeClock(), port)


def settled(duplication: FakeDuplication, clock: FakeClock | None = None) -> DxgiScreen:
    """A screen whose first (whole-screen) poll is already taken."""
    screen = dxgi_screen(duplication, clock)
    assert screen.poll_damage() == [WHOLE]
    return screen


def test_first_poll_reports_whole_screen_then_nothing() -> None:
    screen = dxgi_screen(FakeDuplication(64, 48))
    assert screen.poll_damage() == [WHOLE]
    assert screen.poll_damage() == []


def test_paint_reported_by_poll_and_shown_by_grab() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.paint(Rect(10, 5, 4, 3), RED)
    assert screen.poll_damage() == [Rect(10, 5, 4, 3)]
    pixels = screen.grab()
    assert pixels.shape == (48, 64, 4)
    assert np.array_equal(pixels, duplication.desktop)


def test_grab_never_hands_out_mapped_memory() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.paint(Rect(0, 0, 2, 2), RED)
    pixels = screen.grab()
    assert duplication.last_mapped is not None
    assert not np.shares_memory(pixels, duplication.last_mapped.data)
    assert not duplication.is_staging_mapped


def test_grab_reuses_its_buffer() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    first = screen.grab()
    duplication.paint(Rect(0, 0, 2, 2), RED)
    assert screen.grab() is first


def test_grab_without_new_frame_maps_nothing() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    screen.grab()
    duplication.calls.clear()
    screen.grab()
    assert "map_staging" not in duplication.calls


def test_damage_drained_by_grab_kept_for_next_poll() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.paint(Rect(1, 1, 2, 2), RED)
    screen.grab()
    duplication.paint(Rect(30, 30, 5, 5), GREEN)
    assert screen.poll_damage() == [Rect(1, 1, 2, 2), Rect(30, 30, 5, 5)]


def test_poll_drains_frames_with_zero_timeout() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.acquire_timeouts_ms.clear()
    duplication.paint(Rect(1, 1, 2, 2), RED)
    screen.poll_damage()
    assert duplication.acquire_timeouts_ms == [0, 0]


def test_pointer_only_frame_skips_copy_and_damage() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.calls.clear()
    duplication.pointer_only()
    assert screen.poll_damage() == []
    assert "copy_frame_to_staging" not in duplication.calls
    assert duplication.holding is None


def test_moves_report_source_and_destination() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.paint(Rect(0, 0, 8, 8), RED)
    screen.poll_damage()
    duplication.move(Rect(0, 0, 8, 8), 20, 10)
    assert screen.poll_damage() == [Rect(20, 10, 8, 8), Rect(0, 0, 8, 8)]
    assert np.array_equal(screen.grab(), duplication.desktop)


def test_more_data_regrows_metadata_buffer() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.calls.clear()
    dirty = ltrb(Rect(1, 2, 3, 4)) + ltrb(Rect(10, 10, 1, 1))
    # A total smaller than the rects: DXGI answers MORE_DATA with the size it needs.
    info = FrameInfo(last_present_time=99, total_metadata_bytes=8)
    duplication.frames.append(FakeFrame(info, duplication.surface(), dirty_bytes=dirty))
    assert screen.poll_damage() == [Rect(1, 2, 3, 4), Rect(10, 10, 1, 1)]
    assert duplication.calls.count("frame_dirty_rects") == 2


def test_frame_without_metadata_reports_whole_screen() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    info = FrameInfo(last_present_time=99, total_metadata_bytes=0)
    duplication.frames.append(FakeFrame(info, duplication.surface()))
    assert screen.poll_damage() == [WHOLE]


def test_wait_timeout_is_no_change() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.fail_acquire(dx.DXGI_ERROR_WAIT_TIMEOUT)
    assert screen.poll_damage() == []
    assert duplication.created == 1


def test_access_lost_waits_before_recreating() -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.poll_damage()
    clock.advance(0.2)
    screen.poll_damage()
    assert duplication.created == 1


def test_access_lost_recreates_and_next_poll_reports_whole_screen() -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.poll_damage()
    clock.advance(0.25)
    duplication.first_frame_on_create = False
    assert screen.poll_damage() == [WHOLE]
    assert duplication.created == 2
    assert screen.poll_damage() == []


@pytest.mark.parametrize("code", [dx.DXGI_ERROR_DEVICE_REMOVED, dx.WAIT_ABANDONED])
def test_recreate_class_errors_rebuild_duplication(code: int) -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.fail_acquire(code)
    screen.poll_damage()
    clock.advance(0.25)
    screen.poll_damage()
    assert duplication.created == 2


def test_grab_while_lost_captures_through_gdi() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.poll_damage()
    duplication.desktop[:] = 7  # drawn while nothing duplicates it
    assert np.array_equal(screen.grab(), duplication.desktop)


def lost_screen(duplication: FakeDuplication, clock: FakeClock, gdi: FakeGdi) -> DxgiScreen:
    """A settled screen whose duplication was just lost (and not recreated yet)."""
    screen = DxgiScreen(duplication, clock, gdi)
    assert screen.poll_damage() == [WHOLE]
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    duplication.create_failures.extend(
        HResultError(dx.E_ACCESSDENIED, "DuplicateOutput") for _ in range(100)
    )
    return screen


def test_poll_while_lost_reports_nothing_when_gdi_sees_no_change() -> None:
    duplication, clock = FakeDuplication(64, 48), FakeClock()
    screen = lost_screen(duplication, clock, FakeGdi(duplication))
    polls = []
    for _ in range(5):
        polls.append(screen.poll_damage())
        clock.advance(GDI_PROBE_INTERVAL_S)
    assert polls == [[]] * 5


def test_poll_while_lost_and_gdi_refused_reports_nothing() -> None:
    duplication, clock = FakeDuplication(64, 48), FakeClock()
    gdi = FakeGdi(duplication, failure=OSError("BitBlt: access denied"))
    screen = lost_screen(duplication, clock, gdi)
    duplication.desktop[:] = 7  # the secure desktop: nothing can see it
    polls = []
    for _ in range(5):
        polls.append(screen.poll_damage())
        clock.advance(GDI_PROBE_INTERVAL_S)
    assert polls == [[]] * 5
    assert screen.grab().max() == 0  # the last frame


def test_poll_while_lost_reports_the_box_gdi_sees_changed() -> None:
    duplication, clock = FakeDuplication(64, 48), FakeClock()
    screen = lost_screen(duplication, clock, FakeGdi(duplication))
    screen.poll_damage()
    clock.advance(GDI_PROBE_INTERVAL_S)
    duplication.desktop[5:8, 10:14] = 7
    duplication.desktop[20, 30] = 9
    assert screen.poll_damage() == [Rect(10, 5, 21, 16)]
    clock.advance(GDI_PROBE_INTERVAL_S)
    assert screen.poll_damage() == []
    assert np.array_equal(screen.grab(), duplication.desktop)


def test_poll_while_lost_looks_through_gdi_at_most_once_an_interval() -> None:
    duplication, clock = FakeDuplication(64, 48), FakeClock()
    gdi = FakeGdi(duplication)
    screen = lost_screen(duplication, clock, gdi)
    screen.poll_damage()
    before = gdi.captures
    duplication.desktop[:] = 7
    assert screen.poll_damage() == []
    assert gdi.captures == before
    clock.advance(GDI_PROBE_INTERVAL_S)
    assert screen.poll_damage() == [WHOLE]
    assert gdi.captures == before + 1


def test_damage_drained_before_a_loss_is_still_reported() -> None:
    duplication, clock = FakeDuplication(64, 48), FakeClock()
    screen = settled(duplication, clock)
    duplication.paint(Rect(1, 2, 3, 4), RED)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.grab()
    assert screen.poll_damage() == [Rect(1, 2, 3, 4)]


def test_error_while_frame_held_still_releases_it() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.paint(Rect(1, 1, 2, 2), RED)
    duplication.failures["frame_dirty_rects"] = HResultError(
        dx.DXGI_ERROR_ACCESS_LOST, "GetFrameDirtyRects"
    )
    screen.poll_damage()
    assert duplication.holding is None
    assert duplication.calls[-1] == "release_frame"


def test_access_denied_on_recreate_retries_and_never_gives_up() -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = DxgiScreen(duplication, clock, FakeGdi(duplication), give_up_after=3)
    screen.poll_damage()
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.poll_damage()
    for _ in range(50):
        duplication.create_failures.append(HResultError(dx.E_ACCESSDENIED, "DuplicateOutput"))
    for _ in range(50):
        clock.advance(5.0)
        screen.poll_damage()
    assert not duplication.create_failures
    clock.advance(5.0)
    screen.poll_damage()
    assert duplication.created == 2


def test_access_lost_storm_gives_up_on_dxgi() -> None:
    duplication = FakeDuplication(64, 48, first_frame_on_create=False)
    clock = FakeClock()
    screen = DxgiScreen(duplication, clock, FakeGdi(duplication), give_up_after=3)
    for _ in range(2):
        duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
        screen.poll_damage()
        clock.advance(1.0)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    with pytest.raises(DxgiUnavailableError, match="3 attempts"):
        screen.poll_damage()


def test_fallback_screen_switches_to_gdi_after_giving_up() -> None:
    duplication = FakeDuplication(64, 48, first_frame_on_create=False)
    gdi = FakeGdi(duplication)
    clock = FakeClock()
    screen = open_screen_over(lambda: duplication, gdi, clock, give_up_after=2)
    assert screen.capture_mode == "dxgi"
    for _ in range(2):
        duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
        screen.poll_damage()
        clock.advance(1.0)
    assert (screen.capture_mode, screen.has_damage) == ("gdi", False)
    assert duplication.is_closed
    duplication.desktop[:] = 9
    assert np.array_equal(screen.grab(), duplication.desktop)


def test_switch_poll_reports_whole_screen() -> None:
    duplication = FakeDuplication(64, 48, first_frame_on_create=False)
    clock = FakeClock()
    screen = open_screen_over(lambda: duplication, FakeGdi(duplication), clock, give_up_after=1)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    assert screen.poll_damage() == [WHOLE]
    assert screen.capture_mode == "gdi"


def test_fatal_creation_opens_gdi() -> None:
    duplication = FakeDuplication(64, 48)
    failure = HResultError(dx.E_INVALIDARG, "D3D11CreateDevice on \\\\.\\DISPLAY1")
    duplication.create_failures.append(failure)
    gdi = FakeGdi(duplication)
    screen = open_screen_over(lambda: duplication, gdi, FakeClock())
    assert (screen.capture_mode, screen.has_damage) == ("gdi", False)
    assert duplication.is_closed


def test_no_dxgi_at_all_opens_gdi() -> None:
    def no_dxgi() -> FakeDuplication:
        raise OSError("dxgi.dll missing")

    duplication = FakeDuplication(64, 48)
    screen = open_screen_over(no_dxgi, FakeGdi(duplication), FakeClock())
    assert screen.capture_mode == "gdi"


def test_transient_creation_failure_without_gdi_refused() -> None:
    duplication = FakeDuplication(64, 48)
    duplication.create_failures.append(HResultError(dx.E_ACCESSDENIED, "DuplicateOutput"))
    with pytest.raises(DxgiUnavailableError):
        dxgi_screen(duplication, gdi=False)


def test_transient_creation_failure_with_gdi_shows_gdi_meanwhile() -> None:
    duplication = FakeDuplication(64, 48)
    duplication.create_failures.append(HResultError(dx.E_ACCESSDENIED, "DuplicateOutput"))
    duplication.desktop[:] = 3
    screen = dxgi_screen(duplication)
    assert screen.placement() == OutputPlacement(0, 0, 64, 48)
    assert np.array_equal(screen.grab(), duplication.desktop)


def test_first_frame_waits_up_to_500_ms() -> None:
    duplication = FakeDuplication(64, 48)
    dxgi_screen(duplication)
    assert duplication.acquire_timeouts_ms[0] == 500


def test_first_frame_missing_seeds_from_gdi() -> None:
    duplication = FakeDuplication(64, 48, first_frame_on_create=False)
    duplication.desktop[:] = 5
    gdi = FakeGdi(duplication)
    screen = DxgiScreen(duplication, FakeClock(), gdi)
    assert gdi.captures == 1
    assert np.array_equal(screen.grab(), duplication.desktop)


def test_size_change_next_poll_whole_new_screen_and_new_grab_size() -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.change_mode(80, 60)
    screen.poll_damage()
    clock.advance(0.25)
    assert screen.poll_damage() == [Rect(0, 0, 80, 60)]
    assert screen.grab().shape == (60, 80, 4)
    assert screen.placement() == OutputPlacement(0, 0, 80, 60)


def test_rotation_change_turns_pixels_and_damage() -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.change_mode(48, 64, dx.DXGI_MODE_ROTATION_ROTATE90)
    screen.poll_damage()
    clock.advance(0.25)
    assert screen.poll_damage() == [Rect(0, 0, 48, 64)]
    duplication.paint(Rect(40, 2, 5, 3), RED)
    assert screen.poll_damage() == [Rect(40, 2, 5, 3)]
    pixels = screen.grab()
    assert pixels.shape == (64, 48, 4)
    assert np.array_equal(pixels, duplication.desktop)


@pytest.mark.parametrize(
    "rotation",
    [dx.DXGI_MODE_ROTATION_ROTATE180, dx.DXGI_MODE_ROTATION_ROTATE270],
)
def test_rotated_output_grab_matches_desktop(rotation: int) -> None:
    duplication = FakeDuplication(48, 64, rotation=rotation)
    screen = dxgi_screen(duplication)
    screen.poll_damage()
    duplication.paint(Rect(3, 50, 7, 2), GREEN)
    assert screen.poll_damage() == [Rect(3, 50, 7, 2)]
    assert np.array_equal(screen.grab(), duplication.desktop)


def test_system_memory_image_mapped_without_staging() -> None:
    duplication = FakeDuplication(64, 48, system_memory=True)
    screen = settled(duplication)
    duplication.paint(Rect(0, 0, 3, 3), RED)
    pixels = screen.grab()
    assert "copy_frame_to_staging" not in duplication.calls
    assert np.array_equal(pixels, duplication.desktop)


def test_system_memory_refused_falls_back_to_staging() -> None:
    duplication = FakeDuplication(64, 48, system_memory=True)
    duplication.failures["map_desktop_surface"] = HResultError(
        dx.DXGI_ERROR_UNSUPPORTED, "MapDesktopSurface"
    )
    screen = settled(duplication)
    duplication.paint(Rect(0, 0, 3, 3), RED)
    pixels = screen.grab()
    assert duplication.calls.count("map_desktop_surface") == 1
    assert np.array_equal(pixels, duplication.desktop)


def test_many_pending_rects_collapse_to_whole_screen() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    for index in range(MAX_PENDING_RECTS + 1):
        duplication.paint(Rect(index % 64, 0, 1, 1), RED)
        screen.grab()
    assert screen.poll_damage() == [WHOLE]


def test_placement_includes_output_origin() -> None:
    duplication = FakeDuplication(64, 48, left=-64, top=10)
    screen = dxgi_screen(duplication)
    assert screen.placement() == OutputPlacement(-64, 10, 64, 48)


def test_close_closes_duplication_and_gdi() -> None:
    duplication = FakeDuplication(64, 48)
    gdi = FakeGdi(duplication)
    screen = open_screen_over(lambda: duplication, gdi, FakeClock())
    screen.close()
    assert duplication.is_closed
    assert gdi.is_closed


def test_gdi_screen_grab_is_a_copy_without_damage() -> None:
    duplication = FakeDuplication(64, 48)
    screen = GdiScreen(FakeGdi(duplication))
    duplication.desktop[:] = 1
    pixels = screen.grab()
    duplication.desktop[:] = 2
    assert int(pixels[0, 0, 0]) == 1
    assert screen.poll_damage() == []
    assert (screen.capture_mode, screen.has_damage) == ("gdi", False)


def test_fake_screen_paint_round_trip() -> None:
    screen, duplication = fake_screen(32, 16)
    assert screen.poll_damage() == [Rect(0, 0, 32, 16)]
    duplication.paint(Rect(4, 4, 2, 2), GREEN)
    assert screen.poll_damage() == [Rect(4, 4, 2, 2)]
    assert tuple(screen.grab()[5, 5]) == GREEN


# ---- a lost duplication is gone before the next is made -------------------------------


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    """Only reference counting frees objects: what a cycle holds stays alive."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


LOSSES_WHILE_A_FRAME_IS_HELD = [
    ("frame_dirty_rects", "GetFrameDirtyRects"),
    ("copy_frame_to_staging", "QueryInterface(ID3D11Texture2D)"),
    ("release_frame", "ReleaseFrame"),
]


@pytest.mark.usefixtures("no_cycle_collector")
@pytest.mark.parametrize(("method", "operation"), LOSSES_WHILE_A_FRAME_IS_HELD)
def test_a_duplication_lost_while_a_frame_is_held_is_freed_at_once(
    method: str, operation: str
) -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.paint(Rect(1, 1, 2, 2), RED)
    duplication.failures[method] = HResultError(dx.DXGI_ERROR_ACCESS_LOST, operation)
    screen.poll_damage()
    first = duplication.made[0]
    duplication.close()  # drops the port's own reference, as a recreate does first
    assert first() is None


@pytest.mark.usefixtures("no_cycle_collector")
@pytest.mark.parametrize(("method", "operation"), LOSSES_WHILE_A_FRAME_IS_HELD)
def test_a_duplication_lost_while_a_frame_is_held_is_recreated(method: str, operation: str) -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.paint(Rect(1, 1, 2, 2), RED)
    duplication.failures[method] = HResultError(dx.DXGI_ERROR_ACCESS_LOST, operation)
    screen.poll_damage()
    clock.advance(0.25)
    assert screen.poll_damage() == [WHOLE]
    assert duplication.created == 2
    assert screen.capture_mode == "dxgi"


@pytest.mark.usefixtures("no_cycle_collector")
def test_a_duplication_lost_on_acquire_is_freed_at_once() -> None:
    duplication = FakeDuplication(64, 48)
    screen = settled(duplication)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.poll_damage()
    duplication.close()
    assert duplication.made[0]() is None


def test_a_duplication_still_alive_delays_the_next_without_giving_up() -> None:
    duplication = FakeDuplication(64, 48)
    clock = FakeClock()
    screen = settled(duplication, clock)
    duplication.fail_acquire(dx.DXGI_ERROR_ACCESS_LOST)
    screen.poll_damage()
    duplication.create_failures.append(HResultError(dx.E_INVALIDARG, "DuplicateOutput"))
    clock.advance(0.25)
    screen.poll_damage()
    clock.advance(0.25)
    assert screen.poll_damage() == [WHOLE]
    assert duplication.created == 2


def test_the_fake_refuses_a_second_duplication_while_the_first_lives() -> None:
    duplication = FakeDuplication(64, 48)
    duplication.create()
    kept = duplication.made[0]()
    with pytest.raises(HResultError) as raised:
        duplication.create()
    assert raised.value.hresult == dx.E_INVALIDARG
    assert kept is not None
