"""A new session's first minutes on the sim rig: a busy rig names the session holding
it, and a session's first look at the screen reports everything as changed
(docs/api.md, Errors and Screen)."""

from __future__ import annotations

import pytest

from rigway.client import AsyncRigway, RigBusyError
from tests.e2e.harness import Stack, ok_json


async def test_rig_busy_names_the_active_session_in_detail_and_body(stack: Stack) -> None:
    first = await stack.start_session()
    response = await stack.client.post("/v1/sessions", json={"rig_id": stack.rig_ids[0]})
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["error"].startswith("rig_busy: ")
    assert body["active_session_id"] == first
    assert f"DELETE /v1/sessions/{first}" in body["error"]


async def test_sdk_rig_busy_error_carries_the_session_and_how_to_end_it(stack: Stack) -> None:
    first = await stack.start_session()
    async with AsyncRigway(stack.api_key, stack.base_url, max_retries=0) as client:
        with pytest.raises(RigBusyError) as busy:
            await client.sessions.create(rig_id=stack.rig_ids[0])
        assert busy.value.active_session_id == first
        assert f"client.sessions.end('{first}')" in str(busy.value)
        ended = await client.sessions.end(first)
        assert ended.status == "ended"
        async with client.sessions.create() as session:
            assert session.rig_id == stack.rig_ids[0]


async def test_first_observe_of_a_session_is_changed_after_another_sessions_take(
    stack: Stack,
) -> None:
    earlier = await stack.start_session()
    ok_json(await stack.client.get(f"/v1/sessions/{earlier}/observe", params={"image": 0}))
    # The earlier session has taken the rig's damage: the screen has not moved since.
    still = ok_json(await stack.client.get(f"/v1/sessions/{earlier}/observe", params={"image": 0}))
    assert still["changed"] is False
    assert (await stack.client.delete(f"/v1/sessions/{earlier}")).status_code == 200

    session_id = await stack.start_session()
    first = ok_json(await stack.client.get(f"/v1/sessions/{session_id}/observe"))
    assert first["changed"] is True
    whole = [0, 0, first["native_width"], first["native_height"]]
    assert first["dirty"]["rects"] == [whole]
    again = ok_json(await stack.client.get(f"/v1/sessions/{session_id}/observe"))
    assert again["changed"] is False
    assert again["dirty"]["rects"] == []


async def test_first_dirty_read_of_a_session_is_the_whole_desktop(stack: Stack) -> None:
    session_id = await stack.start_session()
    first = ok_json(await stack.client.get(f"/v1/sessions/{session_id}/dirty"))
    assert first["rects"] == [[0, 0, first["width"], first["height"]]]
    again = ok_json(await stack.client.get(f"/v1/sessions/{session_id}/dirty"))
    assert again["rects"] == []
