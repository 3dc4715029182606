"""Clients that stall or send oversize heads lose their connection, with an answer where
one can be given: the gateway's server under the connection bounds of `serving.py`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.gateway.serving import ConnectionLimits, server_config
from rigway.gateway.settings import load_settings
from tests.e2e.harness import Stack, running_stack

# Short enough for a test; the waits below are on the socket's end, not on these.
QUICK_LIMITS = ConnectionLimits(head_timeout_s=0.3, body_timeout_s=0.3)
UPGRADE = (
    b"GET /v1/agent/connect HTTP/1.1\r\n"
    b"Host: gateway\r\n"
    b"Upgrade: websocket\r\n"
    b"Connection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n"
)
# Far longer than any bound here: a connection still open by then was never closed.
GIVE_UP_S = 20.0


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path, database_url, rigs=0, connection_limits=QUICK_LIMITS
    ) as running:
        yield running


async def _send(stack: Stack, data: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = stack.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    await writer.drain()
    return reader, writer


async def _everything_until_closed(reader: asyncio.StreamReader) -> bytes:
    """What the server wrote before it closed the connection (EOF)."""
    async with asyncio.timeout(GIVE_UP_S):
        return await reader.read()


async def test_an_upgrade_with_a_9000_byte_header_is_answered_431_and_closed(
    stack: Stack,
) -> None:
    authorization = b"Authorization: Bearer " + b"x" * 9000 + b"\r\n"
    reader, writer = await _send(stack, UPGRADE + authorization + b"\r\n")
    answer = await _everything_until_closed(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 431 ")


async def test_an_upgrade_with_a_header_the_handshake_refuses_is_answered_400_and_closed(
    stack: Stack,
) -> None:
    # DEL in a value: the HTTP parser lets it through, the WebSocket handshake would not.
    reader, writer = await _send(stack, UPGRADE + b"X-Note: a\x7fb\r\n\r\n")
    answer = await _everything_until_closed(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 400 ")


async def test_an_upgrade_within_bounds_still_reaches_the_route(stack: Stack) -> None:
    authorization = b"Authorization: Bearer " + b"x" * 4000 + b"\r\n"
    reader, writer = await _send(stack, UPGRADE + authorization + b"\r\n")
    # Read up to the close frame's reason: the server then waits for our closing
    # handshake (which this raw client never sends) before it drops the connection.
    async with asyncio.timeout(GIVE_UP_S):
        answer = await reader.readuntil(b"invalid_rig_token")
    writer.close()
    # The route refuses the made-up token, in a close frame: its answer, not the bounds'.
    assert answer.startswith(b"HTTP/1.1 101 ")


async def test_a_plain_request_with_too_many_headers_is_answered_431(stack: Stack) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % index for index in range(150))
    reader, writer = await _send(stack, b"GET /healthz HTTP/1.1\r\nHost: g\r\n" + headers + b"\r\n")
    answer = await _everything_until_closed(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 431 ")


async def test_a_client_whose_head_stalls_gets_408_and_loses_the_connection(
    stack: Stack,
) -> None:
    reader, writer = await _send(stack, b"GET /healthz HTTP/1.1\r\nHost: gat")
    answer = await _everything_until_closed(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_a_client_that_connects_and_says_nothing_loses_the_connection(
    stack: Stack,
) -> None:
    reader, writer = await _send(stack, b"")
    answer = await _everything_until_closed(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_a_client_whose_body_stalls_loses_the_connection(stack: Stack) -> None:
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: g\r\n"
        b"Authorization: Bearer " + stack.api_key.encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    reader, writer = await _send(stack, head + b'{"rig_id": ')
    answer = await _everything_until_closed(reader)
    writer.close()
    assert b" 201 " not in answer  # nothing was started from half a body
    sessions = await stack.client.get("/v1/sessions")
    assert sessions.json()["sessions"] == []


async def test_keep_alive_requests_after_a_slow_start_are_each_bounded_afresh(
    stack: Stack,
) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: g\r\n\r\n"
    reader, writer = await _send(stack, request)
    first = await reader.readuntil(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 200 ")
    writer.write(b"GET /healthz HTTP/1.1\r\nHo")  # then nothing more
    await writer.drain()
    rest = await _everything_until_closed(reader)
    writer.close()
    assert b"HTTP/1.1 408 " in rest


async def _response(reader: asyncio.StreamReader) -> bytes:
    """One whole response (head and a content-length body) off a kept-alive connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


async def test_an_idle_connection_is_kept_for_the_keep_alive_then_closed_quietly(
    tmp_path: Path, database_url: str
) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: g\r\n\r\n"
    async with running_stack(tmp_path, database_url, rigs=0, keep_alive_s=1) as running:
        reader, writer = await _send(running, request)
        first = await _response(reader)
        # The same connection serves the next request...
        writer.write(request)
        await writer.drain()
        second = await _response(reader)
        # ...and once idle for the keep-alive, the server closes it without a word.
        rest = await _everything_until_closed(reader)
        writer.close()
    assert first.startswith(b"HTTP/1.1 200 ")
    assert second.startswith(b"HTTP/1.1 200 ")
    assert rest == b""


def test_the_keep_alive_outlasts_common_clients_idle_connections() -> None:
    # A server that closes an idle connection first races the request a client may be
    # sending on it; httpx keeps one 5 s, an AWS load balancer 60 s.
    settings = load_settings({})
    config = server_config(object(), settings, "127.0.0.1", 0)
    assert config.timeout_keep_alive == settings.keep_alive_s == 75
    configured = load_settings({"RIGWAY_KEEP_ALIVE_SECONDS": "20"})
    assert server_config(object(), configured, "127.0.0.1", 0).timeout_keep_alive == 20


def test_the_bounds_and_trusted_proxies_come_from_the_environment() -> None:
    settings = load_settings(
        {
            "RIGWAY_REQUEST_HEAD_TIMEOUT_SECONDS": "4",
            "RIGWAY_REQUEST_BODY_TIMEOUT_SECONDS": "30",
            "RIGWAY_TRUSTED_PROXIES": "10.0.0.1, 10.0.1.0/24",
        }
    )
    assert (settings.request_head_timeout_s, settings.request_body_timeout_s) == (4.0, 30.0)
    assert settings.trusted_proxies == ["10.0.0.1", "10.0.1.0/24"]
    assert load_settings({}).trusted_proxies == []  # believe no forwarding header
