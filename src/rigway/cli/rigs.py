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
from ._output import Output

rigs_app = typer.Typer(help="List, inspect and wake rigs.", no_args_is_help=True)

RigArgument = Annotated[str, typer.Argument(help="Rig id (rig_…).", show_default=False)]


def _rig_row(rig: Rig) -> list[str]:
    size = "" if rig.native_width is None else f"{rig.native_width}x{rig.native_height}"
    return [
        rig.id,
        rig.name,
        "online" if rig.online else "offline",
        "on" if rig.api_access_enabled else "off",
        size,
        rig.active_session_id or "",
    ]


_RIG_COLUMNS = ("ID", "NAME", "STATE", "API", "DESKTOP", "ACTIVE SESSION")


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
    out.data({"rigs": rigs})
    out.table("Rigs", _RIG_COLUMNS, [_rig_row(rig) for rig in rigs])


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
    out.data(rig)
    out.table("Rig", _RIG_COLUMNS, [_rig_row(rig)])
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
