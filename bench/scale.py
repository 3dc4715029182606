"""Gateway nodes at scale: capacity, forwarding's cost, failover, and a soak.

The bench starts everything itself: a PostgreSQL database of its own per part on
`--postgres-url`'s server (created, then dropped), or a SQLite file with `--store
sqlite` (capacity and soak on one node only); gateway nodes (`rigway gateway`, each its
own process, on that store and on Redis at `--redis-url`, sharing key files); a rig
swarm (`python -m rigway.agent.swarm`, one process) linking rigs to the nodes' URLs;
and, in this process, the load generator (uvloop; an agent per session, each on a
keep-alive connection of its own through a lean client, bench/lean_http.py). `--parts`
picks what runs (default all four), all printed in one run:

- capacity: for each of `--nodes` (default 1 and 3 nodes, a run each), `--rigs` rigs,
  `--sessions` sessions spread over the nodes' URLs, each observing `--rate` times a
  second on a fixed schedule for `--seconds` seconds. It prints observe latency
  (p50/p95/p99), errors by status, the requests per second achieved, the gateway
  processes' CPU per request, their resident memory before and after, and how late the
  load generator started its requests (its own CPU beside: a late, busy generator means
  the figures are its own, not the gateway's).
- forwarding: two nodes, the rigs linked to the first; screenshots one at a time
  through the first (direct) and the second (forwarded to the first), alternating,
  `--forward-requests` each, for three cases: the swarm's canned JPEG (the host's
  cached one, a few KiB), a real agent's (`rigway agent run --backend sim`, a
  1920x1080 desktop) served from its cache, and the same encoded afresh each time.
  p50/p95/p99 of each and the difference (the bar: forwarding adds at most 1 ms p50).
- failover: `--failover-nodes` nodes, `--failover-sessions` swarm rigs with a session
  each; `--kills` times, the node holding the most rigs is killed (SIGKILL) and up to
  `--failover-probes` of its sessions take screenshots through a live node until one
  succeeds (owner killed -> rig re-linked -> first good screenshot), then the node
  starts again at its address. p50/p95 of that time (the bar: 2 s p50), the sessions
  lost, and after every session is ended, `session.ended` events per ended session
  (the bar: exactly 1.00).
- soak: the capacity load on `--soak-nodes` nodes (1) for `--soak-seconds` (600 by
  default), printing each step's errors and resident memory, then the errors and the
  memory growth over the last 80 % of the run, 8 of 10 minutes (the bar: 0 errors,
  growth under 10 %).

Figures, never pass/fail. A node serves the sessions of the rigs it holds; with several
nodes a session whose rig is held by another node needs forwarding between nodes.

Run: .venv/bin/python -m bench.scale          (capacity 500 rigs/200 sessions/2/s/60 s
                                               on 1 and 3 nodes, forwarding, failover
                                               over 10 kills, a 10-minute soak)
     .venv/bin/python -m bench.scale --parts capacity --rigs 50 --sessions 20 --seconds 10
     .venv/bin/python -m bench.scale --parts forwarding,failover
     .venv/bin/python -m bench.scale --parts soak --sessions 200 --soak-seconds 600
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
from urllib.parse import urlsplit

import httpx2
import psutil
from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bench.lean_http import AsyncLeanConnection
from bench.local_stack import BENCH_QUOTAS
from bench.stats import p50, p95
from rigway import event_loop
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.app import build_services
from rigway.gateway.clock import SystemClock
from rigway.gateway.cluster.ownership import RigOwnership, ownership_for
from rigway.gateway.db.models import Session, WebhookOutbox
from rigway.gateway.deployment import write_shared_key_files
from rigway.gateway.settings import GatewaySettings

POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/0"
START_TIMEOUT_S = 60.0
# Requests that have not answered in this long count as errors (status "timeout").
REQUEST_TIMEOUT_S = 10.0


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
    port: int
    process: asyncio.subprocess.Process
    stats: psutil.Process

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


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


async def start_node(deployment: Deployment, name: str, port: int) -> Node:
    """`rigway gateway` as node `name` on `port` (again after a kill: the same address,
    a new node id), once ready."""
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
    node = Node(name, port, process, psutil.Process(process.pid))
    await _until_ready(node)
    return node


@contextlib.asynccontextmanager
async def gateway_nodes(deployment: Deployment, count: int) -> AsyncIterator[list[Node]]:
    """`count` nodes (`rigway gateway`), ready; stopped with SIGTERM (a drain) after. The
    list is the caller's: a node restarted in it is stopped too."""
    nodes: list[Node] = []
    try:
        # The first applies the migrations; the others start together after it.
        nodes.append(await start_node(deployment, "node-1", _free_port()))

        async def start_one(index: int) -> None:
            # Kept as each is ready, so that a failing start stops those already started.
            nodes.append(await start_node(deployment, f"node-{index + 1}", _free_port()))

        await asyncio.gather(*(start_one(index) for index in range(1, count)))
        nodes.sort(key=lambda node: int(node.name.removeprefix("node-")))
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


