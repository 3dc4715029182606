"""The monitors the agent reports in its hello (`agent.displays.read_displays`): what the
backend says, bounded, and one display covering the capture when it fails."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest

from rigway.agent.backends.base import Display
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.displays import DisplaysReporter, read_displays
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


class CountedReads(SimDesktop):
    """Signals `read_enough` once `displays` was read `enough` times."""

    def __init__(self) -> None:
        super().__init__(640, 480)
        self.reads = 0
        self.enough = 1_000_000
        self.read_enough = threading.Event()

    def displays(self) -> list[Display]:
        self.reads += 1
        if self.reads >= self.enough:
            self.read_enough.set()
        return super().displays()


async def test_reporter_sends_each_change_once() -> None:
    sim = CountedReads()
    reporter = DisplaysReporter(sim, interval_s=0.005)
    sent: list[list[DisplayInfo]] = []
    changed = asyncio.Event()

    async def send(displays: list[DisplayInfo]) -> None:
        sent.append(displays)
        changed.set()

    task = asyncio.create_task(reporter.report_changes(await reporter.sample(), send))
    sim.set_displays([Display(0, 0, 320, 480, primary=True), Display(320, 0, 320, 480)])
    await asyncio.wait_for(changed.wait(), timeout=5)
    # Several more reads of the same monitors send nothing more.
    sim.enough = sim.reads + 5
    assert await asyncio.to_thread(sim.read_enough.wait, 5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert [len(displays) for displays in sent] == [2]


def test_reporter_refuses_a_non_positive_interval() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        DisplaysReporter(SimDesktop(), interval_s=0)
