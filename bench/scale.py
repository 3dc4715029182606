"""Capacity of gateway nodes: many linked rigs, many sessions observing at a steady rate.

The bench starts everything itself: a PostgreSQL database of its own on
`--postgres-url`'s server (created, then dropped), or a SQLite file with `--store
sqlite`; `--nodes` gateway nodes (`rigway gateway`, each its own process, on that store
and on Redis at `--redis-url`, sharing key files); a rig swarm (`python -m
rigway.agent.swarm`, one process) linking `--rigs` rigs to every node's URL; and, in
this process, one HTTP client (httpx2, one connection pool, uvloop) that opens
`--sessions` sessions, spread over the nodes' URLs, each observing `--rate` times a
second on a fixed schedule for `--seconds` seconds.

It prints observe latency (p50/p95/p99), errors by status, the requests per second
achieved, the gateway processes' CPU per request, their resident memory before and
after, and how late the load generator started its requests (its own CPU beside: a
late, busy generator means the figures are its own, not the gateway's).

`--soak-minutes N`: the same load for N minutes, printing each minute's errors and
resident memory, then the errors and the memory growth over the last 80 % of the run
(the bar: 0 errors, growth under 10 %).

Figures, never pass/fail. A node serves the sessions of the rigs it holds; with several
nodes a session whose rig is held by another node needs forwarding between nodes.

Run: .venv/bin/python -m bench.scale                 (500 rigs, 200 sessions, 2/s, 60 s)
     .venv/bin/python -m bench.scale --rigs 50 --sessions 20 --seconds 10
     .venv/bin/python -m bench.scale --soak-minutes 10
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import secrets
import signal
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import psutil
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bench.local_stack import BENCH_QUOTAS
from bench.stats import p50, p95
from rigway import event_loop
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.app import build_services
from rigway.gateway.clock import SystemClock
from rigway.gateway.deployment import write_shared_key_files
from rigway.gateway.settings import GatewaySettings

POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/0"
START_TIMEOUT_S = 60.0
# Requests that have not answered in this long count as errors (status "timeout").
REQUEST_TIMEOUT_S = 10.0
IDLE_WINDOW_S = 5.0


def p99(samples_ms: list[float]) -> float:
    ordered = sorted(samples_ms)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ---- the store ---------------------------------------------------------------------------


async def _admin(server_url: str, statement: str) -> None:
    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def bench_database(store: str, postgres_url: str, directory: Path) -> AsyncIterator[str]:
    """A database of the bench's own: a PostgreSQL database made and dropped, or a file."""
    if store == "sqlite":
        yield f"sqlite+aiosqlite:///{directory / 'rigway.db'}"
        return
    name = f"rigway_bench_{secrets.token_hex(4)}"
    await _admin(postgres_url, f'CREATE DATABASE "{name}"')
    try:
        yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    finally:
        await _admin(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---- gateway nodes and the swarm ------------------------------------------------------


@dataclass
class Deployment:
    """Where the nodes share their state, and the nodes' environment."""

    directory: Path
    database_url: str
    redis_url: str | None
    environment: dict[str, str] = field(default_factory=dict)

    @classmethod
    def make(cls, directory: Path, database_url: str, redis_url: str | None) -> Deployment:
        keys = write_shared_key_files(directory / "keys")
        environment = {
            **BENCH_QUOTAS,
            "RIGWAY_ACCOUNT_REQUEST_RATE_LIMIT": "1000000/minute",
            "RIGWAY_REQUEST_RATE_LIMIT": "1000000/minute",
            "RIGWAY_MAX_CONCURRENT_SESSIONS": "100000",
            "RIGWAY_DATABASE_URL": database_url,
            **keys.environment(),
        }
        if redis_url is not None:
            environment["RIGWAY_REDIS_URL"] = redis_url
        return cls(directory, database_url, redis_url, environment)

    def settings(self) -> GatewaySettings:
        """The settings of a process that seeds the store beside the nodes."""
        return GatewaySettings(
            state_dir=self.directory / "seed",
            database_url=self.database_url,
            secret_key_file=Path(self.environment["RIGWAY_SECRET_KEY_FILE"]),
            console_signing_key_file=Path(self.environment["RIGWAY_CONSOLE_SIGNING_KEY_FILE"]),
            release_signing_key_file=Path(self.environment["RIGWAY_RELEASE_SIGNING_KEY_FILE"]),
        )


@dataclass
class Node:
    name: str
    base_url: str
    process: asyncio.subprocess.Process
    stats: psutil.Process


def _environment(extra: dict[str, str]) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RIGWAY_")}
    return environment | extra


async def _until_ready(node: Node) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx2.AsyncClient(trust_env=False, timeout=2.0) as client:
        while True:
            if node.process.returncode is not None:
                raise RuntimeError(f"gateway {node.name} exited with {node.process.returncode}")
            with contextlib.suppress(httpx2.HTTPError):
                if (await client.get(f"{node.base_url}/readyz")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"gateway {node.name} not ready in {START_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def gateway_nodes(deployment: Deployment, count: int) -> AsyncIterator[list[Node]]:
    """`count` nodes (`rigway gateway`), ready; stopped with SIGTERM (a drain) after."""
    nodes: list[Node] = []
    try:
        for index in range(count):
            name = f"node-{index + 1}"
            port = _free_port()
            environment = _environment(
                deployment.environment
                | {
                    "RIGWAY_STATE_DIR": str(deployment.directory / name),
                    "RIGWAY_NODE_NAME": name,
                    "RIGWAY_NODE_URL": f"http://127.0.0.1:{port}",
                    "RIGWAY_SHUTDOWN_GRACE_SECONDS": "5",
                }
            )
            command = [
                sys.executable, "-m", "rigway.cli.main", "gateway",
                "--port", str(port), "--log-level", "warning",
            ]  # fmt: skip
            process = await asyncio.create_subprocess_exec(
                *command, env=environment, stdout=asyncio.subprocess.DEVNULL
            )
            nodes.append(
                Node(name, f"http://127.0.0.1:{port}", process, psutil.Process(process.pid))
            )
            # One at a time: the first applies the migrations.
            await _until_ready(nodes[-1])
        yield nodes
    finally:
        await asyncio.gather(*(_stop(node.process) for node in nodes))


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM (a node drains first), then SIGKILL after 20 s."""
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(20):
            await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()


@dataclass
class Seeded:
    api_key: str
    rig_ids: list[str]
    rig_tokens: list[str]


async def seed(deployment: Deployment, rigs: int) -> Seeded:
    """An account, its API key, and `rigs` rigs paired with API access on: written
    straight to the store the nodes share, as a console would through them."""
    services = build_services(deployment.settings(), SystemClock())
    try:
        account_id = await services.accounts.create("scale bench")
        key = await services.keys.create(account_id, CreateKeyIn(name="scale bench"))
        slots = asyncio.Semaphore(8)

        async def pair_one(index: int) -> tuple[str, str]:
            async with slots:
                code = await services.rigs.create_pairing_code(account_id)
                paired = await services.rigs.pair(
                    code.code, name=f"swarm-{index + 1}", os="swarm", gpu=""
                )
                await services.rigs.set_api_access(account_id, paired.rig_id, True)
                return paired.rig_id, paired.rig_token

        pairs = await asyncio.gather(*(pair_one(index) for index in range(rigs)))
    finally:
        await services.engine.dispose()
    return Seeded(key.secret, [rig_id for rig_id, _ in pairs], [token for _, token in pairs])


@contextlib.asynccontextmanager
async def rig_swarm(
    directory: Path, urls: Sequence[str], tokens: Sequence[str]
) -> AsyncIterator[psutil.Process]:
    """The swarm's process, once every rig is linked; stopped with SIGTERM after."""
    tokens_file = directory / "rig-tokens"
    tokens_file.write_text("".join(f"{token}\n" for token in tokens))
    tokens_file.chmod(0o600)
    command = [sys.executable, "-m", "rigway.agent.swarm", "--tokens-file", str(tokens_file)]
    for url in urls:
        command += ["--gateway", url]
    process = await asyncio.create_subprocess_exec(
        *command, env=_environment({}), stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(START_TIMEOUT_S + len(tokens) * 0.1):
            while not (line := (await process.stdout.readline()).decode()).startswith("linked"):
                if not line:
                    raise RuntimeError(f"the swarm exited with {await process.wait()}")
        yield psutil.Process(process.pid)
    finally:
        await _stop(process)


# ---- the load ---------------------------------------------------------------------------


@dataclass
class Load:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    late_ms: list[float] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status != "200")


async def open_sessions(
    client: httpx2.AsyncClient, urls: Sequence[str], rig_ids: Sequence[str], count: int
) -> list[str]:
    """`count` sessions, one per rig, each through the next node's URL in turn: the
    URL each session is observed through (`…/v1/sessions/{id}`)."""

    async def open_one(index: int) -> str:
        base = urls[index % len(urls)]
        answer = await client.post(f"{base}/v1/sessions", json={"rig_id": rig_ids[index]})
        if answer.status_code != 201:
            raise RuntimeError(f"session on {rig_ids[index]}: {answer.status_code} {answer.text}")
        return f"{base}/v1/sessions/{answer.json()['session_id']}"

    slots = asyncio.Semaphore(16)

    async def bounded(index: int) -> str:
        async with slots:
            return await open_one(index)

    return list(await asyncio.gather(*(bounded(i) for i in range(count))))


async def end_sessions(client: httpx2.AsyncClient, sessions: Sequence[str]) -> None:
    slots = asyncio.Semaphore(16)

    async def end(session: str) -> None:
        async with slots:
            with contextlib.suppress(httpx2.HTTPError):
                await client.delete(session)

    await asyncio.gather(*(end(session) for session in sessions))


async def observe_for(
    client: httpx2.AsyncClient,
    sessions: Sequence[str],
    rate_per_s: float,
    seconds: float,
    image: int,
    load: Load,
) -> None:
    """Each session observes `rate_per_s` times a second on a fixed schedule (its phase
    random), from now for `seconds`, one observe at a time as an agent does: an answer
    later than the next slot sends the next observe at once, and a session that falls
    a whole second behind its schedule skips the slots it missed (the achieved rate
    then shows the shortfall). Lateness is measured against the schedule."""
    interval_s = 1.0 / rate_per_s
    end_at = time.perf_counter() + seconds
    rng = random.Random(7)

    async def observe_one(url: str) -> None:
        # perf_counter, not loop.time(): uvloop's clock counts whole milliseconds.
        started = time.perf_counter()
        try:
            answer = await client.get(url, params={"image": image})
            status = str(answer.status_code)
        except httpx2.TimeoutException:
            status = "timeout"
        except httpx2.HTTPError as exc:
            status = type(exc).__name__
        load.statuses[status] += 1
        if status == "200":
            load.latencies_ms.append((time.perf_counter() - started) * 1000)

    async def session_loop(session: str) -> None:
        url = f"{session}/observe"
        due_at = time.perf_counter() + rng.uniform(0, interval_s)
        while due_at < end_at:
            delay_s = due_at - time.perf_counter()
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            load.late_ms.append(max(0.0, -delay_s) * 1000)
            await observe_one(url)
            due_at += interval_s
            behind_s = time.perf_counter() - due_at
            if behind_s > 1.0:
                due_at += (behind_s // interval_s) * interval_s

    await asyncio.gather(*(session_loop(session) for session in sessions))


# ---- measuring ---------------------------------------------------------------------------


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _rss_mib(nodes: Sequence[Node]) -> list[float]:
    return [node.stats.memory_info().rss / 2**20 for node in nodes]


def _mib(values: Sequence[float]) -> str:
    return " ".join(f"{value:.1f}" for value in values) + " MiB"


@dataclass
class Window:
    """CPU seconds of every process taking part, over one stretch of load."""

    nodes: list[float]
    swarm: float
    generator: float
    wall: float
    swarm_rss_mib: float

    @classmethod
    def now(cls, nodes: Sequence[Node], swarm: psutil.Process) -> Window:
        return cls(
            [_cpu_s(node.stats) for node in nodes],
            _cpu_s(swarm),
            _cpu_s(psutil.Process()),
            time.monotonic(),
            swarm.memory_info().rss / 2**20,
        )


def print_load(
    title: str, load: Load, before: Window, after: Window, idle_cpu: Sequence[float]
) -> None:
    """`idle_cpu`: each node's CPU share with the rigs linked and no request (0..1)."""
    wall_s = after.wall - before.wall
    requests = sum(load.statuses.values())
    print(title)
    if load.latencies_ms:
        samples = load.latencies_ms
        print(
            f"  observe latency  p50 {p50(samples):7.2f} ms   p95 {p95(samples):7.2f} ms   "
            f"p99 {p99(samples):7.2f} ms   n={len(samples)}"
        )
    errors = {status: n for status, n in load.statuses.items() if status != "200"}
    print(f"  errors           {load.errors}  {dict(sorted(errors.items())) if errors else ''}")
    print(f"  requests/s       {requests / wall_s:.1f}  ({requests} in {wall_s:.1f} s)")
    nodes = zip(before.nodes, after.nodes, idle_cpu, strict=True)
    for index, (start, end, idle) in enumerate(nodes):
        used_s = end - start
        per_request_us = used_s / requests * 1e6 if requests else 0.0
        above_idle_us = (used_s - idle * wall_s) / requests * 1e6 if requests else 0.0
        print(
            f"  gateway node-{index + 1}     CPU {used_s / wall_s * 100:5.1f} %   "
            f"{per_request_us:7.0f} us per request ({above_idle_us:.0f} us above idle)"
        )
    print(
        f"  rig swarm        CPU {(after.swarm - before.swarm) / wall_s * 100:5.1f} %   "
        f"resident {after.swarm_rss_mib:.1f} MiB"
    )
    print(
        f"  load generator   CPU {(after.generator - before.generator) / wall_s * 100:5.1f} %   "
        f"start late p50 {p50(load.late_ms):.2f} ms  p99 {p99(load.late_ms):.2f} ms"
    )


# ---- the runs ----------------------------------------------------------------------------


@contextlib.contextmanager
def _scratch_directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rigway-scale-") as directory:
        yield Path(directory)


async def run(args: argparse.Namespace) -> None:
    # A node on SQLite is a node alone: Redis is for several.
    redis_url = args.redis_url if args.store == "postgres" and args.redis_url else None
    with _scratch_directory() as directory:
        async with bench_database(args.store, args.postgres_url, directory) as database_url:
            deployment = Deployment.make(directory, database_url, redis_url)
            started = time.perf_counter()
            async with gateway_nodes(deployment, args.nodes) as nodes:
                print(f"set-up: nodes ready in {time.perf_counter() - started:.1f} s", flush=True)
                urls = [node.base_url for node in nodes]
                started = time.perf_counter()
                seeded = await seed(deployment, args.rigs)
                print(f"set-up: {args.rigs} rigs paired in {time.perf_counter() - started:.1f} s")
                rss_unlinked = _rss_mib(nodes)
                started = time.perf_counter()
                async with rig_swarm(directory, urls, seeded.rig_tokens) as swarm:
                    print(f"set-up: rigs linked in {time.perf_counter() - started:.1f} s")
                    await _load(args, nodes, urls, seeded, swarm, rss_unlinked, redis_url)


async def _load(
    args: argparse.Namespace,
    nodes: Sequence[Node],
    urls: Sequence[str],
    seeded: Seeded,
    swarm: psutil.Process,
    rss_unlinked: list[float],
    redis_url: str | None,
) -> None:
    store = "PostgreSQL" if args.store == "postgres" else "SQLite"
    # This machine may be busy with more than the bench: its load says how busy.
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min)")
    print(
        f"{len(nodes)} gateway node(s) on {store}"
        f"{', Redis' if redis_url else ''}; {args.rigs} swarm rigs linked; "
        f"{args.sessions} sessions observing (image={args.image}) {args.rate:g}/s each"
    )
    print(f"  gateway resident memory: {_mib(rss_unlinked)} before the rigs linked")
    # What the links alone cost (heartbeats both ways), before any session.
    idle_before = Window.now(nodes, swarm)
    await asyncio.sleep(IDLE_WINDOW_S)
    idle_after = Window.now(nodes, swarm)
    idle_s = idle_after.wall - idle_before.wall
    idle_cpu = [
        (end - start) / idle_s
        for start, end in zip(idle_before.nodes, idle_after.nodes, strict=True)
    ]
    swarm_idle_cpu = (idle_after.swarm - idle_before.swarm) / idle_s
    print(
        f"  idle, rigs linked: gateway CPU {' '.join(f'{cpu * 100:.1f} %' for cpu in idle_cpu)}, "
        f"swarm CPU {swarm_idle_cpu * 100:.1f} %, swarm resident {idle_after.swarm_rss_mib:.1f} MiB"
    )
    # A connection per session: one observe at a time each, none waits for the pool.
    limits = httpx2.Limits(max_connections=args.sessions, max_keepalive_connections=None)
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {seeded.api_key}"},
        timeout=REQUEST_TIMEOUT_S,
        limits=limits,
        trust_env=False,
    ) as client:
        sessions = await open_sessions(client, urls, seeded.rig_ids, args.sessions)
        try:
            # A few seconds' warm-up: connections opened, caches filled.
            await observe_for(
                client, sessions, args.rate, min(3.0, args.seconds), args.image, Load()
            )
            rss_before = _rss_mib(nodes)
            print(f"  gateway resident memory: {_mib(rss_before)} linked, sessions open")
            if args.soak_minutes is None:
                load = Load()
                before = Window.now(nodes, swarm)
                await observe_for(client, sessions, args.rate, args.seconds, args.image, load)
                after = Window.now(nodes, swarm)
                print_load(f"capacity: {args.seconds:g} s", load, before, after, idle_cpu)
                print(f"  gateway resident memory: {_mib(_rss_mib(nodes))} after")
                print(f"machine: load average {os.getloadavg()[0]:.2f} (1 min) at the end")
            else:
                await _soak(args, client, nodes, swarm, sessions, idle_cpu)
        finally:
            await end_sessions(client, sessions)


async def _soak(
    args: argparse.Namespace,
    client: httpx2.AsyncClient,
    nodes: Sequence[Node],
    swarm: psutil.Process,
    sessions: Sequence[str],
    idle_cpu: Sequence[float],
) -> None:
    minutes = args.soak_minutes
    step_s = min(60.0, minutes * 60 / 5)
    steps = max(1, round(minutes * 60 / step_s))
    total = Load()
    rss: list[float] = [sum(_rss_mib(nodes))]
    first = Window.now(nodes, swarm)
    for step in range(steps):
        load = Load()
        await observe_for(client, sessions, args.rate, step_s, args.image, load)
        rss.append(sum(_rss_mib(nodes)))
        total.latencies_ms += load.latencies_ms
        total.statuses.update(load.statuses)
        total.late_ms += load.late_ms
        p99_ms = p99(load.latencies_ms) if load.latencies_ms else float("nan")
        print(
            f"  {(step + 1) * step_s / 60:5.1f} min  errors {load.errors:4d}  "
            f"p99 {p99_ms:7.2f} ms  gateway resident {rss[-1]:.1f} MiB"
        )
    print_load(f"soak: {minutes:g} min", total, first, Window.now(nodes, swarm), idle_cpu)
    # The last 80 % of the run: from the sample nearest its start.
    base = rss[round(0.2 * steps)]
    growth = (rss[-1] - base) / base * 100
    print(
        f"  resident memory growth over the last 80 %: {growth:+.1f} %  "
        f"({base:.1f} -> {rss[-1]:.1f} MiB; bar < 10 %, 0 errors)"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rigs", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rate", type=float, default=2.0, help="observes per second per session")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--soak-minutes", type=float, default=None)
    parser.add_argument("--image", type=int, choices=(0, 1), default=1, help="observe's image")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--postgres-url", default=POSTGRES_URL, help="a server's admin URL")
    parser.add_argument("--redis-url", default=REDIS_URL, help="'' for none")
    args = parser.parse_args(argv)
    if args.sessions > args.rigs:
        parser.error("--sessions cannot exceed --rigs (one session per rig)")
    if args.nodes > 1 and (args.store == "sqlite" or not args.redis_url):
        parser.error("several nodes need --store postgres and --redis-url")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    event_loop.run(run(parse_args(argv)))


if __name__ == "__main__":
    main()
