"""Live view and takeover across two gateway nodes (one store, one Redis, one secret
key): a rig's host links to node A, and the signaling sockets of its viewers and of a
person taking control, opened on node B, are relayed to A. A one-time link's token is
good on either node, and only once across both."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aioice.ice
import httpx2
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from rigway.agent.stream import StreamSettings, aiortc_adaptation
from rigway.agent.stream.publisher import pin_host_addresses_to_loopback
from rigway.gateway.stream.service import signaling_url_for
from rigway.gateway.stream.tokens import TokenRejectedError
from rigway.gateway.takeover.service import signaling_url_for as takeover_signaling_url_for
from tests.e2e.harness import Stack, client_of, one_service_settings, running_stack, wait_for_holder
from tests.e2e.takeover_client import TakeoverPage
from tests.stream.viewer import AiortcViewer

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# Agents that beat every second and stream on 127.0.0.1 only (the test's viewers too).
STREAMING_AGENT: dict[str, Any] = {
    "heartbeat_interval_s": 1.0,
    "session_grace_s": 1.0,
    "stream": StreamSettings(loopback_only=True),
}
TYPE_X = {"events": [{"type": "type_text", "text": "x"}]}


@dataclass
class TwoNodes:
    holder: Stack  # the rig's host links here
    edge: Stack  # the viewers arrive here
    rig_id: str
    session_id: str  # live on the holder
    client: httpx2.AsyncClient  # to the edge, with the holder's account's key


@pytest.fixture
async def two_nodes(
    tmp_path: Path, shared_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[TwoNodes]:
    # aioice offers 127.0.0.1 only; monkeypatch puts its lookup back after the test.
    monkeypatch.setattr(aioice.ice, "get_host_addresses", aioice.ice.get_host_addresses)
    pin_host_addresses_to_loopback()
    shared = one_service_settings(tmp_path / "keys", REDIS_URL)
    try:
        async with AsyncExitStack() as nodes:
            holder = await nodes.enter_async_context(
                running_stack(
                    tmp_path / "a", shared_store_url, agent_settings=STREAMING_AGENT, **shared
                )
            )
            edge = await nodes.enter_async_context(
                running_stack(tmp_path / "b", shared_store_url, rigs=0, **shared)
            )
            rig_id = holder.rig_ids[0]
            await wait_for_holder(edge, rig_id, holder.base_url)
            client = await nodes.enter_async_context(client_of(edge, holder.api_key))
            created = await client.post("/v1/sessions", json={"rig_id": rig_id})
            assert created.status_code == 201, created.text
            yield TwoNodes(holder, edge, rig_id, created.json()["session_id"], client)
    finally:
        aiortc_adaptation.uninstall()  # the publisher's encoder out of aiortc again


class Viewer(AiortcViewer):
    """An aiortc viewer that can also send the socket's other messages (a ping)."""

    async def send(self, message: dict[str, Any]) -> None:
        assert self._ws is not None
        await self._ws.send(json.dumps(message))


async def _stream_token(client: httpx2.AsyncClient, session_id: str) -> str:
    response = await client.get(f"/v1/sessions/{session_id}/stream")
    assert response.status_code == 200, response.text
    token = response.json()["viewer_token"]
    assert isinstance(token, str)
    return token


def _signal_url(stack: Stack, token: str) -> str:
    """The live view's signaling socket of `stack`'s node, with `token`."""
    return f"{signaling_url_for(stack.base_url)}?token={token}"


async def _pong_then_leave(url: str) -> None:
    """Open the socket (which uses the token up), see it answer, leave."""
    async with connect(url, compression=None, open_timeout=10) as ws:
        await ws.send(json.dumps({"type": "ping"}))
        async with asyncio.timeout(10):
            assert json.loads(await ws.recv()) == {"type": "pong"}


async def _close_of(url: str) -> tuple[int | None, str | None]:
    """Open the socket and read until the gateway closes it."""
    async with connect(url, compression=None, open_timeout=10) as ws:
        with contextlib.suppress(ConnectionClosed):
            async with asyncio.timeout(10):
                while True:
                    await ws.recv()
        return ws.close_code, ws.close_reason


async def test_a_live_view_opened_on_the_other_node_streams_from_the_holder(
    two_nodes: TwoNodes,
) -> None:
    holder, edge, session_id = two_nodes.holder, two_nodes.edge, two_nodes.session_id
    # The credentials, as a client gets them from the edge (the holder issued them).
    credentials = await two_nodes.client.get(f"/v1/sessions/{session_id}/stream")
    assert credentials.status_code == 200, credentials.text
    body = credentials.json()
    assert body["connect_url"] == _signal_url(edge, body["viewer_token"])
    page = await two_nodes.client.get(body["viewer_url"])
    assert page.status_code == 200  # the edge serves the page of a session held elsewhere

    viewer = Viewer(body["connect_url"])
    try:
        answer = await viewer.start()  # the offer went to the holder's agent, and back
        assert answer["type"] == "answer", answer
        assert (answer["width"], answer["height"]) == (1920, 1080)
        assert "H264/90000" in answer["sdp"]
        await viewer.send({"type": "ping"})
        assert await viewer.next_message() == {"type": "pong"}
        await viewer.wait_frames(1)  # the media flows from the rig to the viewer
        assert holder.services.stream.viewer_count(session_id) == 1
        assert edge.services.stream.viewer_count(session_id) == 0
    finally:
        await viewer.close()
    # The viewer left the edge: the relay let go of the holder's socket too.
    await Stack.wait_until(lambda: holder.services.stream.viewer_count(session_id) == 0)


