from __future__ import annotations

import asyncio

import pytest

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.link import AgentLink, LinkAuthError
from rigway.agent.runner import (
    AgentSettings,
    connect_url,
    detect_network,
    open_backend,
    run_agent,
)
from rigway.protocol import ops
from tests.agent.fake_gateway import FakeGateway
from tests.agent.fakes import FakeApps


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://gw.example", "wss://gw.example/v1/agent/connect"),
        ("http://127.0.0.1:8000/", "ws://127.0.0.1:8000/v1/agent/connect"),
        ("https://gw.example/prefix", "wss://gw.example/prefix/v1/agent/connect"),
        ("wss://gw.example/v1/agent/connect", "wss://gw.example/v1/agent/connect"),
    ],
)
def test_connect_url(given: str, expected: str) -> None:
    assert connect_url(given) == expected


def test_connect_url_refuses_other_schemes() -> None:
    with pytest.raises(ValueError, match="must be http"):
        connect_url("ftp://gw.example")


def test_settings_fail_closed() -> None:
    with pytest.raises(ValueError, match="pair this rig"):
        AgentSettings(gateway_url="https://gw.example", rig_token=" ")
    with pytest.raises(ValueError, match="unknown backend"):
        AgentSettings(gateway_url="https://gw.example", rig_token="t", backend="amiga")


def test_open_backend_sim_has_the_asked_size() -> None:
    desktop = open_backend("sim", display=None, width=1280, height=800)
    assert isinstance(desktop, SimDesktop)
    assert desktop.native_size() == (1280, 800)


def test_open_backend_unknown_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown backend 'amiga'"):
        open_backend("amiga", display=None, width=1, height=1)


def test_network_of_a_loopback_gateway_is_unknown() -> None:
    assert detect_network("127.0.0.1") == (None, None)


async def test_run_agent_serves_until_stopped_and_restores() -> None:
    apps = FakeApps()
    stop = asyncio.Event()
    links: list[AgentLink] = []
    async with FakeGateway().running() as gateway:
        settings = AgentSettings(gateway_url=gateway.url, rig_token="rig-token")
        agent = asyncio.create_task(
            run_agent(settings, SimDesktop(), stop=stop, apps=apps, on_link=links.append)
        )
        connection = await gateway.next_connection()
        async with asyncio.timeout(5):
            await links[0].wait_connected()
        assert links[0].rig_id == "rig-1"
        assert connection.hello.backend == "sim"
        assert connection.hello.capture_mode == "sim"
        assert (connection.hello.native_width, connection.hello.native_height) == (1920, 1080)
        assert (await connection.request(ops.SESSION_START, {"session_id": "s1"})).header["ok"]
        stop.set()
        async with asyncio.timeout(10):
            await agent
    assert apps.kill_all_calls == 1  # the local session ended on the way out


async def test_run_agent_raises_on_a_refused_token() -> None:
    async with FakeGateway().running() as gateway:
        settings = AgentSettings(gateway_url=gateway.url, rig_token="wrong")
        with pytest.raises(LinkAuthError):
            async with asyncio.timeout(10):
                await run_agent(settings, SimDesktop(), apps=FakeApps())