@dataclass
class ObservingAgent:
    """A session's agent: its own keep-alive connection to the node it observes through
    (a lean client, so that the load generator takes as little as it can of the CPU it
    shares with the nodes), and its session's observe path."""

    connection: AsyncLeanConnection
    observe_path: str

    @classmethod
    def of(cls, session_url: str, api_key: str) -> ObservingAgent:
        parts = urlsplit(session_url)
        connection = AsyncLeanConnection(
            f"{parts.scheme}://{parts.netloc}", {"Authorization": f"Bearer {api_key}"}
        )
        return cls(connection, f"{parts.path}/observe")


async def observe_for(
    agents: Sequence[ObservingAgent],
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

    async def observe_one(agent: ObservingAgent, target: str) -> None:
        # perf_counter, not loop.time(): uvloop's clock counts whole milliseconds.
        started = time.perf_counter()
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                answer = await agent.connection.get(target)
            status = str(answer.status_code)
        except TimeoutError:
            status = "timeout"
        except OSError as exc:
            status = type(exc).__name__
        load.statuses[status] += 1
        if status == "200":
            load.latencies_ms.append((time.perf_counter() - started) * 1000)

    async def session_loop(agent: ObservingAgent) -> None:
        target = f"{agent.observe_path}?image={image}"
        due_at = time.perf_counter() + rng.uniform(0, interval_s)
        while due_at < end_at:
            delay_s = due_at - time.perf_counter()
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            load.late_ms.append(max(0.0, -delay_s) * 1000)
            await observe_one(agent, target)
            due_at += interval_s
            behind_s = time.perf_counter() - due_at
            if behind_s > 1.0:
                due_at += (behind_s // interval_s) * interval_s

    await asyncio.gather(*(session_loop(agent) for agent in agents))


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
    parts = args.parts
    with _scratch_directory() as directory:
        runs = [("capacity", count) for count in args.nodes] if "capacity" in parts else []
        if "soak" in parts:
            runs.append(("soak", args.soak_nodes))
        for part, node_count in runs:
            place = directory / f"{part}-{node_count}"
            place.mkdir()
            async with bench_database(args.store, args.postgres_url, directory) as database_url:
                await run_capacity(args, place, database_url, node_count, part)
        # Several nodes: always PostgreSQL and Redis.
        for part, run_part in (("forwarding", run_forwarding), ("failover", run_failover)):
            if part in parts:
                (directory / part).mkdir()
                async with bench_database("postgres", args.postgres_url, directory) as url:
                    await run_part(args, directory / part, url)


async def run_capacity(
    args: argparse.Namespace, directory: Path, database_url: str, node_count: int, part: str
) -> None:
    """The load on `node_count` nodes: the capacity run, or the soak (`part`)."""
    # A node on SQLite is a node alone: Redis is for several.
    redis_url = args.redis_url if args.store == "postgres" and args.redis_url else None
    deployment = Deployment.make(directory, database_url, redis_url)
    started = time.perf_counter()
    async with gateway_nodes(deployment, node_count) as nodes:
        print(f"set-up: nodes ready in {time.perf_counter() - started:.1f} s", flush=True)
        urls = [node.base_url for node in nodes]
        started = time.perf_counter()
        seeded = await seed(deployment, args.rigs)
        print(f"set-up: {args.rigs} rigs paired in {time.perf_counter() - started:.1f} s")
        rss_unlinked = _rss_mib(nodes)
        started = time.perf_counter()
        async with rig_swarm(directory, urls, seeded.rig_tokens) as swarm:
            print(f"set-up: rigs linked in {time.perf_counter() - started:.1f} s")
            await _load(args, part, nodes, urls, seeded, swarm, rss_unlinked, redis_url)


async def _load(
    args: argparse.Namespace,
    part: str,
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
    await asyncio.sleep(args.idle_seconds)
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
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {seeded.api_key}"},
        timeout=REQUEST_TIMEOUT_S,
        limits=httpx2.Limits(max_connections=16),
        trust_env=False,
    ) as client:
        sessions = await open_sessions(client, urls, seeded.rig_ids, args.sessions)
        agents = [ObservingAgent.of(session, seeded.api_key) for session in sessions]
        try:
            # A few seconds' warm-up: connections opened, caches filled.
            await observe_for(agents, args.rate, min(3.0, args.seconds), args.image, Load())
            rss_before = _rss_mib(nodes)
            print(f"  gateway resident memory: {_mib(rss_before)} linked, sessions open")
            if part == "capacity":
                load = Load()
                before = Window.now(nodes, swarm)
                await observe_for(agents, args.rate, args.seconds, args.image, load)
                after = Window.now(nodes, swarm)
                print_load(f"capacity: {args.seconds:g} s", load, before, after, idle_cpu)
                print(f"  gateway resident memory: {_mib(_rss_mib(nodes))} after")
                print(f"machine: load average {os.getloadavg()[0]:.2f} (1 min) at the end")
            else:
                await _soak(args, nodes, swarm, agents, idle_cpu)
        finally:
            for agent in agents:
                agent.connection.close()
            await end_sessions(client, sessions)


async def _soak(
    args: argparse.Namespace,
    nodes: Sequence[Node],
    swarm: psutil.Process,
    agents: Sequence[ObservingAgent],
    idle_cpu: Sequence[float],
) -> None:
    seconds = args.soak_seconds
    step_s = min(60.0, seconds / 5)
    steps = max(1, round(seconds / step_s))
    total = Load()
    rss: list[float] = [sum(_rss_mib(nodes))]
    first = Window.now(nodes, swarm)
    for step in range(steps):
        load = Load()
        await observe_for(agents, args.rate, step_s, args.image, load)
        rss.append(sum(_rss_mib(nodes)))
        total.latencies_ms += load.latencies_ms
        total.statuses.update(load.statuses)
        total.late_ms += load.late_ms
        p99_ms = p99(load.latencies_ms) if load.latencies_ms else float("nan")
        print(
            f"  {(step + 1) * step_s:6.0f} s  errors {load.errors:4d}  "
            f"p99 {p99_ms:7.2f} ms  gateway resident {rss[-1]:.1f} MiB"
        )
    print_load(f"soak: {seconds:g} s", total, first, Window.now(nodes, swarm), idle_cpu)
    # The last 80 % of the run (8 of 10 minutes): from the sample nearest its start.
    first_counted = round(0.2 * steps)
    base = rss[first_counted]
    growth = (rss[-1] - base) / base * 100
    verdict = "met" if growth < SOAK_GROWTH_BAR_PERCENT and total.errors == 0 else "NOT met"
    print(
        f"  resident memory growth over the last {(steps - first_counted) * step_s:.0f} s "
        f"(80 %): {growth:+.1f} %  ({base:.1f} -> {rss[-1]:.1f} MiB; errors {total.errors}; "
        f"bar < {SOAK_GROWTH_BAR_PERCENT:g} % and 0 errors: {verdict})"
    )


# ---- forwarded against direct ------------------------------------------------------------

# The bar: forwarding adds at most this to a screenshot's median.
FORWARD_BAR_MS = 1.0
# The real agent's desktop (the sim's 1920x1080 window), at the API's default quality.
REAL_QUALITY = 85


@contextlib.asynccontextmanager
async def real_agent(directory: Path, gateway_url: str, rig_token: str) -> AsyncIterator[None]:
    """`rigway agent run --backend sim` linked to `gateway_url` alone: a real agent,
    whose screenshots are real JPEGs of a 1920x1080 desktop (the swarm's are a small
    canned one)."""
    home = directory / "real-agent"
    home.mkdir()
    token_file = home / "rig-token"
    token_file.write_text(rig_token)
    token_file.chmod(0o600)
    command = [
        sys.executable, "-m", "rigway.cli.main", "agent", "run", "--backend", "sim",
        "--gateway", gateway_url, "--token-file", str(token_file), "--no-update",
        "--state-dir", str(home),
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command, env=_environment({}), stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield
    finally:
        await _stop(process)


async def _until_linked(client: httpx2.AsyncClient, base_url: str, rig_id: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        answer = await client.get(f"{base_url}/v1/rigs/{rig_id}")
        if answer.status_code == 200 and answer.json().get("online"):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"rig {rig_id} not linked in {START_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.1)


async def _open_session(client: httpx2.AsyncClient, base_url: str, rig_id: str) -> str:
    answer = await client.post(f"{base_url}/v1/sessions", json={"rig_id": rig_id})
    if answer.status_code != 201:
        raise RuntimeError(f"session on {rig_id}: {answer.status_code} {answer.text}")
    session_id: str = answer.json()["session_id"]
    return session_id


@dataclass
class Case:
    title: str
    session_id: str
    # Each request's query, in turn: one quality alternating with another makes the
    # host encode afresh every time (it serves its last JPEG only for the same request).
    queries: tuple[dict[str, int], ...]


async def _screenshot_pairs(
    client: httpx2.AsyncClient, direct: str, forwarded: str, case: Case, count: int
) -> tuple[list[float], list[float], list[int]]:
    """`count` screenshots through each node, one at a time, alternating (direct then
    forwarded, then forwarded then direct) so a slow moment of the machine weighs on both
    alike: their latencies, and the JPEGs' sizes."""
    samples: dict[str, list[float]] = {direct: [], forwarded: []}
    sizes: list[int] = []
    for index in range(count):
        order = (direct, forwarded) if index % 2 == 0 else (forwarded, direct)
        for position, base in enumerate(order):
            # Request by request (not pair by pair): no two in a row ask the same.
            params = case.queries[(2 * index + position) % len(case.queries)]
            started = time.perf_counter()
            answer = await client.get(
                f"{base}/v1/sessions/{case.session_id}/screenshot", params=params
            )
            elapsed_ms = (time.perf_counter() - started) * 1000
            if answer.status_code != 200:
                raise RuntimeError(f"screenshot through {base}: {answer.status_code} {answer.text}")
            samples[base].append(elapsed_ms)
            sizes.append(len(answer.content))
    return samples[direct], samples[forwarded], sizes


async def run_forwarding(args: argparse.Namespace, directory: Path, database_url: str) -> None:
    deployment = Deployment.make(directory, database_url, args.redis_url)
    async with gateway_nodes(deployment, 2) as nodes:
        holder, edge = nodes
        seeded = await seed(deployment, 2)
        swarm_rig, agent_rig = seeded.rig_ids
        async with (
            # The agent first: it boots while the swarm links (it is waited for after).
            real_agent(directory, holder.base_url, seeded.rig_tokens[1]),
            rig_swarm(directory, [holder.base_url], seeded.rig_tokens[:1]),
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {seeded.api_key}"},
                timeout=REQUEST_TIMEOUT_S,
                trust_env=False,
            ) as client,
        ):
            await _until_linked(client, holder.base_url, agent_rig)
            canned = await _open_session(client, holder.base_url, swarm_rig)
            real = await _open_session(client, holder.base_url, agent_rig)
            cases = [
                Case("cached (swarm rig, canned JPEG)", canned, ({},)),
                Case("real JPEG, host cached (sim 1920x1080)", real, ({},)),
                Case(
                    "real JPEG, host encodes each (sim 1920x1080)",
                    real,
                    ({"quality": REAL_QUALITY}, {"quality": REAL_QUALITY - 1}),
                ),
            ]
            print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min)")
            print(
                "forwarded against direct: 2 nodes on PostgreSQL, Redis; the rigs linked to "
                f"node-1; screenshots one at a time, {args.forward_requests} through each "
                "node, alternating (direct: node-1; forwarded: node-2 -> node-1)"
            )
            try:
                for case in cases:
                    # Warm-up: connections open, the peer link up, the host's JPEG cached.
                    await _screenshot_pairs(client, holder.base_url, edge.base_url, case, 10)
                    direct, forwarded, sizes = await _screenshot_pairs(
                        client, holder.base_url, edge.base_url, case, args.forward_requests
                    )
                    _print_forwarding(case.title, direct, forwarded, sizes)
            finally:
                await end_sessions(
                    client, [f"{holder.base_url}/v1/sessions/{sid}" for sid in (canned, real)]
                )


def _print_forwarding(
    title: str, direct: list[float], forwarded: list[float], sizes: list[int]
) -> None:
    print(f"  {title}, JPEG {p50([float(size) for size in sizes]) / 1024:.1f} KiB")
    for label, samples in (("direct", direct), ("forwarded", forwarded)):
        print(
            f"    {label:<10} p50 {p50(samples):7.2f} ms   p95 {p95(samples):7.2f} ms   "
            f"p99 {p99(samples):7.2f} ms   n={len(samples)}"
        )
    added = p50(forwarded) - p50(direct)
    verdict = "met" if added <= FORWARD_BAR_MS else "NOT met"
    print(
        f"    forwarding adds p50 {added:+.2f} ms   p95 {p95(forwarded) - p95(direct):+.2f} ms"
        f"   p99 {p99(forwarded) - p99(direct):+.2f} ms   (bar +<= {FORWARD_BAR_MS:g} ms p50: "
        f"{verdict})"
    )


# ---- failover -----------------------------------------------------------------------------

# The bar: the first good screenshot this soon (median) after the owner node is killed.
FAILOVER_BAR_S = 2.0
FAILOVER_TIMEOUT_S = 30.0
RETRY_INTERVAL_S = 0.05


@dataclass
class Failover:
    recovered_s: list[float] = field(default_factory=list)
    per_kill_p50_s: list[float] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    gave_up: int = 0


async def _holders(ownership: RigOwnership, rig_ids: Sequence[str]) -> dict[str, str | None]:
    urls = await asyncio.gather(*(ownership.holder_url(rig_id) for rig_id in rig_ids))
    return dict(zip(rig_ids, urls, strict=True))


async def _until_all_held(
    ownership: RigOwnership, rig_ids: Sequence[str], live_urls: set[str]
) -> dict[str, str | None]:
    """Until a live node holds every rig (after a kill, the rigs it held re-link)."""
    deadline = time.monotonic() + FAILOVER_TIMEOUT_S
    while True:
        holders = await _holders(ownership, rig_ids)
        if all(url in live_urls for url in holders.values()):
            return holders
        if time.monotonic() > deadline:
            raise RuntimeError("rigs not re-linked to a live node in time")
        await asyncio.sleep(0.1)


async def _first_good_screenshot(
    client: httpx2.AsyncClient, base_url: str, session_id: str, killed_at: float, run: Failover
) -> float | None:
    """Seconds from the kill to a 200 screenshot through `base_url` (a live node),
    retrying as a client does; None when the session ended or it took too long."""
    while time.perf_counter() - killed_at < FAILOVER_TIMEOUT_S:
        try:
            answer = await client.get(f"{base_url}/v1/sessions/{session_id}/screenshot")
            status = str(answer.status_code)
        except httpx2.HTTPError as exc:
            status = type(exc).__name__
        if status == "200":
            return time.perf_counter() - killed_at
        run.statuses[status] += 1
        if status == "410":
            return None  # the session ended: lost
        await asyncio.sleep(RETRY_INTERVAL_S)
    return None


async def run_failover(args: argparse.Namespace, directory: Path, database_url: str) -> None:
    deployment = Deployment.make(directory, database_url, args.redis_url)
    async with gateway_nodes(deployment, args.failover_nodes) as nodes:
        seeded = await seed(deployment, args.failover_sessions)
        urls = [node.base_url for node in nodes]
        ownership = ownership_for(args.redis_url, "http://127.0.0.1:1")
        async with (
            rig_swarm(directory, urls, seeded.rig_tokens),
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {seeded.api_key}"},
                timeout=5.0,
                limits=httpx2.Limits(max_connections=args.failover_sessions * 2),
                trust_env=False,
            ) as client,
        ):
            sessions = dict(
                zip(
                    seeded.rig_ids,
                    [
                        url.rsplit("/", 1)[1]
                        for url in await open_sessions(
                            client, urls, seeded.rig_ids, args.failover_sessions
                        )
                    ],
                    strict=True,
                )
            )
            print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min)")
            print(
                f"failover: {len(nodes)} nodes, {len(sessions)} swarm rigs each with a session; "
                f"{args.kills} times the node holding the most rigs is killed (SIGKILL), and "
                f"up to {args.failover_probes} of its sessions take screenshots through a "
                "live node until one succeeds; the node then starts again at its address"
            )
            run = Failover()
            try:
                for kill in range(args.kills):
                    await _kill_one(
                        args, deployment, nodes, ownership, client, sessions, run,
                        restart=kill + 1 < args.kills,
                    )  # fmt: skip
                    print(
                        f"  kill {kill + 1:2d}: {run.moved[-1]:3d} sessions moved, first good "
                        f"screenshot p50 {run.per_kill_p50_s[-1]:.2f} s",
                        flush=True,
                    )
                live = [node.base_url for node in nodes if node.process.returncode is None]
                # Every rig of the last node killed re-linked to a live one first.
                await _until_all_held(ownership, list(sessions), set(live))
                await _print_failover(run, client, live[0], sessions, deployment)
            finally:
                await ownership.stop()


