"""Faults of a service of several gateway nodes (one PostgreSQL store, one Redis):

- an agent process killed (SIGKILL) in the middle of an input batch that holds a button
  and a key: the batch gets an answer (never a 500), the session ends `host_gone` after
  the grace with exactly one `session.ended`, and the agent's held-input journal, which
  still names what the dead agent held, is emptied by the next agent to start (the
  gateway keeps no held-input record of API batches: the host's journal is the record);
- Redis restarted (a redis-server of the test's own, without persistence, so every lease
  is lost): the nodes claim their rigs again, the rig is reachable through the other node
  once more, and no session ends;
- a node that holds no rig restarted: nobody's session ends and the new node forwards to
  the holder as the old one did.

The nodes run in this process (`running_stack`); the agent and redis-server are
processes of their own, so that they can be killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rigway.agent.pairing import pair
from tests.e2e.harness import (
    Stack,
    client_of,
    nodes_of_one_service,
    session_ended_events,
    wait_for_holder,
)
from tests.support.local_processes import rigway_command
from tests.support.own_redis import OwnRedis, own_redis_server
from tests.support.session_ends import wait_session_ended

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
START_TIMEOUT_S = 30.0
# The grace a session waits for its lost host here (the default is 10 s).
HOST_GONE_GRACE_S = 1.0
# The batch's pause on the host, holding what it pressed: the kill lands in it.
HOLD_MS = 5000


def _clean_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}


# -- an agent process, to kill ---------------------------------------------------------------


@dataclass
class AgentProcess:
    rig_id: str
    token_file: Path
    state_dir: Path

    @property
    def journal(self) -> Path:
        """Where `rigway agent run` journals the keys and buttons it holds down."""
        return self.token_file.with_suffix(".held-input.json")

    async def start(self, gateway_url: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *rigway_command(), "agent", "run", "--backend", "sim", "--gateway", gateway_url,
            "--token-file", str(self.token_file), "--no-update",
            "--state-dir", str(self.state_dir),
            env=_clean_environment(),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip


async def _paired_agent(node: Stack, directory: Path) -> AgentProcess:
    code = await node.services.rigs.create_pairing_code(node.account_id)
    paired = await pair(node.base_url, code.code, name="killed", os="test-os", gpu="")
    await node.services.rigs.set_api_access(node.account_id, paired.rig_id, True)
    directory.mkdir()
    token_file = directory / "rig-token"
    token_file.write_text(paired.rig_token)
    token_file.chmod(0o600)
    return AgentProcess(paired.rig_id, token_file, directory)


async def _until_journal_holds(agent: AgentProcess, process: asyncio.subprocess.Process) -> Any:
    """What the agent's journal lists once it holds a key and a button (another process
    writes the file: nothing to await but the file itself)."""
    async with asyncio.timeout(START_TIMEOUT_S):
        while True:
            assert process.returncode is None, "the agent exited"
            with contextlib.suppress(FileNotFoundError, ValueError):
                listed = json.loads(agent.journal.read_text())
                if listed.get("keys") and listed.get("buttons"):
                    return listed
            await asyncio.sleep(0.01)


async def test_an_agent_killed_holding_input_mid_batch_ends_its_session_once(
    tmp_path: Path, shared_store_url: str
) -> None:
    node = nodes_of_one_service(tmp_path, shared_store_url, REDIS_URL)
    async with (
        node(host_gone_grace_s=HOST_GONE_GRACE_S) as holder,
        node() as edge,
        AsyncExitStack() as cleanup,
    ):
        agent = await _paired_agent(holder, tmp_path / "agent")
        process = await agent.start(holder.base_url)
        cleanup.push_async_callback(_kill, process)
        await holder.wait_online(agent.rig_id, timeout_s=START_TIMEOUT_S)
        await wait_for_holder(edge, agent.rig_id, holder.base_url)
        session_id = await holder.start_session_on(agent.rig_id)
        client = await cleanup.enter_async_context(client_of(edge, holder.api_key))

        # Through the other node (forwarded to the holder): a drag begun with shift down,
        # then a pause that holds both.
        batch = asyncio.create_task(
            client.post(
                f"/v1/sessions/{session_id}/input",
                json={
                    "events": [
                        {"type": "key_down", "key": "shift"},
                        {"type": "mouse_down", "button": "left", "x": 40, "y": 40},
                        {"type": "mouse_move", "x": 80, "y": 80, "delay_ms": HOLD_MS},
                    ]
                },
            )
        )
        held_when_killed = await _until_journal_holds(agent, process)
        process.send_signal(signal.SIGKILL)
        await process.wait()
        answered = await batch
        await wait_session_ended(holder.services, session_id, timeout_s=HOST_GONE_GRACE_S + 10)
        # Another node's sweeper passes after the end find nothing left to end.
        for _ in range(2):
            assert await edge.services.sessions.sweep_orphans(grace_s=0) == []
        session = await client.get(f"/v1/sessions/{session_id}")
        ended_events = await session_ended_events(holder.services, session_id)
        journal_after_kill = agent.journal.exists()

        # The next agent on this rig lets go of what the killed one left down before it
        # links (release_left_over), and its journal is gone once it is online.
        restarted = await agent.start(holder.base_url)
        cleanup.push_async_callback(_kill, restarted)
        await holder.wait_online(agent.rig_id, timeout_s=START_TIMEOUT_S)
        journal_after_restart = agent.journal.exists()

    assert held_when_killed["keys"] == ["shift"]
    assert held_when_killed["buttons"] == ["left"]
    assert answered.status_code == 502, answered.text  # the host link closed
    assert session.json()["status"] == "ended"
    assert session.json()["ended_reason"] == "host_gone"
    assert ended_events == 1
    assert journal_after_kill  # the dead agent left them listed as held
    assert not journal_after_restart


async def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[OwnRedis]:
    async with own_redis_server(tmp_path) as redis:
        yield redis


async def test_redis_restarted_the_nodes_claim_their_rigs_again_and_no_session_ends(
    tmp_path: Path, shared_store_url: str, own_redis: OwnRedis
) -> None:
    node = nodes_of_one_service(tmp_path, shared_store_url, own_redis.url)
    async with node(rigs=1) as holder, node() as edge:
        rig_id = holder.rig_ids[0]
        await wait_for_holder(edge, rig_id, holder.base_url)
        session_id = await holder.start_session()
        async with client_of(edge, holder.api_key) as client:
            screenshot = f"/v1/sessions/{session_id}/screenshot"
            assert (await client.get(screenshot)).status_code == 200

            await own_redis.kill()
            # The edge remembers where the session is served, and its holder serves it
            # without Redis; a session it must look up answers 503 until Redis is back.
            along_the_route = await client.get(screenshot)
            edge.services.sessions.holder_routes.forget(session_id)
            during = await client.get(screenshot)
            await own_redis.start()  # empty: every lease is gone
            assert await edge.services.ownership.holder_url(rig_id) is None

            # The holder's lease refresh finds its lease gone and claims the rig again.
            await wait_for_holder(edge, rig_id, holder.base_url, timeout_s=20)
            after = await client.get(screenshot)
            swept = [
                await sweeper.services.sessions.sweep_orphans(grace_s=0)
                for sweeper in (edge, holder, edge, holder)
            ]
            session = await client.get(f"/v1/sessions/{session_id}")
        ended_events = await session_ended_events(holder.services, session_id)
        still_live = holder.services.sessions.live.get(session_id) is not None

    # While Redis is away the other node cannot tell who holds the rig: retry, not 500.
    assert along_the_route.status_code == 200
    assert during.status_code == 503, during.text
    assert after.status_code == 200, after.text
    assert swept == [[], [], [], []]
    assert session.json()["status"] == "active"
    assert still_live
    assert ended_events == 0


async def test_a_node_holding_no_rig_restarted_ends_nobodys_session(
    tmp_path: Path, shared_store_url: str
) -> None:
    node = nodes_of_one_service(tmp_path, shared_store_url, REDIS_URL)
    async with node(rigs=1) as holder:
        rig_id = holder.rig_ids[0]
        async with node() as edge, client_of(edge, holder.api_key) as client:
            await wait_for_holder(edge, rig_id, holder.base_url)
            # Started and used through the node about to restart (forwarded to the holder).
            created = await client.post("/v1/sessions", json={"rig_id": rig_id})
            assert created.status_code == 201, created.text
            session_id = created.json()["session_id"]
            assert (await client.get(f"/v1/sessions/{session_id}/screenshot")).status_code == 200

        async with node() as restarted, client_of(restarted, holder.api_key) as client:
            await wait_for_holder(restarted, rig_id, holder.base_url)
            swept = [await restarted.services.sessions.sweep_orphans(grace_s=0) for _ in range(2)]
            screenshot = await client.get(f"/v1/sessions/{session_id}/screenshot")
            session = await client.get(f"/v1/sessions/{session_id}")
        ended_events = await session_ended_events(holder.services, session_id)
        still_live = holder.services.sessions.live.get(session_id) is not None

    assert swept == [[], []]
    assert screenshot.status_code == 200, screenshot.text
    assert session.json()["status"] == "active"
    assert still_live
    assert ended_events == 0
