"""Act and see on a real X desktop: batches through the dispatcher over the x11 backend,
against GTK dialogs (zenity), watched through the X server's own state.

A drag on a GTK scale moves its value (read back through the accessibility snapshot);
a target-bound click presses a real button found by id; receipts and the settle watch
real damage; and every way a drag can stop half-way leaves no button down in the
server (QueryPointer's mask), not only in the guard's bookkeeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot
from rigway.agent.backends.x11 import X11Desktop
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.agent.fakes import FakeApps
from tests.support.x_desktop import LaunchedApps, XDesktop, wait_until

pytestmark = pytest.mark.x11

SESSION = "s1"
SCALE_TITLE = "Scale"
EXIT_TIMEOUT_S = 15.0


@dataclass
class Agent:
    dispatcher: Dispatcher
    desk: XDesktop

    async def batch(self, *events: dict[str, Any], **extra: Any) -> dict[str, Any]:
        body = {"session_id": SESSION, "events": list(events), **extra}
        reply, _ = await self.dispatcher.handle(ops.INPUT_BATCH, body)
        return reply

    async def stopped(self, *events: dict[str, Any], **extra: Any) -> HostOpError:
        with pytest.raises(HostOpError) as caught:
            await self.batch(*events, **extra)
        return caught.value

    async def targets(self) -> list[dict[str, Any]]:
        reply, _ = await self.dispatcher.handle(ops.A11Y_TARGETS, {"session_id": SESSION})
        targets: list[dict[str, Any]] = reply["targets"]
        return targets

    async def slider(self) -> dict[str, Any]:
        (found,) = [t for t in await self.targets() if t["role"] == "slider"]
        return found

    async def end(self) -> dict[str, Any]:
        body = {"session_id": SESSION, "reason": "done"}
        reply, _ = await self.dispatcher.handle(ops.SESSION_END, body)
        return reply


@pytest.fixture
async def agent(x11_backend: X11Desktop, x_desktop: XDesktop) -> AsyncIterator[Agent]:
    screen_worker, a11y_worker = SerialWorker("test-screen"), SerialWorker("test-a11y")
    dispatcher = dispatcher_over(x11_backend, FakeApps(), screen_worker, a11y_worker)
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION})
    try:
        yield Agent(dispatcher, x_desktop)
    finally:
        await Agent(dispatcher, x_desktop).end()  # idempotent
        await dispatcher.close()
        for worker in (screen_worker, a11y_worker):
            worker.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def scale(
    apps: LaunchedApps, window_titled: Callable[[str], AccessibilitySnapshot]
) -> AccessibilitySnapshot:
    """A zenity scale at 50 of 0..100: its knob sits at the middle of the slider."""
    apps.launch(
        [
            "zenity",
            "--scale",
            f"--title={SCALE_TITLE}",
            "--text=Pick",
            "--value=50",
            "--min-value=0",
            "--max-value=100",
        ]
    )
    return window_titled(SCALE_TITLE)


def _middle(target: dict[str, Any]) -> tuple[int, int]:
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


def _drag_start(slider: dict[str, Any]) -> dict[str, Any]:
    x, y = _middle(slider)
    return {"type": "mouse_down", "x": x, "y": y}


def _drag_left(slider: dict[str, Any]) -> list[dict[str, Any]]:
    x, y = _middle(slider)
    return [
        _drag_start(slider),
        {"type": "mouse_move", "x": x - slider["w"] // 4, "y": y},
        {"type": "mouse_move", "x": slider["x"] + 4, "y": y},
        {"type": "mouse_up"},
    ]


async def test_a_drag_moves_a_gtk_scale(agent: Agent, scale: AccessibilitySnapshot) -> None:
    slider = await agent.slider()
    assert slider["value"] == "50"

    reply = await agent.batch(*_drag_left(slider), settle={"quiet_ms": 100, "timeout_ms": 3000})

    assert [e["type"] for e in reply["events"]] == [
        "mouse_down",
        "mouse_move",
        "mouse_move",
        "mouse_up",
    ]
    assert float((await agent.slider())["value"]) < 25
    await _nothing_held(agent.desk)


async def test_a_settle_after_a_click_waits_about_quiet_ms(
    agent: Agent, scale: AccessibilitySnapshot
) -> None:
    slider = await agent.slider()
    before = float(slider["value"])
    # A click in the trough right of the knob moves it: the scale redraws, then rests.
    # (The trough ends short of the slider's reported bounds: 3/4 of the width is in it.)
    click = {
        "type": "mouse_click",
        "x": slider["x"] + 3 * slider["w"] // 4,
        "y": _middle(slider)[1],
    }

    reply = await agent.batch(click, settle={"quiet_ms": 200, "timeout_ms": 5000})

    assert reply["settle"]["settled"] is True
    assert 200 <= reply["settle"]["waited_ms"] < 1500
    assert reply["events"][0]["changed"] is True
    assert float((await agent.slider())["value"]) > before


async def test_a_click_that_redraws_has_a_changed_receipt(
    agent: Agent, scale: AccessibilitySnapshot
) -> None:
    slider = await agent.slider()
    x, y = slider["x"] + slider["w"] // 4, _middle(slider)[1]  # in the trough: the knob moves
    redraws = {"type": "mouse_click", "x": x, "y": y, "expect": "change", "expect_timeout_ms": 5000}

    reply = await agent.batch(redraws, {"type": "key_press", "key": "shift"})

    first, second = reply["events"]
    assert (first["ok"], first["changed"], first["x"], first["y"]) == (True, True, x, y)
    assert (second["x"], second["y"]) == (None, None)
    assert first["at_ms"] <= second["at_ms"]


async def test_a_target_bound_click_presses_a_real_button(
    agent: Agent,
    apps: LaunchedApps,
    window_titled: Callable[[str], AccessibilitySnapshot],
) -> None:
    dialog = apps.launch(["zenity", "--question", "--title=Ask", "--text=Proceed?"])
    window_titled("Ask")
    (yes,) = [t for t in await agent.targets() if t["role"] == "push button" and t["name"] == "Yes"]

    reply = await agent.batch({"type": "mouse_click", "target": yes["id"]})

    assert (reply["events"][0]["x"], reply["events"][0]["y"]) == _middle(yes)
    assert await asyncio.to_thread(dialog.wait, EXIT_TIMEOUT_S) == 0  # Yes answers 0


async def test_a_button_held_after_a_batch_is_released_at_session_end(
    agent: Agent, scale: AccessibilitySnapshot
) -> None:
    await agent.batch(_drag_start(await agent.slider()))
    assert agent.desk.held_buttons() == [1]

    reply = await agent.end()

    assert reply["released_inputs"] == ["mouse_left"]
    await _nothing_held(agent.desk)


@pytest.mark.parametrize(
    ("failing", "code"),
    [
        ({"type": "mouse_move", "target": "t_0000000000"}, ops.ERROR_TARGET_GONE),
        ({"type": "key_press", "key": "nosuchkey"}, ops.ERROR_HOST),
    ],
)
async def test_a_drag_stopped_half_way_leaves_no_button_held(
    agent: Agent, scale: AccessibilitySnapshot, failing: dict[str, Any], code: str
) -> None:
    down, move, _, up = _drag_left(await agent.slider())

    error = await agent.stopped(down, move, failing, up)

    assert error.code == code
    assert error.body is not None
    assert error.body["stopped_at"] == 2
    await _nothing_held(agent.desk)


async def test_a_drag_stopped_by_an_unmet_expectation_leaves_no_button_held(
    agent: Agent,
) -> None:
    # On the bare desktop: nothing redraws for a pointer move.
    error = await agent.stopped(
        {"type": "mouse_down", "x": 20, "y": 20},
        {"type": "mouse_move", "x": 40, "y": 40, "expect": "change", "expect_timeout_ms": 300},
        {"type": "mouse_up"},
    )

    assert error.code == ops.ERROR_EXPECTATION_FAILED
    await _nothing_held(agent.desk)


async def test_a_drag_interrupted_by_the_session_end_leaves_no_button_held(
    agent: Agent, scale: AccessibilitySnapshot
) -> None:
    down, move, _, up = _drag_left(await agent.slider())
    batch = asyncio.create_task(agent.batch(down, {**move, "delay_ms": 10000}, up))
    await _until_held(agent.desk)

    await agent.end()

    with pytest.raises(HostOpError, match="interrupted"):
        await batch
    await _nothing_held(agent.desk)


async def test_a_drag_cut_by_a_dropped_link_leaves_no_button_held(
    agent: Agent, scale: AccessibilitySnapshot
) -> None:
    down, move, _, up = _drag_left(await agent.slider())
    batch = asyncio.create_task(agent.batch(down, {**move, "delay_ms": 10000}, up))
    await _until_held(agent.desk)

    # What the link does when it drops: release, and cancel the request's task.
    released = await agent.dispatcher.on_link_lost()
    batch.cancel()

    with pytest.raises(asyncio.CancelledError):
        await batch
    assert released == ["mouse_left"]
    await _nothing_held(agent.desk)


async def _until_held(desk: XDesktop) -> None:
    """Until the server has button 1 down (the batch is past its mouse_down)."""
    await asyncio.to_thread(wait_until, lambda: desk.held_buttons() == [1], message="button 1 held")


async def _nothing_held(desk: XDesktop) -> None:
    """Until the server has no button down. Not always at once: a press on a window may
    start a synchronous pointer grab (openbox's click-to-focus), and the server holds the
    pointer's later events, the release among them, until the grabbing client lets them
    through (one run of this file saw the release land a moment after the call)."""
    await asyncio.to_thread(wait_until, lambda: desk.held_buttons() == [], message="no button held")
