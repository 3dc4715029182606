"""The scope of an app session (`rigway.agent.app_scope`): which window it sees, what of
it is blacked out, which targets and pointer events it may have."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rigway.agent.app_scope import (
    BLACK_BGRA,
    AppScope,
    AppView,
    NoAppWindowError,
    OutsideAppWindowError,
    check_key_events,
    check_pointer_events,
    check_region,
    clip_rects,
    find_app_view,
    merged_view,
    scoped_pixels,
    scoped_snapshot,
    shifted_marks,
)
from rigway.agent.backends.base import (
    AccessibilitySnapshot,
    AccessibleElement,
    Pixels,
    Rect,
    StackedWindow,
    WalkBudget,
)
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.imaging import Mark
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.fakes import FakeDesktop

OURS = 100
THEIRS = 200
WIDTH, HEIGHT = 800, 600


def window(wid: int, pid: int | None, rect: Rect, *, popup: bool = False) -> StackedWindow:
    return StackedWindow(wid, pid, rect, is_popup=popup)


# -- which window, what is hidden ---------------------------------------------------------


def test_the_frontmost_owned_window_is_the_view() -> None:
    stack = [
        window(1, OURS, Rect(300, 300, 100, 100)),
        window(2, OURS, Rect(10, 10, 200, 200)),
    ]
    view = find_app_view(stack, frozenset({OURS}), WIDTH, HEIGHT)
    assert view == AppView(Rect(300, 300, 100, 100))


def test_a_foreign_window_above_is_hidden_where_it_overlaps() -> None:
    stack = [
        window(9, THEIRS, Rect(150, 50, 300, 100)),
        window(1, OURS, Rect(100, 100, 200, 200)),
        window(8, THEIRS, Rect(0, 0, 800, 600)),  # below: the app covers it
    ]
    view = find_app_view(stack, frozenset({OURS}), WIDTH, HEIGHT)
    assert view == AppView(Rect(100, 100, 200, 200), (Rect(150, 100, 150, 50),))


def test_windows_of_unknown_owners_are_foreign() -> None:
    stack = [window(9, None, Rect(0, 0, 120, 120)), window(1, OURS, Rect(100, 100, 50, 50))]
    view = find_app_view(stack, frozenset({OURS}), WIDTH, HEIGHT)
    assert view is not None
    assert view.hidden == (Rect(100, 100, 20, 20),)


def test_the_apps_own_popups_stay_visible_but_are_never_the_window() -> None:
    stack = [
        window(3, OURS, Rect(120, 120, 40, 40), popup=True),
        window(1, OURS, Rect(100, 100, 200, 200)),
    ]
    view = find_app_view(stack, frozenset({OURS}), WIDTH, HEIGHT)
    assert view == AppView(Rect(100, 100, 200, 200))


def test_a_window_off_the_capture_is_passed_over_and_one_across_its_edge_clipped() -> None:
    stack = [
        window(1, OURS, Rect(2000, 0, 100, 100)),
        window(2, OURS, Rect(-50, 550, 200, 200)),
    ]
    view = find_app_view(stack, frozenset({OURS}), WIDTH, HEIGHT)
    assert view == AppView(Rect(0, 550, 150, 50))


def test_no_owned_window_is_no_view() -> None:
    stack = [window(9, THEIRS, Rect(0, 0, 120, 100)), window(3, OURS, Rect(0, 0, 9, 9), popup=True)]
    assert find_app_view(stack, frozenset({OURS}), WIDTH, HEIGHT) is None


def test_merging_two_reads_keeps_what_either_hid() -> None:
    first = AppView(Rect(0, 0, 120, 100), (Rect(0, 0, 10, 10),))
    second = AppView(Rect(0, 0, 120, 100), (Rect(50, 50, 80, 80), Rect(0, 0, 10, 10)))
    merged = merged_view(first, second)
    assert merged.hidden == (Rect(0, 0, 10, 10), Rect(50, 50, 70, 50))


# -- pixels -------------------------------------------------------------------------------


def _frame() -> Pixels:
    rng = np.random.default_rng(7)
    frame: Pixels = rng.integers(1, 255, size=(HEIGHT, WIDTH, 4), dtype=np.uint8)
    return frame


def test_pixels_are_the_window_with_hidden_parts_black_and_nothing_else_changed() -> None:
    frame = _frame()
    view = AppView(Rect(100, 100, 200, 150), (Rect(250, 100, 50, 40), Rect(100, 230, 10, 20)))

    out = scoped_pixels(frame, view)

    assert out.shape == (150, 200, 4)
    expected = frame[100:250, 100:300].copy()
    expected[0:40, 150:200] = BLACK_BGRA
    expected[130:150, 0:10] = BLACK_BGRA
    assert np.array_equal(out, expected)
    assert np.array_equal(frame, _frame())  # the grab itself is left alone


def test_a_region_inside_the_window_is_cropped_with_its_share_of_black() -> None:
    frame = _frame()
    view = AppView(Rect(100, 100, 200, 150), (Rect(250, 100, 50, 40),))

    out = scoped_pixels(frame, view, Rect(240, 110, 30, 10))

    expected = frame[110:120, 240:270].copy()
    expected[:, 10:] = BLACK_BGRA
    assert np.array_equal(out, expected)


def test_marks_move_with_the_crop() -> None:
    marks = (Mark("1", 150, 130, 10, 10, "t_a", 1),)
    assert shifted_marks(marks, Rect(100, 100, 50, 50)) == (Mark("1", 50, 30, 10, 10, "t_a", 1),)


def test_changed_rects_are_clipped_to_the_window() -> None:
    view = AppView(Rect(100, 100, 200, 150))
    rects = [(0, 0, 50, 50), (90, 90, 20, 20), (150, 150, 10, 10)]
    assert clip_rects(rects, view) == [(100, 100, 10, 10), (150, 150, 10, 10)]


# -- regions and pointer events ---------------------------------------------------------


def test_a_region_outside_the_window_is_refused_with_its_rect() -> None:
    view = AppView(Rect(100, 100, 200, 150))
    check_region(view, Rect(100, 100, 200, 150))
    check_region(view, None)
    with pytest.raises(OutsideAppWindowError, match=r"\[100,100,200,150\]"):
        check_region(view, Rect(90, 100, 20, 20))


def _event(kind: str, **fields: object) -> ops.InputEvent:
    return ops.InputEvent.model_validate({"type": kind, **fields})


VIEW = AppView(Rect(100, 100, 200, 150), (Rect(250, 100, 50, 40),))


@pytest.mark.parametrize(
    "events",
    [
        [_event("mouse_click", x=99, y=120)],
        [_event("mouse_move", x=150, y=150), _event("mouse_click", x=300, y=150)],
        [_event("mouse_click", x=260, y=110)],  # on the foreign window over the app
        [_event("mouse_down")],  # no point, and none known
    ],
)
def test_pointer_events_off_the_shown_window_are_refused(events: list[ops.InputEvent]) -> None:
    with pytest.raises(OutsideAppWindowError, match=r"\[100,100,200,150\]"):
        check_pointer_events(VIEW, events, None)


def test_pointer_events_on_the_window_pass() -> None:
    events = [
        _event("mouse_move", x=100, y=100),
        _event("mouse_down"),
        _event("mouse_up", x=299, y=249),
        _event("key_press", key="a"),
        _event("mouse_click", target="t_abc"),
    ]
    check_pointer_events(VIEW, events, None)


def test_a_pointless_event_acts_where_the_last_batch_left_the_pointer() -> None:
    check_pointer_events(VIEW, [_event("mouse_up")], (120, 120))
    with pytest.raises(OutsideAppWindowError):
        check_pointer_events(VIEW, [_event("mouse_up")], (10, 10))
    with pytest.raises(OutsideAppWindowError):
        check_pointer_events(VIEW, [_event("mouse_click", target="t_x"), _event("mouse_up")], None)


# -- targets ------------------------------------------------------------------------------


def _element(key: str, x: int, y: int) -> AccessibleElement:
    return AccessibleElement(key=key, role="push button", name=key, x=x, y=y, w=20, h=20)


def test_targets_of_a_foreign_window_are_not_shown_at_all() -> None:
    snapshot = AccessibilitySnapshot("Bank", "frame", [_element("a", 110, 110)], window_pid=THEIRS)
    scoped = scoped_snapshot(snapshot, VIEW, frozenset({OURS}))
    assert scoped == AccessibilitySnapshot("", "", [], truncated=False)


def test_a_walk_of_an_unknown_owner_shows_nothing() -> None:
    snapshot = AccessibilitySnapshot("?", "frame", [_element("a", 110, 110)])
    assert scoped_snapshot(snapshot, VIEW, frozenset({OURS})).elements == []


def test_targets_of_the_apps_window_are_those_whose_centre_shows() -> None:
    elements = [_element("in", 110, 110), _element("under", 255, 105), _element("out", 5, 5)]
    snapshot = AccessibilitySnapshot("App", "frame", elements, window_pid=OURS)
    scoped = scoped_snapshot(snapshot, VIEW, frozenset({OURS}))
    assert [e.key for e in scoped.elements] == ["in"]
    assert scoped.window_title == "App"


# -- the scope over a desktop and a tracker -----------------------------------------------


class CountingApps:
    """An `AppTracker` whose owned pids a test sets, counting the reads (a process scan
    each on a real tracker)."""

    def __init__(self, owned: Sequence[int]) -> None:
        self.owned = frozenset(owned)
        self.reads = 0

    @property
    def launched_pids(self) -> list[int]:
        return sorted(self.owned)

    def launch(self, path: str, args: Sequence[str]) -> int:
        raise NotImplementedError

    def kill(self, pid: int | None) -> list[int]:
        return []

    def kill_all(self) -> list[int]:
        return []

    def owned_pids(self) -> frozenset[int]:
        self.reads += 1
        return self.owned


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_scope_sees_the_sim_apps_window_and_blacks_out_the_one_over_it() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    sim.open_app_window(OURS, "ours", Rect(100, 100, 300, 200))
    sim.open_app_window(THEIRS, "theirs", Rect(350, 50, 200, 200))
    scope = AppScope(sim, CountingApps([OURS]))

    frame, view = scope.grab(sim.grab)

    assert view == AppView(Rect(100, 100, 300, 200), (Rect(350, 100, 50, 150),), False)
    out = scoped_pixels(frame, view)
    assert (out[0:150, 250:300] == BLACK_BGRA).all()
    assert np.array_equal(out[:, :250], frame[100:300, 100:350])


def test_no_window_of_the_session_is_no_app_window() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    scope = AppScope(sim, CountingApps([OURS]))
    assert scope.view() is None
    with pytest.raises(NoAppWindowError):
        scope.require_view()
    with pytest.raises(NoAppWindowError):
        scope.grab(sim.grab)


def test_owners_are_read_again_only_for_an_unknown_pid_or_when_old() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    sim.open_app_window(OURS, "ours")
    apps, clock = CountingApps([OURS]), Clock()
    scope = AppScope(sim, apps, clock=clock, owners_max_age_s=5.0)

    scope.view()
    scope.view()
    assert apps.reads == 1
    sim.open_app_window(THEIRS, "theirs")
    scope.view()
    scope.view()
    assert apps.reads == 2  # the new pid once, then known as foreign
    clock.now = 5.0
    scope.view()
    assert apps.reads == 3


def test_a_window_that_moves_during_the_grab_is_grabbed_again() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    sim.open_app_window(OURS, "ours", Rect(0, 0, 120, 100))
    scope = AppScope(sim, CountingApps([OURS]))
    grabs = 0

    def moving_grab() -> Pixels:
        nonlocal grabs
        grabs += 1
        if grabs == 1:
            _reopen(sim, Rect(10, 0, 120, 100))
        return sim.grab()

    _, view = scope.grab(moving_grab)

    assert grabs == 2
    assert view.window == Rect(10, 0, 120, 100)


def _reopen(sim: SimDesktop, rect: Rect) -> None:
    sim.close_app_windows_of([OURS])
    sim.open_app_window(OURS, "ours", rect)


def test_a_window_that_never_holds_still_is_no_app_window() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    sim.open_app_window(OURS, "ours", Rect(0, 0, 120, 100))
    scope = AppScope(sim, CountingApps([OURS]))
    shift = iter(range(1, 100))

    def restless_grab() -> Pixels:
        _reopen(sim, Rect(next(shift), 0, 120, 100))
        return sim.grab()

    with pytest.raises(NoAppWindowError):
        scope.grab(restless_grab)


def test_the_scoped_walk_names_the_view_it_used() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    sim.open_app_window(OURS, "ours", Rect(100, 100, 480, 320))
    scope = AppScope(sim, CountingApps([OURS]))

    snapshot, view = scope.scope_snapshot(sim.snapshot_accessibility(WalkBudget()))

    assert view.window == Rect(100, 100, 480, 320)
    assert [e.name for e in snapshot.elements] == ["OK"]
    assert snapshot.window_pid == OURS


# -- waits watch the window only ----------------------------------------------------------


async def test_a_wait_for_change_counts_only_changes_on_the_window(
    screen_worker: SerialWorker,
) -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    screen = ScreenService(sim, screen_worker)
    window = Rect(0, 0, 200, 200)
    mark = await screen.damage_mark()

    sim.open_app_window(THEIRS, "far", Rect(400, 300, 200, 150))
    assert await screen.wait_for_change(mark, 0.05, window) is False
    sim.open_app_window(THEIRS, "near", Rect(150, 150, 200, 150))
    assert await screen.wait_for_change(mark, 0.05, window) is True


class ChangingElsewhere(FakeDesktop):
    """Damage at every poll, all of it far from the window the waits watch."""

    def poll_damage(self) -> list[Rect]:
        return [Rect(300, 150, 10, 10)]


async def test_changes_off_the_window_do_not_keep_a_wait_from_settling(
    screen_worker: SerialWorker,
) -> None:
    screen = ScreenService(ChangingElsewhere(), screen_worker)

    settled, _ = await screen.wait_quiet(0.03, 0.5, Rect(0, 0, 100, 100))
    unscoped, _ = await screen.wait_quiet(0.03, 0.1)

    assert settled
    assert not unscoped


# -- keys ---------------------------------------------------------------------------------


def test_keys_go_to_the_app_when_it_or_one_of_its_popups_has_the_focus() -> None:
    owned = frozenset({OURS})
    app = window(1, OURS, Rect(0, 0, 100, 100))
    popup = window(2, OURS, Rect(10, 10, 20, 20), popup=True)
    focused_app = StackedWindow(1, OURS, Rect(0, 0, 100, 100), has_focus=True)
    focused_popup = StackedWindow(2, OURS, Rect(10, 10, 20, 20), is_popup=True, has_focus=True)
    focused_other = StackedWindow(3, THEIRS, Rect(500, 0, 100, 100), has_focus=True)

    def keys(stack: list[StackedWindow]) -> bool | None:
        view = find_app_view(stack, owned, WIDTH, HEIGHT)
        assert view is not None
        return view.keys_to_app

    assert keys([focused_app]) is True
    assert keys([focused_popup, app]) is True
    assert keys([focused_other, app]) is False
    assert keys([popup, app]) is None  # nobody marked: the backend cannot tell


def _keys_elsewhere() -> AppView:
    return AppView(Rect(0, 0, 100, 100), (), keys_to_app=False)


def test_keys_while_another_window_has_the_focus_are_refused() -> None:
    with pytest.raises(OutsideAppWindowError, match="click the app window first"):
        check_key_events(
            _keys_elsewhere(), [_event("mouse_move", x=5, y=5), _event("type_text", text="pin")]
        )


def test_keys_after_a_press_on_the_window_pass() -> None:
    check_key_events(
        _keys_elsewhere(), [_event("mouse_click", x=5, y=5), _event("key_press", key="a")]
    )
    check_key_events(AppView(Rect(0, 0, 9, 9), (), None), [_event("type_text", text="x")])
    check_key_events(AppView(Rect(0, 0, 9, 9), (), True), [_event("type_text", text="x")])


def test_a_walk_of_one_pid_does_not_make_the_stacks_pids_unknown_again() -> None:
    sim = SimDesktop(WIDTH, HEIGHT)
    sim.open_app_window(OURS, "ours", Rect(0, 0, 200, 200))
    sim.open_app_window(THEIRS, "theirs", Rect(300, 0, 200, 200))
    apps = CountingApps([OURS])
    scope = AppScope(sim, apps)
    scope.view()

    scope.owned_pids([555])  # a walk of a window the stack has not shown
    scope.view()

    assert apps.reads == 2
