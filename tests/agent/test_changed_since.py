"""`screen/changed_since`: what the host saw change after a frame's damage mark, which
`observe?since=` cuts its image to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import Rect, WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.agent.fakes import FakeApps, FakeDesktop


async def _started(desktop: FakeDesktop, screen: SerialWorker, a11y: SerialWorker) -> Dispatcher:
    dispatcher = dispatcher_over(desktop, FakeApps(), screen, a11y)
    await dispatcher.handle(ops.SESSION_START, {"session_id": "s1", "mode": "desktop"})
    return dispatcher


@pytest.fixture
async def desktop() -> FakeDesktop:
    return FakeDesktop()


@pytest.fixture
async def dispatcher(
    desktop: FakeDesktop, screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> AsyncIterator[Dispatcher]:
    started = await _started(desktop, screen_worker, a11y_worker)
    # The session's first ask: captures keep their pictures from here on.
    await _changed(started, 0)
    yield started
    await started.close()


async def _changed(dispatcher: Dispatcher, mark: int) -> ops.ScreenChanged:
    body: dict[str, Any] = {"session_id": "s1", "damage_mark": mark}
    reply, _ = await dispatcher.handle(ops.SCREEN_CHANGED_SINCE, body)
    return ops.ScreenChanged.model_validate(reply)


async def test_damage_after_the_mark_is_reported_and_the_mark_moves_on(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    mark = (await _changed(dispatcher, 0)).damage_mark
    desktop.damage(Rect(10, 20, 30, 40))
    changed = await _changed(dispatcher, mark)
    assert changed.known
    assert changed.rects == [(10, 20, 30, 40)]
    assert changed.damage_mark > mark
    assert (await _changed(dispatcher, changed.damage_mark)).rects == []


async def test_more_rects_than_a_reply_carries_become_their_bounding_box(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    mark = (await _changed(dispatcher, 0)).damage_mark
    desktop.damage(*(Rect(i, 2 * i, 1, 1) for i in range(ops.MAX_DIRTY_RECTS + 1)))
    changed = await _changed(dispatcher, mark)
    last = ops.MAX_DIRTY_RECTS
    assert changed.rects == [(0, 0, last + 1, 2 * last + 1)]


async def test_a_backend_without_damage_cannot_tell(
    screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> None:
    dispatcher = await _started(FakeDesktop(has_damage=False), screen_worker, a11y_worker)
    try:
        changed = await _changed(dispatcher, 0)
    finally:
        await dispatcher.close()
    assert (changed.known, changed.rects) == (False, [])


async def test_another_sessions_ask_is_refused(dispatcher: Dispatcher) -> None:
    with pytest.raises(HostOpError) as caught:
        await dispatcher.handle(ops.SCREEN_CHANGED_SINCE, {"session_id": "s2", "damage_mark": 0})
    assert caught.value.code == ops.ERROR_SESSION_MISMATCH


# ---- checked against the picture the caller was shown ----------------------------------


async def _capture(dispatcher: Dispatcher, **fields: Any) -> int:
    """A capture's damage mark: the mark of the picture it showed."""
    reply, _ = await dispatcher.handle(ops.SCREEN_CAPTURE, {"session_id": "s1", **fields})
    return ops.ScreenCaptured.model_validate(reply).damage_mark


def _draw(desktop: FakeDesktop, rect: Rect, value: int) -> None:
    desktop.pixels[rect.y : rect.y + rect.h, rect.x : rect.x + rect.w] = value


