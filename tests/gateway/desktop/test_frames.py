"""The frame registry: what a frame id maps to, how many a session keeps, and that one
session never reaches another's frames."""

from __future__ import annotations

import pytest

from rigway.agent.imaging import scaled_size
from rigway.gateway.desktop.delta import (
    MAX_IMAGES,
    MERGE_GAP,
    bounding_box,
    changed_regions,
    picture_size,
    scaled_region,
    target_digests,
    targets_diff,
)
from rigway.gateway.desktop.frames import MAX_FRAME_TARGETS, Frame, FrameRegistry
from rigway.gateway.desktop.schemas import TargetOut
from rigway.protocol import ops

WHOLE_DESKTOP = (0, 0, 1920, 1080)


def _remember(
    frames: FrameRegistry,
    session_id: str = "ses_a",
    *,
    region: tuple[int, int, int, int] = WHOLE_DESKTOP,
    image: tuple[int, int] = (1920, 1080),
    damage_mark: int = 0,
) -> Frame:
    return frames.remember(
        session_id,
        region=region,
        image_width=image[0],
        image_height=image[1],
        damage_mark=damage_mark,
    )


def test_a_remembered_frame_is_found_by_its_id_with_what_it_showed() -> None:
    frames = FrameRegistry()
    frame = _remember(frames, region=(10, 20, 300, 200), image=(150, 100), damage_mark=7)
    assert frames.get("ses_a", frame.frame_id) == frame
    assert frame.region == (10, 20, 300, 200)
    assert (frame.image_width, frame.image_height, frame.damage_mark) == (150, 100, 7)


def test_frame_ids_are_new_each_time_and_unguessable() -> None:
    frames = FrameRegistry()
    ids = {_remember(frames).frame_id for _ in range(20)}
    assert len(ids) == 20
    assert all(i.startswith("frm_") and len(i) >= 4 + 24 for i in ids)


def test_an_unknown_id_is_none() -> None:
    frames = FrameRegistry()
    _remember(frames)
    assert frames.get("ses_a", "frm_000000000000000000000000") is None
    assert frames.get("ses_never", "frm_000000000000000000000000") is None


def test_another_sessions_frame_id_is_none() -> None:
    frames = FrameRegistry()
    mine = _remember(frames, "ses_a")
    theirs = _remember(frames, "ses_b")
    assert frames.get("ses_a", theirs.frame_id) is None
    assert frames.get("ses_b", mine.frame_id) is None
    assert frames.get("ses_b", theirs.frame_id) == theirs


def test_a_session_keeps_only_its_last_frames() -> None:
    frames = FrameRegistry(per_session=3)
    made = [_remember(frames) for _ in range(5)]
    assert [frames.get("ses_a", f.frame_id) for f in made[:2]] == [None, None]
    assert all(frames.get("ses_a", f.frame_id) == f for f in made[2:])


def test_the_default_keeps_more_than_the_sixteen_frames_promised() -> None:
    frames = FrameRegistry()
    made = [_remember(frames) for _ in range(17)]
    assert frames.get("ses_a", made[0].frame_id) == made[0]


def test_a_frame_in_use_outlives_newer_frames_nobody_used() -> None:
    frames = FrameRegistry(per_session=2)
    used = _remember(frames)
    unused = _remember(frames)
    assert frames.get("ses_a", used.frame_id) == used
    _remember(frames)
    assert frames.get("ses_a", used.frame_id) == used
    assert frames.get("ses_a", unused.frame_id) is None


def test_one_sessions_frames_never_push_out_anothers() -> None:
    frames = FrameRegistry(per_session=2)
    kept = _remember(frames, "ses_a")
    for _ in range(10):
        _remember(frames, "ses_b")
    assert frames.get("ses_a", kept.frame_id) == kept


def test_a_forgotten_session_has_no_frames_left() -> None:
    frames = FrameRegistry()
    gone = _remember(frames, "ses_a")
    stays = _remember(frames, "ses_b")
    frames.forget_session("ses_a")
    frames.forget_session("ses_never")  # forgetting nothing is fine
    assert frames.get("ses_a", gone.frame_id) is None
    assert frames.get("ses_b", stays.frame_id) == stays
    assert len(frames) == 1


@pytest.mark.parametrize("per_session", [0, -1])
def test_a_registry_that_keeps_nothing_is_refused(per_session: int) -> None:
    with pytest.raises(ValueError, match="at least one"):
        FrameRegistry(per_session=per_session)


@pytest.mark.parametrize(
    ("region", "image"), [((0, 0, 0, 10), (10, 10)), (WHOLE_DESKTOP, (0, 540))]
)
def test_a_frame_of_no_pixels_is_refused(
    region: tuple[int, int, int, int], image: tuple[int, int]
) -> None:
    with pytest.raises(ValueError, match="at least one pixel"):
        _remember(FrameRegistry(), region=region, image=image)


# ---- image pixels to native pixels ---------------------------------------------------------


