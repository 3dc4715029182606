"""The console's recording replay and live view through a gateway node that does not
hold the rig (one store, one Redis, one secret key): a rig's host links to node A, the
owner's browser reaches node B. The replay reads the store from either node, and sees a
running session's latest steps as the holder does; the "watch" link opens the viewer on
B, whose signaling socket B relays to A."""

from __future__ import annotations

import asyncio
import html
import io
import json
import os
import re
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from websockets.asyncio.client import connect

from rigway.gateway.stream.service import signaling_url_for
from tests.e2e.harness import (
    QUICK_AGENT,
    Stack,
    client_of,
    one_service_settings,
    running_stack,
    wait_for_holder,
)
from tests.gateway.console.pages import ConsolePages, add_owner

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
OWNER = "owner@example.com"
_CONFIG = re.compile(r'data-config="([^"]*)"')


@dataclass
class TwoNodes:
    holder: Stack  # the rig's host links here
    edge: Stack  # the browser and the API client arrive here
    client: httpx2.AsyncClient  # to the edge, with the holder's account's key
    owner: ConsolePages  # the rig's owner, signed in to the console through the edge

    async def start_session(self, **body: Any) -> str:
        """A session on the holder's rig, started through the edge: its id."""
        rig_id = self.holder.rig_ids[0]
        created = await self.client.post("/v1/sessions", json={"rig_id": rig_id, **body})
        assert created.status_code == 201, created.text
        session_id = created.json()["session_id"]
        assert isinstance(session_id, str)
        return session_id

    async def screenshot(self, session_id: str) -> None:
        """A recorded step, taken through the edge (so by the holder)."""
        shot = await self.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert shot.status_code == 200, shot.text


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
        await wait_for_holder(edge, holder.rig_ids[0], holder.base_url)
        client = await nodes.enter_async_context(client_of(edge, holder.api_key))
        await add_owner(holder, OWNER)
        owner = await nodes.enter_async_context(ConsolePages(edge))
        await owner.signed_in(OWNER)
        yield TwoNodes(holder, edge, client, owner)


