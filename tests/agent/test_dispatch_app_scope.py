"""An app session through the dispatcher: the ops the scope reaches that the sim e2e
tests do not (`app_scope.py` has the geometry): keys with no app window, the pointer a
batch leaves behind, changes read since a frame, a walk of another process's window,
and live video."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from rigway.agent.backends.base import AccessibleElement, Rect, StackedWindow
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.agent.fakes import FakeApps, FakeDesktop

WINDOW = Rect(40, 30, 200, 120)
OTHER_PID = 77


@dataclass
class AppRig:
    desktop: FakeDesktop
    apps: FakeApps
    dispatcher: Dispatcher

    async def call(self, op: str, **body: Any) -> dict[str, Any]:
        reply, _ = await self.dispatcher.handle(op, {"session_id": "s1", **body})
        return reply

    async def error(self, op: str, **body: Any) -> HostOpError:
        with pytest.raises(HostOpError) as caught:
            await self.dispatcher.handle(op, {"session_id": "s1", **body})
        return caught.value

    def open_app_window(self) -> int:
        pid = self.apps.launch("/usr/bin/app", [])
        self.desktop.stacked_windows = [StackedWindow(9, pid, WINDOW)]
        return pid


@pytest.fixture
async def rig(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[AppRig]:
    desktop, apps = FakeDesktop(), FakeApps()
    dispatcher = dispatcher_over(desktop, apps, screen_worker, a11y_worker, input_worker)
    app_rig = AppRig(desktop, apps, dispatcher)
    await app_rig.call(ops.SESSION_START, mode="app")
    yield app_rig
    await dispatcher.close()


async def test_keys_without_an_app_window_are_refused(rig: AppRig) -> None:
    error = await rig.error(ops.INPUT_BATCH, events=[{"type": "type_text", "text": "pin"}])

    assert error.code == ops.ERROR_NO_APP_WINDOW
    assert not any(call[0] == "type" for call in rig.desktop.calls)


async def test_a_pointless_event_may_follow_a_batch_that_left_the_pointer_on_the_window(
    rig: AppRig,
) -> None:
    rig.open_app_window()
    await rig.call(ops.INPUT_BATCH, events=[{"type": "mouse_move", "x": 50, "y": 40}])

    await rig.call(ops.INPUT_BATCH, events=[{"type": "mouse_down"}, {"type": "mouse_up"}])
    await rig.call(ops.INPUT_BATCH, events=[{"type": "key_press", "key": "a"}])
    refused = await rig.error(ops.INPUT_BATCH, events=[{"type": "mouse_click", "x": 5, "y": 5}])

    assert refused.code == ops.ERROR_INVALID_REQUEST
    assert "[40,30,200,120]" in refused.detail


async def test_changes_since_a_frame_are_clipped_to_the_window(rig: AppRig) -> None:
    rig.open_app_window()
    mark = (await rig.call(ops.SCREEN_CHANGED_SINCE, damage_mark=0))["damage_mark"]
    rig.desktop.pending_damage = [Rect(0, 0, 50, 50), Rect(300, 180, 10, 10)]

    changed = await rig.call(ops.SCREEN_CHANGED_SINCE, damage_mark=mark)

    assert changed["rects"] == [(40, 30, 10, 20)]


async def test_the_walk_of_another_processs_window_shows_nothing(rig: AppRig) -> None:
    pid = rig.open_app_window()
    inside = AccessibleElement("k", "push button", "Pay", WINDOW.x + 5, WINDOW.y + 5, 20, 10)
    rig.desktop.elements = [inside]

    theirs = await rig.call(ops.A11Y_TARGETS)
    rig.desktop.window_pid = pid
    ours = await rig.call(ops.A11Y_TARGETS)

    assert (theirs["targets"], theirs["window_title"]) == ([], "")
    assert [t["name"] for t in ours["targets"]] == ["Pay"]
    assert ours["app_window"] == (40, 30, 200, 120)


async def test_live_video_is_refused_in_an_app_session(rig: AppRig) -> None:
    rig.open_app_window()

    error = await rig.error(ops.STREAM_OFFER, viewer_id="v1", sdp="v=0")

    assert error.code == ops.ERROR_INVALID_REQUEST
    assert "app session" in error.detail


async def test_keys_go_only_where_the_app_has_or_takes_the_focus(rig: AppRig) -> None:
    pid = rig.open_app_window()
    other = StackedWindow(8, OTHER_PID, Rect(400, 0, 100, 100), has_focus=True)
    rig.desktop.stacked_windows = [other, StackedWindow(9, pid, WINDOW)]

    refused = await rig.error(ops.INPUT_BATCH, events=[{"type": "type_text", "text": "pin"}])
    typed_before = [call for call in rig.desktop.calls if call[0] == "type"]
    await rig.call(
        ops.INPUT_BATCH,
        events=[{"type": "mouse_click", "x": 50, "y": 40}, {"type": "type_text", "text": "ok"}],
    )

    assert refused.code == ops.ERROR_INVALID_REQUEST
    assert "keyboard focus" in refused.detail
    assert typed_before == []
    assert [call for call in rig.desktop.calls if call[0] == "type"] == [("type", "ok")]