async def _kill_one(
    args: argparse.Namespace,
    deployment: Deployment,
    nodes: list[Node],
    ownership: RigOwnership,
    client: httpx2.AsyncClient,
    sessions: dict[str, str],
    run: Failover,
    *,
    restart: bool,
) -> None:
    """Kill the node holding the most rigs and time its sessions' recovery; `restart`:
    start it again at its address (not after the last kill: the run is over)."""
    live_urls = {node.base_url for node in nodes}
    holders = await _until_all_held(ownership, list(sessions), live_urls)
    victim_url = Counter(holders.values()).most_common(1)[0][0]
    index, victim = next((i, n) for i, n in enumerate(nodes) if n.base_url == victim_url)
    survivors = [node.base_url for node in nodes if node is not victim]
    moved = [rig_id for rig_id, url in holders.items() if url == victim_url]
    probes = moved[: args.failover_probes]
    victim.process.kill()
    killed_at = time.perf_counter()
    recovered = await asyncio.gather(
        *(
            _first_good_screenshot(
                client, survivors[i % len(survivors)], sessions[rig_id], killed_at, run
            )
            for i, rig_id in enumerate(probes)
        )
    )
    await victim.process.wait()
    times = [seconds for seconds in recovered if seconds is not None]
    run.gave_up += len(recovered) - len(times)
    run.recovered_s += times
    run.per_kill_p50_s.append(p50(times) if times else float("nan"))
    run.moved.append(len(moved))
    if restart:
        nodes[index] = await start_node(deployment, victim.name, victim.port)


