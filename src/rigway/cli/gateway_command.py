"""`rigway gateway`: one gateway node, configured by its settings (environment, or a
TOML file), until SIGTERM or Ctrl+C.

On SIGTERM the node drains (`rigway.gateway.draining`): not ready, the requests in
flight finish, then its host links close and their agents reconnect. A node whose
settings name Redis is one of several: it refuses to start on SQLite or without the
shared key files, and says what to set (`--write-shared-keys DIR` makes those files).

Exit codes: 0 stopped, 1 a failure at start, 2 settings that cannot work (each reason
printed), 10 the port is in use.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from pathlib import Path
from typing import Annotated, Literal

import typer
import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError

from rigway import event_loop
from rigway.cli._output import ExitCode
from rigway.cli.log_format import configure_logging
from rigway.cli.state_dir import make_state_dir_private
from rigway.cli.up import listen_or_exit
from rigway.gateway.app import create_app
from rigway.gateway.deployment import start_problems, write_shared_key_files
from rigway.gateway.services import Services
from rigway.gateway.serving import server_config
from rigway.gateway.settings import GatewaySettings, load_settings

LogLevel = Literal["debug", "info", "warning", "error"]
LogFormat = Literal["text", "json"]
_log = logging.getLogger("rigway.gateway.node")


async def run_node(
    app: FastAPI,
    settings: GatewaySettings,
    listener: socket.socket,
    stop: asyncio.Event,
    *,
    log_level: LogLevel = "info",
    stop_on_signals: bool = False,
) -> bool:
    """Serve `app` on `listener` until `stop` is set (or SIGINT/SIGTERM arrives, with
    `stop_on_signals`), then drain and stop; True when every request in flight finished
    within `settings.shutdown_grace_s`."""
    services: Services = app.state.services
    host, port = listener.getsockname()[:2]
    config = server_config(app, settings, host, port, log_level=log_level, configure_logging=False)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    # uvicorn tells that it listens only through this flag (no event, no callback).
    while not server.started:
        if serving.done():
            serving.result()  # a failure at start, raised here
            return True
        await asyncio.sleep(0.02)
    if stop_on_signals:
        # Only now: uvicorn's own handlers, installed as it starts, would stop at once;
        # these replace them.
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if serving.done():
        stopping.cancel()
        serving.result()
        return True
    _log.info("draining: %d requests in flight", services.requests_in_flight.count)
    drained = await services.requests_in_flight.drain(settings.shutdown_grace_s)
    if not drained:
        _log.warning(
            "stopping with %d requests in flight after %.0f s",
            services.requests_in_flight.count,
            settings.shutdown_grace_s,
        )
    server.should_exit = True
    await serving
    _log.info("stopped")
    return drained


def gateway(
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    config: Annotated[
        Path | None,
        typer.Option(help="A TOML settings file (also RIGWAY_CONFIG); the environment wins."),
    ] = None,
    log_level: Annotated[
        LogLevel, typer.Option(help="debug, info (adds a line per request), warning or error.")
    ] = "info",
    log_format: Annotated[
        LogFormat, typer.Option(help="text, or json (one JSON object per line).")
    ] = "text",
    write_shared_keys: Annotated[
        Path | None,
        typer.Option(
            help=(
                "Make the key files several nodes share in this directory, print the"
                " settings that name them, and exit."
            )
        ),
    ] = None,
) -> None:
    """Run one gateway node from its settings until SIGTERM (drains first)."""
    if write_shared_keys is not None:
        files = write_shared_key_files(write_shared_keys)
        for variable, value in files.environment().items():
            typer.echo(f"{variable}={value}")
        return
    configure_logging(log_level, log_format)
    environ = dict(os.environ)
    if config is not None:
        environ["RIGWAY_CONFIG"] = str(config)
    settings = _settings_or_exit(environ)
    problems = start_problems(settings)
    if problems:
        typer.echo("rigway gateway: this node cannot start as one of several:", err=True)
        for problem in problems:
            typer.echo(f"  {problem}", err=True)
        raise typer.Exit(code=ExitCode.USAGE)
    try:
        make_state_dir_private(settings.state_dir, settings.local_database_file())
    except OSError as exc:
        typer.echo(f"rigway gateway: cannot make {settings.state_dir} private: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    listener = listen_or_exit(host, port, command="rigway gateway")
    with listener:
        app = create_app(settings)
        event_loop.run(
            run_node(
                app, settings, listener, asyncio.Event(), log_level=log_level, stop_on_signals=True
            )
        )


def _settings_or_exit(environ: dict[str, str]) -> GatewaySettings:
    try:
        return load_settings(environ)
    except ValidationError as exc:
        typer.echo("rigway gateway: settings that cannot work:", err=True)
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "settings"
            typer.echo(f"  {where}: {error['msg']}", err=True)
        raise typer.Exit(code=ExitCode.USAGE) from exc
    except (OSError, ValueError) as exc:
        typer.echo(f"rigway gateway: cannot read the settings: {exc}", err=True)
        raise typer.Exit(code=ExitCode.USAGE) from exc
