"""`bench/scale.py` runs end to end with tiny flags (its figures are not checked, only that
every part ran and no request failed, and for the failover that no session was lost or
announced ended twice), so the benchmark cannot rot between runs."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
from bench.scale import parse_args

REPOSITORY = Path(__file__).resolve().parents[1]
POSTGRES_SERVER_URL = os.environ.get(
    "RIGWAY_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# Gateway nodes and the swarm start as processes of their own: tens of seconds on a
# busy machine.
RUN_TIMEOUT_S = 240

pytestmark = [pytest.mark.slow, pytest.mark.timeout(RUN_TIMEOUT_S + 30)]


def test_one_run_measures_everything_by_default() -> None:
    default = parse_args([])
    assert default.parts == ["capacity", "forwarding", "failover", "soak"]
    assert default.nodes == (1, 3)
    assert (default.soak_nodes, default.soak_seconds) == (1, 600.0)
    assert parse_args(["--parts", "capacity", "--nodes", "2,4"]).nodes == (2, 4)


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
        "--parts", "capacity", "--nodes", "1", "--rigs", "6", "--sessions", "3", "--rate", "4",
        "--seconds", "2", "--idle-seconds", "0.5",
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
        "--rigs", "3", "--sessions", "2", "--rate", "4", "--soak-seconds", "3", "--store",
        "sqlite", "--seconds", "1", "--idle-seconds", "0.5",
    )  # fmt: skip

    assert "1 gateway node(s) on SQLite; 3 swarm rigs linked" in output
    assert "capacity: " not in output  # --soak-seconds alone: the soak part only
    assert re.search(r"soak: 3 s\n.*\n\s+errors\s+0\s", output), output
    growth = r"resident memory growth over the last [\d.]+ s \(80 %\): [+-][\d.]+ %"
    assert re.search(growth, output), output


async def test_tiny_forwarding_and_failover_runs_print_their_figures_and_bars() -> None:
    output = await _bench(
        "--parts", "forwarding,failover", "--forward-requests", "2", "--kills", "1",
        "--failover-sessions", "4", "--failover-probes", "2",
        "--postgres-url", POSTGRES_SERVER_URL, "--redis-url", REDIS_URL,
    )  # fmt: skip

    for case in ("cached (swarm rig", "real JPEG, host cached", "real JPEG, host encodes each"):
        assert case in output, output
    assert len(re.findall(r"direct\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms\s+p99", output)) == 3
    assert len(re.findall(r"forwarded\s+p50\s+[\d.]+ ms", output)) == 3
    assert len(re.findall(r"forwarding adds p50 [+-][\d.]+ ms.*\(bar \+<= 1 ms p50", output)) == 3
    assert re.search(r"kill  1:\s+\d+ sessions moved", output), output
    first_good = r"first good screenshot after the kill\s+p50 [\d.]+ s\s+p95 [\d.]+ s"
    assert re.search(first_good + r".*\(bar <= 2 s p50", output), output
    assert "probes that never got a screenshot: 0" in output
    assert "sessions lost: 0 of 4" in output
    assert "session.ended per ended session: 1.00 (4 events, 4 sessions ended" in output