async def _print_failover(
    run: Failover,
    client: httpx2.AsyncClient,
    base_url: str,
    sessions: dict[str, str],
    deployment: Deployment,
) -> None:
    samples_ms = [seconds * 1000 for seconds in run.recovered_s]
    if samples_ms:
        verdict = "met" if p50(samples_ms) <= FAILOVER_BAR_S * 1000 else "NOT met"
        print(
            f"  first good screenshot after the kill  p50 {p50(samples_ms) / 1000:.2f} s   "
            f"p95 {p95(samples_ms) / 1000:.2f} s   max {max(samples_ms) / 1000:.2f} s   "
            f"n={len(samples_ms)}  (bar <= {FAILOVER_BAR_S:g} s p50: {verdict})"
        )
    print(f"  per kill p50: {' '.join(f'{s:.2f}' for s in run.per_kill_p50_s)} s")
    print(
        f"  refused while moving (retried): {dict(sorted(run.statuses.items())) or 'none'}; "
        f"probes that never got a screenshot: {run.gave_up}"
    )
    statuses = await asyncio.gather(
        *(client.get(f"{base_url}/v1/sessions/{sid}") for sid in sessions.values())
    )
    lost = [
        sid
        for sid, answer in zip(sessions.values(), statuses, strict=True)
        if answer.status_code != 200 or answer.json()["status"] != "active"
    ]
    print(f"  sessions lost: {len(lost)} of {len(sessions)}")
    await end_sessions(client, [f"{base_url}/v1/sessions/{sid}" for sid in sessions.values()])
    counts = await _ended_events(deployment.database_url, list(sessions.values()))
    ended = len(counts)
    events = sum(counts.values())
    not_once = {sid: n for sid, n in counts.items() if n != 1}
    print(
        f"  session.ended per ended session: {events / ended if ended else float('nan'):.2f} "
        f"({events} events, {ended} sessions ended; not exactly once: {len(not_once)})"
    )


