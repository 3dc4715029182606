"""Two gateway nodes as one service (one store, one Redis, one secret key): a rig's
host links to node A, and every session operation works through node B, which
forwards it to A over the peer link and answers with A's answer: the API's, the
console's pages and forms (the signed-in user forwarded with them), reads of a live
session or an online rig (what only A knows: desktop state, displays, control), and
Wake-on-LAN through a neighbour rig linked to A."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import update
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.pairing import pair
from rigway.agent.runner import AgentSettings, run_agent
from rigway.gateway.cluster.ownership import RedisOwnership
from rigway.gateway.db.models import Rig
from tests.e2e.harness import (
    QUICK_AGENT,
    Stack,
    client_of,
    ok_json,
    one_service_settings,
    running_stack,
    wait_for_holder,
)
from tests.gateway.console.pages import ConsolePages, add_owner
from tests.support.plain_http import plain_http_server

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


# The desktop's state sampled often: the holder hears a change quickly.
SAMPLED_AGENT = {**QUICK_AGENT, "desktop_state_interval_s": 0.02}
OWNER = "owner@example.com"


@dataclass
class TwoNodes:
    holder: Stack  # the rig's host links here
    edge: Stack  # the requests arrive here
    rig_id: str
    client: httpx2.AsyncClient  # to the edge, with the holder's account's key
    wake_socket: socket.socket  # where the holder's wake packets land (not the edge's)

    async def start_session(self) -> str:
        """A session on the rig, started through the edge: its id."""
        response = await self.client.post("/v1/sessions", json={"rig_id": self.rig_id})
        session_id = response.json()["session_id"]
        assert isinstance(session_id, str)
        return session_id


def _udp_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    return sock


@pytest.fixture
async def two_nodes(tmp_path: Path, shared_store_url: str) -> AsyncIterator[TwoNodes]:
    shared = one_service_settings(tmp_path / "keys", REDIS_URL)
    async with AsyncExitStack() as nodes:
        holders_wake, edges_wake = _udp_socket(), _udp_socket()
        nodes.callback(holders_wake.close)
        nodes.callback(edges_wake.close)
        holder = await nodes.enter_async_context(
            running_stack(
                tmp_path / "a",
                shared_store_url,
                agent_settings=SAMPLED_AGENT,
                wake_broadcast=f"127.0.0.1:{holders_wake.getsockname()[1]}",
                **shared,
            )
        )
        edge = await nodes.enter_async_context(
            running_stack(
                tmp_path / "b",
                shared_store_url,
                rigs=0,
                wake_broadcast=f"127.0.0.1:{edges_wake.getsockname()[1]}",
                **shared,
            )
        )
        rig_id = holder.rig_ids[0]
        await wait_for_holder(edge, rig_id, holder.base_url)
        client = await nodes.enter_async_context(client_of(edge, holder.api_key))
        yield TwoNodes(holder, edge, rig_id, client, holders_wake)


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
    session_id = await two_nodes.start_session()

    off_screen = await two_nodes.client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_move", "x": 99999, "y": 1}]},
    )

    assert off_screen.status_code == 400
    assert off_screen.json()["error"].startswith("invalid_request")


async def test_a_session_ended_on_the_other_node_stops_where_its_host_is(
    two_nodes: TwoNodes,
) -> None:
    session_id = await two_nodes.start_session()

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
    session_id = await two_nodes.start_session()
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


# ---- reads of what only the holder knows ----


def _without_the_clock(body: dict[str, Any]) -> dict[str, Any]:
    """A Session or Rig without the fields that move with the clock between two reads."""
    return {
        name: value
        for name, value in body.items()
        if name not in ("duration_seconds", "billed_minutes")
    }


async def _move_the_pointer(client: httpx2.AsyncClient, session_id: str) -> None:
    """One input batch of the session (its action count goes up by one)."""
    moved = await client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_move", "x": 10, "y": 10}]},
    )
    assert moved.status_code == 200, moved.text


async def _screensaver_on(two_nodes: TwoNodes) -> None:
    """The holder's rig shows its screensaver, and the holder has heard of it."""
    two_nodes.holder.sim().set_desktop_state("screensaver")
    registry = two_nodes.holder.services.registry
    await Stack.wait_until(lambda: registry.desktop_state(two_nodes.rig_id) == "screensaver")


