"""Human takeover through the real gateway, a real agent on a sim desktop and an aiortc
page: control passes on the answer, API input is refused while a person drives, and
control comes back (with what they held released) on hand back, on a dropped or silent
page, and the takeover ends with its session."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from websockets.asyncio.client import connect

from rigway.agent.backends.sim import SimDesktop
from rigway.client import AsyncRigway, ConflictError, Takeover
from rigway.gateway.takeover.service import HEARTBEAT_TIMEOUT_S
from rigway.protocol import Request, ops
from tests.e2e.harness import Stack, batch_ran
from tests.e2e.raw_host import answer_like_a_plain_host, pair_rig, raw_host
from tests.e2e.raw_host import ok as raw_ok
from tests.e2e.takeover_client import TakeoverPage, streaming_stack
from tests.gateway.console.pages import ConsolePages, add_owner

# The contract: a page gone without a hand back loses control within this.
CONTROL_RETURN_S = 5.0
TYPE_X = {"events": [{"type": "type_text", "text": "x"}]}


@pytest.fixture
async def stack(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Stack]:
    async with streaming_stack(tmp_path, database_url, monkeypatch) as running:
        yield running


async def _takeover(stack: Stack, session_id: str) -> httpx2.Response:
    return await stack.client.post(f"/v1/sessions/{session_id}/takeover")


async def _taken(stack: Stack, session_id: str) -> TakeoverPage:
    """A page that holds control of the session."""
    response = await _takeover(stack, session_id)
    assert response.status_code == 201, response.text
    page = TakeoverPage(response.json()["connect_url"])
    assert await page.take() == {"type": "control", "control": "human"}
    return page


async def _control(stack: Stack, session_id: str) -> str:
    response = await stack.client.get(f"/v1/sessions/{session_id}")
    assert response.status_code == 200, response.text
    control = response.json()["control"]
    assert isinstance(control, str)
    return control


async def _wait_for_api_control(stack: Stack, session_id: str, timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        await stack.services.takeover.wait_for_control(session_id, "api")


def _at(sim: SimDesktop, control: str, kind: str, **fields: Any) -> dict[str, Any]:
    """A pointer message at the middle of a sim control, in the pixels of a video half
    the desktop's size (the gateway maps them back)."""
    rect = sim.control_rect(control)
    x, y = rect.x + rect.w // 2, rect.y + rect.h // 2
    return {"type": kind, "x": x // 2, "y": y // 2, "width": 960, "height": 540, **fields}


def _error_code(response: httpx2.Response) -> str:
    error = response.json()["error"]
    assert isinstance(error, str)
    return error.split(":")[0]


async def test_takeover_answers_201_with_the_page_and_its_socket(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await _takeover(stack, session_id)
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"connect_url", "viewer_url", "expires_at"}
    assert body["connect_url"].startswith(f"ws://127.0.0.1:{stack.base_url.rsplit(':', 1)[1]}/")
    assert "/v1/takeover/signal?token=" in body["connect_url"]
    assert body["viewer_url"].startswith(f"{stack.base_url}/v1/takeover/view?token=")
    assert datetime.fromisoformat(body["expires_at"]) > datetime.now().astimezone()
    page = await stack.client.get(body["viewer_url"])
    assert page.status_code == 200
    assert 'id="hand-back"' in page.text
    assert page.headers["cache-control"] == "no-store"
    # Opening the page does not use the token up; nobody has control yet.
    assert await _control(stack, session_id) == "api"


async def test_takeover_of_an_ended_session_is_410(stack: Stack) -> None:
    session_id = await stack.start_session()
    assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
    response = await _takeover(stack, session_id)
    assert response.status_code == 410
    assert _error_code(response) == "session_ended"


async def test_while_a_person_drives_api_input_is_409_and_the_screen_still_reads(
    stack: Stack,
) -> None:
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        assert await _control(stack, session_id) == "human"
        refused = await stack.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
        assert refused.status_code == 409
        assert _error_code(refused) == "human_in_control"
        shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert shot.status_code == 200
        observed = await stack.client.get(f"/v1/sessions/{session_id}/observe")
        assert observed.status_code == 200
    finally:
        await page.close()


async def test_a_second_person_is_409_human_in_control(stack: Stack) -> None:
    session_id = await stack.start_session()
    # A link issued before the first person connected: its socket is refused.
    early = (await _takeover(stack, session_id)).json()["connect_url"]
    page = await _taken(stack, session_id)
    second = TakeoverPage(early)
    try:
        response = await _takeover(stack, session_id)
        assert response.status_code == 409
        assert _error_code(response) == "human_in_control"
        await second.start_socket_only()
        assert await second.wait_closed(timeout_s=5.0) == (4409, "human_in_control")
        assert await _control(stack, session_id) == "human"
    finally:
        await second.close()
        await page.close()


async def test_the_person_drives_then_hands_back_and_what_they_held_is_released(
    stack: Stack,
) -> None:
    sim = stack.sim()
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        await page.send(_at(sim, "username", "mouse_down", button="left"))
        await page.send(_at(sim, "username", "mouse_up", button="left"))
        for kind, key in [("down", "shift"), ("down", "r"), ("up", "r"), ("up", "shift")]:
            await page.send({"type": f"key_{kind}", "key": key})
        for key in ("i", "g"):
            await page.send({"type": "key_down", "key": key})
            await page.send({"type": "key_up", "key": key})
        await page.send({"type": "type_text", "text": "é"})
        await Stack.wait_until(lambda: sim.field_text("username") == "Rigé")
        # Held when the person hands back: a key and a button.
        await page.send({"type": "key_down", "key": "Control"})
        await page.send(_at(sim, "recent", "mouse_down", button="right"))
        await Stack.wait_until(lambda: sim.pressed_buttons == {"right"})
        assert sim.pressed_keys == {"ctrl"}

        await page.send({"type": "hand_back"})
        assert await page.next_of("control") == {
            "type": "control",
            "control": "api",
            "reason": "handed_back",
        }
        assert await page.wait_closed(timeout_s=5.0) == (1000, "handed_back")
        assert sim.pressed_keys == frozenset()
        assert sim.pressed_buttons == frozenset()
        assert await _control(stack, session_id) == "api"
        response = await stack.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
        assert batch_ran(response) == 1
        # The API sees what the person typed (the field took the API's x too).
        targets = (await stack.client.get(f"/v1/sessions/{session_id}/targets")).json()
        username = next(t for t in targets["targets"] if t["name"] == "Username")
        assert username["value"] == "Rigéx"
    finally:
        await page.close()


async def test_bad_messages_are_answered_with_errors_and_the_person_keeps_control(
    stack: Stack,
) -> None:
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        await page.send({"type": "key_down", "key": "nosuchkey"})
        assert (await page.next_of("error"))["error"].startswith("invalid_request: unknown key")
        await page.send({"type": "mouse_move", "x": 1, "y": 1, "width": 0, "height": 10})
        assert (await page.next_of("error"))["error"].startswith("invalid_request")
        assert await _control(stack, session_id) == "human"
    finally:
        await page.close()


async def test_a_dropped_page_returns_control_and_releases_held_input(stack: Stack) -> None:
    sim = stack.sim()
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    await page.send({"type": "key_down", "key": "shift"})
    await Stack.wait_until(lambda: sim.pressed_keys == {"shift"})
    await page.close()
    await _wait_for_api_control(stack, session_id, CONTROL_RETURN_S)
    assert sim.pressed_keys == frozenset()
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
    assert batch_ran(response) == 1


async def test_a_silent_page_loses_control_within_the_bound(stack: Stack) -> None:
    assert HEARTBEAT_TIMEOUT_S < CONTROL_RETURN_S
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        page.stop_pinging()  # the socket stays open: a network gone quiet
        await _wait_for_api_control(stack, session_id, CONTROL_RETURN_S)
        assert await _control(stack, session_id) == "api"
    finally:
        await page.close()


async def test_the_session_ending_ends_the_takeover(stack: Stack) -> None:
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
        assert await page.wait_closed(timeout_s=5.0) == (1000, "session_ended")
        assert {"type": "bye", "reason": "session_ended"} in page.messages
        # Nobody holds the ended session: a new one on the rig can be taken over.
        next_session = await stack.start_session()
        assert (await _takeover(stack, next_session)).status_code == 201
    finally:
        await page.close()


async def test_a_used_or_a_viewer_token_opens_no_takeover(stack: Stack) -> None:
    session_id = await stack.start_session()
    connect_url = (await _takeover(stack, session_id)).json()["connect_url"]
    page = await _taken_from(connect_url)
    again = TakeoverPage(connect_url)
    viewer_token = (await stack.client.get(f"/v1/sessions/{session_id}/stream")).json()[
        "viewer_token"
    ]
    as_viewer = TakeoverPage(connect_url.split("?")[0] + f"?token={viewer_token}")
    try:
        await page.close()
        await _wait_for_api_control(stack, session_id, CONTROL_RETURN_S)
        await again.start_socket_only()
        assert await again.wait_closed(timeout_s=5.0) == (4403, "token_used")
        await as_viewer.start_socket_only()
        assert await as_viewer.wait_closed(timeout_s=5.0) == (4401, "invalid_token")
    finally:
        await again.close()
        await as_viewer.close()


async def _taken_from(connect_url: str) -> TakeoverPage:
    page = TakeoverPage(connect_url)
    assert await page.take() == {"type": "control", "control": "human"}
    return page


async def test_the_owner_console_hands_control_back(stack: Stack) -> None:
    await add_owner(stack, "owner@example.com")
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        async with ConsolePages(stack) as console:
            await console.signed_in("owner@example.com")
            shown = await console.client.get(f"/console/sessions/{session_id}")
            assert "Hand back" in shown.text
            handed = await console.post(f"/console/sessions/{session_id}/hand-back")
            assert handed.status_code == 303, handed.text
            assert await _control(stack, session_id) == "api"
            assert (await page.next_of("control"))["reason"] == "owner_hand_back"
            # Nobody holds it now: a second hand back changes nothing.
            again = await console.post(f"/console/sessions/{session_id}/hand-back")
            assert again.status_code == 303
    finally:
        await page.close()


async def test_the_owner_console_takes_control_through_the_same_page(stack: Stack) -> None:
    await add_owner(stack, "owner@example.com")
    session_id = await stack.start_session()
    async with ConsolePages(stack) as console:
        await console.signed_in("owner@example.com")
        shown = await console.client.get(f"/console/sessions/{session_id}")
        assert "Take control" in shown.text
        taken = await console.post(f"/console/sessions/{session_id}/takeover")
        assert taken.status_code == 303, taken.text
        viewer_url = taken.headers["location"]
        assert "/v1/takeover/view?token=" in viewer_url
        token = viewer_url.split("token=")[1]
        page = TakeoverPage(
            f"ws://{stack.base_url.split('://')[1]}/v1/takeover/signal?token={token}"
        )
        try:
            assert await page.take() == {"type": "control", "control": "human"}
            busy = await console.post(f"/console/sessions/{session_id}/takeover")
            assert busy.status_code == 409
        finally:
            await page.close()


async def test_the_sdk_takes_over_and_sees_control_and_the_409(stack: Stack) -> None:
    session_id = await stack.start_session()
    async with AsyncRigway(stack.api_key, stack.base_url, max_retries=0) as client:
        handle = await client.sessions.attach(session_id)
        link = await handle.takeover()
        assert isinstance(link, Takeover)
        assert link.viewer_url.startswith(f"{stack.base_url}/v1/takeover/view?token=")
        page = await _taken_from(link.connect_url)
        try:
            assert (await handle.refresh()).control == "human"
            with pytest.raises(ConflictError) as refused:
                await handle.type_text("x")
            assert refused.value.code == "human_in_control"
            await page.send({"type": "hand_back"})
            await _wait_for_api_control(stack, session_id, CONTROL_RETURN_S)
            assert (await handle.refresh()).control == "api"
        finally:
            await page.close()


async def test_sockets_the_gateway_refuses_close_with_their_reason(stack: Stack) -> None:
    session_id = await stack.start_session()
    base = f"ws://{stack.base_url.split('://')[1]}/v1/takeover/signal"
    mismatched = (await _takeover(stack, session_id)).json()["connect_url"] + "&session_id=ses_x"
    for url, closed in [
        (base, (4401, "invalid_token")),
        (mismatched, (4403, "token_session_mismatch")),
    ]:
        page = TakeoverPage(url)
        try:
            await page.start_socket_only()
            assert await page.wait_closed(timeout_s=5.0) == closed
        finally:
            await page.close()
    # The viewers of the session are full: a takeover is one of them.
    viewers = [
        TakeoverPage(
            (await stack.client.get(f"/v1/sessions/{session_id}/stream")).json()["connect_url"]
        )
        for _ in range(4)
    ]
    late = TakeoverPage((await _takeover(stack, session_id)).json()["connect_url"])
    try:
        for viewer in viewers:
            await viewer.start_socket_only()
        await Stack.wait_until(lambda: stack.services.stream.viewer_count(session_id) == 4)
        await late.start_socket_only()
        assert await late.wait_closed(timeout_s=5.0) == (4429, "too_many_viewers")
    finally:
        for viewer in [*viewers, late]:
            await viewer.close()


async def test_a_link_of_an_ended_session_is_refused_at_the_page_and_the_socket(
    stack: Stack,
) -> None:
    session_id = await stack.start_session()
    link = (await _takeover(stack, session_id)).json()
    assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
    page = await stack.client.get(link["viewer_url"])
    assert page.status_code == 410
    assert "The session has ended." in page.text
    socket = TakeoverPage(link["connect_url"])
    try:
        await socket.start_socket_only()
        assert await socket.wait_closed(timeout_s=5.0) == (4410, "session_ended")
    finally:
        await socket.close()
    bad = await stack.client.get("/v1/takeover/view?token=nonsense")
    assert bad.status_code == 401
    assert "not valid" in bad.text
    script = await stack.client.get("/v1/takeover/static/takeover.js")
    assert script.status_code == 200
    assert (await stack.client.get("/v1/takeover/static/nothing.js")).status_code == 404


async def test_input_before_the_answer_is_refused_on_the_socket(stack: Stack) -> None:
    session_id = await stack.start_session()
    page = TakeoverPage((await _takeover(stack, session_id)).json()["connect_url"])
    try:
        await page.start_socket_only()
        await page.send({"type": "key_down", "key": "a"})
        assert await page.next_of("error") == {"type": "error", "error": "not_in_control"}
        # It claimed the session all the same: nobody else may take it meanwhile.
        assert (await _takeover(stack, session_id)).status_code == 409
    finally:
        await page.close()


async def test_the_host_refusing_the_person_s_input_is_said_on_the_page(stack: Stack) -> None:
    sim = stack.sim()
    session_id = await stack.start_session()
    page = await _taken(stack, session_id)
    try:
        await page.send({"type": "key_down", "key": "shift"})
        await Stack.wait_until(lambda: sim.pressed_keys == {"shift"})
        sim.set_desktop_state("locked")
        await page.send({"type": "key_down", "key": "a"})
        assert (await page.next_of("error"))["error"].startswith("desktop_unavailable: locked")
        # The release at hand back is refused too (the host released on its own).
        await page.send({"type": "hand_back"})
        assert (await page.next_of("control"))["control"] == "api"
        assert sim.pressed_keys == frozenset()
        assert await _control(stack, session_id) == "api"
    finally:
        sim.set_desktop_state("normal")
        await page.close()


async def _stuck_input(request: Request) -> str | bytes | None:
    """A host that answers a takeover's offer and never an input batch."""
    if request.op == ops.STREAM_OFFER:
        answer = ops.StreamAnswer(sdp="v=0", encoder="fake", width=1920, height=1080)
        return raw_ok(request, answer.model_dump())
    if request.op == ops.INPUT_BATCH:
        return None
    return await answer_like_a_plain_host(request)


async def test_a_page_gone_while_the_host_hangs_still_returns_control_in_time(
    stack: Stack,
) -> None:
    rig_id, rig_token = await pair_rig(stack)
    async with raw_host(stack.base_url, rig_token, _stuck_input) as host:
        session_id = await stack.start_session_on(rig_id)
        link = (await _takeover(stack, session_id)).json()
        async with connect(link["connect_url"], compression=None) as socket:
            await socket.send(json.dumps({"type": "offer", "sdp": "v=0"}))
            assert json.loads(await socket.recv())["type"] == "answer"
            assert json.loads(await socket.recv()) == {"type": "control", "control": "human"}
            await socket.send(json.dumps({"type": "key_down", "key": "shift"}))
            await Stack.wait_until(lambda: ops.INPUT_BATCH in host.ops_seen())
        # The key_down never came back; the release of shift does not either.
        await _wait_for_api_control(stack, session_id, CONTROL_RETURN_S)
        batches = [r.body for r in host.requests if r.op == ops.INPUT_BATCH]
        assert batches[-1]["events"] == [{"type": "key_up", "key": "shift"}]


async def test_a_person_holding_control_keeps_the_session_from_idling_out(stack: Stack) -> None:
    session_id = await stack.start_session()
    live = stack.services.sessions.live.get(session_id)
    assert live is not None
    page = await _taken(stack, session_id)
    try:
        before = live.last_activity_at
        # The page's pings alone (no input) count as activity while it holds control.
        await Stack.wait_until(lambda: live.last_activity_at > before)
        assert live.action_count == 0
    finally:
        await page.close()


async def test_the_console_refuses_a_takeover_of_an_ended_or_elsewhere_held_session(
    stack: Stack,
) -> None:
    await add_owner(stack, "owner@example.com")
    ended = await stack.start_session()
    assert (await stack.client.delete(f"/v1/sessions/{ended}")).status_code == 200
    async with ConsolePages(stack) as console:
        await console.signed_in("owner@example.com")
        assert (await console.post(f"/console/sessions/{ended}/takeover")).status_code == 410
        assert (await console.post("/console/sessions/ses_nosuch/hand-back")).status_code == 404
        # Active in the store, live on no node of this one: as when another node holds it.
        active = await stack.start_session()
        live = stack.services.sessions.live.remove(active)
        try:
            refused = await console.post(f"/console/sessions/{active}/takeover")
            assert refused.status_code == 503
        finally:
            assert live is not None
            stack.services.sessions.live.add(live)
