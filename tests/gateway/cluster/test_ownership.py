"""Which node holds each rig, in one lookup for many rigs: the scale-out storage (CI
and this machine run Redis on 127.0.0.1:6379). Each test's rigs are fresh ids: nothing
to clean, nothing shared with another run; the nodes leave their leases when they stop."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

from rigway.gateway.cluster.ownership import RedisOwnership, SingleNode

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _rig() -> str:
    return f"rig_{secrets.token_hex(12)}"


@pytest.fixture
async def three_nodes() -> AsyncIterator[list[RedisOwnership]]:
    async with AsyncExitStack() as running:
        nodes = []
        for name in ("here", "a", "b"):
            node = RedisOwnership(REDIS_URL, f"http://{name}.test:8080")
            await node.start()
            running.push_async_callback(node.stop)
            nodes.append(node)
        yield nodes


async def test_holder_urls_names_the_other_node_of_each_rig(
    three_nodes: list[RedisOwnership],
) -> None:
    here, a, b = three_nodes
    on_a, also_on_a, on_b, on_here, nowhere = (_rig() for _ in range(5))
    for node, rig_id in ((a, on_a), (a, also_on_a), (b, on_b), (here, on_here)):
        await node.claim(rig_id)

    found = await here.holder_urls([on_a, on_here, nowhere, on_b, also_on_a])

    assert found == {
        on_a: "http://a.test:8080",
        on_b: "http://b.test:8080",
        also_on_a: "http://a.test:8080",
    }
    for rig_id in found:
        assert await here.holder_url(rig_id) == found[rig_id]


async def test_a_rig_held_by_this_node_or_nobody_has_no_holder_elsewhere(
    three_nodes: list[RedisOwnership],
) -> None:
    here = three_nodes[0]
    on_here = _rig()
    await here.claim(on_here)

    assert await here.holder_urls([on_here, _rig()]) == {}
    assert await here.holder_urls([]) == {}


async def test_a_stopped_nodes_rigs_have_no_holder(three_nodes: list[RedisOwnership]) -> None:
    here, a, _b = three_nodes
    on_a = _rig()
    await a.claim(on_a)

    await a.stop()

    assert await here.holder_urls([on_a]) == {}


async def test_one_node_alone_knows_no_other_holder() -> None:
    assert await SingleNode().holder_urls([_rig()]) == {}