async def _ended_events(database_url: str, session_ids: list[str]) -> dict[str, int]:
    """Of `session_ids`, those ended in the store: how many `session.ended` events the
    outbox holds for each (exactly once: 1)."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            ended = await connection.scalars(
                select(Session.id).where(Session.id.in_(session_ids), Session.status == "ended")
            )
            ended_ids = list(ended)
            payloads = await connection.scalars(
                select(WebhookOutbox.payload).where(WebhookOutbox.event == "session.ended")
            )
            counts = Counter(str(payload.get("session_id")) for payload in payloads)
    finally:
        await engine.dispose()
    return {session_id: counts[session_id] for session_id in ended_ids}


PARTS = ("capacity", "forwarding", "failover", "soak")
DEFAULT_PARTS = "capacity,forwarding,failover,soak"
SOAK_GROWTH_BAR_PERCENT = 10.0


def _parts(text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in parts if part not in PARTS]
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"parts are among {', '.join(PARTS)}; got {text!r}")
    return parts


def _node_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(count) for count in text.split(","))
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"node counts are whole numbers >= 1; got {text!r}")
    return counts


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--parts", type=_parts, default=None,
        help=f"comma-separated, among {', '.join(PARTS)} (default {DEFAULT_PARTS}; "
        "soak alone with --soak-seconds)",
    )  # fmt: skip
    capacity = parser.add_argument_group("capacity and soak")
    capacity.add_argument("--rigs", type=int, default=500)
    capacity.add_argument("--sessions", type=int, default=200)
    capacity.add_argument("--rate", type=float, default=2.0, help="observes per second per session")
    capacity.add_argument("--seconds", type=float, default=60.0)
    capacity.add_argument(
        "--soak-seconds", type=float, default=None,
        help="the soak's length (default 600); without --parts, the soak alone",
    )  # fmt: skip
    capacity.add_argument(
        "--idle-seconds", type=float, default=5.0, help="the window measuring idle links' CPU"
    )
    capacity.add_argument("--image", type=int, choices=(0, 1), default=1, help="observe's image")
    capacity.add_argument(
        "--nodes", type=_node_counts, default=(1, 3),
        help="the capacity run's node counts, comma-separated, each a run (default 1,3)",
    )  # fmt: skip
    capacity.add_argument("--soak-nodes", type=int, default=1, help="the soak's node count")
    capacity.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    forwarding = parser.add_argument_group("forwarded against direct")
    forwarding.add_argument(
        "--forward-requests", type=int, default=500, help="screenshots through each node, a case"
    )
    failover = parser.add_argument_group("failover")
    failover.add_argument("--kills", type=int, default=10)
    failover.add_argument("--failover-nodes", type=int, default=2)
    failover.add_argument(
        "--failover-sessions", type=int, default=100, help="swarm rigs, a session each"
    )
    failover.add_argument(
        "--failover-probes", type=int, default=10,
        help="sessions of the killed node timed to their first good screenshot, a kill",
    )  # fmt: skip
    parser.add_argument("--postgres-url", default=POSTGRES_URL, help="a server's admin URL")
    parser.add_argument("--redis-url", default=REDIS_URL, help="'' for none")
    args = parser.parse_args(argv)
    if args.parts is None:
        args.parts = ["soak"] if args.soak_seconds is not None else _parts(DEFAULT_PARTS)
    if args.soak_seconds is None:
        args.soak_seconds = 600.0
    if args.sessions > args.rigs:
        parser.error("--sessions cannot exceed --rigs (one session per rig)")
    wants_several = {"forwarding", "failover"} & set(args.parts)
    counts = (args.nodes if "capacity" in args.parts else ()) + (
        (args.soak_nodes,) if "soak" in args.parts else ()
    )
    most_nodes = max(counts, default=1)
    if (most_nodes > 1 or wants_several) and not args.redis_url:
        parser.error("several nodes (--nodes, --soak-nodes, forwarding, failover) need --redis-url")
    if most_nodes > 1 and args.store == "sqlite":
        parser.error("several nodes need --store postgres")
    if args.failover_nodes < 2:
        parser.error("--failover-nodes: at least 2 (one is killed)")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    event_loop.run(run(parse_args(argv)))


if __name__ == "__main__":
    main()