async def test_a_live_session_reads_through_the_other_node_as_the_holder_says(
    two_nodes: TwoNodes,
) -> None:
    client, holder = two_nodes.client, two_nodes.holder
    session_id = await two_nodes.start_session()
    await _screensaver_on(two_nodes)

    through_edge = ok_json(await client.get(f"/v1/sessions/{session_id}"))
    from_holder = ok_json(await holder.client.get(f"/v1/sessions/{session_id}"))

    assert through_edge["desktop_state"] == "screensaver"
    assert through_edge["displays"] != []
    assert _without_the_clock(through_edge) == _without_the_clock(from_holder)


async def test_live_sessions_list_through_the_other_node_as_the_holder_says(
    two_nodes: TwoNodes,
) -> None:
    client, holder = two_nodes.client, two_nodes.holder
    session_id = await two_nodes.start_session()
    await _move_the_pointer(client, session_id)
    await _screensaver_on(two_nodes)

    through_edge = ok_json(await client.get("/v1/sessions"))["sessions"]
    from_holder = ok_json(await holder.client.get("/v1/sessions"))["sessions"]

    assert [(s["desktop_state"], s["action_count"]) for s in through_edge] == [("screensaver", 1)]
    assert [_without_the_clock(s) for s in through_edge] == [
        _without_the_clock(s) for s in from_holder
    ]


async def test_an_online_rig_reads_through_the_other_node_as_the_holder_says(
    two_nodes: TwoNodes,
) -> None:
    client, holder = two_nodes.client, two_nodes.holder
    session_id = await two_nodes.start_session()
    await _screensaver_on(two_nodes)

    through_edge = ok_json(await client.get(f"/v1/rigs/{two_nodes.rig_id}"))
    from_holder = ok_json(await holder.client.get(f"/v1/rigs/{two_nodes.rig_id}"))
    listed = ok_json(await client.get("/v1/rigs"))["rigs"]
    holders_list = ok_json(await holder.client.get("/v1/rigs"))["rigs"]

    assert through_edge["active_session_id"] == session_id
    assert through_edge["desktop_state"] == "screensaver"
    assert through_edge == from_holder
    assert [rig["desktop_state"] for rig in listed] == ["screensaver"]
    assert listed == holders_list


async def test_a_session_ended_through_the_other_node_keeps_the_holders_activity(
    two_nodes: TwoNodes,
) -> None:
    client = two_nodes.client
    session_id = await two_nodes.start_session()
    await _move_the_pointer(client, session_id)

    ended = ok_json(await client.delete(f"/v1/sessions/{session_id}"))

    # Ended by the holder (its live copy gone by the answer), with the action it
    # counted and had yet to write to the store.
    assert ended["ended_reason"] == "client"
    assert ended["action_count"] == 1
    assert two_nodes.holder.services.sessions.live.get(session_id) is None


async def test_a_rig_updated_through_the_other_node_answers_as_the_holder(
    two_nodes: TwoNodes,
) -> None:
    identity = two_nodes.edge.services.identity
    assert identity is not None
    console_token = identity.issue("usr_owner", two_nodes.holder.account_id)

    renamed = await two_nodes.client.patch(
        f"/v1/rigs/{two_nodes.rig_id}",
        json={"name": "renamed", "owner_idle_s": 30},
        headers={"Authorization": f"Bearer {console_token}"},
    )
    from_holder = ok_json(await two_nodes.holder.client.get(f"/v1/rigs/{two_nodes.rig_id}"))

    assert ok_json(renamed) == from_holder
    assert from_holder["online"] is True
    assert (from_holder["name"], from_holder["owner_idle_s"]) == ("renamed", 30)


def _console_token(stack: Stack, account_id: str) -> dict[str, str]:
    identity = stack.services.identity
    assert identity is not None
    return {"Authorization": f"Bearer {identity.issue('usr_someone', account_id)}"}


