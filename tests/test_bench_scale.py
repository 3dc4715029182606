"""`bench/scale.py` runs end to end with tiny flags (its figures are not checked, only that
every part ran and no request failed), so the benchmark cannot rot between runs."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
POSTGRES_SERVER_URL = os.environ.get(
    "RIGWAY_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# Gateway nodes and the swarm start as processes of their own: tens of seconds on a
# busy machine.
RUN_TIMEOUT_S = 240

pytestmark = [pytest.mark.slow, pytest.mark.timeout(RUN_TIMEOUT_S + 30)]


async def _bench(*flags: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RIGWAY_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.scale", *flags, cwd=REPOSITORY, env=environment,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(RUN_TIMEOUT_S):
        stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    return stdout.decode()


async def test_a_tiny_capacity_run_on_postgresql_and_redis_prints_every_figure() -> None:
    output = await _bench(
        "--rigs", "6", "--sessions", "3", "--rate", "4", "--seconds", "2",
        "--postgres-url", POSTGRES_SERVER_URL, "--redis-url", REDIS_URL,
    )  # fmt: skip

    assert "1 gateway node(s) on PostgreSQL, Redis; 6 swarm rigs linked; 3 sessions" in output
    latency = re.search(r"observe latency\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms\s+p99", output)
    assert latency is not None, output
    assert re.search(r"errors\s+0\s", output), output
    assert re.search(r"requests/s\s+[\d.]+\s+\(2\d in", output), output
    node_cpu = r"gateway node-1\s+CPU\s+[\d.]+ %\s+\d+ us per request \(-?\d+ us above idle\)"
    assert re.search(node_cpu, output), output
    assert re.search(r"idle, rigs linked: gateway CPU [\d.]+ %, swarm CPU", output), output
    assert re.search(r"gateway resident memory: [\d.]+ MiB after", output), output


async def test_a_tiny_soak_on_sqlite_prints_errors_and_memory_growth() -> None:
    output = await _bench(
        "--rigs", "3", "--sessions", "2", "--rate", "4", "--soak-minutes", "0.05", "--store",
        "sqlite",
    )  # fmt: skip

    assert "1 gateway node(s) on SQLite; 3 swarm rigs linked" in output
    assert re.search(r"soak: 0.05 min\n.*\n\s+errors\s+0\s", output), output
    assert re.search(r"resident memory growth over the last 80 %: [+-][\d.]+ %", output), output
