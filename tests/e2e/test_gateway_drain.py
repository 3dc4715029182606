"""A node told to stop drains: it reports not ready, a request in flight that waits on
its host still gets its answer, and only then do its host links close, with a code
their agents answer by reconnecting."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2

from rigway.cli.gateway_command import run_node
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.app import create_app
from rigway.gateway.services import Services
from rigway.gateway.settings import GatewaySettings

from .harness import QUICK_AGENT, Stack, _free_socket

# The batch's pause on the host: long enough that the stop lands while it runs.
PAUSE_MS = 1500


async def test_a_stop_waits_for_the_request_in_flight_then_closes_the_links(
    tmp_path: Path, database_url: str
) -> None:
    settings = GatewaySettings(
        state_dir=tmp_path / "state", database_url=database_url, shutdown_grace_s=20
    )
    app = create_app(settings)
    services: Services = app.state.services
    listener = _free_socket()
    listener.listen()
    base_url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop = asyncio.Event()
    node = asyncio.create_task(run_node(app, settings, listener, stop, log_level="warning"))
    async with httpx2.AsyncClient(base_url=base_url, trust_env=False, timeout=30) as client:
        await _until_ready(client, node)
        account_id = await services.accounts.create("drain")
        key = await services.keys.create(account_id, CreateKeyIn(name="drain"))
        client.headers["Authorization"] = f"Bearer {key.secret}"
        stack = Stack(base_url, account_id, key.secret, services, client)
        stack.agent_settings = QUICK_AGENT
        rig_id = await stack.add_agent()
        session_id = await stack.start_session_on(rig_id)

        batch = asyncio.create_task(
            client.post(
                f"/v1/sessions/{session_id}/input",
                json={"events": [{"type": "mouse_move", "x": 5, "y": 5, "delay_ms": PAUSE_MS}]},
            )
        )
        live = services.sessions.live.get(session_id)
        assert live is not None
        await stack.wait_until(lambda: live.batches_running == 1)
        stop.set()
        await stack.wait_until(lambda: services.requests_in_flight.is_draining)
        ready = await client.get("/readyz")
        answered = await batch
        online_when_answered = services.registry.is_online(rig_id)

        assert await node is True
    assert ready.status_code == 503
    assert ready.json() == {"ok": False, "error": "draining"}
    assert answered.status_code == 200, answered.text
    assert online_when_answered
    assert not services.registry.is_online(rig_id)
    # Told to reconnect, not refused: the agent keeps trying for another node.
    agent = stack.agents[0]
    assert not agent.task.done()
    agent.stop.set()
    await agent.task
    listener.close()


async def _until_ready(client: httpx2.AsyncClient, node: asyncio.Task[bool]) -> None:
    """Until `/readyz` answers 200 (the node also applies its migrations first)."""
    async with asyncio.timeout(20):
        while True:
            if node.done():
                node.result()
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await asyncio.sleep(0.05)
