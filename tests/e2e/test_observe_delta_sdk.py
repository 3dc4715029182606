"""The SDK's `observe(since=…)` of a region frame on the sim rig: the delta's picture
covers the frame's region (the answer says which, `frame_region`), so a point of that
picture maps to the native pixel under it, not to one of the whole desktop."""

from __future__ import annotations

import pytest

from rigway.client import AsyncRigway, Region
from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres

# A 420x210 native region shown at half size: picture pixel p is native 2p from its origin.
PICTURE_WIDTH = 210


async def test_a_click_through_a_region_frames_delta_lands_on_its_native_point(
    stack: Stack,
) -> None:
    sim = stack.sim()
    box = sim.control_rect("remember")
    width, height = sim.native_size()
    area = Region(
        min(max(box.x - 100, 0), width - 420), min(max(box.y - 90, 0), height - 210), 420, 210
    )
    centre = (box.x + box.w // 2, box.y + box.h // 2)
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url, max_retries=0) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        before = await session.observe(region=area, max_width=PICTURE_WIDTH)
        assert before.frame_id is not None
        await session.click(*centre)  # the check box changes: the delta carries an image

        delta = await session.observe(since=before.frame_id, max_width=PICTURE_WIDTH)
        assert delta.frame_region == (area.x, area.y, area.w, area.h)
        assert delta.changed_images
        assert (delta.width, delta.height) == (PICTURE_WIDTH, 105)
        assert delta.region == area
        # The check box's centre in the delta's picture, and back to native through it.
        point = delta.to_native((centre[0] - area.x) / 2, (centre[1] - area.y) / 2)
        assert abs(point[0] - centre[0]) <= 2
        assert abs(point[1] - centre[1]) <= 2
        sim.move_pointer(0, 0)
        await session.click(*point)

    assert sim.pointer == point
    assert box.x <= point[0] < box.x + box.w
    assert box.y <= point[1] < box.y + box.h
