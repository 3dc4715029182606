"""Live video through the real gateway signaling and a real agent, to an aiortc viewer."""

from __future__ import annotations

import asyncio

import numpy as np

from rigway.agent.backends.sim import DESKTOP_BGRA, SimDesktop
from rigway.agent.stream.publisher import StreamPublisher
from tests.e2e.harness import Stack
from tests.stream.viewer import AiortcViewer

# Limited-range 4:2:0 H.264 moves a flat colour by a few levels at most.
COLOUR_TOLERANCE = 8


async def _credentials(stack: Stack, session_id: str) -> dict[str, str]:
    response = await stack.client.get(f"/v1/sessions/{session_id}/stream")
    assert response.status_code == 200, response.text
    body: dict[str, str] = response.json()
    return body


async def test_viewer_receives_native_frames_and_only_changes_are_encoded(
    stream_stack: Stack, publishers: list[StreamPublisher]
) -> None:
    sim = SimDesktop()
    rig_id = await stream_stack.add_agent(sim)
    session_id = await stream_stack.start_session()
    credentials = await _credentials(stream_stack, session_id)
    assert credentials["rig_id"] == rig_id
    assert credentials["connect_url"].startswith(credentials["signaling_url"] + "?token=")

    viewer = AiortcViewer(credentials["connect_url"], keep_pixels=True)
    try:
        assert (await viewer.start())["type"] == "answer"
        assert viewer.answer is not None
        assert (viewer.answer["width"], viewer.answer["height"]) == (1920, 1080)
        assert "H264/90000" in viewer.answer["sdp"]
        # The first frame, then the held frame again (keepalive): both decoded.
        await viewer.wait_frames(2)
        assert viewer.received.size == (1920, 1080)
        assert viewer.received.last_rgb is not None
        pixel = viewer.received.last_rgb[1000, 100].astype(int)
        expected = np.array(DESKTOP_BGRA[2::-1])  # BGR(A) → RGB
        assert np.abs(pixel - expected).max() <= COLOUR_TOLERANCE, pixel

        # A still desktop: nothing new is encoded, only the held frame is re-sent.
        (viewer_id,) = publishers[0].viewer_ids(session_id)
        track = publishers[0].track_of(session_id, viewer_id)
        assert track is not None
        await _wait(lambda: track.stats.idle_ticks >= 20)
        assert track.stats.encoded == 1
        # A change (a click on the check box) is encoded.
        box = sim.control_rect("remember")
        click = {"type": "mouse_click", "x": box.x + 5, "y": box.y + 5}
        response = await stream_stack.client.post(
            f"/v1/sessions/{session_id}/input", json={"events": [click]}
        )
        assert response.status_code == 200, response.text
        await _wait(lambda: track.stats.encoded == 2)
        # The API's dirty rects are still there: the stream did not take them.
        dirty = (await stream_stack.client.get(f"/v1/sessions/{session_id}/dirty")).json()
        assert dirty["rects"], dirty
    finally:
        await viewer.close()


async def test_session_end_says_bye_and_stops_the_stream(
    stream_stack: Stack, publishers: list[StreamPublisher]
) -> None:
    await stream_stack.add_agent(SimDesktop())
    session_id = await stream_stack.start_session()
    viewers = [
        AiortcViewer((await _credentials(stream_stack, session_id))["connect_url"])
        for _ in range(2)
    ]
    try:
        for viewer in viewers:
            assert (await viewer.start())["type"] == "answer"
        for viewer in viewers:
            await viewer.wait_frames(1)
        assert publishers[0].viewer_count(session_id) == 2
        assert stream_stack.services.stream.viewer_count(session_id) == 2

        response = await stream_stack.client.delete(f"/v1/sessions/{session_id}")
        assert response.status_code == 200, response.text
        for viewer in viewers:
            code, reason = await viewer.wait_closed(timeout_s=10.0)
            assert {"type": "bye", "reason": "session_ended"} in viewer.messages
            assert (code, reason) == (1000, "session_ended")
        await _wait(lambda: publishers[0].viewer_count() == 0)
        # The agent closed its peer connections: each viewer's track ended (RTCP BYE).
        async with asyncio.timeout(10.0):
            for viewer in viewers:
                await viewer.received.ended.wait()
        assert stream_stack.services.stream.viewer_count(session_id) == 0
    finally:
        for viewer in viewers:
            await viewer.close()


async def _wait(condition: object, timeout_s: float = 10.0) -> None:
    assert callable(condition)
    await Stack.wait_until(condition, timeout_s)


async def test_an_offer_without_h264_is_refused_and_a_leaving_viewer_is_let_go(
    stream_stack: Stack, publishers: list[StreamPublisher]
) -> None:
    await stream_stack.add_agent(SimDesktop())
    session_id = await stream_stack.start_session()
    vp8 = AiortcViewer((await _credentials(stream_stack, session_id))["connect_url"], codec="VP8")
    try:
        reply = await vp8.start()
        assert reply["type"] == "error"
        assert "no H.264" in reply["error"]
        assert await vp8.wait_closed(timeout_s=2.0) == (4415, "offer_refused")
    finally:
        await vp8.close()

    viewer = AiortcViewer((await _credentials(stream_stack, session_id))["connect_url"])
    try:
        assert (await viewer.start())["type"] == "answer"
        await viewer.wait_frames(1)
        assert publishers[0].viewer_count(session_id) == 1
    finally:
        await viewer.close()
    # The socket closed: the gateway tells the agent, which closes the connection.
    await _wait(lambda: publishers[0].viewer_count() == 0, timeout_s=5.0)
    assert stream_stack.services.stream.viewer_count(session_id) == 0
