"""Several nodes, each session ended exactly once: a node that lost a session to
another (its host linked there) ends nothing with its timers, the orphan sweeper ends a
session whose host no node holds, starting a node ends nobody's session, and two nodes
sweeping at once end an orphan once."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from tests.e2e.harness import (
    NodeFactory,
    session_ended_events,
    wait_for_holder,
)


async def test_a_node_that_lost_the_session_ends_nothing_with_its_timers(
    node: NodeFactory,
) -> None:
    async with node(rigs=1) as node_a, node() as node_b:
        session_id = await node_a.start_session()
        rig_id = node_a.rig_ids[0]
        stale = node_a.services.sessions.live.get(session_id)
        assert stale is not None

        # The host links to B (as after a drop): B takes the session over.
        await node_b.services.sessions.adopt_reported(rig_id, [session_id])
        row = await node_a.services.sessions.end(
            session_id, "idle_timeout", wait_for_host=False, owner_epoch=stale.owner_epoch
        )

        assert row.status == "active"
        assert node_a.services.sessions.live.get(session_id) is None
        assert node_b.services.sessions.live.get(session_id) is not None
        assert await session_ended_events(node_a.services, session_id) == 0


async def test_the_sweeper_ends_a_session_whose_host_no_node_holds(node: NodeFactory) -> None:
    async with node() as node_b, AsyncExitStack() as node_a_alive:
        node_a = await node_a_alive.enter_async_context(node(rigs=1))
        session_id = await node_a.start_session()
        await node_a_alive.aclose()  # node A and its agent are gone for good

        first = await node_b.services.sessions.sweep_orphans(grace_s=0)
        second = await node_b.services.sessions.sweep_orphans(grace_s=0)

        assert first == []  # marked absent, not yet past the grace
        assert second == [session_id]
        session = await node_b.services.sessions.get(node_a.account_id, session_id)
        assert session.ended_reason == "host_gone"
        assert await session_ended_events(node_b.services, session_id) == 1


async def test_starting_a_node_ends_nobodys_session(node: NodeFactory) -> None:
    async with node(rigs=1) as node_a:
        session_id = await node_a.start_session()
        async with node() as node_c:
            await wait_for_holder(node_c, node_a.rig_ids[0], node_a.base_url)
            for _ in range(3):
                assert await node_c.services.sessions.sweep_orphans(grace_s=0) == []
            assert node_c.services.sessions.live.all() == []
        session = await node_a.client.get(f"/v1/sessions/{session_id}")
    assert session.json()["status"] == "active"


async def test_two_nodes_sweeping_at_once_end_an_orphan_once(node: NodeFactory) -> None:
    async with node() as node_b, node() as node_c, AsyncExitStack() as node_a_alive:
        node_a = await node_a_alive.enter_async_context(node(rigs=1))
        session_id = await node_a.start_session()
        await node_a_alive.aclose()

        for _ in range(2):
            await asyncio.gather(
                node_b.services.sessions.sweep_orphans(grace_s=0),
                node_c.services.sessions.sweep_orphans(grace_s=0),
            )
        # A pass that skipped the locked row marks it on its next turn.
        await node_b.services.sessions.sweep_orphans(grace_s=0)
        await node_c.services.sessions.sweep_orphans(grace_s=0)

        assert await session_ended_events(node_b.services, session_id) == 1
        session = await node_b.services.sessions.get(node_a.account_id, session_id)
        assert session.status == "ended"
