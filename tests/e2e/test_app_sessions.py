"""Sessions scoped to an app (`mode: "app"`) through the API, on the sim: the screen
operations cover the window of the app the session launched, another window over it is
black, pointer events off it are refused, and nothing is shown before it exists.

The sim's apps are real processes that each open a window on the sim desktop
(`SimAppTracker`); a window "of someone else" is opened on the sim directly, owned by a
pid the session never launched.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg

from rigway.agent.apps import ProcessTracker
from rigway.agent.backends.base import Rect
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.backends.sim.app_windows import APP_WINDOW_H, APP_WINDOW_W, SimAppTracker
from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres

# Where the sim opens the first app window (cascaded from its top-left corner).
APP_RECT = Rect(80, 60, APP_WINDOW_W, APP_WINDOW_H)
APP_WINDOW = [APP_RECT.x, APP_RECT.y, APP_RECT.w, APP_RECT.h]
# A window of a process the session did not launch, over the app's right side.
OTHER_RECT = Rect(400, 200, 300, 300)
OVERLAP = Rect(400, 200, APP_RECT.x + APP_RECT.w - 400, APP_RECT.y + APP_RECT.h - 200)
OTHER_PID = 999_999


class AppRig:
    def __init__(self, stack: Stack, sim: SimDesktop, tracker: ProcessTracker) -> None:
        self.stack = stack
        self.sim = sim
        self.tracker = tracker
        self.session_id = ""

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        return await self.stack.client.request(
            method, f"/v1/sessions/{self.session_id}{path}", **kwargs
        )

    async def launch(self) -> int:
        response = await self.call("POST", "/app/launch", json={"path": "sleep", "args": ["60"]})
        assert response.status_code == 200, response.text
        pid: int = response.json()["pid"]
        return pid

    async def input(self, *events: dict[str, Any], **extra: Any) -> Any:
        return await self.call("POST", "/input", json={"events": list(events), **extra})


@pytest.fixture
async def rig(bare_stack: Stack) -> AsyncIterator[AppRig]:
    sim = SimDesktop(1280, 800)
    tracker = ProcessTracker()
    await bare_stack.add_agent(sim, apps=SimAppTracker(sim, tracker))
    app_rig = AppRig(bare_stack, sim, tracker)
    app_rig.session_id = await bare_stack.start_session(mode="app")
    try:
        yield app_rig
    finally:
        tracker.kill_all()


def _decoded(jpeg: bytes) -> npt.NDArray[np.uint8]:
    image: npt.NDArray[np.uint8] = simplejpeg.decode_jpeg(jpeg, colorspace="RGB")
    return image


def _is_black(pixels: npt.NDArray[np.uint8]) -> bool:
    # JPEG may ring a few levels at the edge of a black block, never more.
    return int(pixels.max()) <= 24


async def test_before_an_app_window_screen_reads_and_input_answer_409(rig: AppRig) -> None:
    for path in ("/screenshot", "/observe", "/dirty", "/targets"):
        response = await rig.call("GET", path)
        assert response.status_code == 409, path
        assert response.json()["error"].startswith("no_app_window: ")
    refused = await rig.input({"type": "mouse_click", "x": 10, "y": 10})
    assert refused.status_code == 409
    assert refused.json()["error"].startswith("no_app_window: ")
    typed = await rig.input({"type": "type_text", "text": "secret"})
    assert typed.status_code == 409
    assert rig.sim.pointer == (0, 0)
    session = (await rig.call("GET", "")).json()
    assert session["mode"] == "app"
    assert session["app_window"] is None


async def test_after_a_launch_the_screenshot_is_the_app_window(rig: AppRig) -> None:
    await rig.launch()

    response = await rig.call("GET", "/screenshot")

    assert response.status_code == 200, response.text
    assert response.headers["x-app-window"] == "80,60,480,320"
    image = _decoded(response.content)
    assert image.shape[:2] == (APP_RECT.h, APP_RECT.w)
    expected = rig.sim.grab()[
        APP_RECT.y : APP_RECT.y + APP_RECT.h, APP_RECT.x : APP_RECT.x + APP_RECT.w
    ]
    error = np.abs(image.astype(int) - expected[:, :, 2::-1].astype(int))
    assert float(error.mean()) < 3.0
    session = (await rig.call("GET", "")).json()
    assert session["app_window"] == APP_WINDOW


async def test_observe_names_the_window_and_only_its_targets(rig: AppRig) -> None:
    await rig.launch()

    body = (await rig.call("GET", "/observe")).json()

    assert body["app_window"] == APP_WINDOW
    assert (body["width"], body["height"]) == (APP_RECT.w, APP_RECT.h)
    assert body["dirty"]["rects"] == [APP_WINDOW]  # the first take: all of the window
    assert [t["name"] for t in body["targets"]] == ["OK"]
    target = body["targets"][0]
    assert APP_RECT.x <= target["x"] < APP_RECT.x + APP_RECT.w


async def test_a_pointer_event_outside_the_window_is_a_400_naming_it(rig: AppRig) -> None:
    await rig.launch()

    response = await rig.input(
        {"type": "mouse_move", "x": 100, "y": 100},
        {"type": "mouse_click", "x": 10, "y": 10},
    )

    assert response.status_code == 400
    assert "[80,60,480,320]" in response.json()["error"]
    assert rig.sim.pointer == (0, 0)  # nothing of the batch ran


async def test_image_points_map_into_the_window(rig: AppRig) -> None:
    await rig.launch()
    shot = await rig.call("GET", "/screenshot", params={"max_width": 240})
    frame_id = shot.headers["x-frame-id"]

    response = await rig.input(
        {"type": "mouse_move", "x": 120, "y": 80}, frame_id=frame_id, coords="image"
    )

    assert response.status_code == 200, response.text
    assert rig.sim.pointer == (APP_RECT.x + 240, APP_RECT.y + 160)


async def test_another_processs_window_over_the_app_is_black_and_untouchable(
    rig: AppRig,
) -> None:
    await rig.launch()
    rig.sim.open_app_window(OTHER_PID, "Someone else's bank", OTHER_RECT)

    shot = await rig.call("GET", "/screenshot")
    observed = (await rig.call("GET", "/observe")).json()
    click = await rig.input({"type": "mouse_click", "x": OVERLAP.x + 5, "y": OVERLAP.y + 5})
    typed = await rig.input({"type": "type_text", "text": "secret"})

    image = _decoded(shot.content)
    left, top = OVERLAP.x - APP_RECT.x, OVERLAP.y - APP_RECT.y
    assert _is_black(image[top + 2 :, left + 2 :])
    assert not _is_black(image[:, : left - 2])
    # The other window has focus (it is on top): its walk is not the session's to see.
    assert observed["targets"] == []
    assert observed["text"]["window_title"] == ""
    assert click.status_code == 400
    assert typed.status_code == 400  # the other window has the keyboard focus
    assert rig.sim.pointer == (0, 0)


async def test_a_region_outside_the_window_is_a_400(rig: AppRig) -> None:
    await rig.launch()
    inside = await rig.call("GET", "/screenshot", params={"x": 100, "y": 100, "w": 50, "h": 40})
    outside = await rig.call("GET", "/screenshot", params={"x": 0, "y": 0, "w": 50, "h": 40})
    assert inside.status_code == 200
    assert _decoded(inside.content).shape[:2] == (40, 50)
    assert outside.status_code == 400
    assert "[80,60,480,320]" in outside.json()["error"]


async def test_after_the_app_is_killed_there_is_no_app_window_again(rig: AppRig) -> None:
    pid = await rig.launch()
    killed = await rig.call("POST", "/app/kill", json={"pid": pid})
    assert killed.status_code == 200, killed.text

    response = await rig.call("GET", "/screenshot")

    assert response.status_code == 409


async def test_a_wait_for_change_ignores_changes_off_the_window(rig: AppRig) -> None:
    await rig.launch()
    waiting = asyncio.create_task(
        rig.call("POST", "/wait", json={"until": "change", "timeout_ms": 300})
    )
    # Far from the app window: whenever it lands, before or during the wait, it is not
    # a change the session may see.
    rig.sim.open_app_window(OTHER_PID, "Elsewhere", Rect(900, 500, 300, 200))

    response = await waiting

    assert response.status_code == 200, response.text
    assert response.json()["met"] is False


async def test_observe_since_a_frame_shows_only_the_change_inside_the_window(
    rig: AppRig,
) -> None:
    await rig.launch()
    first = (await rig.call("GET", "/observe")).json()
    rig.sim.open_app_window(OTHER_PID, "Someone else's bank", OTHER_RECT)

    response = await rig.call("GET", "/observe", params={"since": first["frame_id"]})

    assert response.status_code == 200, response.text
    delta = response.json()
    assert delta["changed_region"] == [OVERLAP.x, OVERLAP.y, OVERLAP.w, OVERLAP.h]
    [shown] = delta["changed_images"]
    assert _is_black(_decoded(base64.b64decode(shown["jpeg_base64"])))


async def test_live_video_and_take_control_are_refused_in_an_app_session(rig: AppRig) -> None:
    await rig.launch()

    stream = await rig.call("GET", "/stream")
    takeover = await rig.call("POST", "/takeover")

    for refused in (stream, takeover):
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"].startswith("app_session: ")
