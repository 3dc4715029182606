"""Settle and change waits on the screen service: they watch the backend's damage on
the screen worker, and what they poll still reaches `/dirty` once, and only once."""

from __future__ import annotations

from rigway.agent.backends.base import Rect
from rigway.agent.screen import CaptureParams, ScreenService
from rigway.agent.worker import SerialWorker
from tests.agent.fakes import FakeDesktop

CHANGE = Rect(10, 10, 20, 20)
QUIET_S = 0.03
TIMEOUT_S = 0.3


class DamageAfterPolls(FakeDesktop):
    """Reports CHANGE on the polls numbered in `on_polls` (1-based), nothing otherwise."""

    def __init__(self, on_polls: set[int] | None = None, *, always: bool = False) -> None:
        super().__init__()
        self.on_polls = on_polls or set()
        self.always = always
        self.polls = 0

    def poll_damage(self) -> list[Rect]:
        self.polls += 1
        if self.always or self.polls in self.on_polls:
            return [CHANGE]
        return []


async def test_a_still_screen_settles_after_quiet(screen_worker: SerialWorker) -> None:
    screen = ScreenService(DamageAfterPolls(), screen_worker)
    settled, waited_s = await screen.wait_quiet(QUIET_S, TIMEOUT_S)
    assert settled
    assert QUIET_S <= waited_s < TIMEOUT_S


async def test_a_screen_that_keeps_changing_does_not_settle(screen_worker: SerialWorker) -> None:
    screen = ScreenService(DamageAfterPolls(always=True), screen_worker)
    settled, waited_s = await screen.wait_quiet(QUIET_S, TIMEOUT_S)
    assert not settled
    assert waited_s >= TIMEOUT_S


async def test_settle_restarts_its_quiet_time_at_each_change(screen_worker: SerialWorker) -> None:
    desktop = DamageAfterPolls(on_polls={3})
    screen = ScreenService(desktop, screen_worker)
    settled, _ = await screen.wait_quiet(QUIET_S, TIMEOUT_S)
    assert settled
    assert desktop.polls > 3  # it went on watching after the change


async def test_a_change_ends_the_wait_for_change(screen_worker: SerialWorker) -> None:
    desktop = DamageAfterPolls(on_polls={4})
    screen = ScreenService(desktop, screen_worker)
    mark = await screen.damage_mark()
    assert await screen.wait_for_change(mark, TIMEOUT_S) is True
    assert desktop.polls == 4


async def test_no_change_in_time_is_false(screen_worker: SerialWorker) -> None:
    screen = ScreenService(DamageAfterPolls(), screen_worker)
    mark = await screen.damage_mark()
    assert await screen.wait_for_change(mark, QUIET_S) is False


async def test_without_damage_a_change_cannot_be_told(screen_worker: SerialWorker) -> None:
    desktop = FakeDesktop(has_damage=False)
    screen = ScreenService(desktop, screen_worker)
    mark = await screen.damage_mark()
    assert await screen.wait_for_change(mark, TIMEOUT_S) is None
    assert await screen.damage_since(mark) is None
    settled, _ = await screen.wait_quiet(QUIET_S, TIMEOUT_S)
    assert not settled


async def test_damage_seen_by_a_wait_is_reported_to_dirty_once(screen_worker: SerialWorker) -> None:
    desktop = DamageAfterPolls(on_polls={2})
    screen = ScreenService(desktop, screen_worker)
    await screen.wait_quiet(QUIET_S, TIMEOUT_S)

    first = await screen.take_dirty()
    second = await screen.take_dirty()

    assert first.rects == [CHANGE.as_list()]
    assert second.rects == []


async def test_a_frame_knows_what_changed_after_it(screen_worker: SerialWorker) -> None:
    desktop = FakeDesktop()
    screen = ScreenService(desktop, screen_worker)
    frame = await screen.capture(CaptureParams())
    assert await screen.damage_since(frame.damage_mark) == []

    desktop.damage(CHANGE)

    assert await screen.damage_since(frame.damage_mark) == [CHANGE]


async def test_a_new_session_forgets_earlier_frames(screen_worker: SerialWorker) -> None:
    desktop = FakeDesktop()
    screen = ScreenService(desktop, screen_worker)
    frame = await screen.capture(CaptureParams())
    await screen.reset()
    assert await screen.damage_since(frame.damage_mark) is None
