"""One session through every operation, against a live sim rig."""

from __future__ import annotations

import pytest

from tests.e2e.harness import Stack, batch_ran

pytestmark = pytest.mark.postgres


async def test_session_lifecycle_through_every_operation_succeeds(stack: Stack) -> None:
    session_id = await stack.start_session()
    shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert shot.status_code == 200, shot.text
    assert shot.headers["content-type"] == "image/jpeg"
    assert shot.headers["x-screenshot-native-width"] == "1920"
    assert shot.content[:2] == b"\xff\xd8"
    observe = await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
    assert observe.status_code == 200, observe.text
    body = observe.json()
    assert "jpeg_base64" not in body
    assert body["targets"]
    typed = await stack.client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "type_text", "text": "alice"}]},
    )
    assert batch_ran(typed) == 1
    assert stack.sim().field_text("username") == "alice"
    ended = await stack.client.delete(f"/v1/sessions/{session_id}")
    assert ended.status_code == 200
    assert ended.json()["ended_reason"] == "client"
