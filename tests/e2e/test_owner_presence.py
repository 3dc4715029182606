"""Owner presence through the real gateway: the rig's own keyboard or mouse used (the
sim's test hook) makes API input 409 `owner_active` with nothing run, shows on the
Session and on every observe, and input runs again once the rig rested for the
owner's delay (`rigs.owner_idle_s`). Screens keep working meanwhile."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from rigway.client import AsyncRigway, OwnerActiveError
from rigway.gateway.db.models import Rig
from rigway.protocol import Request, encode_text, ops
from tests.e2e.harness import QUICK_AGENT, Stack, batch_ran, ok_json, running_stack
from tests.e2e.raw_host import answer_like_a_plain_host, pair_rig, raw_host

# The owner's delay these tests give the rig: long enough that "active" holds on a
# loaded machine; a test rests the rig by moving the owner's last input into the past
# (the sim's hook takes a time), or gives the rig a short delay of its own and waits.
IDLE_S = 60
SHORT_IDLE_S = 2


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as running:
        await _set_owner_idle_s(running, IDLE_S)
        yield running


async def _set_owner_idle_s(stack: Stack, idle_s: int) -> None:
    async with stack.services.db() as db, db.begin():
        await db.execute(update(Rig).where(Rig.id == stack.rig_ids[0]).values(owner_idle_s=idle_s))


def _type(text: str = "alice") -> dict[str, Any]:
    return {"events": [{"type": "type_text", "text": text}]}


async def _session(stack: Stack, session_id: str) -> dict[str, Any]:
    return ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))


async def test_input_while_the_owner_types_is_409_and_nothing_runs(stack: Stack) -> None:
    session_id = await stack.start_session()
    sim = stack.sim()
    sim.record_local_input()
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json=_type())
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["error"].startswith("owner_active: the rig's owner used its keyboard or mouse")
    assert (body["events"], body["stopped_at"]) == ([], 0)
    assert sim.field_text("username") == ""


async def test_refusal_shows_on_the_session_at_once(stack: Stack) -> None:
    session_id = await stack.start_session()
    assert (await _session(stack, session_id))["owner_active"] is False
    stack.sim().record_local_input()
    url = f"/v1/sessions/{session_id}/input"
    assert (await stack.client.post(url, json=_type())).status_code == 409
    assert (await _session(stack, session_id))["owner_active"] is True


async def test_session_shows_the_owner_without_any_call(stack: Stack) -> None:
    session_id = await stack.start_session()
    rig_id = stack.rig_ids[0]
    stack.sim().record_local_input()
    # The agent's presence note, a few times a second.
    await stack.wait_until(lambda: stack.services.registry.owner_active(rig_id) is True)
    assert (await _session(stack, session_id))["owner_active"] is True


async def test_session_shows_the_rig_rested_without_any_call(stack: Stack) -> None:
    session_id = await stack.start_session()
    rig_id = stack.rig_ids[0]
    sim = stack.sim()
    sim.record_local_input()
    await stack.wait_until(lambda: stack.services.registry.owner_active(rig_id) is True)
    # The owner's last input now lies further back than the delay.
    sim.record_local_input(at=time.monotonic() - IDLE_S - 1)
    await stack.wait_until(lambda: stack.services.registry.owner_active(rig_id) is False)
    assert (await _session(stack, session_id))["owner_active"] is False


async def test_observe_and_screenshot_keep_working_and_show_it(stack: Stack) -> None:
    session_id = await stack.start_session()
    stack.sim().record_local_input()
    observed = ok_json(
        await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
    )
    assert observed["owner_active"] is True
    assert observed["text"]["summary"].startswith("owner at the rig: input is refused")
    shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert shot.status_code == 200, shot.text


async def test_observe_without_local_input_is_not_owner_active(stack: Stack) -> None:
    session_id = await stack.start_session()
    observed = ok_json(
        await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
    )
    assert observed["owner_active"] is False


async def test_input_runs_again_after_the_owners_delay(stack: Stack) -> None:
    await _set_owner_idle_s(stack, SHORT_IDLE_S)
    session_id = await stack.start_session()
    sim = stack.sim()
    rig_id = stack.rig_ids[0]
    url = f"/v1/sessions/{session_id}/input"
    sim.record_local_input()
    assert (await stack.client.post(url, json=_type())).status_code == 409
    # The rig rests: the agent tells the gateway when the delay has passed.
    await stack.wait_until(lambda: stack.services.registry.owner_active(rig_id) is False)
    assert batch_ran(await stack.client.post(url, json=_type())) == 1
    assert sim.field_text("username") == "alice"


async def test_owner_starting_mid_batch_stops_it_before_the_next_event(stack: Stack) -> None:
    session_id = await stack.start_session()
    sim = stack.sim()
    # The pause after the first event is when the owner comes in.
    batch = {
        "events": [
            {"type": "type_text", "text": "a", "delay_ms": 2000},
            {"type": "type_text", "text": "b"},
        ]
    }
    url = f"/v1/sessions/{session_id}/input"
    sending = asyncio.create_task(stack.client.post(url, json=batch))
    await stack.wait_until(lambda: sim.field_text("username") == "a")
    sim.record_local_input()
    response = await sending
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["error"].startswith("owner_active: event 1 (type_text): the rig's owner used")
    assert (body["stopped_at"], [r["ok"] for r in body["events"]]) == (1, [True, False])
    assert sim.field_text("username") == "a"


async def test_input_older_than_the_delay_does_not_count(stack: Stack) -> None:
    session_id = await stack.start_session()
    sim = stack.sim()
    sim.record_local_input(at=time.monotonic() - IDLE_S - 0.5)
    assert batch_ran(await stack.client.post(f"/v1/sessions/{session_id}/input", json=_type())) == 1


async def test_the_rigs_setting_reaches_the_agent_at_session_start(stack: Stack) -> None:
    await _set_owner_idle_s(stack, 600)
    session_id = await stack.start_session()
    sim = stack.sim()
    # Older than the tests' minute, well within the owner's 10 minutes.
    sim.record_local_input(at=time.monotonic() - IDLE_S - 40)
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json=_type())
    assert response.status_code == 409, response.text
    assert "resumes after 600 s without local input" in response.json()["error"]


async def test_agents_own_input_never_counts(stack: Stack) -> None:
    session_id = await stack.start_session()
    url = f"/v1/sessions/{session_id}/input"
    assert batch_ran(await stack.client.post(url, json=_type("a"))) == 1
    assert batch_ran(await stack.client.post(url, json=_type("b"))) == 1
    assert (await _session(stack, session_id))["owner_active"] is False


async def test_sdk_raises_conflict_with_the_code(stack: Stack) -> None:
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        stack.sim().record_local_input()
        with pytest.raises(OwnerActiveError) as refused:
            await session.type_text("x")
        record = await session.refresh()
    assert (refused.value.code, refused.value.receipts, refused.value.stopped_at) == (
        "owner_active",
        [],
        0,
    )
    assert record.owner_active is True


# ---- a host driven by hand ---------------------------------------------------------------


async def test_a_host_without_the_dirty_field_shows_what_it_noted(bare_stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token) as host:
        session_id = await bare_stack.start_session_on(rig_id)
        note = {"t": "note", "op": ops.OWNER_PRESENCE, "body": {"active": True}}
        await host.ws.send(encode_text(note))
        registry = bare_stack.services.registry
        await bare_stack.wait_until(lambda: registry.owner_active(rig_id) is True)
        url = f"/v1/sessions/{session_id}/observe"
        observed = ok_json(await bare_stack.client.get(url, params={"image": 0}))
    assert observed["owner_active"] is True


async def _refusing_input(request: Request) -> str | bytes | None:
    if request.op != ops.INPUT_BATCH:
        return await answer_like_a_plain_host(request)
    error = {"code": ops.ERROR_OWNER_ACTIVE, "detail": "used 0.2 s ago"}
    return encode_text({"t": "res", "id": request.id, "ok": False, "error": error})


async def test_a_refusal_without_a_body_is_409_and_shows_at_once(bare_stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token, _refusing_input):
        session_id = await bare_stack.start_session_on(rig_id)
        url = f"/v1/sessions/{session_id}/input"
        response = await bare_stack.client.post(url, json=_type())
        session = await _session(bare_stack, session_id)
    assert (response.status_code, response.json()) == (
        409,
        {"error": "owner_active: used 0.2 s ago"},
    )
    assert session["owner_active"] is True