@contextlib.asynccontextmanager
async def _rig_held_at(two_nodes: TwoNodes, node_url: str) -> AsyncIterator[str]:
    """A new rig of the holder's account whose lease names a live node at `node_url`."""
    holder = two_nodes.holder
    code = await holder.services.rigs.create_pairing_code(holder.account_id)
    paired = await pair(holder.base_url, code.code, name="far away", os="test-os", gpu="")
    other_node = RedisOwnership(REDIS_URL, node_url)
    await other_node.start()
    try:
        await other_node.claim(paired.rig_id)
        await wait_for_holder(two_nodes.edge, paired.rig_id, node_url)
        yield paired.rig_id
    finally:
        await other_node.stop()


@pytest.fixture
async def rig_held_by_an_unreachable_node(two_nodes: TwoNodes) -> AsyncIterator[str]:
    """A rig of the holder's account whose lease names a live node that no one can
    reach (its address refuses every connection)."""
    with socket.socket() as refusing:  # bound, never listening
        refusing.bind(("127.0.0.1", 0))
        async with _rig_held_at(two_nodes, f"http://127.0.0.1:{refusing.getsockname()[1]}") as rig:
            yield rig


async def test_another_accounts_rig_held_by_the_other_node_is_404_and_never_forwarded(
    two_nodes: TwoNodes,
) -> None:
    stranger = _console_token(two_nodes.edge, two_nodes.edge.account_id)

    renamed = await two_nodes.client.patch(
        f"/v1/rigs/{two_nodes.rig_id}", json={"name": "taken"}, headers=stranger
    )

    assert renamed.status_code == 404, renamed.text
    # Nothing crossed to the holder: the edge forwarded no request.
    metrics = (await two_nodes.edge.client.get("/metrics")).text
    assert "rigway_forward_seconds_count" not in metrics
    rig = ok_json(await two_nodes.holder.client.get(f"/v1/rigs/{two_nodes.rig_id}"))
    assert rig["name"] != "taken"


async def test_another_accounts_rig_is_404_while_the_node_holding_it_cannot_be_reached(
    two_nodes: TwoNodes, rig_held_by_an_unreachable_node: str
) -> None:
    rig_id = rig_held_by_an_unreachable_node
    path = f"/v1/rigs/{rig_id}"
    stranger = _console_token(two_nodes.edge, two_nodes.edge.account_id)
    owner = _console_token(two_nodes.edge, two_nodes.holder.account_id)

    strangers_rename = await two_nodes.client.patch(path, json={"name": "x"}, headers=stranger)
    owners_rename = await two_nodes.client.patch(path, json={"name": "x"}, headers=owner)

    assert strangers_rename.status_code == 404, strangers_rename.text
    # The owner's rig exists and is online elsewhere: the holder is the one to update it.
    assert owners_rename.status_code == 503, owners_rename.text


async def test_console_forms_for_another_accounts_rig_held_elsewhere_are_404(
    two_nodes: TwoNodes, rig_held_by_an_unreachable_node: str
) -> None:
    rig_id = rig_held_by_an_unreachable_node
    await add_owner(two_nodes.edge, "stranger@example.com")
    async with ConsolePages(two_nodes.edge) as pages:
        stranger = await pages.signed_in("stranger@example.com")
        renamed = await stranger.post(f"/console/rigs/{rig_id}/rename", name="x")
        switched = await stranger.post(f"/console/rigs/{rig_id}/api-access", enabled="false")
        controlled = await stranger.post(f"/console/rigs/{rig_id}/settings", owner_idle_s="30")

    assert [renamed.status_code, switched.status_code, controlled.status_code] == [404] * 3


async def test_a_proxy_answering_for_the_holding_node_is_503_or_this_nodes_view(
    two_nodes: TwoNodes,
) -> None:
    async with (
        plain_http_server(502, "Bad Gateway") as proxy_url,
        _rig_held_at(two_nodes, proxy_url) as rig_id,
    ):
        listed = await two_nodes.client.get("/v1/rigs")
        one = await two_nodes.client.get(f"/v1/rigs/{rig_id}")

    assert listed.status_code == 200, listed.text
    assert {rig["id"]: rig["online"] for rig in listed.json()["rigs"]} == {
        two_nodes.rig_id: True,
        rig_id: True,
    }
    assert one.status_code == 503, one.text


