"""`rigway mcp` options: which tools are served, and who may reach the HTTP endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from starlette.types import Receive, Scope, Send
from typer.testing import CliRunner

from rigway.cli.main import app
from rigway.client import AsyncRigway
from rigway.mcp._http import BearerAuth, is_loopback
from rigway.mcp.server import TOOL_NAMES, LazySession, RigTools, build_server
from tests.client.conftest import API_KEY, BASE_URL, FakeGateway

TOKEN = "s3cret-token"


@pytest.fixture
async def tools() -> AsyncIterator[RigTools]:
    transport = httpx2.MockTransport(FakeGateway())
    async with AsyncRigway(API_KEY, BASE_URL, transport=transport) as client:
        yield RigTools(LazySession(client, "rig_1"))


async def test_only_the_chosen_tools_are_listed_with_output_schemas(tools: RigTools) -> None:
    server = build_server(tools, only=("observe", "click", "end_session"))

    listed = {tool.name: tool for tool in await server.list_tools()}

    assert set(listed) == {"observe", "click", "end_session"}
    schema = listed["observe"].output_schema
    assert schema is not None
    assert {"targets", "geometry", "desktop_state"} <= set(schema["properties"])
    assert listed["end_session"].output_schema is None


async def test_every_tool_is_served_by_default_and_states_image_pixels(tools: RigTools) -> None:
    listed = {tool.name: tool for tool in await build_server(tools).list_tools()}

    assert set(listed) == set(TOOL_NAMES)
    assert "image pixels" in (listed["click"].description or "")
    assert "native pixels" in (listed["observe"].description or "")


def test_an_unknown_tool_name_exits_2_listing_the_valid_ones() -> None:
    result = CliRunner().invoke(app, ["mcp", "--rig", "rig_1", "--exclude-tools", "obsrve"])

    assert result.exit_code == 2
    assert "unknown tools: obsrve; valid: observe, screenshot, click" in result.output


def test_http_beyond_loopback_without_a_token_exits_2() -> None:
    args = ["mcp", "--rig", "rig_1", "--http", "--host", "0.0.0.0"]

    result = CliRunner().invoke(app, args, env={"RIGWAY_MCP_AUTH_TOKEN": None})

    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "refusing to serve MCP on 0.0.0.0 without --auth-token (only loopback may be open)"
    ]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("::", False)],
)
def test_which_hosts_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def reached(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"reached"})


@pytest.mark.parametrize(
    ("authorization", "status"),
    [(None, 401), ("Bearer wrong", 401), (f"bearer {TOKEN}", 401), (f"Bearer {TOKEN}", 200)],
)
async def test_http_requests_need_the_bearer_token(authorization: str | None, status: int) -> None:
    guarded = BearerAuth(reached, TOKEN)
    headers = {} if authorization is None else {"Authorization": authorization}
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(guarded), base_url="http://mcp.test"
    ) as client:
        response = await client.post("/mcp", headers=headers, json={})

    assert response.status_code == status
    assert (response.text == "reached") is (status == 200)
