"""The sim's app windows: a launched app opens one, a kill closes it, a click raises it,
and the stack, the owners and the walk say so."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from rigway.agent.apps import ProcessTracker
from rigway.agent.backends.base import Rect, StackedWindow, WalkBudget
from rigway.agent.backends.sim import MAIN_WINDOW_ID, SimDesktop
from rigway.agent.backends.sim import form as sim_form
from rigway.agent.backends.sim.app_windows import (
    APP_WINDOW_H,
    APP_WINDOW_W,
    FIRST_APP_WINDOW_ID,
    SimAppTracker,
    ok_button,
)
from rigway.agent.backends.sim.widgets import DESKTOP_BGRA


@pytest.fixture
def sim() -> SimDesktop:
    return SimDesktop(1280, 800)


@pytest.fixture
def tracker(sim: SimDesktop) -> Iterator[SimAppTracker]:
    processes = ProcessTracker()
    yield SimAppTracker(sim, processes)
    processes.kill_all()


def _click(sim: SimDesktop, x: int, y: int) -> None:
    sim.move_pointer(x, y)
    sim.set_button("left", down=True)
    sim.set_button("left", down=False)


def test_a_launch_opens_a_window_of_its_pid_and_a_kill_closes_it(
    sim: SimDesktop, tracker: SimAppTracker
) -> None:
    pid = tracker.launch("sleep", ["60"])

    assert tracker.launched_pids == [pid]
    assert pid in tracker.owned_pids()
    assert sim.list_windows() == {MAIN_WINDOW_ID, FIRST_APP_WINDOW_ID}
    assert sim.window_owners(frozenset({FIRST_APP_WINDOW_ID, MAIN_WINDOW_ID})) == {
        FIRST_APP_WINDOW_ID: pid,
        MAIN_WINDOW_ID: None,
    }
    assert sim.window_stack()[0] == StackedWindow(
        FIRST_APP_WINDOW_ID, pid, Rect(80, 60, APP_WINDOW_W, APP_WINDOW_H), has_focus=True
    )
    assert sim.poll_damage() == [Rect(80, 60, APP_WINDOW_W, APP_WINDOW_H)]

    assert tracker.kill(pid) == [pid]
    assert sim.list_windows() == {MAIN_WINDOW_ID}


def test_killing_every_app_closes_every_window(sim: SimDesktop, tracker: SimAppTracker) -> None:
    tracker.launch("sleep", ["60"])
    tracker.launch("sleep", ["60"])

    assert len(tracker.kill_all()) == 2
    assert sim.list_windows() == {MAIN_WINDOW_ID}


def test_a_click_raises_the_window_it_lands_on_and_never_reaches_the_form(sim: SimDesktop) -> None:
    form = sim.control_rect(sim_form.REMEMBER)
    lower = sim.open_app_window(1, "lower", Rect(form.x - 10, form.y - 10, 300, 200))
    upper = sim.open_app_window(2, "upper", Rect(form.x + 100, form.y + 100, 300, 200))

    _click(sim, form.x + 2, form.y + 2)

    assert not sim.checkbox_checked
    assert [w.window_id for w in sim.window_stack()] == [lower, upper, MAIN_WINDOW_ID]
    walked = sim.snapshot_accessibility(WalkBudget())
    assert (walked.window_title, walked.window_pid) == ("lower", 1)
    button = ok_button(300, 200)
    assert [(e.name, e.x, e.y) for e in walked.elements] == [
        ("OK", form.x - 10 + button.x, form.y - 10 + button.y)
    ]


def test_closing_windows_closes_app_windows_only(sim: SimDesktop) -> None:
    window = sim.open_app_window(1, "app")

    sim.close_windows(frozenset({window, MAIN_WINDOW_ID}))

    assert sim.list_windows() == {MAIN_WINDOW_ID}
    assert sim.window_stack() == [
        StackedWindow(MAIN_WINDOW_ID, None, sim.window_rect(), has_focus=True)
    ]


def test_a_window_across_the_edge_is_drawn_clipped_and_one_beyond_it_not_at_all(
    sim: SimDesktop,
) -> None:
    sim.open_app_window(1, "edge", Rect(1200, 700, 200, 150))
    sim.open_app_window(2, "beyond", Rect(2000, 900, 200, 150))

    pixels = sim.grab()

    assert pixels.shape == (800, 1280, 4)
    assert not np.array_equal(pixels[799, 1279], DESKTOP_BGRA)
    assert np.array_equal(pixels[0, 0], DESKTOP_BGRA)


def test_an_app_window_too_small_for_its_button_is_refused(sim: SimDesktop) -> None:
    with pytest.raises(ValueError, match="at least"):
        sim.open_app_window(1, "tiny", Rect(0, 0, 50, 50))


def test_the_walk_budget_holds_for_an_app_window(sim: SimDesktop) -> None:
    sim.open_app_window(1, "app")

    walked = sim.snapshot_accessibility(WalkBudget(max_elements=0))

    assert walked.elements == []
    assert walked.truncated
