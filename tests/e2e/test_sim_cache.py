"""The unchanged-screen cache on a sim rig, through the API.

"A screenshot is served from that JPEG without capturing or encoding again, on the sim
backend too": the sim reports exact damage, so two shots with the same parameters and
nothing drawn in between answer the second from the host's last JPEG (Server-Timing
`host-jpeg;…;desc="cached"`, the same bytes), and an input that redraws part of the
desktop makes the next shot a fresh capture again.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres

CACHED = ';desc="cached"'


def host_jpeg_entry(response: httpx2.Response) -> str:
    entries = [e.strip() for e in response.headers["server-timing"].split(",")]
    return next(e for e in entries if e.startswith("host-jpeg;dur="))


async def screenshot(stack: Stack, session_id: str, **params: Any) -> httpx2.Response:
    response = await stack.client.get(f"/v1/sessions/{session_id}/screenshot", params=params)
    assert response.status_code == 200, response.text
    assert response.content[:2] == b"\xff\xd8"
    return response


@pytest.mark.parametrize("params", [{"quality": 85}, {"quality": 60, "max_width": 640}])
async def test_unchanged_sim_screen_is_served_from_the_cached_jpeg(
    stack: Stack, params: dict[str, Any]
) -> None:
    # A new session starts without a cached frame (the agent forgets it).
    session_id = await stack.start_session()

    first = await screenshot(stack, session_id, **params)
    second = await screenshot(stack, session_id, **params)

    assert not host_jpeg_entry(first).endswith(CACHED)
    assert host_jpeg_entry(second).endswith(CACHED)
    assert second.content == first.content


async def test_input_that_redraws_the_sim_makes_the_next_shot_fresh(stack: Stack) -> None:
    session_id = await stack.start_session()
    targets = await stack.client.get(f"/v1/sessions/{session_id}/targets")
    remember = next(t for t in targets.json()["targets"] if t["name"] == "Remember me")
    before = await screenshot(stack, session_id, quality=85)
    cached = await screenshot(stack, session_id, quality=85)
    assert host_jpeg_entry(cached).endswith(CACHED)

    clicked = await stack.client.post(
        f"/v1/sessions/{session_id}/input",
        json={
            "events": [
                {
                    "type": "mouse_click",
                    "x": remember["x"] + remember["w"] // 2,
                    "y": remember["y"] + remember["h"] // 2,
                }
            ]
        },
    )
    assert clicked.status_code == 200, clicked.text
    assert stack.sim().checkbox_checked is True
    after = await screenshot(stack, session_id, quality=85)
    again = await screenshot(stack, session_id, quality=85)

    assert not host_jpeg_entry(after).endswith(CACHED)
    assert after.content != before.content
    # The fresh frame is the new cache entry: nothing drawn since, so served from it.
    assert host_jpeg_entry(again).endswith(CACHED)
    assert again.content == after.content