# ---- the console through the other node ----


_MOVING_VALUES = re.compile(r'(data-live="[^"]*:(?:duration|last_seen|billed_minutes)">)[^<]*')


def _page_without_the_clock(page: httpx2.Response) -> str:
    assert page.status_code == 200, page.text
    return _MOVING_VALUES.sub(r"\1", page.text)


@pytest.fixture
async def owner(two_nodes: TwoNodes) -> AsyncIterator[ConsolePages]:
    """The rig's owner signed in to the console through the edge. The cookie is for the
    host, not the port: the same browser reads the holder's pages with it too."""
    await add_owner(two_nodes.holder, OWNER)
    async with ConsolePages(two_nodes.edge) as pages:
        yield await pages.signed_in(OWNER)


async def test_console_session_and_rig_pages_through_the_other_node_are_the_holders(
    two_nodes: TwoNodes, owner: ConsolePages
) -> None:
    session_id = await two_nodes.holder.start_session()
    holder_url, rig_id = two_nodes.holder.base_url, two_nodes.rig_id

    session_page = await owner.client.get(f"/console/sessions/{session_id}")
    holders_session_page = await owner.client.get(f"{holder_url}/console/sessions/{session_id}")
    rig_page = await owner.client.get(f"/console/rigs/{rig_id}")
    holders_rig_page = await owner.client.get(f"{holder_url}/console/rigs/{rig_id}")
    screenshot = await owner.client.get(f"/console/rigs/{rig_id}/screenshot")

    assert _page_without_the_clock(session_page) == _page_without_the_clock(holders_session_page)
    assert _page_without_the_clock(rig_page) == _page_without_the_clock(holders_rig_page)
    # The rig page names the session running now (only the holder knows it is live).
    assert f"/console/sessions/{session_id}" in rig_page.text
    assert screenshot.status_code == 200, screenshot.text
    assert screenshot.headers["content-type"] == "image/jpeg"
    assert screenshot.content.startswith(b"\xff\xd8")


async def test_console_take_control_and_hand_back_through_the_other_node(
    two_nodes: TwoNodes, owner: ConsolePages
) -> None:
    session_id = await two_nodes.holder.start_session()

    taken = await owner.post(f"/console/sessions/{session_id}/takeover")
    handed_back = await owner.post(f"/console/sessions/{session_id}/hand-back")

    # The holder issued the link, for the address the browser used.
    assert taken.status_code == 303, taken.text
    assert taken.headers["location"].startswith(f"{two_nodes.edge.base_url}/v1/takeover/view?")
    assert handed_back.status_code == 303, handed_back.text
    assert handed_back.headers["location"] == f"/console/sessions/{session_id}"


async def test_console_kill_through_the_other_node_ends_the_session_on_the_holder(
    two_nodes: TwoNodes, owner: ConsolePages
) -> None:
    session_id = await two_nodes.holder.start_session()

    killed = await owner.post(f"/console/sessions/{session_id}/kill")

    assert killed.status_code == 303, killed.text
    assert two_nodes.holder.services.sessions.live.get(session_id) is None
    ended = ok_json(await two_nodes.client.get(f"/v1/sessions/{session_id}"))
    assert ended["ended_reason"] == "owner_kill"


async def test_console_live_values_through_the_other_node_are_the_holders(
    two_nodes: TwoNodes, owner: ConsolePages
) -> None:
    session_id = await two_nodes.holder.start_session()
    # One action the holder counted and has not written to the store yet.
    moved = await two_nodes.client.post(
        f"/v1/sessions/{session_id}/input",
        json={"events": [{"type": "mouse_move", "x": 10, "y": 10}]},
    )
    assert moved.status_code == 200, moved.text
    watched = {"session": session_id}

    through_edge = (await owner.client.get("/console/live.json", params=watched)).json()
    from_holder = (
        await owner.client.get(f"{two_nodes.holder.base_url}/console/live.json", params=watched)
    ).json()

    actions = f"session:{session_id}:actions"
    assert through_edge[actions] == from_holder[actions] == "1"
    assert _values_without_the_clock(through_edge) == _values_without_the_clock(from_holder)