@pytest.mark.parametrize(
    ("point", "native"),
    [((0, 0), (0, 0)), ((640, 360), (640, 360)), ((1919, 1079), (1919, 1079))],
)
def test_a_full_size_shot_maps_every_pixel_to_itself(
    point: tuple[int, int], native: tuple[int, int]
) -> None:
    frame = _remember(FrameRegistry())
    assert frame.to_native(*point) == native


@pytest.mark.parametrize(
    ("point", "native"),
    [
        ((0, 0), (0, 0)),
        ((640, 360), (960, 540)),
        ((100, 50), (150, 75)),
        ((1279, 719), (1918, 1078)),
    ],
)
def test_a_downscaled_desktop_shot_scales_points_up(
    point: tuple[int, int], native: tuple[int, int]
) -> None:
    frame = _remember(FrameRegistry(), image=(1280, 720))  # max_width=1280: 1.5x
    assert frame.to_native(*point) == native


@pytest.mark.parametrize(
    ("point", "native"),
    [((0, 0), (400, 300)), ((99, 49), (499, 349)), ((50, 25), (450, 325))],
)
def test_a_region_shot_offsets_points_by_its_origin(
    point: tuple[int, int], native: tuple[int, int]
) -> None:
    frame = _remember(FrameRegistry(), region=(400, 300, 100, 50), image=(100, 50))
    assert frame.to_native(*point) == native


def test_a_downscaled_region_shot_scales_then_offsets() -> None:
    frame = _remember(FrameRegistry(), region=(1000, 200, 800, 400), image=(400, 200))
    assert frame.to_native(0, 0) == (1000, 200)
    assert frame.to_native(200, 100) == (1400, 400)
    assert frame.to_native(399, 199) == (1798, 598)


@pytest.mark.parametrize(
    ("point", "native"),
    [
        ((-5, 10), (400, 310)),
        ((5000, 10), (499, 310)),
        ((10, 9999), (410, 349)),
        ((-1, -1), (400, 300)),
    ],
)
def test_a_point_off_the_image_is_clamped_into_the_region(
    point: tuple[int, int], native: tuple[int, int]
) -> None:
    frame = _remember(FrameRegistry(), region=(400, 300, 100, 50), image=(100, 50))
    assert frame.to_native(*point) == native


# ---- what `observe?since=` keeps with a frame ------------------------------------------


def _target(target_id: str, *, focused: bool = False) -> TargetOut:
    return TargetOut(
        id=target_id,
        x=1,
        y=2,
        w=30,
        h=20,
        role="button",
        name="OK",
        source="uia",
        focused=focused,
        masked=False,
        value=None,
    )


def test_an_updated_frame_keeps_its_id_and_image_with_the_new_scope_and_mark() -> None:
    frames = FrameRegistry()
    frame = _remember(frames, region=(10, 20, 30, 40), image=(30, 40), damage_mark=3)
    updated = frames.update("ses_a", frame, damage_mark=9, scope=WHOLE_DESKTOP)
    kept = frames.get("ses_a", frame.frame_id)
    assert kept == updated
    assert (kept.region, kept.image_width, kept.damage_mark) == ((10, 20, 30, 40), 30, 9)
    assert (kept.covers, frame.covers) == (WHOLE_DESKTOP, (10, 20, 30, 40))


def test_a_frame_shown_with_too_many_targets_keeps_none() -> None:
    frames = FrameRegistry()
    many = tuple((f"t_{i}", i) for i in range(MAX_FRAME_TARGETS + 1))
    updated = frames.update("ses_a", _remember(frames), targets=many)
    assert updated.targets is None
    assert frames.update("ses_a", updated, targets=many[:2]).targets == many[:2]


def test_an_update_of_a_forgotten_frame_brings_nothing_back() -> None:
    frames = FrameRegistry()
    frame = _remember(frames)
    frames.forget_session("ses_a")
    frames.update("ses_a", frame, damage_mark=5)
    assert frames.get("ses_a", frame.frame_id) is None


def test_the_diff_sorts_targets_into_added_removed_and_changed() -> None:
    shown = target_digests([_target("t_keep"), _target("t_gone"), _target("t_edit")])
    now = [_target("t_keep"), _target("t_edit", focused=True), _target("t_new")]
    diff = targets_diff(shown, now)
    assert [t.id for t in diff.added] == ["t_new"]
    assert diff.removed == ["t_gone"]
    assert [t.id for t in diff.changed] == ["t_edit"]


def test_a_frame_shown_without_targets_makes_every_target_added() -> None:
    now = [_target("t_a"), _target("t_b")]
    diff = targets_diff(None, now)
    assert (diff.added, diff.removed, diff.changed) == (now, [], [])


def _changed(*rects: tuple[int, int, int, int], known: bool = True) -> ops.ScreenChanged:
    return ops.ScreenChanged(known=known, damage_mark=1, rects=list(rects))


def test_changed_areas_are_clipped_to_the_scope() -> None:
    scope = (100, 100, 200, 200)
    changed = _changed((90, 150, 20, 10), (250, 280, 100, 100), (0, 0, 50, 50))
    assert changed_regions(changed, scope) == [(250, 280, 50, 20), (100, 150, 10, 10)]


