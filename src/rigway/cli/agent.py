"""`rigway agent`: pair this machine with an account and run the host agent."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import sys
from pathlib import Path
from typing import Annotated

import typer

agent_app = typer.Typer(help="The host agent that runs on a rig.", no_args_is_help=True)

BACKENDS = ("sim", "x11", "windows")


def _write_token(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token)


@agent_app.command("pair")
def pair_command(
    gateway: Annotated[str, typer.Option(help="Gateway base URL, e.g. https://rigway.example")],
    code: Annotated[str, typer.Option(help="One-time pairing code from the console.")],
    token_file: Annotated[Path, typer.Option(help="Where to keep the rig token (mode 0600).")],
    name: Annotated[str, typer.Option(help="The rig's name.")] = platform.node() or "rig",
) -> None:
    """Trade a pairing code for this rig's token."""
    from rigway.agent.pairing import PairingError, pair

    try:
        result = asyncio.run(pair(gateway, code, name=name, os=_os_name(), gpu=""))
    except PairingError as exc:
        typer.echo(f"pairing failed: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    _write_token(token_file, result.rig_token)
    typer.echo(f"paired as {result.rig_id}; token saved to {token_file}")


@agent_app.command("run")
def run_command(
    gateway: Annotated[str, typer.Option(help="Gateway base URL.")],
    token_file: Annotated[Path, typer.Option(help="File holding the rig token.")],
    backend: Annotated[str, typer.Option(help="Desktop backend: sim, x11 or windows.")] = "sim",
    width: Annotated[int, typer.Option(help="sim only: desktop width.")] = 1920,
    height: Annotated[int, typer.Option(help="sim only: desktop height.")] = 1080,
) -> None:
    """Connect to the gateway and serve sessions until stopped."""
    from rigway.agent.runner import AgentSettings, open_backend, run_agent

    if backend not in BACKENDS:
        typer.echo(f"--backend must be one of {', '.join(BACKENDS)}", err=True)
        raise typer.Exit(code=2)
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        typer.echo(f"cannot read the rig token: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    try:
        desktop = open_backend(
            backend, display=os.environ.get("DISPLAY"), width=width, height=height
        )
    except (ValueError, OSError, RuntimeError) as exc:
        typer.echo(f"cannot open the {backend} desktop: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    settings = AgentSettings(gateway_url=gateway, rig_token=token, backend=backend)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_agent(settings, desktop))


def _os_name() -> str:
    return f"{platform.system()} {platform.release()}".strip() or sys.platform
