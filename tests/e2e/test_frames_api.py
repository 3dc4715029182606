"""Frames on the sim rig: every screenshot names one in
X-Frame-Id, every observe with an image in frame_id; the gateway remembers what each
showed, per session, and forgets a session's frames when it ends."""

from __future__ import annotations

from typing import Any

import pytest

from rigway.gateway.desktop.frames import Frame
from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres


def _frame(stack: Stack, session_id: str, frame_id: str) -> Frame:
    frame = stack.services.frames.get(session_id, frame_id)
    assert frame is not None, f"{frame_id} is not remembered for {session_id}"
    return frame


async def _screenshot_frame(stack: Stack, session_id: str, **params: Any) -> str:
    response = await stack.client.get(f"/v1/sessions/{session_id}/screenshot", params=params)
    assert response.status_code == 200, response.text
    frame_id = response.headers["x-frame-id"]
    assert isinstance(frame_id, str)
    return frame_id


async def test_a_screenshot_names_the_downscaled_desktop_it_shows(
    stack: Stack,
) -> None:
    session_id = await stack.start_session()
    frame_id = await _screenshot_frame(stack, session_id, max_width=960)
    frame = _frame(stack, session_id, frame_id)
    assert frame.region == (0, 0, 1920, 1080)
    assert (frame.image_width, frame.image_height) == (960, 540)
    assert frame.to_native(480, 270) == (960, 540)


async def test_a_region_screenshot_names_the_region_it_shows(stack: Stack) -> None:
    session_id = await stack.start_session()
    region = {"x": 100, "y": 200, "w": 400, "h": 300}
    frame_id = await _screenshot_frame(stack, session_id, **region)
    frame = _frame(stack, session_id, frame_id)
    assert frame.region == (100, 200, 400, 300)
    assert (frame.image_width, frame.image_height) == (400, 300)


async def test_every_screenshot_names_a_frame_of_its_own(stack: Stack) -> None:
    session_id = await stack.start_session()
    first = await _screenshot_frame(stack, session_id)
    smaller = await _screenshot_frame(stack, session_id, max_width=640)
    again = await _screenshot_frame(stack, session_id)
    assert len({first, smaller, again}) == 3
    assert all(_frame(stack, session_id, f) for f in (first, smaller, again))


async def test_an_observe_with_an_image_names_its_frame(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await stack.client.get(
        f"/v1/sessions/{session_id}/observe", params={"max_width": 640}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    frame = _frame(stack, session_id, body["frame_id"])
    assert frame.region == (0, 0, body["native_width"], body["native_height"])
    assert (frame.image_width, frame.image_height) == (body["width"], body["height"])


async def test_an_observe_without_an_image_names_no_frame(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
    assert response.status_code == 200, response.text
    assert response.json()["frame_id"] is None


async def test_another_sessions_frame_id_is_not_found(stack: Stack) -> None:
    await stack.add_agent()
    mine = await stack.start_session(0)
    theirs = await stack.start_session(1)
    their_frame = await _screenshot_frame(stack, theirs)
    assert stack.services.frames.get(mine, their_frame) is None
    assert _frame(stack, theirs, their_frame)


async def test_an_ended_sessions_frames_are_forgotten(stack: Stack) -> None:
    session_id = await stack.start_session()
    frame_id = await _screenshot_frame(stack, session_id)
    ended = await stack.client.delete(f"/v1/sessions/{session_id}")
    assert ended.status_code == 200, ended.text
    assert stack.services.frames.get(session_id, frame_id) is None
    assert len(stack.services.frames) == 0


async def test_the_api_schema_declares_frame_ids(stack: Stack) -> None:
    schema = (await stack.client.get("/openapi.json")).json()
    shot = schema["paths"]["/v1/sessions/{session_id}/screenshot"]["get"]["responses"]["200"]
    assert shot["headers"]["X-Frame-Id"]["schema"] == {"type": "string"}
    observe = schema["components"]["schemas"]["ObserveOut"]
    assert "frame_id" in observe["required"]
