"""Ending a session through a gateway node whose holder just died: the dead node's lease
on the rig outlives it (up to the lease's 15 s), so requests for the session are still
sent its way and cannot reach it. An end is the store's to make, once, as an unpair's
is: the node the client reached ends it there at once, instead of answering 503 until
the lease runs out, and one `session.ended` event results however many ask."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

from rigway.gateway.cluster.ownership import RedisOwnership
from tests.e2e.harness import (
    NodeFactory,
    client_of,
    session_ended_events,
    wait_for_holder,
)

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@contextlib.asynccontextmanager
async def _lease_left_behind(node_url: str, rig_id: str) -> AsyncIterator[None]:
    """The rig's lease naming the node at `node_url`, as a node killed while it held the
    rig leaves it (a node stopped in good order lets go of its leases)."""
    dead_node = RedisOwnership(REDIS_URL, node_url)
    await dead_node.start()
    try:
        await dead_node.claim(rig_id)
        yield
    finally:
        await dead_node.stop()


async def test_a_session_whose_holder_died_ends_through_another_node_once(
    node: NodeFactory,
) -> None:
    async with node() as edge, AsyncExitStack() as holder_alive:
        holder = await holder_alive.enter_async_context(node(rigs=1))
        rig_id, holder_url = holder.rig_ids[0], holder.base_url
        session_id = await holder.start_session()
        await wait_for_holder(edge, rig_id, holder_url)
        await holder_alive.aclose()  # the holder and its host are gone

        async with (
            _lease_left_behind(holder_url, rig_id),
            client_of(edge, holder.api_key) as client,
        ):
            await wait_for_holder(edge, rig_id, holder_url)
            path = f"/v1/sessions/{session_id}"
            # Two ends at once (a client retrying): one ends it, the other sees it ended.
            deleted, posted = await asyncio.gather(client.delete(path), client.post(f"{path}/end"))
            # The orphan sweeper, which may pass on any node, finds nothing left to end.
            swept = await edge.services.sessions.sweep_orphans(grace_s=0)
            read = await client.get(path)

    assert deleted.status_code == 200, deleted.text
    assert posted.status_code == 200, posted.text
    for answer in (deleted, posted, read):
        session = answer.json()
        assert (session["status"], session["ended_reason"]) == ("ended", "client"), session
    assert swept == []
    assert await session_ended_events(edge.services, session_id) == 1


async def test_a_session_whose_holder_is_alive_is_still_ended_by_the_holder(
    node: NodeFactory,
) -> None:
    async with node(rigs=1) as holder, node() as edge:
        rig_id = holder.rig_ids[0]
        session_id = await holder.start_session()
        await wait_for_holder(edge, rig_id, holder.base_url)

        async with client_of(edge, holder.api_key) as client:
            deleted = await client.delete(f"/v1/sessions/{session_id}")

        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["ended_reason"] == "client"
        # The holder ended it (its safety restore sent on its host link), not the edge.
        assert holder.services.sessions.live.get(session_id) is None
        assert holder.services.sessions.ended_by_reason["client"] == 1
        assert edge.services.sessions.ended_by_reason["client"] == 0
        assert await session_ended_events(edge.services, session_id) == 1
