"""Two gateway nodes as one service (one store, one Redis, one secret key): a rig's
host links to node A, and every session operation works through node B, which
forwards it to A over the peer link and answers with A's answer."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.pairing import pair
from rigway.agent.runner import AgentSettings, run_agent
from tests.e2e.harness import (
    QUICK_AGENT,
    Stack,
    one_service_settings,
    running_stack,
    wait_for_holder,
)

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@dataclass
class TwoNodes:
    holder: Stack  # the rig's host links here
    edge: Stack  # the requests arrive here
    rig_id: str
    client: httpx2.AsyncClient  # to the edge, with the holder's account's key


@pytest.fixture
async def two_nodes(tmp_path: Path, shared_store_url: str) -> AsyncIterator[TwoNodes]:
    shared = one_service_settings(tmp_path / "keys", REDIS_URL)
    async with AsyncExitStack() as nodes:
        holder = await nodes.enter_async_context(
            running_stack(tmp_path / "a", shared_store_url, agent_settings=QUICK_AGENT, **shared)
        )
        edge = await nodes.enter_async_context(
            running_stack(tmp_path / "b", shared_store_url, rigs=0, **shared)
        )
        rig_id = holder.rig_ids[0]
        await wait_for_holder(edge, rig_id, holder.base_url)
        client = httpx2.AsyncClient(
            base_url=edge.base_url,
            headers={"Authorization": f"Bearer {holder.api_key}"},
            timeout=30.0,
            trust_env=False,
        )
        nodes.push_async_callback(client.aclose)
        yield TwoNodes(holder, edge, rig_id, client)


async def test_a_session_starts_and_is_driven_through_the_other_node(two_nodes: TwoNodes) -> None:
    client = two_nodes.client
    created = await client.post("/v1/sessions", json={"rig_id": two_nodes.rig_id})
    assert created.status_code == 201, created.text
    session_id = created.json()["session_id"]

    screenshot = await client.get(f"/v1/sessions/{session_id}/screenshot")
    observe = await client.get(f"/v1/sessions/{session_id}/observe")
    batch = await client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_move", "x": 40, "y": 30}]},
    )

    assert screenshot.status_code == 200, screenshot.text
    assert screenshot.headers["content-type"] == "image/jpeg"
    assert screenshot.content.startswith(b"\xff\xd8")
    assert screenshot.headers["x-frame-id"]
    assert observe.status_code == 200, observe.text
    assert observe.json()["frame_id"]
    assert batch.status_code == 200, batch.text
    # The holder served every one of them: its live session counted the activity.
    live = two_nodes.holder.services.sessions.live.get(session_id)
    assert live is not None
    assert live.action_count == 1
    assert two_nodes.edge.services.sessions.live.get(session_id) is None
    # The edge timed each forward (session create and the three operations).
    metrics = (await two_nodes.edge.client.get("/metrics")).text
    forwarded = [
        line for line in metrics.splitlines()
        if line.startswith("rigway_forward_seconds_count") and 'outcome="ok"' in line
    ]  # fmt: skip
    assert len(forwarded) == 1
    assert float(forwarded[0].split()[-1]) == 4


async def test_errors_come_back_as_the_holder_answered_them(two_nodes: TwoNodes) -> None:
    session_id = (
        await two_nodes.client.post("/v1/sessions", json={"rig_id": two_nodes.rig_id})
    ).json()["session_id"]

    off_screen = await two_nodes.client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_move", "x": 99999, "y": 1}]},
    )

    assert off_screen.status_code == 400
    assert off_screen.json()["error"].startswith("invalid_request")


async def test_a_session_ended_on_the_other_node_stops_where_its_host_is(
    two_nodes: TwoNodes,
) -> None:
    session_id = (
        await two_nodes.client.post("/v1/sessions", json={"rig_id": two_nodes.rig_id})
    ).json()["session_id"]

    ended = await two_nodes.client.delete(f"/v1/sessions/{session_id}")

    assert ended.status_code == 200
    assert ended.json()["ended_reason"] == "client"
    holder_sessions = two_nodes.holder.services.sessions
    await Stack.wait_until(lambda: holder_sessions.live.get(session_id) is None)
    after = await two_nodes.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert after.status_code == 410


async def test_a_forged_peer_link_is_refused(two_nodes: TwoNodes) -> None:
    url = two_nodes.holder.base_url.replace("http", "ws", 1) + "/v1/peer/connect"

    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, additional_headers={"Authorization": "Bearer forged"}):
            pass

    assert refused.value.response.status_code == 403


async def test_an_agent_whose_node_stops_moves_to_another_and_its_session_survives(
    tmp_path: Path, shared_store_url: str
) -> None:
    shared = one_service_settings(tmp_path / "keys", REDIS_URL)
    async with (
        running_stack(tmp_path / "b", shared_store_url, rigs=0, **shared) as node_b,
        AsyncExitStack() as node_a_alive,
    ):
        node_a = await node_a_alive.enter_async_context(
            running_stack(tmp_path / "a", shared_store_url, rigs=0, **shared)
        )
        code = await node_a.services.rigs.create_pairing_code(node_a.account_id)
        paired = await pair(node_a.base_url, code.code, name="roaming", os="test-os", gpu="")
        await node_a.services.rigs.set_api_access(node_a.account_id, paired.rig_id, True)
        stop_agent = asyncio.Event()
        agent_settings = AgentSettings(
            gateway_url=node_a.base_url,
            fallback_gateway_urls=(node_b.base_url,),
            rig_token=paired.rig_token,
            **QUICK_AGENT | {"session_grace_s": 30.0},
        )
        agent = asyncio.create_task(run_agent(agent_settings, SimDesktop(), stop=stop_agent))
        try:
            await node_a.wait_online(paired.rig_id)
            await wait_for_holder(node_b, paired.rig_id, node_a.base_url)
            client = httpx2.AsyncClient(
                base_url=node_b.base_url,
                headers={"Authorization": f"Bearer {node_a.api_key}"},
                timeout=30.0,
                trust_env=False,
            )
            created = await client.post("/v1/sessions", json={"rig_id": paired.rig_id})
            assert created.status_code == 201, created.text
            session_id = created.json()["session_id"]

            await node_a_alive.aclose()  # node A stops: its links close with 1012
            await node_b.wait_online(paired.rig_id)
            screenshot = await client.get(f"/v1/sessions/{session_id}/screenshot")
            session = await client.get(f"/v1/sessions/{session_id}")
            await client.aclose()
        finally:
            stop_agent.set()
            await agent
    assert screenshot.status_code == 200, screenshot.text
    assert session.json()["status"] == "active"


async def test_a_rig_unpaired_on_the_other_node_loses_its_session_and_link(
    two_nodes: TwoNodes,
) -> None:
    session_id = (
        await two_nodes.client.post("/v1/sessions", json={"rig_id": two_nodes.rig_id})
    ).json()["session_id"]
    holder = two_nodes.holder.services

    await two_nodes.edge.services.rig_owner.unpair(two_nodes.holder.account_id, two_nodes.rig_id)

    ended = await two_nodes.edge.services.sessions.get(two_nodes.holder.account_id, session_id)
    assert ended.ended_reason == "unpaired"
    await Stack.wait_until(lambda: not holder.registry.is_online(two_nodes.rig_id))
    await Stack.wait_until(lambda: holder.sessions.live.get(session_id) is None)


async def test_the_other_node_lists_the_rig_online(two_nodes: TwoNodes) -> None:
    listed = await two_nodes.client.get("/v1/rigs")
    one = await two_nodes.client.get(f"/v1/rigs/{two_nodes.rig_id}")

    assert [rig["online"] for rig in listed.json()["rigs"]] == [True]
    assert one.json()["online"] is True