async def test_damage_repainted_the_same_is_no_change(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    mark = await _capture(dispatcher)
    desktop.damage(Rect(0, 0, 320, 200))  # a whole-window repaint, every pixel as it was

    changed = await _changed(dispatcher, mark)

    assert (changed.known, changed.compared, changed.rects) == (True, True, [])


async def test_only_the_pixels_that_differ_are_reported(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    mark = await _capture(dispatcher)
    _draw(desktop, Rect(40, 50, 7, 3), 10)
    desktop.damage(Rect(0, 0, 320, 200))

    changed = await _changed(dispatcher, mark)

    assert changed.compared
    assert changed.rects == [(40, 50, 7, 3)]


async def test_a_deltas_picture_keeps_the_old_pixels_outside_its_region(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    """Drawn after the ask and before the delta's capture, outside its region: the
    caller's picture lacks it, so the next ask reports it though the capture's grab
    already had it."""
    first = await _capture(dispatcher)
    _draw(desktop, Rect(10, 10, 5, 5), 0)
    desktop.damage(Rect(10, 10, 5, 5))
    changed = await _changed(dispatcher, first)
    assert changed.rects == [(10, 10, 5, 5)]
    _draw(desktop, Rect(200, 100, 4, 4), 0)
    desktop.damage(Rect(200, 100, 4, 4))
    patch = {"base_mark": first, "mark": changed.damage_mark}
    region = {"x": 10, "y": 10, "w": 5, "h": 5}
    await _capture(dispatcher, region=region, picture_patch=patch)

    again = await _changed(dispatcher, changed.damage_mark)

    assert again.compared
    assert again.rects == [(200, 100, 4, 4)]


async def test_a_delta_showing_everything_that_differs_leaves_nothing_to_report(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    first = await _capture(dispatcher)
    _draw(desktop, Rect(10, 10, 5, 5), 0)
    desktop.damage(Rect(0, 0, 100, 100))
    changed = await _changed(dispatcher, first)
    patch = {"base_mark": first, "mark": changed.damage_mark}
    region = {"x": 10, "y": 10, "w": 5, "h": 5}
    await _capture(dispatcher, region=region, picture_patch=patch)
    desktop.damage(Rect(0, 0, 320, 200))

    again = await _changed(dispatcher, changed.damage_mark)

    assert (again.compared, again.rects) == (True, [])


async def test_a_mark_without_a_picture_answers_the_damage_unchecked(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    mark = (await _changed(dispatcher, 0)).damage_mark  # no capture: no picture
    desktop.damage(Rect(0, 0, 320, 200))

    changed = await _changed(dispatcher, mark)

    assert (changed.compared, changed.rects) == (False, [(0, 0, 320, 200)])


async def test_two_different_pictures_under_one_mark_leave_it_unchecked(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    """Drawn after a poll and before the grab, without a poll in between: two grabs
    under one mark show different pixels, and neither caller's picture can be told."""
    mark = await _capture(dispatcher)
    _draw(desktop, Rect(0, 0, 3, 3), 0)  # no damage yet: the next grab is at the same mark
    assert await _capture(dispatcher, quality=70) == mark
    desktop.damage(Rect(0, 0, 3, 3))

    changed = await _changed(dispatcher, mark)

    assert (changed.compared, changed.rects) == (False, [(0, 0, 3, 3)])


async def test_far_apart_changes_in_one_damaged_area_are_boxes_of_their_own(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    mark = await _capture(dispatcher)
    _draw(desktop, Rect(10, 10, 5, 5), 0)
    _draw(desktop, Rect(250, 150, 20, 30), 0)
    _draw(desktop, Rect(17, 12, 2, 2), 0)  # close to the first: the same box
    desktop.damage(Rect(0, 0, 320, 200))

    changed = await _changed(dispatcher, mark)

    assert sorted(changed.rects) == [(10, 10, 9, 5), (250, 150, 20, 30)]


async def test_a_deltas_further_images_add_to_the_same_picture(
    desktop: FakeDesktop, dispatcher: Dispatcher
) -> None:
    first = await _capture(dispatcher)
    _draw(desktop, Rect(10, 10, 5, 5), 0)
    _draw(desktop, Rect(250, 150, 5, 5), 0)
    desktop.damage(Rect(0, 0, 320, 200))
    changed = await _changed(dispatcher, first)
    now = changed.damage_mark
    for (x, y, w, h), base in zip(changed.rects, (first, now), strict=True):
        region = {"x": x, "y": y, "w": w, "h": h}
        await _capture(dispatcher, region=region, picture_patch={"base_mark": base, "mark": now})
    desktop.damage(Rect(0, 0, 320, 200))

    again = await _changed(dispatcher, now)

    assert (again.compared, again.rects) == (True, [])


# ---- pictures kept only for a session that asks ------------------------------------------


async def _dispatcher_and_screen(
    desktop: FakeDesktop, screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> tuple[Dispatcher, ScreenService]:
    screen = ScreenService(desktop, screen_worker)
    dispatcher = Dispatcher(
        desktop,
        screen,
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        InputGuard(desktop),
        FakeApps(),
    )
    await dispatcher.handle(ops.SESSION_START, {"session_id": "s1", "mode": "desktop"})
    return dispatcher, screen


async def test_pictures_are_kept_from_the_sessions_first_ask_until_its_end(
    screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> None:
    desktop = FakeDesktop()
    dispatcher, screen = await _dispatcher_and_screen(desktop, screen_worker, a11y_worker)
    try:
        before = await _capture(dispatcher)
        assert await screen.pictures_kept() == 0  # never asked: no copy of the desktop
        desktop.damage(Rect(0, 0, 320, 200))
        first = await _changed(dispatcher, before)
        assert (first.compared, first.rects) == (False, [(0, 0, 320, 200)])

        after = await _capture(dispatcher, quality=70)
        assert await screen.pictures_kept() == 1
        desktop.damage(Rect(0, 0, 320, 200))  # repainted the same
        assert (await _changed(dispatcher, after)).compared

        await dispatcher.handle(ops.SESSION_END, {"session_id": "s1", "reason": "ended"})
        assert await screen.pictures_kept() == 0
        # The next session keeps none until it asks in turn.
        await dispatcher.handle(ops.SESSION_START, {"session_id": "s2", "mode": "desktop"})
        await dispatcher.handle(ops.SCREEN_CAPTURE, {"session_id": "s2", "quality": 60})
        assert await screen.pictures_kept() == 0
    finally:
        await dispatcher.close()


async def test_a_backend_without_damage_keeps_no_picture(
    screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> None:
    desktop = FakeDesktop(has_damage=False)
    dispatcher, screen = await _dispatcher_and_screen(desktop, screen_worker, a11y_worker)
    try:
        await _changed(dispatcher, 0)
        await _capture(dispatcher)

        assert await screen.pictures_kept() == 0
    finally:
        await dispatcher.close()
