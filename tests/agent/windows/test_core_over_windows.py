"""The agent core (dispatch, screen service, safety, app tracking) over the windows
backend: the real role logic on fakes of its platform layer, assembled as the runner
assembles any backend.

What Windows would have done is read back from the fakes: the cursor SendInput put
where, the text it delivered, the keys it holds, the processes and windows left.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
import simplejpeg

from rigway.agent.backends.base import Rect
from rigway.agent.backends.windows import sendinput as si
from rigway.agent.backends.windows.desktop_state import CONSTANTS
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.agent.conformance.windows_rig import OUTPUT, WindowsFakeRig
from tests.agent.windows.fake_input import Region
from tests.agent.windows.fake_win32 import CONSOLE_SESSION

SESSION = "s1"
SECRET = "correct horse 🐎"
RED = (0, 0, 255, 255)  # BGRA
ERROR_ACCESS_DENIED = 5


@dataclass
class Core:
    rig: WindowsFakeRig
    dispatcher: Dispatcher

    async def call(self, op: str, **body: Any) -> dict[str, Any]:
        reply, _ = await self.dispatcher.handle(op, {"session_id": SESSION, **body})
        return reply

    async def error(self, op: str, **body: Any) -> HostOpError:
        with pytest.raises(HostOpError) as caught:
            await self.dispatcher.handle(op, {"session_id": SESSION, **body})
        return caught.value


@pytest.fixture
async def core(
    screen_worker: SerialWorker, a11y_worker: SerialWorker, input_worker: SerialWorker
) -> AsyncIterator[Core]:
    rig = WindowsFakeRig()
    dispatcher = dispatcher_over(rig.desktop, rig.apps, screen_worker, a11y_worker, input_worker)
    await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION, "mode": "desktop"})
    yield Core(rig, dispatcher)
    await dispatcher.close()
    rig.close()


async def test_session_reports_the_outputs_size_and_dxgi(
    screen_worker: SerialWorker, a11y_worker: SerialWorker
) -> None:
    rig = WindowsFakeRig()
    dispatcher = dispatcher_over(rig.desktop, rig.apps, screen_worker, a11y_worker)
    try:
        reply, _ = await dispatcher.handle(ops.SESSION_START, {"session_id": SESSION})
    finally:
        await dispatcher.close()
        rig.close()
    assert reply == {
        "native_width": OUTPUT.width,
        "native_height": OUTPUT.height,
        "capture_mode": "dxgi",
    }


async def test_a_screenshot_shows_what_the_duplication_delivered(core: Core) -> None:
    core.rig.duplication.paint(Rect(0, 0, 64, 64), RED)

    _, jpeg = await core.dispatcher.handle(ops.SCREEN_CAPTURE, {"session_id": SESSION})

    assert jpeg is not None
    pixels = simplejpeg.decode_jpeg(jpeg, colorspace="BGR")
    assert pixels.shape == (OUTPUT.height, OUTPUT.width, 3)
    assert np.abs(pixels[8:56, 8:56].astype(int) - [0, 0, 255]).max() < 16


async def test_dirty_reports_the_duplications_rectangles(core: Core) -> None:
    await core.call(ops.SCREEN_DIRTY)  # the whole screen, once, after the first frame
    core.rig.duplication.paint(Rect(300, 200, 40, 30), RED)

    reply = await core.call(ops.SCREEN_DIRTY)

    assert [list(rect) for rect in reply["rects"]] == [[300, 200, 40, 30]]


async def test_a_click_and_text_reach_windows_as_sent(core: Core) -> None:
    text = "Grüße 👋\r\nzweite Zeile"
    reply = await core.call(
        ops.INPUT_BATCH,
        events=[{"type": "mouse_click", "x": 640, "y": 400}, {"type": "type_text", "text": text}],
    )

    assert reply["count"] == 2
    port = core.rig.input_port
    assert OUTPUT.from_screen(*port.cursor) == (640, 400)
    assert port.typed_text == "Grüße 👋\nzweite Zeile"
    assert port.buttons_down == set()


async def test_input_to_an_elevated_window_is_an_error_not_a_success(core: Core) -> None:
    core.rig.input_port.foreground = si.SECURITY_MANDATORY_HIGH_RID

    error = await core.error(ops.INPUT_BATCH, events=[{"type": "type_text", "text": "x"}])

    assert error.code == ops.ERROR_HOST
    assert "elevated" in error.detail
    assert core.rig.input_port.typed_text == ""


async def test_a_click_on_an_elevated_window_is_an_error(core: Core) -> None:
    x, y = OUTPUT.to_screen(100, 100)
    core.rig.input_port.windows = [Region(x - 10, y - 10, 50, 50, si.SECURITY_MANDATORY_HIGH_RID)]

    error = await core.error(ops.INPUT_BATCH, events=[{"type": "mouse_click", "x": 100, "y": 100}])

    assert error.code == ops.ERROR_HOST
    assert core.rig.input_port.buttons_down == set()


async def test_input_while_locked_is_refused_and_nothing_sent(core: Core) -> None:
    # What Windows shows a user process on the lock screen: no input desktop (access
    # denied) and the session's lock flag set.
    core.rig.state_port.desktop_name = None
    core.rig.state_port.desktop_error = ERROR_ACCESS_DENIED
    core.rig.state_port.session = replace(
        CONSOLE_SESSION, session_flags=CONSTANTS["WTS_SESSIONSTATE_LOCK"]
    )

    error = await core.error(ops.INPUT_BATCH, events=[{"type": "type_text", "text": "x"}])

    assert (error.code, error.detail) == (ops.ERROR_DESKTOP_UNAVAILABLE, "locked")
    assert core.rig.input_port.events == []


async def test_targets_mask_the_password_and_never_carry_its_text(core: Core) -> None:
    core.rig.show_password(SECRET)

    reply = await core.call(ops.A11Y_TARGETS)

    masked = [t for t in reply["targets"] if t.get("masked")]
    assert len(masked) == 1
    assert masked[0]["value"] == ops.MASKED_VALUE
    assert SECRET not in json.dumps(reply, ensure_ascii=False)
    assert len(reply["targets"]) >= 3


async def test_session_end_releases_kills_and_closes_only_its_windows(core: Core) -> None:
    await core.call(ops.INPUT_BATCH, events=[{"type": "key_down", "key": "shift"}])
    launched = core.rig.open_window(launched=True)
    local = core.rig.open_window(launched=False)
    assert launched is not None
    assert local is not None
    (session_window, session_pid), (local_window, _) = launched, local
    assert core.rig.input_port.keys_down != []

    reply = await core.call(ops.SESSION_END, reason="client")

    assert reply["released_inputs"] == ["shift"]
    assert session_pid in reply["killed_pids"]
    assert core.rig.input_port.keys_down == []
    assert not core.rig.is_window_open(session_window)
    assert core.rig.is_window_open(local_window)


async def test_input_while_the_display_is_off_is_refused(core: Core) -> None:
    # What the tray's window hears from Windows (GUID_CONSOLE_DISPLAY_STATE: off).
    core.rig.windows_desktop.note_display_power(False)

    error = await core.error(ops.INPUT_BATCH, events=[{"type": "mouse_move", "x": 1, "y": 1}])

    assert (error.code, error.detail) == (ops.ERROR_DESKTOP_UNAVAILABLE, "no_display")
    core.rig.windows_desktop.note_display_power(True)
    assert (await core.call(ops.INPUT_BATCH, events=[{"type": "mouse_move", "x": 1, "y": 1}]))[
        "count"
    ] == 1
