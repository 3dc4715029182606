"""A redis-server of a test's own, to kill and restart (never the shared one on 6379)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.local_processes import free_port

START_TIMEOUT_S = 30.0


async def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()


class OwnRedis:
    """A redis-server on a free port that keeps nothing on disk: a restart loses every
    key (the leases of the rigs and of the nodes), as a Redis without persistence does."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._directory = directory
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self._directory),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        async with asyncio.timeout(START_TIMEOUT_S):
            while not await self._answers_ping():
                assert self._process.returncode is None, "redis-server exited"
                await asyncio.sleep(0.02)

    async def kill(self) -> None:
        if self._process is not None:
            await _kill(self._process)

    async def _answers_ping(self) -> bool:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            return False
        try:
            writer.write(b"PING\r\n")
            return await reader.readline() == b"+PONG\r\n"
        except OSError:
            return False
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def own_redis_server(directory: Path) -> AsyncIterator[OwnRedis]:
    """A started `OwnRedis` keeping its files in `directory`/redis, killed at the end."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/install-system-deps.sh installs it)")
    (directory / "redis").mkdir()
    redis = OwnRedis(directory / "redis")
    await redis.start()
    try:
        yield redis
    finally:
        await redis.kill()
