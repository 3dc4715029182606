"""Which app tracker `rigway agent` runs with: on the sim, one whose launches open
windows on it, so an app session (`mode: "app"`) has a window to show."""

from __future__ import annotations

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.backends.sim.app_windows import SimAppTracker
from rigway.cli.agent import open_app_tracker


def test_the_sim_gets_a_tracker_whose_launches_open_windows_on_it() -> None:
    sim = SimDesktop()
    tracker = open_app_tracker("sim", sim)
    assert isinstance(tracker, SimAppTracker)
    pid = tracker.launch("sleep", ["60"])
    try:
        assert any(w.pid == pid for w in sim.window_stack())
    finally:
        tracker.kill_all()


def test_x11_and_a_sim_backend_without_its_desktop_use_the_runners_default() -> None:
    assert open_app_tracker("x11", None) is None
    assert open_app_tracker("sim", None) is None
