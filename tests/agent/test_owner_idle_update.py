"""`session/owner_idle`: the owner changes the rig's delay while a session runs, and the
agent's next input batch obeys the new one; only for the session it runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.owner_presence import OwnerPresence
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.fakes import FakeApps, FakeDesktop

SESSION = "s1"
CLICK = [{"type": "mouse_click", "x": 5, "y": 5}]


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    desktop: FakeDesktop
    dispatcher: Dispatcher
    presence: OwnerPresence
    clock: FakeClock

    async def call(self, op: str, **body: Any) -> dict[str, Any]:
        reply, _ = await self.dispatcher.handle(op, body)
        return reply

    async def set_idle(self, owner_idle_s: Any, session_id: str = SESSION) -> dict[str, Any]:
        return await self.call(
            ops.SESSION_OWNER_IDLE, session_id=session_id, owner_idle_s=owner_idle_s
        )

    async def click(self) -> dict[str, Any]:
        return await self.call(ops.INPUT_BATCH, session_id=SESSION, events=CLICK)


@pytest.fixture
async def rig(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Rig]:
    desktop = FakeDesktop()
    clock = FakeClock()
    presence = OwnerPresence(desktop, clock=clock)
    dispatcher = Dispatcher(
        desktop,
        ScreenService(desktop, screen_worker),
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        InputGuard(desktop),
        FakeApps(),
        input_executor=input_worker,
        presence=presence,
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION, "owner_idle_s": 10})
    yield Rig(desktop, dispatcher, presence, clock)
    await dispatcher.close()


async def test_a_shorter_delay_lets_the_next_batch_run(rig: Rig) -> None:
    rig.desktop.local_input_at = rig.clock.now - 2.0
    with pytest.raises(HostOpError) as refused:
        await rig.click()
    assert refused.value.code == ops.ERROR_OWNER_ACTIVE
    assert await rig.set_idle(1) == {}
    assert (await rig.click())["count"] == 1


async def test_a_longer_delay_refuses_the_next_batch(rig: Rig) -> None:
    rig.desktop.local_input_at = rig.clock.now - 60.0
    assert (await rig.click())["count"] == 1
    await rig.set_idle(3600)
    with pytest.raises(HostOpError) as refused:
        await rig.click()
    assert refused.value.code == ops.ERROR_OWNER_ACTIVE
    assert refused.value.detail.endswith("resumes after 3600 s without local input")


async def test_zero_never_pauses_for_the_owner(rig: Rig) -> None:
    rig.desktop.local_input_at = rig.clock.now
    await rig.set_idle(0)
    assert (await rig.click())["count"] == 1


async def test_another_sessions_delay_is_session_mismatch_and_changes_nothing(rig: Rig) -> None:
    with pytest.raises(HostOpError) as refused:
        await rig.set_idle(0, session_id="s2")
    assert refused.value.code == ops.ERROR_SESSION_MISMATCH
    assert rig.presence.idle_s == 10


async def test_after_the_session_ended_it_is_session_mismatch(rig: Rig) -> None:
    await rig.call(ops.SESSION_END, session_id=SESSION, reason="client")
    with pytest.raises(HostOpError) as refused:
        await rig.set_idle(0)
    assert refused.value.code == ops.ERROR_SESSION_MISMATCH
    assert rig.presence.idle_s == 10


@pytest.mark.parametrize("bad", [-1, 3601, 2.5, None])
async def test_a_delay_out_of_bounds_is_invalid_request(rig: Rig, bad: Any) -> None:
    with pytest.raises(HostOpError) as refused:
        await rig.set_idle(bad)
    assert refused.value.code == ops.ERROR_INVALID_REQUEST
    assert rig.presence.idle_s == 10
