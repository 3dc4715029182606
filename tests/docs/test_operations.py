"""docs/operations.md's commands do what the page says: `rigway gateway` serves with the
settings from the environment and stops on SIGTERM with exit 0, and the SQLite backup
command copies a live store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

import httpx2
import pytest

from tests.docs.test_code_blocks import REPOSITORY, DocBlock, doc_blocks
from tests.e2e.harness import running_stack
from tests.support.local_processes import free_port

OPERATIONS = REPOSITORY / "docs" / "operations.md"
PUBLIC_BASE_URL = "https://rigway.example"
STARTUP_TIMEOUT_S = 60.0


def block_containing(fragment: str) -> DocBlock:
    return next(block for block in doc_blocks(OPERATIONS) if fragment in block.text)


async def wait_ready(client: httpx2.AsyncClient, process: asyncio.subprocess.Process) -> None:
    # Another process's readiness: /readyz is the signal it gives, so it is polled.
    async with asyncio.timeout(STARTUP_TIMEOUT_S):
        while True:
            if process.returncode is not None:
                _, stderr = await process.communicate()
                raise AssertionError(
                    f"the gateway exited with {process.returncode}: {stderr.decode()}"
                )
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await asyncio.sleep(0.1)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM and POSIX paths")
async def test_gateway_command_uses_the_environment_and_stops_on_sigterm(
    tmp_path: Path, database_url: str
) -> None:
    command = block_containing("rigway gateway --host").text
    port = free_port()
    command = command.replace("postgresql+asyncpg://rigway@db.internal/rigway", database_url)
    command = command.replace("/var/lib/rigway", str(tmp_path / "state"))
    command = command.replace("8080", str(port)).replace(".venv/", f"{REPOSITORY}/.venv/")
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    env |= {"RIGWAY_TRUSTED_PROXIES": "127.0.0.1"}
    # exec: the signal goes to the gateway itself, not to a shell waiting for it.
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", f"exec env {command.replace(chr(92) + chr(10), ' ')}",
        cwd=tmp_path, env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with httpx2.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=60.0
        ) as client:
            await wait_ready(client, process)
            latest = await client.get("/v1/agent/latest")
            metrics = await client.get("/metrics")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(STARTUP_TIMEOUT_S):
            _, stderr = await process.communicate()

    assert latest.status_code == 200, latest.text
    assert latest.json()["download_url"].startswith(f"{PUBLIC_BASE_URL}/v1/agent/releases/")
    assert 'rigway_active_sessions{node="' in metrics.text
    assert process.returncode == 0, stderr.decode()
    log = [json.loads(line) for line in stderr.decode().splitlines()]
    messages = [entry["message"] for entry in log]
    assert "draining: 0 requests in flight" in messages
    assert messages[-1] == "stopped"


@pytest.mark.skipif(sys.platform == "win32", reason="the sqlite3 command and POSIX paths")
async def test_sqlite_backup_command_copies_a_live_store(tmp_path: Path) -> None:
    command = block_containing(".backup").text
    store = tmp_path / "state" / "rigway.db"
    backups = tmp_path / "backups"
    backups.mkdir()
    command = command.replace("/var/lib/rigway/rigway.db", str(store))
    command = command.replace("/backups/", f"{backups}/")
    database_url = f"sqlite+aiosqlite:///{store}"

    async with running_stack(tmp_path / "state", database_url, reaper_interval_s=3600) as stack:
        session_id = await stack.start_session()
        process = await asyncio.create_subprocess_exec(
            "bash", "-e", "-o", "pipefail", "-c", command, stderr=asyncio.subprocess.PIPE
        )
        async with asyncio.timeout(STARTUP_TIMEOUT_S):
            _, stderr = await process.communicate()
        await stack.client.delete(f"/v1/sessions/{session_id}")

    assert process.returncode == 0, stderr.decode()
    [backup] = backups.iterdir()
    with contextlib.closing(sqlite3.connect(backup)) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = copy.execute("SELECT status FROM sessions WHERE id = ?", (session_id,)).fetchall()
    assert rows == [("active",)]
