"""Owner presence in the agent core: active while the last local input is younger than
the session's delay (a fake clock), input refused meanwhile with nothing sent and held
input let go, dirty takes carrying it, and changes sent over the link as notes."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.dispatch import Dispatcher
from rigway.agent.link import AgentLink
from rigway.agent.owner_presence import (
    DEFAULT_OWNER_IDLE_S,
    OwnerActiveError,
    OwnerPresence,
    OwnerPresenceReporter,
    require_owner_idle,
)
from rigway.agent.safety import InputGuard
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import SESSION, SessionOps, dispatcher_over
from tests.agent.fake_gateway import RIG_TOKEN, FakeGateway, fake_hello
from tests.agent.fakes import FakeApps, FakeDesktop

CLICK = [{"type": "mouse_click", "x": 5, "y": 5}, {"type": "type_text", "text": "hi"}]


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class BrokenDesktop(FakeDesktop):
    def last_local_input(self) -> float | None:
        raise OSError("the listener died")


# ---- the rule, on a fake clock -------------------------------------------------------


def _presence(desktop: FakeDesktop, idle_s: float = 10.0) -> tuple[OwnerPresence, FakeClock]:
    clock = FakeClock()
    return OwnerPresence(desktop, idle_s=idle_s, clock=clock), clock


def test_no_local_input_is_not_active() -> None:
    presence, _ = _presence(FakeDesktop())
    assert (presence.is_active(), presence.since_local_input_s()) == (False, None)


def test_input_within_the_delay_is_active() -> None:
    desktop = FakeDesktop()
    presence, clock = _presence(desktop)
    desktop.local_input_at = clock.now - 9.9
    assert presence.is_active()
    assert presence.since_local_input_s() == pytest.approx(9.9)


def test_input_the_delay_ago_is_no_longer_active() -> None:
    desktop = FakeDesktop()
    presence, clock = _presence(desktop)
    desktop.local_input_at = clock.now
    clock.now += 10.0
    assert not presence.is_active()


def test_the_delay_set_at_session_start_applies() -> None:
    desktop = FakeDesktop()
    presence, clock = _presence(desktop)
    desktop.local_input_at = clock.now - 30.0
    presence.idle_s = 60
    assert presence.is_active()


def test_zero_delay_never_refuses() -> None:
    desktop = FakeDesktop()
    presence, clock = _presence(desktop, idle_s=0)
    desktop.local_input_at = clock.now
    assert not presence.is_active()


def test_input_ahead_of_the_clock_counts_as_now() -> None:
    desktop = FakeDesktop()
    presence, clock = _presence(desktop)
    desktop.local_input_at = clock.now + 0.5
    assert presence.since_local_input_s() == 0.0


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_time_that_is_no_number_reads_as_none(bad: float) -> None:
    desktop = FakeDesktop()
    presence, _ = _presence(desktop)
    desktop.local_input_at = bad
    assert presence.since_local_input_s() is None


def test_a_backend_that_raises_does_not_lock_the_api_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    presence, _ = _presence(BrokenDesktop())
    assert not presence.is_active()
    assert not presence.is_active()
    # Told once, not at every batch.
    assert [r.message for r in caplog.records].count(
        "the backend failed to tell the last local input"
    ) == 1


def test_default_delay_is_ten_seconds() -> None:
    presence = OwnerPresence(FakeDesktop())
    assert presence.idle_s == DEFAULT_OWNER_IDLE_S == 10.0


def test_refusal_says_when_and_releases_held_input() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    guard.key_down("shift")
    presence, clock = _presence(desktop)
    desktop.local_input_at = clock.now - 2.0
    with pytest.raises(OwnerActiveError) as refused:
        require_owner_idle(presence, guard)
    assert refused.value.detail == (
        "the rig's owner used its keyboard or mouse 2.0 s ago; API input resumes after "
        "10 s without local input"
    )
    assert refused.value.released == ["shift"]
    assert guard.held_keys == ()


def test_idle_owner_lets_the_batch_run() -> None:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    guard.key_down("shift")
    presence, clock = _presence(desktop)
    desktop.local_input_at = clock.now - 11.0
    require_owner_idle(presence, guard)
    assert guard.held_keys == ("shift",)


# ---- the sim's test hook --------------------------------------------------------------


def test_sim_has_no_local_input_until_told() -> None:
    assert SimDesktop().last_local_input() is None


def test_sim_records_local_input_now_or_at_a_time() -> None:
    sim = SimDesktop()
    before = time.monotonic()
    sim.record_local_input()
    now = sim.last_local_input()
    assert now is not None
    assert before <= now <= time.monotonic()
    sim.record_local_input(at=12.5)
    assert sim.last_local_input() == 12.5


def test_sims_own_input_is_not_local_input() -> None:
    sim = SimDesktop()
    sim.move_pointer(10, 10)
    sim.set_key("a", True)
    sim.set_key("a", False)
    sim.type_text("hi")
    assert sim.last_local_input() is None


# ---- through the dispatcher -------------------------------------------------------------


@dataclass
class Rig(SessionOps):
    desktop: FakeDesktop
    guard: InputGuard
    dispatcher: Dispatcher
    clock: FakeClock


@pytest.fixture
async def rig(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Rig]:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    clock = FakeClock()
    presence = OwnerPresence(desktop, clock=clock)
    dispatcher = dispatcher_over(
        desktop, FakeApps(), screen_worker, a11y_worker, input_worker, guard, presence
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION, "owner_idle_s": 5})
    yield Rig(desktop, guard, dispatcher, clock)
    await dispatcher.close()


async def test_input_while_the_owner_is_active_is_refused(rig: Rig) -> None:
    rig.desktop.local_input_at = rig.clock.now - 1.0
    refusal = await rig.refusal(events=CLICK)
    assert refusal.code == ops.ERROR_OWNER_ACTIVE
    assert refusal.detail.endswith("resumes after 5 s without local input")
    assert refusal.body == {"events": [], "stopped_at": 0, "rects": []}
    assert rig.desktop.calls == []


async def test_refusal_releases_keys_held_by_an_earlier_batch(rig: Rig) -> None:
    await rig.call(ops.INPUT_BATCH, events=[{"type": "key_down", "key": "ctrl"}])
    rig.desktop.calls.clear()
    rig.desktop.local_input_at = rig.clock.now
    await rig.refusal(events=CLICK)
    assert rig.desktop.calls == [("key", "ctrl", False)]


async def test_input_runs_once_the_owner_rested_for_the_sessions_delay(rig: Rig) -> None:
    rig.desktop.local_input_at = rig.clock.now
    await rig.refusal(events=CLICK)
    rig.clock.now += 5.0
    assert (await rig.call(ops.INPUT_BATCH, events=CLICK))["count"] == 2


async def test_a_locked_desktop_is_told_before_the_owner(rig: Rig) -> None:
    rig.desktop.set_desktop_state("locked")
    rig.desktop.local_input_at = rig.clock.now
    assert (await rig.refusal(events=CLICK)).code == ops.ERROR_DESKTOP_UNAVAILABLE


async def test_owner_starting_mid_batch_stops_it_before_the_next_event(rig: Rig) -> None:
    owner_moves = {"type": "mouse_move", "x": 7, "y": 7}
    events = [{"type": "type_text", "text": "hi"}, owner_moves, {"type": "key_press", "key": "a"}]

    def owner_types_along(text: str) -> None:
        # The owner touches the rig while the first event runs.
        rig.desktop.calls.append(("type", text))
        rig.desktop.local_input_at = rig.clock.now

    rig.desktop.type_text = owner_types_along  # type: ignore[method-assign]
    refusal = await rig.refusal(events=events)
    assert refusal.code == ops.ERROR_OWNER_ACTIVE
    assert refusal.detail.startswith("event 1 (mouse_move): the rig's owner used")
    assert refusal.body is not None
    receipts = refusal.body["events"]
    assert [(r["index"], r["ok"]) for r in receipts] == [(0, True), (1, False)]
    assert refusal.body["stopped_at"] == 1
    assert rig.desktop.calls == [("type", "hi")]


@pytest.mark.parametrize(("since_s", "active"), [(1.0, True), (6.0, False)])
async def test_dirty_take_carries_owner_active(rig: Rig, since_s: float, active: bool) -> None:
    rig.desktop.local_input_at = rig.clock.now - since_s
    assert (await rig.call(ops.SCREEN_DIRTY))["owner_active"] is active


async def test_screens_keep_working_while_the_owner_is_active(rig: Rig) -> None:
    rig.desktop.local_input_at = rig.clock.now
    reply, jpeg = await rig.dispatcher.handle(ops.SCREEN_CAPTURE, {"session_id": SESSION})
    assert jpeg is not None
    assert reply["native_width"] == 320


# ---- reported over the link ----------------------------------------------------------


async def test_changes_are_sent_as_notes(rig: Rig) -> None:
    presence = OwnerPresence(rig.desktop, idle_s=5, clock=rig.clock)
    # A short interval: the test waits on the notes, never on the clock.
    reporter = OwnerPresenceReporter(presence, interval_s=0.005)
    async with FakeGateway().running() as gateway:
        link = AgentLink(
            gateway.url, RIG_TOKEN, fake_hello(), rig.dispatcher, owner_presence=reporter
        )
        task = asyncio.create_task(link.run())
        try:
            connection = await gateway.next_connection()
            rig.desktop.local_input_at = rig.clock.now
            async with asyncio.timeout(10):
                became_active = await connection.notes.get()
            rig.clock.now += 5.0
            async with asyncio.timeout(10):
                became_idle = await connection.notes.get()
        finally:
            await link.stop()
            async with asyncio.timeout(10):
                await task
    assert became_active == {"t": "note", "op": ops.OWNER_PRESENCE, "body": {"active": True}}
    assert became_idle["body"] == {"active": False}
