"""`rigway rigs list|show|wake`: the account's rigs (API key)."""

from __future__ import annotations

from typing import Annotated

import typer

from rigway.client import Rig

from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    Credentials,
    JsonOption,
    StateDirOption,
)
from ._output import Column, Output

rigs_app = typer.Typer(help="List, inspect and wake rigs.", no_args_is_help=True)

RigArgument = Annotated[str, typer.Argument(help="Rig id (rig_…).", show_default=False)]


def _desktop_size(rig: Rig) -> str:
    return "" if rig.native_width is None else f"{rig.native_width}x{rig.native_height}"


_RIG_COLUMNS: tuple[Column[Rig], ...] = (
    Column("ID", lambda rig: rig.id),
    Column("NAME", lambda rig: rig.name),
    Column("STATE", lambda rig: "online" if rig.online else "offline"),
    Column("API", lambda rig: "on" if rig.api_access_enabled else "off"),
    Column("DESKTOP", _desktop_size),
    Column("ACTIVE SESSION", lambda rig: rig.active_session_id or ""),
)


@rigs_app.command("list")
def list_rigs(
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """List the account's rigs."""
    out = Output(json_mode=json_output)
    with Credentials(state_dir, api_key, base_url).api_client() as client:
        rigs = client.rigs.list()
    out.records(rigs, _RIG_COLUMNS, title="Rigs", json_key="rigs")


@rigs_app.command("show")
def show_rig(
    rig_id: RigArgument,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Show one rig."""
    out = Output(json_mode=json_output)
    with Credentials(state_dir, api_key, base_url).api_client() as client:
        rig = client.rigs.get(rig_id)
    out.record(rig, _RIG_COLUMNS, title="Rig")
    if rig.os or rig.agent_version:
        out.line(f"os {rig.os or '?'}, agent {rig.agent_version or '?'}")


@rigs_app.command("wake")
def wake_rig(
    rig_id: RigArgument,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Send a Wake-on-LAN packet to an offline rig."""
    out = Output(json_mode=json_output)
    with Credentials(state_dir, api_key, base_url).api_client() as client:
        result = client.rigs.wake(rig_id)
    if result.already_online:
        human = f"{rig_id} is already online"
    else:
        human = f"wake packet sent to {rig_id} via {result.via or 'gateway'}"
    out.data(result, human=human)
