"""The agent's control socket: owner-only, never stolen, and answering what it gets."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any, cast

import pytest

from rigway.agent.control import (
    MAX_LINE_BYTES,
    ControlSocketInUseError,
    owner_kill_handler,
    send_command,
    serve_control,
)
from rigway.agent.link import AgentLink, LinkUnavailableError


async def _echo(command: str) -> dict[str, Any]:
    return {"ok": True, "command": command}


async def test_a_live_socket_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    first = await serve_control(path, _echo)
    try:
        with pytest.raises(ControlSocketInUseError):
            await serve_control(path, _echo)
        assert await send_command(path, "ping") == {"ok": True, "command": "ping"}
    finally:
        first.close()
        await first.wait_closed()


async def test_a_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    crashed = socket.socket(socket.AF_UNIX)
    crashed.bind(str(path))  # bound, never listening, then gone: what a crash leaves
    crashed.close()
    server = await serve_control(path, _echo)
    try:
        assert (await send_command(path, "ping"))["ok"] is True
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        server.close()
        await server.wait_closed()


async def test_another_kind_of_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    path.write_text("not a socket")
    with pytest.raises(ControlSocketInUseError):
        await serve_control(path, _echo)
    assert path.read_text() == "not a socket"


async def test_an_overlong_line_gets_an_error_answer(tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    server = await serve_control(path, _echo)
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(b'{"command": "' + b"x" * (MAX_LINE_BYTES * 2) + b'"}\n')
        await writer.drain()
        answer = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
        assert b'"ok": false' in answer
    finally:
        server.close()
        await server.wait_closed()


class OfflineLink:
    """A link whose gateway is unreachable, over a rig running a session."""

    def __init__(self) -> None:
        self.local_ends: list[str] = []

    async def request(self, op: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        raise LinkUnavailableError("not connected to the gateway")

    async def end_local_session(self, reason: str) -> bool:
        self.local_ends.append(reason)
        return True


async def test_the_owners_kill_ends_the_session_even_with_the_gateway_unreachable() -> None:
    link = OfflineLink()
    answer = await owner_kill_handler(cast(AgentLink, link))("owner_kill")
    assert answer == {"ok": True, "ended": True, "local_only": True}
    assert link.local_ends == ["owner_kill"]
