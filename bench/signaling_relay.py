"""What relaying a signaling socket to the node holding the rig costs: two gateway nodes
of one service (a PostgreSQL database of its own, Redis, one secret key), a sim rig
linked to node A, and viewer sockets of its session opened on A (direct) and on B
(relayed to A). Measured: a ping's round trip on an open socket, and opening a socket
with a fresh token until its first pong (verify, relay, the token used in Redis).

Gateways and the client share one Python process (pessimistic: each hop's work is on
the same CPU).

Run: .venv/bin/python -m bench.signaling_relay [--pings 500] [--opens 50]
     (RIGWAY_TEST_REDIS_URL, default redis://127.0.0.1:6379/0; PostgreSQL as the tests')
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

from tests.e2e.harness import (
    QUICK_AGENT,
    Stack,
    one_service_settings,
    running_stack,
    wait_for_holder,
)
from tests.support.databases import scratch_postgres_database
from websockets.asyncio.client import ClientConnection, connect

from bench.stats import row
from rigway.gateway.stream.service import signaling_url_for

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
PING = json.dumps({"type": "ping"})


async def _round_trip_ms(ws: ClientConnection) -> float:
    started = time.perf_counter()
    await ws.send(PING)
    await ws.recv()
    return (time.perf_counter() - started) * 1000


async def _pings(url: str, count: int) -> list[float]:
    async with connect(url, compression=None) as ws:
        for _ in range(20):  # warm-up
            await _round_trip_ms(ws)
        return [await _round_trip_ms(ws) for _ in range(count)]


async def _opens(node: Stack, holder: Stack, session_id: str, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        token = holder.services.stream.tokens.issue(session_id, holder.rig_ids[0]).token
        started = time.perf_counter()
        async with connect(f"{signaling_url_for(node.base_url)}?token={token}") as ws:
            await _round_trip_ms(ws)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


async def main(pings: int, opens: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        shared = one_service_settings(directory / "keys", REDIS_URL)
        async with scratch_postgres_database() as store, AsyncExitStack() as nodes:
            holder = await nodes.enter_async_context(
                running_stack(directory / "a", store, agent_settings=QUICK_AGENT, **shared)
            )
            edge = await nodes.enter_async_context(
                running_stack(directory / "b", store, rigs=0, **shared)
            )
            await wait_for_holder(edge, holder.rig_ids[0], holder.base_url)
            session_id = await holder.start_session()

            def fresh_url(node: Stack) -> str:
                issued = holder.services.stream.tokens.issue(session_id, holder.rig_ids[0])
                return f"{signaling_url_for(node.base_url)}?token={issued.token}"

            direct = await _pings(fresh_url(holder), pings)
            relayed = await _pings(fresh_url(edge), pings)
            open_direct = await _opens(holder, holder, session_id, opens)
            open_relayed = await _opens(edge, holder, session_id, opens)
    print(row("ping round trip, socket on the holder", direct))
    print(row("ping round trip, socket relayed by the other", relayed))
    print(row("open + first pong, on the holder", open_direct))
    print(row("open + first pong, relayed by the other", open_relayed))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=500)
    parser.add_argument("--opens", type=int, default=50)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.pings, arguments.opens))
