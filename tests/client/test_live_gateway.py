"""The SDK against a live gateway and a sim rig on real sockets.

The stack runs in the test's event loop, so the async client drives it directly (the
docs' quickstart, sync, runs in a process of its own: test_quickstart.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.client import (
    AsyncRigway,
    AuthenticationError,
    NotFoundError,
    SessionEndedError,
    TargetNotFoundError,
)
from tests.e2e.harness import Stack
from tests.support.live import live_stack


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


async def test_async_client_clicks_targets_by_name_and_types(stack: Stack) -> None:
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        screen = await session.observe(max_width=960)
        await session.click(target=screen.require_target("Username"))
        await session.type_text("grace ✓")
        await session.click(target=screen.require_target("Remember me"))

    assert (screen.width, screen.height) == (960, 540)

    assert stack.sim().field_text("username") == "grace ✓"
    assert stack.sim().checkbox_checked is True
    assert session.info.ended_reason == "client"


async def test_scaled_screenshot_pixels_map_back_to_native_clicks(stack: Stack) -> None:
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        remember = (await session.targets()).find_target("Remember me")
        assert remember is not None
        shot = await session.screenshot(max_width=480)
        image_x, image_y = shot.from_native(*remember.center)

        await session.click(*shot.to_native(image_x, image_y))

    assert (shot.width, shot.height) == (480, 270)
    assert stack.sim().checkbox_checked is True


async def test_live_errors_carry_code_status_and_request_id(stack: Stack) -> None:
    async with AsyncRigway(api_key="rgw_live_sk_" + "0" * 48, base_url=stack.base_url) as bad:
        with pytest.raises(AuthenticationError) as auth:
            await bad.rigs.list()
    async with AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway:
        with pytest.raises(NotFoundError) as missing:
            await rigway.sessions.get("ses_does_not_exist")

    assert (auth.value.status, auth.value.code) == (401, "invalid_api_key")
    assert (missing.value.status, missing.value.code) == (404, "session_not_found")
    for error in (auth.value, missing.value):
        assert error.request_id is not None
        assert error.request_id in str(error)


async def test_ended_session_refuses_input_with_session_ended(stack: Stack) -> None:
    async with AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway:
        session = await rigway.sessions.create(rig_id=stack.rig_ids[0])
        await session.end()
        with pytest.raises(SessionEndedError) as ended:
            await session.type_text("too late")

    assert (ended.value.status, ended.value.code) == (410, "session_ended")
    assert stack.sim().field_text("username") == ""


async def test_require_target_raises_instead_of_clicking_at_the_pointer(stack: Stack) -> None:
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        screen = await session.observe(image=False)
        with pytest.raises(TargetNotFoundError):
            screen.require_target("No such control")