def _steps(answer: httpx2.Response) -> list[dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    steps = answer.json()["steps"]
    assert isinstance(steps, list)
    return steps


# ---- the recording replay ----


async def test_an_ended_sessions_replay_is_served_by_the_other_node(two_nodes: TwoNodes) -> None:
    owner = two_nodes.owner.client
    session_id = await two_nodes.start_session(record=True)
    await two_nodes.screenshot(session_id)
    ended = await two_nodes.client.delete(f"/v1/sessions/{session_id}")
    assert ended.status_code == 200, ended.text
    replay = f"/console/sessions/{session_id}/recording"

    page = await owner.get(replay)
    steps = _steps(await owner.get(f"{replay}/steps.json"))
    frame = await owner.get(f"{replay}/frames/1.jpg")
    archive = await owner.get(f"{replay}.zip")

    assert page.status_code == 200, page.text
    assert "Step 1 of 1" in page.text
    assert [(step["seq"], step["kind"]) for step in steps] == [(1, "screenshot")]
    assert frame.status_code == 200, frame.text
    assert frame.content.startswith(b"\xff\xd8")
    assert archive.status_code == 200, archive.text
    with zipfile.ZipFile(io.BytesIO(archive.content)) as zipped:
        assert zipped.read("frames/000001.jpg") == frame.content
    # Nothing of it crossed to the holder: the store is every node's.
    metrics = (await two_nodes.edge.client.get("/metrics")).text
    forwarded = [
        line for line in metrics.splitlines()
        if line.startswith("rigway_forward_seconds_count") and 'outcome="ok"' in line
    ]  # fmt: skip
    assert [float(line.split()[-1]) for line in forwarded] == [3]  # start, shot, end


@pytest.fixture
async def holders_writer_behind(
    two_nodes: TwoNodes, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[asyncio.Event]:
    """The holder's recorder writes nothing until a read on the holder asks it to flush
    (a store slower than the steps coming in): a step then sits in its queue, which only
    the holder can flush. The event is set once the holder was asked (and at the end, so
    that the nodes stop with nothing held)."""
    recorder = two_nodes.holder.services.recorder
    flushed = asyncio.Event()
    write: Callable[[Any], Awaitable[None]] = recorder._write
    flush = recorder.flush

    async def write_once_flushed(steps: Any) -> None:
        await flushed.wait()
        await write(steps)

    async def flush_now() -> None:
        flushed.set()
        await flush()

    monkeypatch.setattr(recorder, "_write", write_once_flushed)
    monkeypatch.setattr(recorder, "flush", flush_now)
    try:
        yield flushed
    finally:
        flushed.set()


async def test_a_running_sessions_replay_through_the_other_node_has_its_latest_step(
    two_nodes: TwoNodes, holders_writer_behind: asyncio.Event
) -> None:
    owner = two_nodes.owner.client
    session_id = await two_nodes.start_session(record=True)
    asked = holders_writer_behind
    await two_nodes.screenshot(session_id)
    replay = f"/console/sessions/{session_id}/recording"

    steps = _steps(await owner.get(f"{replay}/steps.json"))
    page = await owner.get(replay)

    # The holder was asked, as a read on the holder asks: it wrote its queue first.
    assert asked.is_set()
    assert [(step["seq"], step["kind"]) for step in steps] == [(1, "screenshot")]
    assert page.status_code == 200, page.text
    assert "Step 1 of 1" in page.text
    # The step's frame is in the store by then: the edge serves it as it is.
    frame = await owner.get(f"{replay}/frames/1.jpg")
    assert frame.status_code == 200, frame.text
    assert frame.content.startswith(b"\xff\xd8")


# ---- the live view ----


async def test_the_watch_link_opens_the_viewer_on_the_other_node_relayed_to_the_holder(
    two_nodes: TwoNodes,
) -> None:
    owner, edge, holder = two_nodes.owner.client, two_nodes.edge, two_nodes.holder
    session_id = await two_nodes.start_session()

    watch = await owner.get(f"/console/stream/{session_id}")

    assert watch.status_code == 303, watch.text
    location = watch.headers["location"]
    assert location.startswith("/v1/stream/view?token="), location
    assert watch.headers["cache-control"] == "no-store"
    # The browser follows on the node it reached: the edge serves the page of a session
    # the holder serves, and points its script at the edge's signaling socket.
    page = await owner.get(location)
    assert page.status_code == 200, page.text
    found = _CONFIG.search(page.text)
    assert found is not None, page.text
    config = json.loads(html.unescape(found.group(1)))
    assert config["session_id"] == session_id
    assert config["signaling_url"] == signaling_url_for(edge.base_url)
    token = location.partition("token=")[2]
    async with connect(f"{config['signaling_url']}?token={token}", open_timeout=10) as socket:
        await socket.send(json.dumps({"type": "ping"}))
        async with asyncio.timeout(10):
            assert json.loads(await socket.recv()) == {"type": "pong"}
        # The viewer is the holder's, relayed: the edge serves no viewer itself.
        assert holder.services.stream.viewer_count(session_id) == 1
        assert edge.services.stream.viewer_count(session_id) == 0


async def test_the_watch_link_of_an_ended_or_unknown_session_is_404_on_the_other_node(
    two_nodes: TwoNodes,
) -> None:
    owner = two_nodes.owner.client
    session_id = await two_nodes.start_session()
    ended = await two_nodes.client.delete(f"/v1/sessions/{session_id}")
    assert ended.status_code == 200, ended.text

    of_ended = await owner.get(f"/console/stream/{session_id}")
    of_unknown = await owner.get("/console/stream/ses_00000000000000000000000000")

    assert of_ended.status_code == 404, of_ended.text
    assert "no such live session" in of_ended.text
    assert of_unknown.status_code == 404, of_unknown.text
