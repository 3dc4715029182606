"""Act and see through the SDK against a live gateway and a sim rig on real sockets:
settle and observe in one call, frames and image points, a stale frame, the batch's
typed 409s, waits, and a drag (sync, in a thread while the loop serves it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.client import (
    AsyncRigway,
    AsyncSessionHandle,
    ExpectationFailedError,
    FrameExpiredError,
    InputEvent,
    ObserveOptions,
    Rigway,
    StaleFrameError,
    TargetGoneError,
)
from tests.e2e.harness import Stack
from tests.support.live import live_stack

# A point on the bare desktop, far from the sim's window: nothing there ever changes.
BARE = (40, 40)


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


@pytest.fixture
async def session(stack: Stack) -> AsyncIterator[AsyncSessionHandle]:
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as handle,
    ):
        yield handle


async def test_click_by_name_settles_and_observes_what_it_did(
    stack: Stack, session: AsyncSessionHandle
) -> None:
    await session.observe(image=False)
    result = await session.click(
        target="remember me", settle=True, observe=ObserveOptions(image=False)
    )

    assert stack.sim().checkbox_checked is True
    assert [(r.type, r.ok) for r in result.receipts] == [("mouse_click", True)]
    assert result.settle is not None
    assert result.observe is not None
    assert result.observe.jpeg is None
    assert "Remember me" in {target.name for target in result.observe.targets}


async def test_points_of_a_downscaled_screenshot_land_where_they_show(
    stack: Stack, session: AsyncSessionHandle
) -> None:
    shot = await session.screenshot(max_width=960)
    rect = stack.sim().control_rect("remember")
    x, y = shot.from_native(rect.x + rect.w // 2, rect.y + rect.h // 2)

    result = await session.click(x, y, frame_id=shot, coords="image")

    assert shot.frame_id is not None
    assert stack.sim().checkbox_checked is True
    receipt = result.receipts[0]
    assert receipt.x is not None
    assert receipt.y is not None
    assert rect.x <= receipt.x < rect.x + rect.w
    assert rect.y <= receipt.y < rect.y + rect.h


async def test_a_change_near_the_point_since_the_frame_raises_stale_frame(
    stack: Stack, session: AsyncSessionHandle
) -> None:
    shot = await session.screenshot()
    stack.sim().type_text("z")  # the username field changes under the caller
    field = stack.sim().control_rect("username")

    with pytest.raises(StaleFrameError) as caught:
        await session.click(
            field.x + field.w + 10, field.y + 5, frame_id=shot, require_unchanged=True
        )

    assert (field.x, field.y, field.w, field.h) in caught.value.rects
    assert caught.value.receipts == []


async def test_a_gone_target_and_an_unknown_frame_raise_their_errors(
    stack: Stack, session: AsyncSessionHandle
) -> None:
    with pytest.raises(TargetGoneError) as gone:
        await session.act([InputEvent.key_press("tab"), InputEvent.mouse_click(target="t_0")])
    with pytest.raises(FrameExpiredError):
        await session.click(1, 1, frame_id="frm_" + "0" * 24, coords="image")

    assert gone.value.stopped_at == 1
    assert [(r.index, r.ok) for r in gone.value.receipts] == [(0, True), (1, False)]
    assert stack.sim().focused_control == "password"  # the tab before it ran


async def test_an_unmet_expectation_stops_the_batch(
    stack: Stack, session: AsyncSessionHandle
) -> None:
    with pytest.raises(ExpectationFailedError) as caught:
        await session.act(
            [
                InputEvent.mouse_move(*BARE).expecting_change(150),
                InputEvent.type_text("never"),
            ]
        )

    assert caught.value.stopped_at == 0
    assert caught.value.receipts[0].changed is False
    assert stack.sim().field_text("username") == ""


async def test_waits_for_a_target_and_for_a_change_that_never_comes(
    session: AsyncSessionHandle,
) -> None:
    found = await session.wait_for("target", target="remember", timeout_ms=3000)
    nothing = await session.wait_for("change", timeout_ms=200)

    assert found.met is True
    assert found.target is not None
    assert found.target.name == "Remember me"
    assert any(t.id == found.target.id for t in session.latest_targets)
    assert (nothing.met, nothing.target) == (False, None)


async def test_sync_drag_presses_and_releases_over_the_check_box(stack: Stack) -> None:
    rect = stack.sim().control_rect("remember")
    path = [(rect.x + 2, rect.y + 2), (rect.x + rect.w // 2, rect.y + 3), (rect.x + 5, rect.y + 5)]

    def drag() -> bool | None:
        with (
            Rigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
            rigway.sessions.create(rig_id=stack.rig_ids[0]) as handle,
        ):
            return handle.drag(path).settled

    settled = await asyncio.to_thread(drag)

    assert settled is not None
    assert stack.sim().checkbox_checked is True
    assert stack.sim().pressed_buttons == frozenset()
