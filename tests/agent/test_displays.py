"""The monitors the agent reports in its hello (`agent.displays.read_displays`): what the
backend says, bounded, and one display covering the capture when it fails."""

from __future__ import annotations

import asyncio

from rigway.agent.backends.base import Display
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.displays import read_displays
from rigway.agent.runner import AgentSettings, build_hello
from rigway.protocol.messages import MAX_DISPLAYS, DisplayInfo
from tests.agent.fakes import FakeDesktop

WHOLE = DisplayInfo(x=0, y=0, width=320, height=200, scale=1.0, primary=True)


class FailingDisplays(FakeDesktop):
    def displays(self) -> list[Display]:
        raise OSError("no monitors today")


class ManyDisplays(FakeDesktop):
    def displays(self) -> list[Display]:
        return [Display(i * 10, 0, 10, 200, scale=1.25) for i in range(MAX_DISPLAYS + 4)]


class ImpossibleDisplay(FakeDesktop):
    def displays(self) -> list[Display]:
        return [Display(0, 0, 0, 200)]


def test_sim_has_one_primary_display_of_its_size() -> None:
    assert SimDesktop(640, 480).displays() == [Display(0, 0, 640, 480, 1.0, True)]


def test_backend_displays_are_reported_as_told() -> None:
    assert read_displays(FakeDesktop(), (320, 200)) == [WHOLE]


def test_failing_backend_reads_as_one_display_covering_the_capture() -> None:
    assert read_displays(FailingDisplays(), (320, 200)) == [WHOLE]


def test_display_the_wire_cannot_carry_reads_as_the_capture() -> None:
    assert read_displays(ImpossibleDisplay(), (320, 200)) == [WHOLE]


def test_more_displays_than_the_wire_carries_are_cut_at_the_bound() -> None:
    found = read_displays(ManyDisplays(), (320, 200))

    assert len(found) == MAX_DISPLAYS
    assert found[0].scale == 1.25


def test_hello_carries_the_displays() -> None:
    settings = AgentSettings(gateway_url="http://127.0.0.1:9", rig_token="t", width=640, height=480)
    sim = SimDesktop(640, 480)

    hello = asyncio.run(build_hello(settings, sim, sim.native_size()))

    assert hello.displays == [DisplayInfo(x=0, y=0, width=640, height=480, primary=True)]
