"""`rigway up`: the one-command local deployment.

A gateway on SQLite, one local owner with an API key, and N local rigs whose agents
pair through the same `/v1/agent/pair` endpoint and connect over the same WebSocket a
remote agent uses. Credentials go to `<state dir>/local.json` (mode 0600), in a state
directory private to its user (`state_dir.py`).

Exit codes: 0 stopped by Ctrl+C or SIGTERM, 1 a failure at start (its reason printed),
2 bad options or an X display the x11 desktop cannot use, 10 the port is in use.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import typer
import uvicorn

from rigway import event_loop
from rigway.agent.pairing import pair
from rigway.cli._output import ExitCode
from rigway.cli.agent_desktop import DESKTOP_OPEN_TIMEOUT_S, open_desktop
from rigway.cli.state_dir import make_state_dir_private
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.app import create_app
from rigway.gateway.errors import ApiError
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.releases.service import release_service_of
from rigway.gateway.services import Services
from rigway.gateway.serving import server_config
from rigway.gateway.settings import GatewaySettings, load_settings

LOCAL_ACCOUNT_NAME = "local"
LOCAL_OWNER_EMAIL = "owner@rigway.local"
DESKTOPS = ("sim", "x11")
LogLevel = Literal["debug", "info", "warning", "error"]
_AGENT_ONLINE_TIMEOUT_S = 30.0
# uvicorn's own default backlog, which it would have used binding the port itself.
_LISTEN_BACKLOG = 2048


@dataclass
class LocalCredentials:
    base_url: str
    signaling_url: str
    api_key: str
    console_token: str | None
    rig_ids: list[str]
    console_url: str
    console_email: str
    console_password: str | None

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(self.__dict__, file, indent=2)
        os.chmod(path, 0o600)


async def ensure_api_key(services: Services, account_id: str, previous: str | None) -> str:
    if previous is not None:
        with contextlib.suppress(ApiError):
            await services.api_keys.authenticate(f"Bearer {previous}")
            return previous
    created = await services.keys.create(account_id, CreateKeyIn(name="rigway up"))
    return created.secret


async def ensure_rig(
    services: Services, account_id: str, base_url: str, token_file: Path, name: str
) -> str:
    """A paired, API-enabled rig whose token sits in `token_file`."""
    previous_token = _read_text(token_file)
    if previous_token is not None:
        rig = await services.rigs.authenticate_rig_token(previous_token.strip())
        if rig is not None:
            await services.rigs.set_api_access(account_id, rig.id, True)
            return rig.id
    code = await services.rigs.create_pairing_code(account_id)
    result = await pair(base_url, code.code, name=name, os=sys.platform, gpu="")
    token_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(result.rig_token)
    await services.rigs.set_api_access(account_id, result.rig_id, True)
    return result.rig_id


def start_agent_process(
    base_url: str, token_file: Path, desktop: str, *, reduce_motion: bool = False
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "rigway.cli.main",
        "agent",
        "run",
        "--gateway",
        base_url,
        "--token-file",
        str(token_file),
        "--backend",
        desktop,
        "--reduce-motion" if reduce_motion else "--no-reduce-motion",
    ]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL)


class AgentStartError(RuntimeError):
    """A local agent did not come online: it exited, or the wait timed out."""


_AGENT_EXIT_POLL_S = 0.1


async def wait_online(
    registry: HostRegistry,
    rig_ids: list[str],
    agents: list[subprocess.Popen[bytes]],
    timeout_s: float,
) -> None:
    """Until every rig's link is up. An agent process that exits first ends the wait at
    once: it will not come back, and its own message (on stderr) says why."""

    async def all_online() -> None:
        for rig_id in rig_ids:
            await registry.wait_online(rig_id)

    online = asyncio.create_task(all_online())
    try:
        async with asyncio.timeout(timeout_s):
            while not online.done():
                exited = [agent for agent in agents if agent.poll() is not None]
                if exited:
                    codes = ", ".join(str(agent.returncode) for agent in exited)
                    raise AgentStartError(
                        f"{len(exited)} local agent(s) exited before coming online "
                        f"(exit code {codes}); their messages are above"
                    )
                await asyncio.wait({online}, timeout=_AGENT_EXIT_POLL_S)
    except TimeoutError:
        raise AgentStartError(
            f"the local agents did not come online within {timeout_s:g} s"
        ) from None
    finally:
        online.cancel()
    online.result()


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _previous(path: Path, field: str) -> str | None:
    try:
        value = json.loads(path.read_text()).get(field)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


async def ensure_owner(
    services: Services, account_id: str, previous_password: str | None
) -> tuple[str | None, str | None]:
    """The local owner's console login and a fresh console token (embedded IdP only)."""
    identity = services.identity
    if identity is None:
        return None, None
    if not await identity.user_exists(LOCAL_OWNER_EMAIL):
        previous_password = secrets.token_urlsafe(12)
        await identity.create_user(account_id, LOCAL_OWNER_EMAIL, previous_password)
    if previous_password is None:
        return None, None
    with contextlib.suppress(ApiError):
        token = await identity.sign_in(LOCAL_OWNER_EMAIL, previous_password, client_address=None)
        return previous_password, token
    return None, None


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port` for the gateway; OSError when it cannot be
    had (errno EADDRINUSE: another process listens there).

    Bound here rather than by uvicorn, which reports a taken port as a raw log line and
    exit 1: the port is ours from this check on, with no window between a probe and
    the serve for another process to take it.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    listener = socket.socket(family, kind, proto)
    try:
        if sys.platform != "win32":
            # A restart may find the last run's connections in TIME_WAIT: no conflict.
            # (On Windows the option would let two servers share the port.)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(_LISTEN_BACKLOG)
    except OSError:
        listener.close()
        raise
    return listener


def listen_or_exit(host: str, port: int, command: str = "rigway up") -> socket.socket:
    """`listening_socket`, or one line and exit 10 (port in use), 2 (an address that is
    not this machine's) or 1 (anything else, such as a port below 1024 without rights)."""
    try:
        return listening_socket(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            typer.echo(
                f"{command}: port {port} on {host} is in use by another process (another "
                f"`{command}`?): stop it, or pass --port",
                err=True,
            )
            raise typer.Exit(code=ExitCode.PORT_IN_USE) from exc
        is_bad_host = isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL
        reason = exc.strerror or str(exc)
        typer.echo(f"{command}: cannot listen on {host}:{port}: {reason}", err=True)
        raise typer.Exit(code=2 if is_bad_host else 1) from exc


async def run_local(
    settings: GatewaySettings,
    host: str,
    port: int,
    listener: socket.socket,
    rigs: int,
    desktop: str,
    log_level: LogLevel = "warning",
    *,
    reduce_motion: bool = False,
) -> None:
    app = create_app(settings)
    services: Services = app.state.services
    server = uvicorn.Server(server_config(app, settings, host, port, log_level=log_level))
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    agents: list[subprocess.Popen[bytes]] = []
    try:
        while not server.started:
            if serving.done():
                raise typer.Exit(code=1)
            await asyncio.sleep(0.02)
        base_url = f"http://{host}:{port}"
        await _prepare_agent_release(services)
        account_id = await services.accounts.first_named(LOCAL_ACCOUNT_NAME)
        if account_id is None:
            account_id = await services.accounts.create(LOCAL_ACCOUNT_NAME)
        local_json = settings.state_dir / "local.json"
        api_key = await ensure_api_key(services, account_id, _previous(local_json, "api_key"))
        password, console_token = await ensure_owner(
            services, account_id, _previous(local_json, "console_password")
        )
        rig_ids = []
        for index in range(rigs):
            token_file = settings.state_dir / "agents" / f"rig-{index + 1}.token"
            rig_ids.append(
                await ensure_rig(services, account_id, base_url, token_file, f"local-{index + 1}")
            )
            agents.append(
                start_agent_process(base_url, token_file, desktop, reduce_motion=reduce_motion)
            )
        try:
            await wait_online(services.registry, rig_ids, agents, _AGENT_ONLINE_TIMEOUT_S)
        except AgentStartError as exc:
            typer.echo(f"rigway up: {exc}", err=True)
            raise typer.Exit(code=1) from exc
        credentials = LocalCredentials(
            base_url=base_url,
            signaling_url=base_url.replace("http", "ws", 1) + "/v1/stream/signal",
            api_key=api_key,
            console_token=console_token,
            rig_ids=rig_ids,
            console_url=f"{base_url}/console",
            console_email=LOCAL_OWNER_EMAIL,
            console_password=password,
        )
        credentials.write(local_json)
        _print_summary(credentials, local_json, desktop)
        await _wait_for_stop_signal(serving)
    finally:
        for agent in agents:
            agent.terminate()
        for agent in agents:
            with contextlib.suppress(subprocess.TimeoutExpired):
                agent.wait(timeout=10)
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await serving


async def _prepare_agent_release(services: Services) -> None:
    """Pack the built-in agent release and make its signing key now: the first agent's
    ask is then quick, and a problem shows at start. Local use goes on without it."""
    try:
        await asyncio.to_thread(release_service_of(services).prepare)
    except (OSError, ValueError) as exc:
        typer.echo(f"rigway up: agents cannot update from this gateway: {exc}", err=True)


async def _wait_for_stop_signal(serving: asyncio.Task[None]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait({waiter, serving}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()


def _print_summary(credentials: LocalCredentials, path: Path, desktop: str) -> None:
    typer.echo(f"Rigway is up at {credentials.base_url} ({desktop} desktop)")
    typer.echo(f"  rigs:        {', '.join(credentials.rig_ids)}")
    typer.echo(f"  API key:     {credentials.api_key[:20]}… (full key in {path})")
    typer.echo(f"  API docs:    {credentials.base_url}/docs")
    typer.echo(f"  console:     {credentials.console_url} as {credentials.console_email}")
    typer.echo("Press Ctrl+C to stop.", err=False)
    sys.stdout.flush()


def _check_display(display: str | None) -> None:
    """Exit 2 with the reason unless the x11 agents will be able to open `display`.

    Checked before the stack starts: an agent that cannot open its display exits at
    once, and `up` would otherwise wait out the agents' online timeout for nothing.
    """
    if not display:
        typer.echo("rigway up --desktop x11 needs an X display: DISPLAY is not set.", err=True)
        raise typer.Exit(code=2)
    try:
        probe = open_desktop(
            "x11", display=display, width=0, height=0, timeout_s=DESKTOP_OPEN_TIMEOUT_S
        )
    except (ValueError, OSError, RuntimeError) as exc:
        typer.echo(f"rigway up --desktop x11 cannot use DISPLAY={display}: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    probe.close()


def up(
    port: Annotated[int, typer.Option(help="Gateway port.")] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    state_dir: Annotated[
        Path, typer.Option(help="Where the database and credentials live.")
    ] = Path(".rigway"),
    rigs: Annotated[int, typer.Option(min=0, max=16, help="Local rigs to start.")] = 1,
    desktop: Annotated[
        str, typer.Option(help="sim: an in-memory desktop; x11: the X display in DISPLAY.")
    ] = "sim",
    log_level: Annotated[
        LogLevel,
        typer.Option(help="debug, info (adds a line per request), warning or error."),
    ] = "warning",
    reduce_motion: Annotated[
        bool,
        typer.Option(
            help="The local agents turn the desktop's UI animations off while a session "
            "is live (`rigway agent run --reduce-motion`)."
        ),
    ] = False,
) -> None:
    """Run the gateway with local rigs until interrupted."""
    if desktop not in DESKTOPS:
        typer.echo(f"--desktop must be one of {', '.join(DESKTOPS)}", err=True)
        raise typer.Exit(code=2)
    if desktop == "x11":
        _check_display(os.environ.get("DISPLAY"))
    # The gateway's own loggers, beside uvicorn's (which server_config sets).
    logging.basicConfig(level=log_level.upper(), format="%(levelname)-9s %(name)s: %(message)s")
    listener = listen_or_exit(host, port)
    with listener:
        settings = load_settings(
            os.environ, state_dir=state_dir, public_base_url=f"http://{host}:{port}"
        )
        try:
            make_state_dir_private(settings.state_dir, settings.local_database_file())
        except OSError as exc:
            typer.echo(f"rigway up: cannot make {settings.state_dir} private: {exc}", err=True)
            raise typer.Exit(code=1) from exc
        event_loop.run(
            run_local(
                settings,
                host,
                port,
                listener,
                rigs,
                desktop,
                log_level,
                reduce_motion=reduce_motion,
            )
        )
