"""Act and see on the host, over a fake desktop: mouse_down/up held and let go, target-
bound events found in a fresh walk, per-event receipts, expect: change, the settle,
require_unchanged, and the failed reply's body (the dispatcher and the link)."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from rigway.agent.accessibility import AccessibilityService, target_id
from rigway.agent.backends.base import MouseButton, Rect, WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.link import AgentLink
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.fake_gateway import RIG_TOKEN, FakeGateway, fake_hello
from tests.agent.fakes import FakeApps, FakeDesktop, element

SESSION = "s1"
BUTTON_AREA = Rect(100, 50, 40, 20)


class DrawingDesktop(FakeDesktop):
    """Redraws `BUTTON_AREA` when a button goes up (as a widget does after a click),
    and says when a button went down or up."""

    def __init__(self, *, has_damage: bool = True) -> None:
        super().__init__(has_damage=has_damage)
        self.draws_on_release = True
        self.button_went_down = threading.Event()
        self.button_went_up = threading.Event()

    def set_button(self, button: MouseButton, down: bool) -> None:
        super().set_button(button, down)
        if down:
            self.button_went_down.set()
            return
        if self.draws_on_release and self.has_damage:
            self.damage(BUTTON_AREA)
        self.button_went_up.set()


class RestlessDesktop(DrawingDesktop):
    """Something on it redraws all the time (a spinner): it never settles."""

    def poll_damage(self) -> list[Rect]:
        return [Rect(0, 0, 8, 8), *super().poll_damage()]


class SlowDrawingDesktop(DrawingDesktop):
    """Its redraw after a release shows up a few damage polls later, as a real toolkit's
    does (the app repaints after it handled the event)."""

    def __init__(self) -> None:
        super().__init__()
        self.draws_on_release = False
        self.polls_until_redraw: int | None = None

    def set_button(self, button: MouseButton, down: bool) -> None:
        super().set_button(button, down)
        if not down:
            self.polls_until_redraw = 3

    def poll_damage(self) -> list[Rect]:
        if self.polls_until_redraw is not None:
            self.polls_until_redraw -= 1
            if self.polls_until_redraw == 0:
                self.polls_until_redraw = None
                self.damage(BUTTON_AREA)
        return super().poll_damage()


@dataclass
class Rig:
    desktop: DrawingDesktop
    guard: InputGuard
    dispatcher: Dispatcher
    input_worker: SerialWorker

    async def batch(self, *events: dict[str, Any], **extra: Any) -> dict[str, Any]:
        body = {"session_id": SESSION, "events": list(events), **extra}
        reply, _ = await self.dispatcher.handle(ops.INPUT_BATCH, body)
        return reply

    async def stopped(self, *events: dict[str, Any], **extra: Any) -> HostOpError:
        with pytest.raises(HostOpError) as caught:
            await self.batch(*events, **extra)
        return caught.value

    async def held_buttons(self) -> tuple[MouseButton, ...]:
        # The guard's bookkeeping belongs to the input worker.
        return await self.input_worker.call(lambda: self.guard.held_buttons)

    async def damage_mark(self) -> int:
        reply, _ = await self.dispatcher.handle(ops.SCREEN_CAPTURE, {"session_id": SESSION})
        return int(reply["damage_mark"])

    def button_calls(self) -> list[tuple[object, ...]]:
        return [call for call in self.desktop.calls if call[0] == "button"]


async def _rig(
    desktop: DrawingDesktop,
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: SerialWorker,
) -> Rig:
    guard = InputGuard(desktop)
    dispatcher = Dispatcher(
        desktop,
        ScreenService(desktop, screen_worker),
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        guard,
        FakeApps(),
        input_executor=input_worker,
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION})
    return Rig(desktop, guard, dispatcher, input_worker)


@pytest.fixture
async def rig(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Rig]:
    made = await _rig(DrawingDesktop(), screen_worker, a11y_worker, input_worker)
    yield made
    await made.dispatcher.close()


@pytest.fixture
async def blind(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Rig]:
    """A backend without damage: nothing can be watched."""
    made = await _rig(DrawingDesktop(has_damage=False), screen_worker, a11y_worker, input_worker)
    yield made
    await made.dispatcher.close()


@pytest.fixture
async def restless(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Rig]:
    made = await _rig(RestlessDesktop(), screen_worker, a11y_worker, input_worker)
    yield made
    await made.dispatcher.close()


def _receipts(error: HostOpError) -> list[tuple[int, bool]]:
    assert error.body is not None
    return [(e["index"], e["ok"]) for e in error.body["events"]]


DOWN = {"type": "mouse_down", "x": 10, "y": 20}
MOVE = {"type": "mouse_move", "x": 60, "y": 20}
UP = {"type": "mouse_up", "x": 90, "y": 20}


# ---- mouse_down / mouse_up -------------------------------------------------------------


async def test_mouse_down_moves_first_and_holds_the_left_button(rig: Rig) -> None:
    await rig.batch(DOWN)
    assert rig.desktop.calls == [("move", 10, 20), ("button", "left", True)]
    assert await rig.held_buttons() == ("left",)


async def test_a_drag_presses_moves_and_releases(rig: Rig) -> None:
    await rig.batch(DOWN, MOVE, UP)
    assert rig.desktop.calls == [
        ("move", 10, 20),
        ("button", "left", True),
        ("move", 60, 20),
        ("move", 90, 20),
        ("button", "left", False),
    ]
    assert await rig.held_buttons() == ()


async def test_down_and_up_without_a_point_act_where_the_pointer_is(rig: Rig) -> None:
    reply = await rig.batch({"type": "mouse_down", "button": "right"}, {"type": "mouse_up"})
    assert rig.desktop.calls == [("button", "right", True), ("button", "left", False)]
    assert [(e["x"], e["y"]) for e in reply["events"]] == [(None, None), (None, None)]
    assert await rig.held_buttons() == ("right",)


async def test_a_button_held_across_batches_is_released_at_session_end(rig: Rig) -> None:
    await rig.batch(DOWN)
    reply, _ = await rig.dispatcher.handle(
        ops.SESSION_END, {"session_id": SESSION, "reason": "done"}
    )
    assert reply["released_inputs"] == ["mouse_left"]
    assert rig.button_calls()[-1] == ("button", "left", False)


async def test_a_held_button_is_released_on_link_loss(rig: Rig) -> None:
    await rig.batch(DOWN)
    assert await rig.dispatcher.on_link_lost() == ["mouse_left"]
    assert await rig.held_buttons() == ()


async def test_a_drag_stopped_by_a_failing_event_leaves_no_button_held(rig: Rig) -> None:
    rig.desktop.fail_keys.add("x")
    error = await rig.stopped(DOWN, MOVE, {"type": "key_press", "key": "x"}, UP)
    assert error.code == ops.ERROR_HOST
    assert "event 2" in error.detail
    assert _receipts(error) == [(0, True), (1, True), (2, False)]
    assert rig.button_calls() == [("button", "left", True), ("button", "left", False)]
    assert ("move", 90, 20) not in rig.desktop.calls
    assert await rig.held_buttons() == ()


async def test_a_drag_stopped_by_a_gone_target_leaves_no_button_held(rig: Rig) -> None:
    error = await rig.stopped(DOWN, {"type": "mouse_move", "target": "t_0000000000"}, UP)
    assert error.code == ops.ERROR_TARGET_GONE
    assert rig.button_calls() == [("button", "left", True), ("button", "left", False)]
    assert await rig.held_buttons() == ()


async def test_a_drag_stopped_by_an_unmet_expectation_leaves_no_button_held(rig: Rig) -> None:
    rig.desktop.draws_on_release = False
    still = {**MOVE, "expect": "change", "expect_timeout_ms": 20}
    error = await rig.stopped(DOWN, still, UP)
    assert error.code == ops.ERROR_EXPECTATION_FAILED
    assert rig.button_calls() == [("button", "left", True), ("button", "left", False)]
    assert await rig.held_buttons() == ()


async def test_a_drag_ended_with_its_session_leaves_no_button_held(rig: Rig) -> None:
    batch = asyncio.create_task(rig.batch(DOWN, {**MOVE, "delay_ms": 5000}, UP))
    assert await asyncio.to_thread(rig.desktop.button_went_down.wait, 5.0)
    await rig.dispatcher.handle(ops.SESSION_END, {"session_id": SESSION, "reason": "done"})
    with pytest.raises(HostOpError, match="interrupted"):
        await batch
    assert rig.button_calls() == [("button", "left", True), ("button", "left", False)]
    assert await rig.held_buttons() == ()


async def test_a_drag_whose_request_is_cancelled_leaves_no_button_held(rig: Rig) -> None:
    # The link cancels its requests' tasks when it drops; the batch is in a walk then.
    rig.desktop.walk_gate = threading.Event()
    target = {"type": "mouse_move", "target": target_id("ok")}
    batch = asyncio.create_task(rig.batch(DOWN, target, UP))
    assert await asyncio.to_thread(rig.desktop.walk_started.wait, 5.0)
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    rig.desktop.walk_gate.set()
    assert await rig.held_buttons() == ()
    assert rig.button_calls() == [("button", "left", True), ("button", "left", False)]


# ---- target ----------------------------------------------------------------------------


async def test_a_target_is_clicked_at_the_centre_of_its_bounds(rig: Rig) -> None:
    rig.desktop.elements = [element("ok", x=100, y=50)]  # 40 x 20
    reply = await rig.batch({"type": "mouse_click", "target": target_id("ok")})
    assert rig.desktop.calls[0] == ("move", 120, 60)
    assert (reply["events"][0]["x"], reply["events"][0]["y"]) == (120, 60)


async def test_a_target_is_found_where_it_is_now_not_in_an_earlier_snapshot(rig: Rig) -> None:
    rig.desktop.elements = [element("ok", x=100, y=50)]
    await rig.dispatcher.handle(ops.A11Y_TARGETS, {"session_id": SESSION})
    rig.desktop.elements = [element("ok", x=200, y=150)]
    walks = rig.desktop.walk_count
    await rig.batch({"type": "mouse_click", "target": target_id("ok")})
    assert rig.desktop.walk_count == walks + 1
    assert rig.desktop.calls[0] == ("move", 220, 160)


async def test_each_target_bound_event_walks_afresh(rig: Rig) -> None:
    rig.desktop.elements = [element("ok", x=100, y=50)]
    click = {"type": "mouse_click", "target": target_id("ok")}
    walks = rig.desktop.walk_count
    await rig.batch(click, {"type": "key_press", "key": "a"}, click)
    assert rig.desktop.walk_count == walks + 2


async def test_a_gone_target_stops_the_batch_there(rig: Rig) -> None:
    rig.desktop.elements = [element("other")]
    error = await rig.stopped(
        {"type": "mouse_click", "x": 5, "y": 5},
        {"type": "mouse_click", "target": target_id("ok")},
        {"type": "type_text", "text": "never"},
    )
    assert error.code == ops.ERROR_TARGET_GONE
    assert target_id("ok") in error.detail
    assert error.body is not None
    assert error.body["stopped_at"] == 1
    gone = error.body["events"][1]
    assert (gone["index"], gone["ok"], gone["x"], gone["y"]) == (1, False, None, None)
    assert _receipts(error) == [(0, True), (1, False)]
    assert ("type", "never") not in rig.desktop.calls


# ---- receipts --------------------------------------------------------------------------


async def test_receipts_say_which_events_changed_the_screen(rig: Rig) -> None:
    reply = await rig.batch(
        {"type": "mouse_click", "x": 120, "y": 60},
        {"type": "mouse_move", "x": 5, "y": 5},
        {"type": "key_press", "key": "a"},
    )
    receipts = reply["events"]
    assert [(e["index"], e["type"], e["ok"]) for e in receipts] == [
        (0, "mouse_click", True),
        (1, "mouse_move", True),
        (2, "key_press", True),
    ]
    assert [e["changed"] for e in receipts] == [True, False, False]
    assert [(e["x"], e["y"]) for e in receipts] == [(120, 60), (5, 5), (None, None)]


async def test_the_last_receipt_counts_what_changed_before_the_settle(rig: Rig) -> None:
    reply = await rig.batch({"type": "mouse_move", "x": 5, "y": 5}, {"type": "mouse_click"})
    assert [e["changed"] for e in reply["events"]] == [False, True]


async def test_a_redraw_during_the_settle_counts_for_the_last_event(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> None:
    rig = await _rig(SlowDrawingDesktop(), screen_worker, a11y_worker, input_worker)
    try:
        reply = await rig.batch(
            {"type": "mouse_click", "x": 120, "y": 60}, settle={"quiet_ms": 40, "timeout_ms": 2000}
        )
    finally:
        await rig.dispatcher.close()
    assert reply["settle"]["settled"] is True
    assert [e["changed"] for e in reply["events"]] == [True]


async def test_receipt_times_follow_the_delays(rig: Rig) -> None:
    reply = await rig.batch(
        {"type": "mouse_move", "x": 1, "y": 1, "delay_ms": 50}, {"type": "key_press", "key": "a"}
    )
    first, second = (e["at_ms"] for e in reply["events"])
    assert 0 <= first < second
    assert second - first >= 50


async def test_without_damage_every_receipt_says_changed(blind: Rig) -> None:
    reply = await blind.batch(
        {"type": "mouse_move", "x": 5, "y": 5}, {"type": "key_press", "key": "a"}
    )
    assert [e["changed"] for e in reply["events"]] == [True, True]


# ---- expect: change --------------------------------------------------------------------


async def test_an_expected_change_that_comes_lets_the_batch_go_on(rig: Rig) -> None:
    reply = await rig.batch(
        {"type": "mouse_click", "x": 120, "y": 60, "expect": "change"},
        {"type": "key_press", "key": "a"},
    )
    assert reply["count"] == 2
    assert reply["events"][0]["changed"] is True


async def test_an_expected_change_that_never_comes_stops_the_batch(rig: Rig) -> None:
    rig.desktop.draws_on_release = False
    error = await rig.stopped(
        {"type": "mouse_move", "x": 5, "y": 5},
        {"type": "mouse_click", "x": 120, "y": 60, "expect": "change", "expect_timeout_ms": 30},
        {"type": "type_text", "text": "never"},
    )
    assert error.code == ops.ERROR_EXPECTATION_FAILED
    assert "30 ms" in error.detail
    assert error.body is not None
    assert error.body["stopped_at"] == 1
    failed = error.body["events"][1]
    assert (failed["ok"], failed["changed"], failed["x"], failed["y"]) == (False, False, 120, 60)
    assert _receipts(error) == [(0, True), (1, False)]
    assert ("type", "never") not in rig.desktop.calls


async def test_an_expectation_waits_for_its_timeout_before_failing(rig: Rig) -> None:
    started = time.monotonic()
    await rig.stopped(
        {"type": "mouse_move", "x": 5, "y": 5, "expect": "change", "expect_timeout_ms": 80}
    )
    assert time.monotonic() - started >= 0.08


async def test_without_damage_an_expectation_counts_as_met(blind: Rig) -> None:
    reply = await blind.batch({"type": "mouse_move", "x": 5, "y": 5, "expect": "change"})
    assert reply["count"] == 1


async def test_an_end_cuts_an_expectation_short(rig: Rig) -> None:
    rig.desktop.draws_on_release = False
    wait_long = {
        "type": "mouse_click",
        "x": 5,
        "y": 5,
        "expect": "change",
        "expect_timeout_ms": 5000,
    }
    batch = asyncio.create_task(rig.batch(DOWN, wait_long))
    assert await asyncio.to_thread(rig.desktop.button_went_up.wait, 5.0)
    started = time.monotonic()
    await rig.dispatcher.handle(ops.SESSION_END, {"session_id": SESSION, "reason": "done"})
    with pytest.raises(HostOpError, match="interrupted"):
        await batch
    assert time.monotonic() - started < 2.0


# ---- settle ----------------------------------------------------------------------------


async def test_a_settle_waits_for_quiet(rig: Rig) -> None:
    reply = await rig.batch(
        {"type": "mouse_click", "x": 120, "y": 60}, settle={"quiet_ms": 40, "timeout_ms": 2000}
    )
    settle = reply["settle"]
    assert settle["settled"] is True
    assert 40 <= settle["waited_ms"] < 2000


async def test_a_screen_that_never_rests_does_not_settle(restless: Rig) -> None:
    reply = await restless.batch(
        {"type": "key_press", "key": "a"}, settle={"quiet_ms": 20, "timeout_ms": 60}
    )
    assert reply["settle"]["settled"] is False
    assert reply["settle"]["waited_ms"] >= 60


async def test_without_damage_a_settle_waits_quiet_ms_and_does_not_settle(blind: Rig) -> None:
    reply = await blind.batch(
        {"type": "key_press", "key": "a"}, settle={"quiet_ms": 30, "timeout_ms": 2000}
    )
    assert reply["settle"]["settled"] is False
    assert reply["settle"]["waited_ms"] >= 30


# ---- require_unchanged -----------------------------------------------------------------


async def test_damage_near_a_point_refuses_the_batch_with_those_rects(rig: Rig) -> None:
    mark = await rig.damage_mark()
    near, far = Rect(100, 50, 40, 20), Rect(250, 150, 10, 10)
    rig.desktop.damage(near, far)
    error = await rig.stopped(
        {"type": "mouse_click", "x": 160, "y": 60},  # 20 px right of `near`
        require_unchanged={"damage_mark": mark, "radius_px": 24},
    )
    assert error.code == ops.ERROR_STALE_FRAME
    assert error.body == {"events": [], "stopped_at": None, "rects": [(100, 50, 40, 20)]}
    assert rig.desktop.calls == []


async def test_damage_beyond_the_radius_lets_the_batch_run(rig: Rig) -> None:
    mark = await rig.damage_mark()
    rig.desktop.damage(Rect(100, 50, 40, 20))
    reply = await rig.batch(
        {"type": "mouse_click", "x": 165, "y": 60},  # 25 px right of it
        require_unchanged={"damage_mark": mark, "radius_px": 24},
    )
    assert reply["count"] == 1


async def test_keyboard_events_act_on_no_point(rig: Rig) -> None:
    mark = await rig.damage_mark()
    rig.desktop.damage(Rect(0, 0, 320, 200))
    reply = await rig.batch(
        {"type": "type_text", "text": "hi"}, require_unchanged={"damage_mark": mark}
    )
    assert reply["count"] == 1


async def test_many_changed_rects_are_bounded(rig: Rig) -> None:
    mark = await rig.damage_mark()
    rig.desktop.damage(*(Rect(x, 10, 1, 1) for x in range(0, 300, 3)))  # 100 apart
    error = await rig.stopped(
        {"type": "mouse_move", "x": 150, "y": 10},
        require_unchanged={"damage_mark": mark, "radius_px": 4096},
    )
    assert error.body is not None
    assert 1 <= len(error.body["rects"]) <= ops.MAX_DIRTY_RECTS


async def test_a_mark_the_log_cannot_answer_counts_the_whole_desktop(rig: Rig) -> None:
    error = await rig.stopped(
        {"type": "mouse_move", "x": 5, "y": 5},
        require_unchanged={"damage_mark": 10**9},
    )
    assert error.code == ops.ERROR_STALE_FRAME
    assert error.body is not None
    assert error.body["rects"] == [(0, 0, 320, 200)]


async def test_without_damage_the_whole_desktop_counts_as_changed(blind: Rig) -> None:
    mark = await blind.damage_mark()
    error = await blind.stopped(
        {"type": "mouse_move", "x": 5, "y": 5}, require_unchanged={"damage_mark": mark}
    )
    assert error.code == ops.ERROR_STALE_FRAME
    assert blind.desktop.calls == []


async def test_an_unchanged_screen_lets_the_batch_run(rig: Rig) -> None:
    mark = await rig.damage_mark()
    reply = await rig.batch(DOWN, UP, require_unchanged={"damage_mark": mark})
    assert reply["count"] == 2


# ---- desktop_unavailable ---------------------------------------------------------------


async def test_an_unavailable_desktop_stops_before_the_first_event(rig: Rig) -> None:
    await rig.batch(DOWN)
    rig.desktop.set_desktop_state("locked")
    error = await rig.stopped(MOVE)
    assert (error.code, error.detail) == (ops.ERROR_DESKTOP_UNAVAILABLE, "locked")
    assert error.body == {"events": [], "stopped_at": 0, "rects": []}
    assert await rig.held_buttons() == ()


# ---- the failed reply's body over the link ---------------------------------------------


async def test_a_stopped_batch_sends_its_body_in_the_failed_reply(rig: Rig) -> None:
    async with FakeGateway().running() as gateway:
        link = AgentLink(gateway.url, RIG_TOKEN, fake_hello(), rig.dispatcher, rng=random.Random(1))
        task = asyncio.create_task(link.run())
        try:
            connection = await gateway.next_connection()
            events = [{"type": "mouse_click", "target": "t_0000000000"}]
            reply = await connection.request(
                ops.INPUT_BATCH, {"session_id": SESSION, "events": events}
            )
            other = await connection.request(ops.SCREEN_DIRTY, {"session_id": "nope"})
        finally:
            await link.stop()
            async with asyncio.timeout(10):
                await task
    assert reply.header["ok"] is False
    assert reply.header["error"]["code"] == ops.ERROR_TARGET_GONE
    stopped = ops.InputStopped.model_validate(reply.header["body"])
    assert stopped.stopped_at == 0
    assert [(e.index, e.ok) for e in stopped.events] == [(0, False)]
    assert "body" not in other.header


class BrokenWalkDesktop(DrawingDesktop):
    def snapshot_accessibility(self, budget: WalkBudget) -> Any:
        raise OSError("the accessibility bus went away")


async def test_a_walk_that_fails_stops_the_batch_and_lets_go_of_the_button(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> None:
    rig = await _rig(BrokenWalkDesktop(), screen_worker, a11y_worker, input_worker)
    try:
        error = await rig.stopped(DOWN, {"type": "mouse_move", "target": target_id("ok")})
        assert error.code == ops.ERROR_HOST
        assert "accessibility bus" in error.detail
        assert _receipts(error) == [(0, True), (1, False)]
        assert await rig.held_buttons() == ()
    finally:
        await rig.dispatcher.close()


async def test_an_end_during_the_settle_stops_with_the_receipts(restless: Rig) -> None:
    batch = asyncio.create_task(
        restless.batch({"type": "mouse_click"}, settle={"quiet_ms": 20, "timeout_ms": 10000})
    )
    assert await asyncio.to_thread(restless.desktop.button_went_up.wait, 5.0)
    await restless.dispatcher.handle(ops.SESSION_END, {"session_id": SESSION, "reason": "done"})
    with pytest.raises(HostOpError, match="interrupted") as caught:
        async with asyncio.timeout(3):
            await batch
    assert _receipts(caught.value) == [(0, True)]
