"""`rigway sessions start|list|show|end|recording`: metered sessions (API key).

`start` remembers the new session in the state dir; the session-scoped commands
(`screenshot`, `observe`, `click`, `type`, `key`) and `show`/`end` then default to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigway.client import Rig, Rigway, Session

from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    Credentials,
    JsonOption,
    StateDirOption,
    forget_session,
    remember_session,
)
from ._output import CliError, Column, ExitCode, Output

__all__ = ["pick_rig", "sessions_app"]

sessions_app = typer.Typer(help="Start, list, inspect and end sessions.", no_args_is_help=True)

SessionArgument = Annotated[
    str | None, typer.Argument(help="Session id (default: the remembered one).")
]


def _started(session: Session) -> str:
    return "" if session.started_at is None else session.started_at.isoformat(timespec="seconds")


_SESSION_COLUMNS: tuple[Column[Session], ...] = (
    Column("ID", lambda session: session.session_id),
    Column("RIG", lambda session: session.rig_id),
    Column("STATUS", lambda session: session.status),
    Column("STARTED", _started),
    Column("ACTIONS", lambda session: str(session.action_count)),
    Column("BILLED MIN", lambda session: str(session.billed_minutes)),
    Column("END REASON", lambda session: session.ended_reason or ""),
)


def _is_available(rig: Rig) -> bool:
    return rig.online and rig.api_access_enabled and rig.active_session_id is None


def pick_rig(client: Rigway) -> str:
    """The account's one available rig (online, API enabled, free), for `--rig` omitted."""
    available = [rig.id for rig in client.rigs.list() if _is_available(rig)]
    if len(available) == 1:
        return available[0]
    if not available:
        raise CliError(
            "no rig is online, API-enabled and free: see `rigway rigs list`", ExitCode.CONFLICT
        )
    raise CliError(
        f"several rigs are available, pass --rig: {', '.join(available)}", ExitCode.USAGE
    )


@sessions_app.command("start")
def start_session(
    rig: Annotated[
        str | None, typer.Option("--rig", help="Rig id (default: the one available rig).")
    ] = None,
    idle_timeout: Annotated[
        int | None,
        typer.Option(
            "--idle-timeout", min=60, max=3600, help="Seconds without activity before it ends."
        ),
    ] = None,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Record the session (frames, targets, input): `rigway sessions recording`.",
        ),
    ] = False,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Start a session on a rig and remember it for the next commands."""
    out = Output(json_mode=json_output)
    with Credentials(state_dir, api_key, base_url).api_client() as client:
        rig_id = rig if rig is not None else pick_rig(client)
        with out.working(f"Starting a session on {rig_id}…"):
            handle = client.sessions.create(
                rig_id=rig_id, idle_timeout_seconds=idle_timeout, record=record or None
            )
    remember_session(state_dir, handle.session_id)
    session = handle.info
    out.data(session, human=f"started {session.session_id} on {session.rig_id}")
    out.line("It is remembered: screenshot, observe, click, type and key use it by default.")


@sessions_app.command("list")
def list_sessions(
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """List the active sessions this API key started."""
    out = Output(json_mode=json_output)
    with Credentials(state_dir, api_key, base_url).api_client() as client:
        sessions = client.sessions.list()
    out.records(sessions, _SESSION_COLUMNS, title="Sessions", json_key="sessions")


@sessions_app.command("show")
def show_session(
    session_id: SessionArgument = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Show one session (any status)."""
    out = Output(json_mode=json_output)
    credentials = Credentials(state_dir, api_key, base_url)
    with credentials.session_client(session_id) as (client, resolved):
        session = client.sessions.get(resolved)
    out.record(session, _SESSION_COLUMNS, title="Session")


@sessions_app.command("end")
def end_session(
    session_id: SessionArgument = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """End a session (idempotent) and print its final record."""
    out = Output(json_mode=json_output)
    credentials = Credentials(state_dir, api_key, base_url)
    with (
        credentials.session_client(session_id) as (client, resolved),
        out.working(f"Ending {resolved}…"),
    ):
        session = client.sessions.end(resolved)
    forget_session(state_dir, resolved)
    human = (
        f"ended {session.session_id} ({session.ended_reason}), billed {session.billed_minutes} min"
    )
    out.data(session, human=human)


@sessions_app.command("recording")
def download_recording(
    output: Annotated[Path, typer.Option("--output", "-o", help="The zip file to write.")],
    session_id: SessionArgument = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Save the recording of a session started with --record (a zip: steps.jsonl,
    frames/, manifest.json), while it runs or after it ended."""
    out = Output(json_mode=json_output)
    credentials = Credentials(state_dir, api_key, base_url)
    with (
        credentials.session_client(session_id) as (client, resolved),
        out.working(f"Downloading the recording of {resolved}…"),
    ):
        archive = client.sessions.recording(resolved)
    output.write_bytes(archive)
    kib = len(archive) / 1024
    facts = {"session_id": resolved, "path": str(output), "bytes": len(archive)}
    out.data(facts, human=f"saved the recording of {resolved} ({kib:.0f} KiB) to {output}")
