"""`rig/api_access` from the rig (its tray): the owner pauses and resumes the rig's API
access through the host link, as the console's toggle does."""

from __future__ import annotations

import pytest

from rigway.agent.link import GatewayOpError
from rigway.protocol import ops
from tests.e2e.harness import Stack

pytestmark = pytest.mark.postgres


async def _stored_api_access(stack: Stack) -> bool:
    rig = await stack.services.rigs.get(stack.account_id, stack.rig_ids[0])
    return rig.api_access_enabled


async def test_pause_from_the_rig_turns_api_access_off(stack: Stack) -> None:
    reply = await stack.agents[0].link.request(ops.RIG_API_ACCESS, {"enabled": False}, 5.0)
    assert reply == {"api_access_enabled": False}
    assert await _stored_api_access(stack) is False


async def test_paused_rig_refuses_new_sessions(stack: Stack) -> None:
    await stack.agents[0].link.request(ops.RIG_API_ACCESS, {"enabled": False}, 5.0)
    response = await stack.client.post("/v1/sessions", json={"rig_id": stack.rig_ids[0]})
    assert response.status_code == 403
    assert response.json()["error"].startswith("api_access_disabled")


async def test_resume_from_the_rig_turns_api_access_on(stack: Stack) -> None:
    await stack.services.rigs.set_api_access(stack.account_id, stack.rig_ids[0], False)
    reply = await stack.agents[0].link.request(ops.RIG_API_ACCESS, {"enabled": True}, 5.0)
    assert reply == {"api_access_enabled": True}
    assert await _stored_api_access(stack) is True


async def test_no_value_reads_api_access_without_changing_it(stack: Stack) -> None:
    await stack.services.rigs.set_api_access(stack.account_id, stack.rig_ids[0], False)
    reply = await stack.agents[0].link.request(ops.RIG_API_ACCESS, {}, 5.0)
    assert reply == {"api_access_enabled": False}
    assert await _stored_api_access(stack) is False


async def test_malformed_body_is_refused_invalid_request(stack: Stack) -> None:
    with pytest.raises(GatewayOpError) as refused:
        await stack.agents[0].link.request(ops.RIG_API_ACCESS, {"enabled": "maybe"}, 5.0)
    assert refused.value.code == ops.ERROR_INVALID_REQUEST
    assert await _stored_api_access(stack) is True
