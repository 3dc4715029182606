"""The agent's local control socket: how the rig's owner reaches the running agent
(`rigway agent kill`, a tray menu) without going through the gateway's API.

A Unix socket with mode 0600 in the agent's state directory, so only the rig's own
user can use it. One JSON line in, one JSON line out: `{"command": "owner_kill"}` →
`{"ok": true, "ended": bool}` (plus `"local_only": true` when the gateway could not be
reached: the session then ends on the rig at once, and the gateway records it as
`host_gone` when the agent's link returns without it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
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
        except (LinkUnavailableError, TimeoutError):
            # The owner's kill must not wait for the network: end the session here.
            ended = await link.end_local_session("owner_kill")
            return {"ok": True, "ended": ended, "local_only": True}
        except GatewayOpError as exc:
            return {"ok": False, "error": f"the gateway did not take the kill: {exc}"}
        return {"ok": True, "ended": bool(reply.get("ended", False))}

    return handle


class ControlSocketInUseError(RuntimeError):
    """The path holds a live control socket (another agent) or something else."""


async def serve_control(path: Path, handler: CommandHandler) -> asyncio.Server:
    """Listens on `path` with owner-only permissions. A stale socket file (nobody
    answers) is replaced; a live one, or any other kind of file, is left alone."""
    await _remove_stale_socket(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                line = await reader.readline()
                request = json.loads(line)
                command = str(request["command"])
            except (ValueError, KeyError, TypeError):
                # ValueError covers a line past MAX_LINE_BYTES as well as bad JSON.
                response: dict[str, Any] = {"ok": False, "error": 'expected {"command": …}'}
            else:
                response = await handler(command)
            writer.write(json.dumps(response).encode() + b"\n")
            await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Bound with owner-only permissions from the first instant; the umask is the
    # process's, so it is changed only around this call, with no await inside.
    previous_umask = os.umask(0o177)
    try:
        listener.bind(str(path))
    except OSError:
        listener.close()
        raise
    finally:
        os.umask(previous_umask)
    os.chmod(path, 0o600)
    return await asyncio.start_unix_server(on_client, sock=listener, limit=MAX_LINE_BYTES)


async def _remove_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ControlSocketInUseError(f"{path} exists and is not a socket; not replacing it")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), 1.0)
    except (OSError, TimeoutError):
        path.unlink(missing_ok=True)  # nobody listens: left over from a crash
        return
    writer.close()
    raise ControlSocketInUseError(f"another agent is serving {path}")


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
