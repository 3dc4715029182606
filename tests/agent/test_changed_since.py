"""`screen/changed_since`: what the host saw change after a frame's damage mark, which
`observe?since=` cuts its image to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.agent.backends.base import Rect
from rigway.agent.dispatch import Dispatcher, HostOpError
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
