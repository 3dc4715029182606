"""`observe?since=<frame_id>` on the sim rig: the image shows only what changed since the
frame, at the scale of the full picture (so it pastes onto it), and the targets come as
a diff.

The sim reports exact damage (only the controls whose view changed), and the host
compares it with the pixels the caller was shown, so the changed region is known here."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

from rigway.agent.backends.base import Rect
from tests.e2e.harness import Stack, batch_ran

pytestmark = pytest.mark.postgres

MAX_WIDTH = 1280  # the sim's 1920x1080 desktop is shown at 2/3


async def _observe(stack: Stack, session_id: str, **params: Any) -> dict[str, Any]:
    response = await stack.client.get(f"/v1/sessions/{session_id}/observe", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _click_checkbox(stack: Stack, session_id: str) -> None:
    await _click(stack, session_id, stack.sim().control_rect("remember"))


def _overlaps(region: list[int], box: Rect) -> bool:
    x, y, w, h = region
    return x < box.x + box.w and box.x < x + w and y < box.y + box.h and box.y < y + h


async def _click(stack: Stack, session_id: str, box: Rect) -> None:
    point = {"x": box.x + box.w // 2, "y": box.y + box.h // 2}
    response = await stack.client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_click", **point, "expect": "change"}]},
    )
    assert batch_ran(response) == 1


def _pixels(encoded: str) -> np.ndarray[tuple[int, ...], np.dtype[np.int16]]:
    with Image.open(io.BytesIO(base64.b64decode(encoded))) as image:
        return np.asarray(image.convert("L"), dtype=np.int16)


async def _error(stack: Stack, session_id: str, since: str) -> tuple[int, str]:
    response = await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"since": since})
    error = response.json()["error"]
    assert isinstance(error, str)
    return response.status_code, error


async def _first_since(stack: Stack, session_id: str) -> None:
    """The session's first `since`: the host keeps the pictures it shows from here on
    (this one is answered from damage alone)."""
    first = await _observe(stack, session_id)
    await _observe(stack, session_id, since=first["frame_id"], image=0)


async def test_a_checkbox_click_since_a_frame_sends_the_checkbox_only(stack: Stack) -> None:
    session_id = await stack.start_session()
    # Focus on the check box first: the next click changes it and nothing else.
    await _click_checkbox(stack, session_id)
    await _first_since(stack, session_id)
    before = await _observe(stack, session_id, max_width=MAX_WIDTH)
    await _click_checkbox(stack, session_id)

    delta = await _observe(stack, session_id, max_width=MAX_WIDTH, since=before["frame_id"])

    # The pixels that differ inside the box (its tick, not its label), widened to whole
    # pixels of the 2/3 picture (multiples of 3 native) and to at least 16 of them.
    box = stack.sim().control_rect("remember")
    [shown] = delta["changed_images"]
    assert shown["region"] == delta["changed_region"]
    x, y, w, h = delta["changed_region"]
    assert (x % 3, y % 3, w % 3, h % 3) == (0, 0, 0, 0)
    assert box.x - 24 <= x < box.x + box.w
    assert box.x < x + w <= box.x + box.w + 24
    assert box.y - 24 <= y < box.y + box.h
    assert box.y < y + h <= box.y + box.h + 24
    assert w < box.w  # the label was repainted the same: not sent
    assert "targets" not in delta
    diff = delta["targets_diff"]
    assert [t["name"] for t in diff["changed"]] == ["Remember me"]
    assert (diff["added"], diff["removed"]) == ([], [])
    assert [line.split("] ")[1].split(" (")[0] for line in delta["text"]["targets"]] == [
        "Remember me"
    ]


async def test_the_delta_after_a_sessions_first_compares_against_its_picture(
    stack: Stack,
) -> None:
    """The first delta is answered from damage (its since frame came before the ask);
    its own images are the pictures the next delta compares with."""
    session_id = await stack.start_session()
    await _click_checkbox(stack, session_id)
    before = await _observe(stack, session_id, max_width=MAX_WIDTH)
    await _click_checkbox(stack, session_id)
    first = await _observe(stack, session_id, max_width=MAX_WIDTH, since=before["frame_id"])
    box = stack.sim().control_rect("remember")
    assert first["changed_region"][2] >= box.w  # the repainted label too: unchecked
    await _click_checkbox(stack, session_id)

    second = await _observe(stack, session_id, max_width=MAX_WIDTH, since=first["frame_id"])

    assert second["changed_region"][2] < box.w  # the tick only


async def test_the_delta_image_is_the_full_pictures_pixels_at_its_place(stack: Stack) -> None:
    session_id = await stack.start_session()
    await _click_checkbox(stack, session_id)
    # At quality 100 the JPEGs of a small image and of the whole differ little.
    before = await _observe(stack, session_id, max_width=MAX_WIDTH, quality=100)
    await _click_checkbox(stack, session_id)

    delta = await _observe(
        stack, session_id, max_width=MAX_WIDTH, quality=100, since=before["frame_id"]
    )
    full = await _observe(stack, session_id, max_width=MAX_WIDTH, quality=100)

    # The full picture's scale: 1280 / 1920 across, 720 / 1080 down.
    assert (delta["width"], delta["height"]) == (full["width"], full["height"])
    scale_x, scale_y = full["width"] / full["native_width"], full["height"] / full["native_height"]
    [shown] = delta["changed_images"]
    x, y, w, h = shown["region"]
    size = (round(w * scale_x), round(h * scale_y))
    image = _pixels(shown["jpeg_base64"])
    assert (shown["width"], shown["height"]) == size
    assert image.shape == (size[1], size[0])
    left, top = round(x * scale_x), round(y * scale_y)
    picture = _pixels(full["jpeg_base64"])
    cut = picture[top : top + size[1], left : left + size[0]]
    # Up to JPEG: the same pixels, where a one-pixel shift would differ along every edge.
    assert np.abs(image - cut).mean() < 2
    shifted = picture[top + 1 : top + 1 + size[1], left : left + size[0]]
    assert np.abs(image - shifted).mean() > np.abs(image - cut).mean()


async def test_far_apart_changes_come_as_images_of_their_own(stack: Stack) -> None:
    session_id = await stack.start_session()
    before = await _observe(stack, session_id, max_width=MAX_WIDTH)
    # The username field loses the focus (its look changes), the check box gains it and
    # its tick, 44 pixels below.
    field = stack.sim().control_rect("username")
    await _click_checkbox(stack, session_id)

    delta = await _observe(stack, session_id, max_width=MAX_WIDTH, since=before["frame_id"])

    regions = [image["region"] for image in delta["changed_images"]]
    assert len(regions) >= 2
    box = stack.sim().control_rect("remember")
    for area in (field, box):
        assert any(_overlaps(region, area) for region in regions), area
    x, y, w, h = delta["changed_region"]
    assert (x, y) == (min(r[0] for r in regions), min(r[1] for r in regions))
    assert x + w == max(r[0] + r[2] for r in regions)
    # Together far smaller than their bounding box.
    assert sum(r[2] * r[3] for r in regions) < w * h / 2


async def test_nothing_changed_since_a_frame_sends_no_image(stack: Stack) -> None:
    session_id = await stack.start_session()
    before = await _observe(stack, session_id)

    delta = await _observe(stack, session_id, since=before["frame_id"])

    assert delta["changed_region"] is None
    assert delta["changed_images"] == []
    assert "jpeg_base64" not in delta
    assert delta["targets_diff"] == {"added": [], "removed": [], "changed": []}
    # The answer names a frame of its own, which the next `since` can use.
    assert delta["frame_id"] not in (None, before["frame_id"])
    again = await _observe(stack, session_id, since=delta["frame_id"])
    assert again["changed_region"] is None


async def test_a_screenshot_frame_lists_every_target_as_added(stack: Stack) -> None:
    session_id = await stack.start_session()
    shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    delta = await _observe(stack, session_id, since=shot.headers["x-frame-id"])
    full = await _observe(stack, session_id)
    assert [t["id"] for t in delta["targets_diff"]["added"]] == [t["id"] for t in full["targets"]]


async def test_an_unknown_frame_is_frame_expired(stack: Stack) -> None:
    session_id = await stack.start_session()
    status, error = await _error(stack, session_id, "frm_000000000000000000000000")
    assert (status, error.split(":")[0]) == (409, "frame_expired")


async def test_another_sessions_frame_is_frame_expired(stack: Stack) -> None:
    first = await stack.start_session()
    theirs = (await _observe(stack, first))["frame_id"]
    await stack.add_agent()
    second = await stack.start_session(1)
    status, error = await _error(stack, second, theirs)
    assert (status, error.split(":")[0]) == (409, "frame_expired")


async def test_an_empty_or_overlong_since_is_a_400(stack: Stack) -> None:
    session_id = await stack.start_session()
    for since in ("", "f" * 65):
        status, _ = await _error(stack, session_id, since)
        assert status == 400, since


async def test_a_region_with_since_is_a_400(stack: Stack) -> None:
    session_id = await stack.start_session()
    before = await _observe(stack, session_id)
    response = await stack.client.get(
        f"/v1/sessions/{session_id}/observe",
        params={"since": before["frame_id"], "x": 0, "y": 0, "w": 10, "h": 10},
    )
    assert response.status_code == 400, response.text
