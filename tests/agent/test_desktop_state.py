"""Desktop state in the agent core: the sim's settable state, input refused while the
desktop is not "normal" (nothing sent to it, held input let go), and the state sampled
with every dirty take."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from rigway.agent.backends.base import DESKTOP_STATES, DesktopState
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.desktop_state import DesktopStateReporter
from rigway.agent.dispatch import Dispatcher
from rigway.agent.link import AgentLink
from rigway.agent.safety import InputGuard
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import SESSION, SessionOps, dispatcher_over
from tests.agent.fake_gateway import RIG_TOKEN, AgentConnection, FakeGateway, fake_hello
from tests.agent.fakes import FakeApps, FakeDesktop

NOT_NORMAL: list[DesktopState] = [s for s in DESKTOP_STATES if s != "normal"]


def test_sim_starts_normal() -> None:
    assert SimDesktop().desktop_state() == "normal"


@pytest.mark.parametrize("state", DESKTOP_STATES)
def test_sim_state_set_is_reported(state: DesktopState) -> None:
    sim = SimDesktop()
    sim.set_desktop_state(state)
    assert sim.desktop_state() == state


def test_sim_refuses_an_unknown_state_name() -> None:
    with pytest.raises(ValueError, match="unknown desktop state"):
        SimDesktop().set_desktop_state("asleep")  # type: ignore[arg-type]


# ---- input refused, dirty takes ------------------------------------------------------


@dataclass
class Rig(SessionOps):
    desktop: FakeDesktop
    guard: InputGuard
    dispatcher: Dispatcher
    input_worker: SerialWorker

    async def held_keys(self) -> tuple[str, ...]:
        # The guard's bookkeeping belongs to the input worker.
        return await self.input_worker.call(lambda: self.guard.held_keys)


@pytest.fixture
async def rig(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Rig]:
    desktop = FakeDesktop()
    guard = InputGuard(desktop)
    dispatcher = dispatcher_over(
        desktop, FakeApps(), screen_worker, a11y_worker, input_worker, guard
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION})
    yield Rig(desktop, guard, dispatcher, input_worker)
    await dispatcher.close()


CLICK = [{"type": "mouse_click", "x": 5, "y": 5}, {"type": "type_text", "text": "hi"}]


@pytest.mark.parametrize("state", NOT_NORMAL)
async def test_input_while_not_normal_is_refused_with_the_state(
    rig: Rig, state: DesktopState
) -> None:
    rig.desktop.set_desktop_state(state)
    refusal = await rig.refusal(events=CLICK)
    assert (refusal.code, refusal.detail) == (ops.ERROR_DESKTOP_UNAVAILABLE, state)


async def test_refused_input_sends_nothing_to_the_desktop(rig: Rig) -> None:
    rig.desktop.set_desktop_state("locked")
    await rig.refusal(events=CLICK)
    assert rig.desktop.calls == []


async def test_refused_input_releases_keys_held_by_an_earlier_batch(rig: Rig) -> None:
    await rig.call(ops.INPUT_BATCH, events=[{"type": "key_down", "key": "shift"}])
    rig.desktop.calls.clear()
    rig.desktop.set_desktop_state("secure_desktop")
    await rig.refusal(events=CLICK)
    assert rig.desktop.calls == [("key", "shift", False)]
    assert await rig.held_keys() == ()


async def test_input_runs_again_once_normal(rig: Rig) -> None:
    rig.desktop.set_desktop_state("screensaver")
    await rig.refusal(events=CLICK)
    rig.desktop.set_desktop_state("normal")
    assert (await rig.call(ops.INPUT_BATCH, events=CLICK))["count"] == 2
    assert rig.desktop.calls[-1] == ("type", "hi")


async def test_backend_that_raises_reads_unknown_and_refuses(rig: Rig) -> None:
    rig.desktop.state_error = OSError("the session went away")
    refusal = await rig.refusal(events=CLICK)
    assert refusal.detail == "unknown"
    assert rig.desktop.calls == []


@pytest.mark.parametrize("state", DESKTOP_STATES)
async def test_dirty_take_carries_the_state(rig: Rig, state: DesktopState) -> None:
    rig.desktop.set_desktop_state(state)
    assert (await rig.call(ops.SCREEN_DIRTY))["desktop_state"] == state


# ---- reported over the link ----------------------------------------------------------


@dataclass
class LinkedRig:
    desktop: FakeDesktop
    gateway: FakeGateway
    link: AgentLink


@asynccontextmanager
async def _linked(
    dispatcher: Dispatcher, desktop: FakeDesktop, reporter: DesktopStateReporter | None
) -> AsyncIterator[LinkedRig]:
    async with FakeGateway().running() as gateway:
        link = AgentLink(gateway.url, RIG_TOKEN, fake_hello(), dispatcher, desktop_states=reporter)
        task = asyncio.create_task(link.run())
        try:
            yield LinkedRig(desktop, gateway, link)
        finally:
            await link.stop()
            async with asyncio.timeout(10):
                await task


@pytest.fixture
async def linked(rig: Rig) -> AsyncIterator[LinkedRig]:
    # A short interval: the tests wait on the samples, never on the clock.
    reporter = DesktopStateReporter(rig.desktop, interval_s=0.005)
    async with _linked(rig.dispatcher, rig.desktop, reporter) as linked:
        yield linked


async def _next_note(connection: AgentConnection) -> dict[str, Any]:
    async with asyncio.timeout(10):
        return await connection.notes.get()


async def _notes_so_far(linked: LinkedRig, connection: AgentConnection) -> list[dict[str, Any]]:
    """The notes sent up to now: five more samples are taken, then a request's reply
    comes back behind any note they sent (one socket keeps order)."""
    reads = linked.desktop.state_reads
    await asyncio.to_thread(linked.desktop.wait_state_reads, reads + 5)
    await connection.request(ops.SCREEN_DIRTY, {"session_id": "none"})
    notes = []
    while not connection.notes.empty():
        notes.append(connection.notes.get_nowait())
    return notes


async def test_hello_carries_the_state_at_connect(rig: Rig) -> None:
    rig.desktop.set_desktop_state("locked")
    reporter = DesktopStateReporter(rig.desktop, interval_s=60.0)
    async with _linked(rig.dispatcher, rig.desktop, reporter) as linked:
        connection = await linked.gateway.next_connection()
        assert connection.hello.desktop_state == "locked"


async def test_without_a_reporter_the_hello_has_no_state(rig: Rig) -> None:
    async with _linked(rig.dispatcher, rig.desktop, None) as linked:
        connection = await linked.gateway.next_connection()
        assert connection.hello.desktop_state is None


async def test_a_change_is_sent_as_a_note(linked: LinkedRig) -> None:
    connection = await linked.gateway.next_connection()
    linked.desktop.set_desktop_state("screensaver")
    note = await _next_note(connection)
    assert note == {"t": "note", "op": ops.DESKTOP_STATE, "body": {"state": "screensaver"}}


async def test_an_unchanged_state_sends_no_note(linked: LinkedRig) -> None:
    connection = await linked.gateway.next_connection()
    assert await _notes_so_far(linked, connection) == []


async def test_a_change_is_sent_once(linked: LinkedRig) -> None:
    connection = await linked.gateway.next_connection()
    linked.desktop.set_desktop_state("locked")
    await _next_note(connection)
    assert await _notes_so_far(linked, connection) == []


async def test_a_change_back_is_sent_too(linked: LinkedRig) -> None:
    connection = await linked.gateway.next_connection()
    linked.desktop.set_desktop_state("locked")
    await _next_note(connection)
    linked.desktop.set_desktop_state("normal")
    assert (await _next_note(connection))["body"] == {"state": "normal"}
