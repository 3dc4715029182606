"""`screen/wait` through the dispatcher: change (only damage after the wait began),
quiet, and a control appearing in the focused window (walks at most every 150 ms);
not met in time is an answer, a backend without damage cannot watch."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import AccessibilitySnapshot, Rect, WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.screen_wait import TARGET_WALK_INTERVAL_S
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.fakes import FakeApps, FakeDesktop, element

SESSION = "s1"
CHANGE = Rect(5, 5, 10, 10)


class ScriptedDesktop(FakeDesktop):
    """Damage on the polls numbered in `damage_on_polls` (or on every poll); the OK
    button in the window from walk number `button_from_walk` on; walk start times."""

    def __init__(self, *, has_damage: bool = True) -> None:
        super().__init__(has_damage=has_damage)
        self.damage_on_polls: set[int] = set()
        self.damage_always = False
        self.polls = 0
        self.button_from_walk: int | None = None
        self.walk_times: list[float] = []
        self.walked = threading.Event()

    def poll_damage(self) -> list[Rect]:
        self.polls += 1
        taken = super().poll_damage()
        if self.damage_always or self.polls in self.damage_on_polls:
            taken.append(CHANGE)
        return taken

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        self.walk_times.append(time.monotonic())
        walk = len(self.walk_times)
        self.elements = [element("cancel", x=10, name="Cancel")]
        if self.button_from_walk is not None and walk >= self.button_from_walk:
            self.elements.append(element("ok", x=60, name="OK", role="push button"))
        self.walked.set()
        return super().snapshot_accessibility(budget)


@pytest.fixture
async def desktop() -> ScriptedDesktop:
    return ScriptedDesktop()


@pytest.fixture
async def dispatcher(
    desktop: ScriptedDesktop,
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: SerialWorker,
) -> AsyncIterator[Dispatcher]:
    dispatcher = Dispatcher(
        desktop,
        ScreenService(desktop, screen_worker),
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        InputGuard(desktop),
        FakeApps(),
        input_executor=input_worker,
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION, "mode": "desktop"})
    yield dispatcher
    await dispatcher.close()


async def _wait(dispatcher: Dispatcher, **body: Any) -> ops.ScreenWaited:
    reply, payload = await dispatcher.handle(ops.SCREEN_WAIT, {"session_id": SESSION, **body})
    assert payload is None
    return ops.ScreenWaited.model_validate(reply)


async def _refused(dispatcher: Dispatcher, **body: Any) -> HostOpError:
    with pytest.raises(HostOpError) as caught:
        await dispatcher.handle(ops.SCREEN_WAIT, {"session_id": SESSION, **body})
    return caught.value


# ---- change ---------------------------------------------------------------------------------


async def test_a_change_after_the_wait_began_meets_it(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.damage_on_polls = {desktop.polls + 4}
    waited = await _wait(dispatcher, until="change", timeout_ms=5000)
    assert waited.met
    assert waited.waited_ms < 5000
    assert waited.target is None


async def test_damage_from_before_the_wait_does_not_meet_it(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.damage(CHANGE)  # pending when the wait begins
    waited = await _wait(dispatcher, until="change", timeout_ms=60)
    assert not waited.met
    assert waited.waited_ms >= 60


async def test_without_damage_a_change_wait_answers_unmet_at_once(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> None:
    blind = ScriptedDesktop(has_damage=False)
    dispatcher = Dispatcher(
        blind,
        ScreenService(blind, screen_worker),
        AccessibilityService(blind, a11y_worker, WalkBudget()),
        InputGuard(blind),
        FakeApps(),
        input_executor=input_worker,
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION, "mode": "desktop"})
    try:
        waited = await _wait(dispatcher, until="change", timeout_ms=20000)
        assert not waited.met
        assert waited.waited_ms < 5000  # it did not wait out a timeout it cannot use
    finally:
        await dispatcher.close()


# ---- quiet ----------------------------------------------------------------------------------


async def test_a_still_screen_meets_a_quiet_wait_after_quiet_ms(dispatcher: Dispatcher) -> None:
    waited = await _wait(dispatcher, until="quiet", quiet_ms=40, timeout_ms=5000)
    assert waited.met
    assert 40 <= waited.waited_ms < 5000


async def test_a_screen_that_keeps_changing_does_not_meet_a_quiet_wait(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.damage_always = True
    waited = await _wait(dispatcher, until="quiet", quiet_ms=40, timeout_ms=150)
    assert not waited.met
    assert waited.waited_ms >= 150


# ---- target ---------------------------------------------------------------------------------


async def test_a_control_that_appears_meets_a_target_wait(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.button_from_walk = 3
    waited = await _wait(dispatcher, until="target", target_name="ok", timeout_ms=5000)
    assert waited.met
    assert waited.target is not None
    assert (waited.target.name, waited.target.role, waited.target.x) == ("OK", "push button", 60)
    assert len(desktop.walk_times) == 3


async def test_a_target_wait_walks_at_most_every_interval(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.button_from_walk = 4
    await _wait(dispatcher, until="target", target_name="OK", timeout_ms=5000)
    gaps = [b - a for a, b in zip(desktop.walk_times, desktop.walk_times[1:], strict=False)]
    assert len(gaps) == 3
    # The walk's own start lags the loop's by a thread hop: a little slack.
    assert min(gaps) >= TARGET_WALK_INTERVAL_S - 0.01


async def test_a_target_wait_matches_every_field_given(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.button_from_walk = 1
    found = await _wait(
        dispatcher, until="target", target_name="Can", target_role="push button", timeout_ms=1000
    )
    assert found.target is not None
    assert found.target.name == "Cancel"
    by_id = await _wait(dispatcher, until="target", target_id=found.target.id, timeout_ms=1000)
    assert by_id.target == found.target
    wrong_role = await _wait(
        dispatcher, until="target", target_name="OK", target_role="check box", timeout_ms=200
    )
    assert not wrong_role.met
    assert wrong_role.target is None


async def test_a_target_that_never_appears_is_unmet_after_the_timeout(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    waited = await _wait(dispatcher, until="target", target_name="OK", timeout_ms=400)
    assert not waited.met
    assert waited.target is None
    assert waited.waited_ms < 400 + 1000
    assert 2 <= len(desktop.walk_times) <= 3  # 400 ms at one walk per 150 ms


async def test_a_target_id_is_exact_and_a_name_is_a_substring(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    desktop.button_from_walk = 1
    targets = await dispatcher.handle(ops.A11Y_TARGETS, {"session_id": SESSION})
    ok_id = next(t["id"] for t in targets[0]["targets"] if t["name"] == "OK")
    partial_id = await _wait(dispatcher, until="target", target_id=ok_id[:-1], timeout_ms=200)
    assert not partial_id.met
    assert (await _wait(dispatcher, until="target", target_name="NCE", timeout_ms=200)).met


# ---- refusals -------------------------------------------------------------------------------


async def test_a_target_wait_naming_no_target_is_refused(dispatcher: Dispatcher) -> None:
    error = await _refused(dispatcher, until="target", timeout_ms=1000)
    assert error.code == ops.ERROR_INVALID_REQUEST


@pytest.mark.parametrize(
    "body",
    [
        {"until": "change"},
        {"until": "change", "timeout_ms": 0},
        {"until": "change", "timeout_ms": 30001},
        {"until": "soon", "timeout_ms": 100},
        {"until": "quiet", "timeout_ms": 100, "quiet_ms": 5},
    ],
)
async def test_a_malformed_wait_is_invalid_request(
    dispatcher: Dispatcher, body: dict[str, Any]
) -> None:
    error = await _refused(dispatcher, **body)
    assert error.code == ops.ERROR_INVALID_REQUEST


async def test_a_wait_for_another_session_is_refused(dispatcher: Dispatcher) -> None:
    with pytest.raises(HostOpError) as caught:
        await dispatcher.handle(
            ops.SCREEN_WAIT, {"session_id": "other", "until": "change", "timeout_ms": 100}
        )
    assert caught.value.code == ops.ERROR_SESSION_MISMATCH


async def test_a_session_that_ends_during_the_wait_gets_no_answer_about_it(
    dispatcher: Dispatcher, desktop: ScriptedDesktop
) -> None:
    waiting = asyncio.ensure_future(
        dispatcher.handle(
            ops.SCREEN_WAIT,
            {"session_id": SESSION, "until": "target", "target_name": "OK", "timeout_ms": 1000},
        )
    )
    await asyncio.to_thread(desktop.walked.wait, 5.0)
    await dispatcher.handle(ops.SESSION_END, {"session_id": SESSION, "reason": "client"})
    with pytest.raises(HostOpError) as caught:
        await waiting
    assert caught.value.code == ops.ERROR_SESSION_MISMATCH
