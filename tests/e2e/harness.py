"""The whole stack on real sockets: the gateway under uvicorn, host agents with sim
desktops dialing its WebSocket, and an HTTP client with an API key."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import argon2
import httpx2
import uvicorn
from sqlalchemy import func, select

from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import Desktop
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.link import AgentLink
from rigway.agent.pairing import pair
from rigway.agent.runner import AgentSettings, run_agent
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.app import create_app
from rigway.gateway.clock import Clock
from rigway.gateway.db.models import WebhookOutbox
from rigway.gateway.deployment import write_shared_key_files
from rigway.gateway.identity.passwords import Passwords
from rigway.gateway.services import Services
from rigway.gateway.serving import ConnectionLimits, server_config
from rigway.gateway.settings import GatewaySettings
from tests.support.databases import scratch_database

# Agents in tests beat every second and give up a lost session after one: a test that
# drops a link or kills an agent sees the outcome in about a second, not the defaults' 15.
QUICK_AGENT: dict[str, Any] = {"heartbeat_interval_s": 1.0, "session_grace_s": 1.0}
# `node_url=OWN_URL`: the stack's node advertises its own address to the other nodes.
OWN_URL = "own"
# Rate limits no module's worth of tests on one shared stack comes near.
ROOMY_RATE_LIMITS: dict[str, Any] = {
    "request_rate_limit": "100000/minute",
    "account_request_rate_limit": "100000/minute",
    "input_event_rate_limit": "1000000/minute",
}

# Console passwords hashed with Argon2's cheapest parameters: the gateway's own (RFC 9106
# low-memory, 64 MiB) take 50-400 ms a hash on this 2-CPU machine, and the console tests
# sign users up and in by the hundred. tests/gateway/identity measures the real ones.
QUICK_PASSWORDS = Passwords(argon2.PasswordHasher.from_parameters(argon2.profiles.CHEAPEST))


@dataclass
class RunningAgent:
    rig_id: str
    rig_token: str
    desktop: Desktop
    stop: asyncio.Event
    task: asyncio.Task[None]
    links: list[AgentLink] = field(default_factory=list)

    @property
    def link(self) -> AgentLink:
        return self.links[-1]


@dataclass
class Stack:
    base_url: str
    account_id: str
    api_key: str
    services: Services
    client: httpx2.AsyncClient
    agents: list[RunningAgent] = field(default_factory=list)
    agent_settings: dict[str, Any] = field(default_factory=dict)

    @property
    def rig_ids(self) -> list[str]:
        return [agent.rig_id for agent in self.agents]

    def sim(self, index: int = 0) -> SimDesktop:
        desktop = self.agents[index].desktop
        assert isinstance(desktop, SimDesktop)
        return desktop

    async def start_session(self, index: int = 0, **body: Any) -> str:
        return await self.start_session_on(self.agents[index].rig_id, **body)

    async def start_session_on(self, rig_id: str, **body: Any) -> str:
        """A session started on `rig_id` (any rig, one paired by hand too): its id."""
        response = await self.client.post("/v1/sessions", json={"rig_id": rig_id, **body})
        assert response.status_code == 201, response.text
        session_id = response.json()["session_id"]
        assert isinstance(session_id, str)
        return session_id

    async def add_agent(
        self,
        desktop: Desktop | None = None,
        *,
        enable_api: bool = True,
        apps: AppTracker | None = None,
    ) -> str:
        """Pair a rig and run its agent; `apps` launches its apps (default: real processes
        in this process's environment)."""
        code = await self.services.rigs.create_pairing_code(self.account_id)
        name = f"rig-{len(self.agents) + 1}"
        paired = await pair(self.base_url, code.code, name=name, os="test-os", gpu="")
        if enable_api:
            await self.services.rigs.set_api_access(self.account_id, paired.rig_id, True)
        self.start_agent(paired.rig_id, paired.rig_token, desktop or SimDesktop(), apps=apps)
        await self.wait_online(paired.rig_id)
        return paired.rig_id

    def start_agent(
        self, rig_id: str, rig_token: str, desktop: Desktop, *, apps: AppTracker | None = None
    ) -> RunningAgent:
        settings = AgentSettings(
            gateway_url=self.base_url, rig_token=rig_token, **self.agent_settings
        )
        stop = asyncio.Event()
        links: list[AgentLink] = []
        task = asyncio.create_task(
            run_agent(settings, desktop, stop=stop, apps=apps, on_link=links.append)
        )
        agent = RunningAgent(rig_id, rig_token, desktop, stop, task, links)
        self.agents = [a for a in self.agents if a.rig_id != rig_id] + [agent]
        return agent

    async def stop_agent(self, rig_id: str) -> RunningAgent:
        agent = next(a for a in self.agents if a.rig_id == rig_id)
        agent.stop.set()
        with contextlib.suppress(Exception):
            await agent.task
        # The registry announces a rig coming online, not one going away.
        await self.wait_until(lambda: not self.services.registry.is_online(rig_id))
        return agent

    async def wait_online(self, rig_id: str, timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s):
            await self.services.registry.wait_online(rig_id)

    @staticmethod
    async def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
        """Poll `condition` until it holds: for a state nothing announces (a fake's counter,
        the sim's pointer). Await the event instead where there is one: a session's end
        (`tests.support.session_ends`), a rig online (`wait_online`)."""
        async with asyncio.timeout(timeout_s):
            while not condition():
                await asyncio.sleep(0.01)


def _free_socket() -> socket.socket:
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets whose
    # proto says TCP, and without it every keep-alive request waits ~40 ms (Nagle
    # against delayed ACK). uvicorn binding host:port itself gets this right.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def running_stack(
    state_dir: Path,
    database_url: str,
    *,
    rigs: int = 1,
    clock: Clock | None = None,
    agent_settings: dict[str, Any] | None = None,
    connection_limits: ConnectionLimits | None = None,
    **settings_overrides: Any,
) -> AsyncIterator[Stack]:
    sock = _free_socket()
    port = sock.getsockname()[1]
    if settings_overrides.get("node_url") == OWN_URL:
        # One node of several: the others reach it at its own address.
        settings_overrides["node_url"] = f"http://127.0.0.1:{port}"
    settings = GatewaySettings(state_dir=state_dir, database_url=database_url, **settings_overrides)
    app = create_app(settings, clock=clock, passwords=QUICK_PASSWORDS)
    server = uvicorn.Server(server_config(app, settings, "127.0.0.1", port, connection_limits))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    base_url = f"http://127.0.0.1:{port}"
    stack: Stack | None = None
    try:
        # uvicorn tells that it listens only through this flag (no event, no callback).
        async with asyncio.timeout(20):
            while not server.started:
                if serving.done():
                    serving.result()
                await asyncio.sleep(0.01)
        services: Services = app.state.services
        account_id = await services.accounts.create("test account")
        key = await services.keys.create(account_id, CreateKeyIn(name="e2e"))
        client = httpx2.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {key.secret}"},
            timeout=30.0,
            trust_env=False,
        )
        stack = Stack(base_url, account_id, key.secret, services, client)
        stack.agent_settings = agent_settings or {}
        for _ in range(rigs):
            await stack.add_agent()
        yield stack
    finally:
        if stack is not None:
            for agent in stack.agents:
                agent.stop.set()
            await asyncio.gather(*(a.task for a in stack.agents), return_exceptions=True)
            await stack.client.aclose()
        server.should_exit = True
        await serving
        sock.close()


