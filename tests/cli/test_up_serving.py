"""`rigway up` on a port another process holds says so in one line and exits 10;
`--log-level info` logs a line per request (on stdout, where uvicorn writes it).
Through the real entry point."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import httpx2

from .conftest import RIGWAY_SCRIPT, closed_port

# Generous: a cold import of the gateway stack on a busy machine; only a hang reaches it.
UP_TIMEOUT_S = 60.0


def rigway_command() -> list[str]:
    if RIGWAY_SCRIPT.exists():
        return [str(RIGWAY_SCRIPT)]
    return [sys.executable, "-m", "rigway.cli.main"]


def up_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}


async def test_a_port_in_use_exits_10_with_one_line(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            *rigway_command(), "up", "--port", str(port), "--state-dir", str(tmp_path / "state"),
            cwd=tmp_path, env=up_env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(UP_TIMEOUT_S):
            stdout, stderr = await process.communicate()

    assert process.returncode == 10
    assert stdout == b""
    assert stderr.decode().splitlines() == [
        f"rigway up: port {port} on 127.0.0.1 is in use by another process (another "
        "`rigway up`?): stop it, or pass --port"
    ]
    assert not (tmp_path / "state" / "local.json").exists()


async def test_log_level_info_logs_each_request(tmp_path: Path) -> None:
    port = closed_port()
    process = await asyncio.create_subprocess_exec(
        *rigway_command(), "up", "--port", str(port), "--rigs", "0", "--log-level", "info",
        "--state-dir", str(tmp_path / "state"),
        cwd=tmp_path, env=up_env(),
        # stderr (start-up logs) unread until the end: not a pipe that could fill up.
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(UP_TIMEOUT_S):
            while b"Rigway is up" not in (line := await process.stdout.readline()):
                assert line, "rigway up exited before it was up"
            async with httpx2.AsyncClient(trust_env=False) as client:
                response = await client.get(f"http://127.0.0.1:{port}/healthz")
            assert response.status_code == 200
            # uvicorn writes its access log to stdout, after up's summary.
            while b'"GET /healthz HTTP/1.1" 200' not in (line := await process.stdout.readline()):
                assert line, "rigway up closed its stdout without an access line"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        async with asyncio.timeout(UP_TIMEOUT_S):
            await process.communicate()
    assert process.returncode == 0


async def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        *rigway_command(), "up", "--log-level", "loud", cwd=tmp_path, env=up_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(UP_TIMEOUT_S):
        _, stderr = await process.communicate()

    assert process.returncode == 2
    assert "'loud' is not one of" in stderr.decode()
