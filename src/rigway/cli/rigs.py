"""`rigway rigs list|show|wake` (API key) and `rigway rigs
pairing-code|rename|controls|unpair` (the owner's console token): the account's rigs."""

from __future__ import annotations

from typing import Annotated

import typer

from rigway.client import Rig

from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    ConsoleTokenOption,
    Credentials,
    JsonOption,
    StateDirOption,
    console_client,
)
from ._output import CliError, Column, ExitCode, Output

rigs_app = typer.Typer(
    help="List, inspect and wake rigs (API key); pair, rename and unpair them (console token).",
    no_args_is_help=True,
)

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
    out.line(_controls_words(rig))


def _controls_words(rig: Rig) -> str:
    modes = "app sessions only" if rig.app_mode_only else "any session mode"
    recordings = "recordings allowed" if rig.recordings_allowed else "no recordings"
    return f"{modes}, owner idle {rig.owner_idle_s} s, {recordings}"


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


@rigs_app.command("pairing-code")
def pairing_code(
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Make a one-time code that pairs a new rig (`rigway agent pair --code` on it)."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        created = console.rigs.create_pairing_code()
    expires = "" if created.expires_at is None else f" (until {created.expires_at:%H:%M:%S %Z})"
    out.data(created, human=f"{created.code}{expires}")
    out.line(f"on the rig: rigway agent pair --gateway URL --code {created.code}")


@rigs_app.command("rename")
def rename_rig(
    rig_id: RigArgument,
    name: Annotated[str, typer.Argument(help="The new name.", show_default=False)],
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Rename a rig."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        rig = console.rigs.update(rig_id, name=name)
    out.data(rig, human=f"renamed {rig.id} to {rig.name}")


@rigs_app.command("controls")
def set_controls(
    rig_id: RigArgument,
    app_mode_only: Annotated[
        bool | None,
        typer.Option(
            "--app-mode-only/--any-mode",
            help="Allow API sessions only in app mode, or in either mode.",
            show_default=False,
        ),
    ] = None,
    owner_idle_s: Annotated[
        int | None,
        typer.Option(
            "--owner-idle-s",
            min=0,
            max=3600,
            help="Seconds the rig's own keyboard and mouse must rest before API input "
            "goes on (0: never pause).",
            show_default=False,
        ),
    ] = None,
    recordings: Annotated[
        bool | None,
        typer.Option(
            "--recordings/--no-recordings",
            help="Allow sessions that record, or refuse them.",
            show_default=False,
        ),
    ] = None,
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Set what API sessions may do on a rig (options left out stay as they are)."""
    out = Output(json_mode=json_output)
    if app_mode_only is None and owner_idle_s is None and recordings is None:
        raise CliError(
            "name a control: --app-mode-only/--any-mode, --owner-idle-s, "
            "--recordings/--no-recordings (`rigway rigs show` shows them)",
            ExitCode.USAGE,
        )
    with console_client(console_token, base_url, state_dir) as console:
        rig = console.rigs.update(
            rig_id,
            app_mode_only=app_mode_only,
            owner_idle_s=owner_idle_s,
            recordings_allowed=recordings,
        )
    out.data(rig, human=f"{rig.id}: {_controls_words(rig)}")


@rigs_app.command("unpair")
def unpair_rig(
    rig_id: RigArgument,
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Unpair a rig: its token stops working and its active session ends (`unpaired`)."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        rig = console.rigs.unpair(rig_id)
    out.data({"ok": True, "id": rig_id, "rig": rig}, human=f"unpaired {rig_id}")