@contextlib.asynccontextmanager
async def stack_on_own_database(
    directory: Path, *, rigs: int = 1, **settings_overrides: Any
) -> AsyncIterator[Stack]:
    """A stack (`rigs` sim rigs, quick agents, no reaper) on a database of its own in
    `directory`: for a fixture wider than one test (the `database_url` fixture is per test)."""
    async with (
        scratch_database(directory) as database_url,
        running_stack(
            directory / "state",
            database_url,
            rigs=rigs,
            reaper_interval_s=3600,
            agent_settings=QUICK_AGENT,
            **settings_overrides,
        ) as running,
    ):
        yield running


def ok_json(response: httpx2.Response) -> dict[str, Any]:
    """The JSON object of a 200 answer (the test fails with the body otherwise)."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, dict)
    return body


def batch_ran(response: httpx2.Response) -> int:
    """The count of a 200 input answer whose receipts say every event ran, in order."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True, body
    receipts = body["events"]
    assert [receipt["index"] for receipt in receipts] == list(range(body["count"])), body
    assert all(receipt["ok"] for receipt in receipts), body
    count = body["count"]
    assert isinstance(count, int)
    return count


async def wait_for_holder(
    stack: Stack, rig_id: str, holder_url: str, timeout_s: float = 10.0
) -> None:
    """Until `stack`'s node sees the node at `holder_url` hold the rig's link."""
    async with asyncio.timeout(timeout_s):
        while await stack.services.ownership.holder_url(rig_id) != holder_url:
            await asyncio.sleep(0.02)


def client_of(node: Stack, api_key: str) -> httpx2.AsyncClient:
    """A client of `node` with a key of any node's account (one store: every node knows
    every key), e.g. the holder's key on the edge node."""
    return httpx2.AsyncClient(
        base_url=node.base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=30.0,
        trust_env=False,
    )


def one_service_settings(keys_dir: Path, redis_url: str) -> dict[str, Any]:
    """What every node of one service shares besides its store: Redis, the key files
    (made in `keys_dir`), each its own address; no reaper passes during a test."""
    keys = write_shared_key_files(keys_dir)
    return {
        "redis_url": redis_url,
        "node_url": OWN_URL,
        "secret_key_file": keys.secret_key_file,
        "console_signing_key_file": keys.console_signing_key_file,
        "release_signing_key_file": keys.release_signing_key_file,
        "reaper_interval_s": 3600,
    }


NodeFactory = Callable[..., AbstractAsyncContextManager[Stack]]


def nodes_of_one_service(tmp_path: Path, store_url: str, redis_url: str) -> NodeFactory:
    """Makes nodes of one service (one store, one Redis, the same key files), each in a
    folder of its own under `tmp_path`; keyword arguments override a node's settings."""
    shared = one_service_settings(tmp_path / "keys", redis_url)
    count = 0

    def make(**overrides: Any) -> AbstractAsyncContextManager[Stack]:
        nonlocal count
        count += 1
        settings: dict[str, Any] = (
            shared
            | {
                "orphan_sweep_interval_s": 3600,  # the tests sweep by hand
                "rigs": 0,
                "agent_settings": QUICK_AGENT,
            }
            | overrides
        )
        return running_stack(tmp_path / f"node-{count}", store_url, **settings)

    return make


async def session_ended_events(services: Services, session_id: str) -> int:
    """How many `session.ended` webhook events the store behind `services` holds for
    `session_id`."""
    async with services.db() as db:
        count = await db.scalar(
            select(func.count())
            .select_from(WebhookOutbox)
            .where(
                WebhookOutbox.event == "session.ended",
                WebhookOutbox.payload["session_id"].as_string() == session_id,
            )
        )
    return int(count or 0)