def _values_without_the_clock(values: dict[str, str]) -> dict[str, str]:
    return {
        key: value
        for key, value in values.items()
        if not key.endswith((":duration", ":last_seen", ":billed_minutes"))
    }


# ---- Wake-on-LAN through a neighbour linked to the other node ----


async def _sleeper_beside_the_holders_rig(two_nodes: TwoNodes, mac: str) -> str:
    """A rig of the account, offline now, on the LAN of the rig linked to the holder."""
    holder = two_nodes.holder
    sleeper = await holder.add_agent()
    await holder.stop_agent(sleeper)
    async with holder.services.db.begin() as db:
        await db.execute(update(Rig).where(Rig.id == sleeper).values(mac=mac, lan="192.0.2.0/24"))
        await db.execute(update(Rig).where(Rig.id == two_nodes.rig_id).values(lan="192.0.2.0/24"))
    return sleeper


async def test_wake_through_the_other_node_goes_through_the_neighbour_it_holds(
    two_nodes: TwoNodes,
) -> None:
    sleeper = await _sleeper_beside_the_holders_rig(two_nodes, "52:54:00:aa:bb:cc")

    woken = await two_nodes.client.post(f"/v1/rigs/{sleeper}/wake")

    assert woken.status_code == 202, woken.text
    assert woken.json() == {
        "ok": True,
        "rig_id": sleeper,
        "via": two_nodes.rig_id,
        "already_online": False,
    }
    packet = await asyncio.to_thread(two_nodes.wake_socket.recv, 1024)
    assert packet[6:12] == bytes.fromhex("525400aabbcc")


async def test_console_wake_through_the_other_node(
    two_nodes: TwoNodes, owner: ConsolePages
) -> None:
    sleeper = await _sleeper_beside_the_holders_rig(two_nodes, "52:54:00:aa:bb:dd")

    woken = await owner.post(f"/console/rigs/{sleeper}/wake")

    assert woken.status_code == 303, woken.text
    assert woken.headers["location"] == "/console/rigs?notice=wake_sent"
    # Sent by the holder's side (the edge's own packets go elsewhere).
    packet = await asyncio.to_thread(two_nodes.wake_socket.recv, 1024)
    assert packet[6:12] == bytes.fromhex("525400aabbdd")


async def test_wake_of_a_rig_online_on_the_other_node_says_already_online(
    two_nodes: TwoNodes,
) -> None:
    through_edge = await two_nodes.client.post(f"/v1/rigs/{two_nodes.rig_id}/wake")
    from_holder = await two_nodes.holder.client.post(f"/v1/rigs/{two_nodes.rig_id}/wake")

    assert through_edge.status_code == from_holder.status_code == 200
    assert through_edge.json() == from_holder.json()
    assert through_edge.json()["already_online"] is True


async def test_the_route_to_the_holder_serves_its_account_only_and_goes_when_it_ends(
    two_nodes: TwoNodes,
) -> None:
    session_id = await two_nodes.holder.start_session()
    routes = two_nodes.edge.services.sessions.holder_routes
    screenshot = f"/v1/sessions/{session_id}/screenshot"
    assert (await two_nodes.client.get(screenshot)).status_code == 200
    assert routes.get(session_id, two_nodes.holder.account_id) is not None

    # Another account's caller takes the full path, and its 404, route or not.
    async with httpx2.AsyncClient(
        base_url=two_nodes.edge.base_url,
        headers={"Authorization": f"Bearer {two_nodes.edge.api_key}"},
        trust_env=False,
    ) as stranger:
        assert (await stranger.get(screenshot)).status_code == 404

    # Ended on the holder itself: the edge's remembered route meets the holder's 410,
    # and is forgotten.
    assert (await two_nodes.holder.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
    assert (await two_nodes.client.get(screenshot)).status_code == 410
    assert routes.get(session_id, two_nodes.holder.account_id) is None
    assert (await two_nodes.client.get(screenshot)).status_code == 410