async def test_a_session_ended_says_bye_through_the_relay(two_nodes: TwoNodes) -> None:
    token = await _stream_token(two_nodes.client, two_nodes.session_id)
    viewer = Viewer(_signal_url(two_nodes.edge, token))
    try:
        assert (await viewer.start())["type"] == "answer"
        ended = await two_nodes.client.delete(f"/v1/sessions/{two_nodes.session_id}")
        assert ended.status_code == 200, ended.text

        assert await viewer.wait_closed(timeout_s=10.0) == (1000, "session_ended")
        assert {"type": "bye", "reason": "session_ended"} in viewer.messages
    finally:
        await viewer.close()


async def test_a_link_used_on_one_node_is_refused_on_the_other(two_nodes: TwoNodes) -> None:
    holder, edge = two_nodes.holder, two_nodes.edge
    token = await _stream_token(holder.client, two_nodes.session_id)

    await _pong_then_leave(_signal_url(holder, token))

    assert await _close_of(_signal_url(edge, token)) == (4403, "token_used")
    page = await edge.client.get(f"/v1/stream/view?token={token}")
    assert page.status_code == 401
    assert "already used" in page.text
    # The nodes share the used tokens themselves, not only through the holder's socket:
    # one used through the edge's service is used for the holder's.
    other = await _stream_token(holder.client, two_nodes.session_id)
    await edge.services.stream.tokens.use_once(other)
    with pytest.raises(TokenRejectedError) as refused:
        await holder.services.stream.tokens.use_once(other)
    assert refused.value.reason == "token_used"


async def test_a_link_issued_by_one_node_opens_on_the_other_once(two_nodes: TwoNodes) -> None:
    holder, edge = two_nodes.holder, two_nodes.edge
    # Issued by the edge, which holds nothing of the session: the key is the service's.
    issued = edge.services.stream.tokens.issue(two_nodes.session_id, two_nodes.rig_id)

    await _pong_then_leave(_signal_url(holder, issued.token))

    assert await _close_of(_signal_url(holder, issued.token)) == (4403, "token_used")
    assert await _close_of(_signal_url(edge, issued.token)) == (4403, "token_used")
    # A takeover link is not a viewer's, on any node.
    viewer_token = await _stream_token(two_nodes.client, two_nodes.session_id)
    takeover_url = f"{takeover_signaling_url_for(edge.base_url)}?token={viewer_token}"
    assert await _close_of(takeover_url) == (4401, "invalid_token")


async def test_a_holder_out_of_reach_closes_the_socket_and_leaves_the_link_unused(
    two_nodes: TwoNodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await _stream_token(two_nodes.client, two_nodes.session_id)
    # A port bound but not listening: a connection to it is refused at once.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]

        async def unreachable_holder(rig_id: str) -> str | None:
            return f"http://127.0.0.1:{port}"

        monkeypatch.setattr(two_nodes.edge.services.stream, "holder_url_of", unreachable_holder)
        assert await _close_of(_signal_url(two_nodes.edge, token)) == (1013, "unavailable")

    await _pong_then_leave(_signal_url(two_nodes.holder, token))


async def test_takeover_on_the_other_node_passes_control_and_hands_it_back(
    two_nodes: TwoNodes,
) -> None:
    holder, edge, session_id = two_nodes.holder, two_nodes.edge, two_nodes.session_id
    created = await two_nodes.client.post(f"/v1/sessions/{session_id}/takeover")
    assert created.status_code == 201, created.text
    connect_url = created.json()["connect_url"]
    assert connect_url.startswith(f"{takeover_signaling_url_for(edge.base_url)}?token=")

    page = TakeoverPage(connect_url)
    try:
        assert await page.take() == {"type": "control", "control": "human"}
        live = holder.services.sessions.live.get(session_id)
        assert live is not None
        assert live.control == "human"
        refused = await two_nodes.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
        assert refused.status_code == 409
        assert refused.json()["error"].startswith("human_in_control")

        await page.send({"type": "hand_back"})
        assert await page.next_of("control") == {
            "type": "control",
            "control": "api",
            "reason": "handed_back",
        }
    finally:
        await page.close()
    async with asyncio.timeout(10):
        await holder.services.takeover.wait_for_control(session_id, "api")
    accepted = await two_nodes.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
    assert accepted.status_code == 200, accepted.text
