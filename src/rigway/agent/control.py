"""The agent's local control socket: how the rig's owner reaches the running agent
(`rigway agent kill`, a tray menu) without going through the gateway's API.

A Unix socket with mode 0600 in the agent's state directory, so only the rig's own
user can use it. One JSON line in, one JSON line out: `{"command": "owner_kill"}` →
`{"ok": true, "ended": bool}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rigway.agent.link import AgentLink, GatewayOpError, LinkUnavailableError
from rigway.protocol import ops

MAX_LINE_BYTES = 4096
_OWNER_KILL_TIMEOUT_S = 10.0

CommandHandler = Callable[[str], Awaitable[dict[str, Any]]]


def owner_kill_handler(link: AgentLink) -> CommandHandler:
    """Commands served by a running agent: `owner_kill` ends the rig's session."""

    async def handle(command: str) -> dict[str, Any]:
        if command != "owner_kill":
            return {"ok": False, "error": f"unknown command {command!r}"}
        try:
            reply = await link.request(
                ops.SESSION_OWNER_KILL, {"session_id": None}, _OWNER_KILL_TIMEOUT_S
            )
        except (GatewayOpError, LinkUnavailableError, TimeoutError) as exc:
            return {"ok": False, "error": f"the gateway did not take the kill: {exc}"}
        return {"ok": True, "ended": bool(reply.get("ended", False))}

    return handle


async def serve_control(path: Path, handler: CommandHandler) -> asyncio.Server:
    """Listens on `path` (replacing a stale socket file) with owner-only permissions."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            try:
                request = json.loads(line[:MAX_LINE_BYTES])
                command = str(request["command"])
            except (ValueError, KeyError, TypeError):
                response: dict[str, Any] = {"ok": False, "error": 'expected {"command": …}'}
            else:
                response = await handler(command)
            writer.write(json.dumps(response).encode() + b"\n")
            await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    previous_umask = os.umask(0o177)
    try:
        server = await asyncio.start_unix_server(on_client, path=str(path), limit=MAX_LINE_BYTES)
    finally:
        os.umask(previous_umask)
    os.chmod(path, 0o600)
    return server


async def send_command(path: Path, command: str, timeout_s: float = 15.0) -> dict[str, Any]:
    """The client side: what `rigway agent kill` calls."""
    async with asyncio.timeout(timeout_s):
        reader, writer = await asyncio.open_unix_connection(str(path))
        try:
            writer.write(json.dumps({"command": command}).encode() + b"\n")
            await writer.drain()
            answer = json.loads(await reader.readline())
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
    if not isinstance(answer, dict):
        raise ValueError("the agent answered something other than a JSON object")
    return answer
