"""The async handle acts, drags, waits and resolves targets like the sync one."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import (
    AmbiguousTargetError,
    AsyncRigway,
    AsyncSessionHandle,
    Settle,
    TargetGoneError,
)

from .conftest import FakeGateway, body_of, ok, square_observation

INPUT = "/v1/sessions/ses_1/input"
OK_A = {"id": "t_a", "x": 0, "y": 0, "w": 10, "h": 10, "role": "button", "name": "OK"}
OK_B = {"id": "t_b", "x": 20, "y": 0, "w": 10, "h": 10, "role": "button", "name": "OK"}
FIELD = {"id": "t_f", "x": 40, "y": 0, "w": 10, "h": 10, "role": "edit", "name": "Email"}


@pytest.fixture
async def session(async_client: AsyncRigway, session_gateway: FakeGateway) -> AsyncSessionHandle:
    return await async_client.sessions.create(rig_id="rig_1")


async def test_act_observes_and_later_clicks_resolve_against_that_observe(
    session: AsyncSessionHandle, session_gateway: FakeGateway
) -> None:
    observed = square_observation([OK_A, OK_B, FIELD], frame_id="frm_a")
    answer = {"ok": True, "count": 1, "events": [], "observe": observed}
    session_gateway.on("POST", INPUT, ok(answer))

    result = await session.key("tab", settle=True, observe=True)
    await session.click(target=3)
    third = body_of(session_gateway.last)["events"][0]["x"]
    await session.click(target="email")
    named = body_of(session_gateway.last)["events"][0]["x"]

    assert result.observe is not None
    assert result.observe.frame_id == "frm_a"
    assert (third, named) == (45, 45)
    with pytest.raises(AmbiguousTargetError):
        await session.double_click(target="ok")


async def test_drag_and_wait_for_send_their_shapes(
    session: AsyncSessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", "/v1/sessions/ses_1/wait", ok({"met": True, "waited_ms": 120}))

    await session.drag([(1, 2), (3, 4)], settle=Settle(quiet_ms=200, timeout_ms=3000))
    dragged = body_of(session_gateway.calls("POST", INPUT)[-1])
    waited = await session.wait_for("change", timeout_ms=2000)

    assert [e["type"] for e in dragged["events"]] == ["mouse_down", "mouse_move", "mouse_up"]
    assert dragged["settle"] == {"quiet_ms": 200, "timeout_ms": 3000}
    assert body_of(session_gateway.last) == {"until": "change", "timeout_ms": 2000}
    assert (waited.met, waited.waited_ms) == (True, 120)


async def test_a_stopped_batch_raises_its_typed_error(
    session: AsyncSessionHandle, session_gateway: FakeGateway
) -> None:
    body = {
        "error": "target_gone: event 0",
        "events": [{"index": 0, "type": "mouse_click", "ok": False, "at_ms": 1, "changed": False}],
        "stopped_at": 0,
    }
    session_gateway.on("POST", INPUT, httpx2.Response(409, json=body))
    with pytest.raises(TargetGoneError) as caught:
        await session.act([{"type": "mouse_click", "target": "t_gone"}])
    assert caught.value.stopped_at == 0
    assert caught.value.receipts[0].ok is False
