"""The owner's controls over API sessions on a rig, through the API: `app_mode_only`,
`owner_idle_s` and `recordings_allowed` on the Rig, changed with `PATCH /v1/rigs/{id}`
and a console token only, session create refusing what the owner forbids, and a new
owner-idle delay reaching the session running on the rig (`session/owner_idle`)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from rigway.protocol import Request, encode_text, ops
from tests.e2e.harness import Stack, batch_ran
from tests.e2e.raw_host import answer_like_a_plain_host, pair_rig, raw_host

pytestmark = pytest.mark.postgres

DEFAULTS = {"app_mode_only": False, "owner_idle_s": 10, "recordings_allowed": True}
CLICK = {"events": [{"type": "mouse_click", "x": 5, "y": 5}]}


def console(stack: Stack, account_id: str | None = None) -> httpx2.AsyncClient:
    identity = stack.services.identity
    assert identity is not None
    token = identity.issue("usr_test", account_id or stack.account_id)
    return httpx2.AsyncClient(
        base_url=stack.base_url, headers={"Authorization": f"Bearer {token}"}, trust_env=False
    )


def _controls(rig: dict[str, Any]) -> dict[str, Any]:
    return {name: rig[name] for name in DEFAULTS}


async def _rig(stack: Stack) -> dict[str, Any]:
    response = await stack.client.get(f"/v1/rigs/{stack.rig_ids[0]}")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def _set_controls(stack: Stack, **controls: Any) -> None:
    async with console(stack) as owner:
        response = await owner.patch(f"/v1/rigs/{stack.rig_ids[0]}", json=controls)
    assert response.status_code == 200, response.text


async def test_a_new_rig_has_the_default_controls(stack: Stack) -> None:
    assert _controls(await _rig(stack)) == DEFAULTS
    listed = (await stack.client.get("/v1/rigs")).json()["rigs"]
    assert _controls(listed[0]) == DEFAULTS


async def test_console_token_patch_sets_the_controls_and_answers_the_rig(stack: Stack) -> None:
    wanted = {"app_mode_only": True, "owner_idle_s": 45, "recordings_allowed": False}
    async with console(stack) as owner:
        response = await owner.patch(f"/v1/rigs/{stack.rig_ids[0]}", json=wanted)
    assert response.status_code == 200
    assert _controls(response.json()) == wanted
    rig = await _rig(stack)
    assert _controls(rig) == wanted
    assert (rig["name"], rig["api_access_enabled"]) == ("rig-1", True)


async def test_patch_leaves_the_controls_it_does_not_name(stack: Stack) -> None:
    await _set_controls(stack, app_mode_only=True, owner_idle_s=0)
    await _set_controls(stack, recordings_allowed=False)
    await _set_controls(stack, name="renamed")
    rig = await _rig(stack)
    assert _controls(rig) == {
        "app_mode_only": True,
        "owner_idle_s": 0,
        "recordings_allowed": False,
    }
    assert rig["name"] == "renamed"


@pytest.mark.parametrize(
    "body",
    [
        {"owner_idle_s": -1},
        {"owner_idle_s": 3601},
        {"owner_idle_s": "30"},
        {"owner_idle_s": 1.5},
        {"owner_idle_s": True},
        {"app_mode_only": "yes"},
        {"app_mode_only": 1},
        {"recordings_allowed": "false"},
        {"owner_idle_seconds": 30},
    ],
)
async def test_invalid_controls_are_400_and_change_nothing(
    stack: Stack, body: dict[str, Any]
) -> None:
    async with console(stack) as owner:
        response = await owner.patch(f"/v1/rigs/{stack.rig_ids[0]}", json=body)
    assert response.status_code == 400
    assert response.json()["error"].startswith("invalid_request")
    assert _controls(await _rig(stack)) == DEFAULTS


async def test_bounds_of_the_idle_delay_are_accepted(stack: Stack) -> None:
    await _set_controls(stack, owner_idle_s=3600)
    assert (await _rig(stack))["owner_idle_s"] == 3600
    await _set_controls(stack, owner_idle_s=0)
    assert (await _rig(stack))["owner_idle_s"] == 0


async def test_an_api_key_cannot_change_the_controls(stack: Stack) -> None:
    response = await stack.client.patch(
        f"/v1/rigs/{stack.rig_ids[0]}", json={"app_mode_only": True, "owner_idle_s": 0}
    )
    assert response.status_code == 401
    assert response.json()["error"].startswith("invalid_console_token")
    assert _controls(await _rig(stack)) == DEFAULTS


async def test_another_accounts_rig_is_not_found(stack: Stack) -> None:
    other_account = await stack.services.accounts.create("other account")
    async with console(stack, other_account) as intruder:
        response = await intruder.patch(
            f"/v1/rigs/{stack.rig_ids[0]}", json={"recordings_allowed": False}
        )
    assert response.status_code == 404
    assert response.json()["error"].startswith("rig_not_found")
    assert _controls(await _rig(stack)) == DEFAULTS


async def test_desktop_session_on_an_app_only_rig_is_refused_mode_not_allowed(
    stack: Stack,
) -> None:
    await _set_controls(stack, app_mode_only=True)
    for body in ({}, {"mode": "desktop"}):
        response = await stack.client.post(
            "/v1/sessions", json={"rig_id": stack.rig_ids[0], **body}
        )
        assert response.status_code == 403
        assert response.json()["error"].startswith("mode_not_allowed")
    assert (await _rig(stack))["active_session_id"] is None  # nothing started


async def test_app_session_on_an_app_only_rig_starts(stack: Stack) -> None:
    await _set_controls(stack, app_mode_only=True)
    session_id = await stack.start_session(mode="app")
    session = (await stack.client.get(f"/v1/sessions/{session_id}")).json()
    assert (session["mode"], session["status"]) == ("app", "active")


async def test_desktop_session_starts_again_once_the_owner_allows_it(stack: Stack) -> None:
    await _set_controls(stack, app_mode_only=True)
    await _set_controls(stack, app_mode_only=False)
    session_id = await stack.start_session()
    assert (await _rig(stack))["active_session_id"] == session_id


async def test_recording_on_a_rig_that_forbids_it_is_refused_recording_not_allowed(
    stack: Stack,
) -> None:
    await _set_controls(stack, recordings_allowed=False)
    response = await stack.client.post(
        "/v1/sessions", json={"rig_id": stack.rig_ids[0], "record": True}
    )
    assert response.status_code == 403
    assert response.json()["error"].startswith("recording_not_allowed")
    assert (await _rig(stack))["active_session_id"] is None
    # Not recording is still allowed there.
    await stack.start_session(record=False)


# ---- a new delay during a session ----


async def test_a_shorter_delay_reaches_the_running_session_at_once(stack: Stack) -> None:
    session_id = await stack.start_session()
    stack.sim().record_local_input()
    url = f"/v1/sessions/{session_id}/input"
    refused = await stack.client.post(url, json=CLICK)
    assert refused.status_code == 409
    assert refused.json()["error"].startswith("owner_active")
    await _set_controls(stack, owner_idle_s=0)
    assert batch_ran(await stack.client.post(url, json=CLICK)) == 1


async def test_a_longer_delay_reaches_the_running_session_at_once(stack: Stack) -> None:
    await _set_controls(stack, owner_idle_s=0)
    session_id = await stack.start_session()
    stack.sim().record_local_input()
    url = f"/v1/sessions/{session_id}/input"
    assert batch_ran(await stack.client.post(url, json=CLICK)) == 1
    await _set_controls(stack, owner_idle_s=3600)
    refused = await stack.client.post(url, json=CLICK)
    assert refused.status_code == 409
    assert refused.json()["error"].startswith("owner_active")


async def test_a_host_that_cannot_take_the_new_delay_still_gets_it_stored(
    bare_stack: Stack,
) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)

    async def predating_the_op(request: Request) -> str | bytes | None:
        if request.op == ops.SESSION_OWNER_IDLE:
            error = {"code": ops.ERROR_UNKNOWN_OP, "detail": f"unknown op {request.op!r}"}
            return encode_text({"t": "res", "id": request.id, "ok": False, "error": error})
        return await answer_like_a_plain_host(request)

    async with raw_host(bare_stack.base_url, rig_token, predating_the_op) as host:
        await bare_stack.wait_online(rig_id)
        session_id = await bare_stack.start_session_on(rig_id)
        async with console(bare_stack) as owner:
            response = await owner.patch(f"/v1/rigs/{rig_id}", json={"owner_idle_s": 0})
        assert response.status_code == 200, response.text
        assert response.json()["owner_idle_s"] == 0
        [told] = [r for r in host.requests if r.op == ops.SESSION_OWNER_IDLE]
        assert told.body == {"session_id": session_id, "owner_idle_s": 0}
    session = (await bare_stack.client.get(f"/v1/sessions/{session_id}")).json()
    assert session["status"] == "active"  # the refusal ends nothing


async def test_controls_other_than_the_delay_tell_the_host_nothing(bare_stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token) as host:
        await bare_stack.wait_online(rig_id)
        await bare_stack.start_session_on(rig_id)
        async with console(bare_stack) as owner:
            body = {"app_mode_only": True, "recordings_allowed": False, "name": "x"}
            assert (await owner.patch(f"/v1/rigs/{rig_id}", json=body)).status_code == 200
        assert ops.SESSION_OWNER_IDLE not in host.ops_seen()