def test_near_areas_share_a_region_and_far_ones_do_not() -> None:
    near = MERGE_GAP - 1
    changed = _changed((0, 0, 10, 10), (10 + near, 0, 10, 10), (500, 500, 4, 4))
    assert changed_regions(changed, WHOLE_DESKTOP) == [(0, 0, 20 + near, 10), (500, 500, 4, 4)]


def test_too_many_regions_merge_the_closest_first() -> None:
    far = [(i * 200, 0, 5, 5) for i in range(MAX_IMAGES)]
    changed = _changed(*far, (0, 100, 5, 5))
    regions = changed_regions(changed, WHOLE_DESKTOP)
    assert len(regions) == MAX_IMAGES
    assert (0, 0, 5, 105) in regions  # the one below the first joined it
    assert bounding_box(regions) == (0, 0, (MAX_IMAGES - 1) * 200 + 5, 105)


def test_damage_outside_the_scope_is_no_change() -> None:
    assert changed_regions(_changed((0, 0, 50, 50)), (100, 100, 200, 200)) == []
    assert changed_regions(_changed(), WHOLE_DESKTOP) == []
    assert bounding_box([]) is None


def test_damage_that_cannot_be_told_is_the_whole_scope() -> None:
    assert changed_regions(_changed(known=False), (5, 6, 7, 8)) == [(5, 6, 7, 8)]


# ---- the delta image's scale: the full picture's ----------------------------------------


def _delta_image(
    region: tuple[int, int, int, int], scope: tuple[int, int, int, int], cap: int
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """What the host makes of the capture asked for: the region and its image size."""
    shown, max_width = scaled_region(region, scope, cap)
    return shown, scaled_size(shown[2], shown[3], max_width)


def test_the_picture_size_caps_the_long_edge_and_never_upscales() -> None:
    assert picture_size(1920, 1080, 1280) == (1280, 720)
    assert picture_size(1080, 1920, 1280) == (720, 1280)
    assert picture_size(800, 600, 1280) == (800, 600)
    assert picture_size(800, 600, None) == (800, 600)


def test_a_region_snaps_to_the_scale_grid_and_lands_on_whole_picture_pixels() -> None:
    # 1920 -> 1280 is 2/3: regions widen to multiples of 3 native pixels.
    shown, size = _delta_image((908, 339, 168, 34), WHOLE_DESKTOP, 1280)
    assert shown == (906, 339, 171, 36)
    assert size == (114, 24)  # region * 2/3, exactly
    # It pastes at (604, 226) of the 1280x720 picture, whole pixels.
    assert (shown[0] * 2 % 3, shown[1] * 2 % 3) == (0, 0)


def test_the_delta_image_has_the_full_pictures_scale_for_any_region() -> None:
    for region in ((0, 0, 1920, 1080), (269, 169, 1376, 736), (1, 2, 3, 4), (1917, 1077, 3, 3)):
        shown, size = _delta_image(region, WHOLE_DESKTOP, 1280)
        x, y, w, h = shown
        assert size == (round(w * 2 / 3), round(h * 2 / 3)), region
        assert min(x, y) >= 0, region
        assert x + w <= 1920, region
        assert y + h <= 1080, region
        assert x <= region[0] <= region[0] + region[2] <= x + w, region  # covers it
        assert y <= region[1] <= region[1] + region[3] <= y + h, region


def test_a_tiny_region_still_gets_an_image_the_host_can_be_asked_for() -> None:
    shown, max_width = scaled_region((500, 500, 1, 1), WHOLE_DESKTOP, 1280)
    assert max_width is not None
    assert max_width >= 16
    assert scaled_size(shown[2], shown[3], max_width)[0] >= 16


def test_a_scale_without_a_small_grid_is_within_a_pixel() -> None:
    # 1366 -> 1280 is 640/683 across (nothing to snap to), 768 -> 720 is 15/16 down.
    scope = (0, 0, 1366, 768)
    shown, size = _delta_image((101, 203, 400, 50), scope, 1280)
    assert shown == (101, 192, 400, 64)
    assert abs(size[0] - 400 * 1280 / 1366) <= 1
    assert abs(size[1] - 64 * 720 / 768) <= 1


def test_a_native_size_picture_asks_for_no_cap_and_no_snap() -> None:
    assert scaled_region((7, 9, 11, 13), WHOLE_DESKTOP, None) == ((7, 9, 11, 13), None)
    assert scaled_region((7, 9, 11, 13), WHOLE_DESKTOP, 4000) == ((7, 9, 11, 13), None)


def test_the_grid_runs_from_the_scopes_origin() -> None:
    # An app window at (101, 50), 900 wide, shown 600 wide: 2/3 from its own corner.
    scope = (101, 50, 900, 600)
    shown, size = _delta_image((205, 100, 50, 40), scope, 600)
    x, y, w, h = shown
    assert ((x - 101) % 3, (y - 50) % 3, w % 3, h % 3) == (0, 0, 0, 0)
    assert size == (w * 2 // 3, h * 2 // 3)
