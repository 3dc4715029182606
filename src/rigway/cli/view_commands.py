"""`rigway targets`, `rigway dirty` and `rigway stream`: what is on the rig's screen
without an image, what changed, and a live view of it.

Like the other session-scoped commands they act on `--session ID`, else on the session
`rigway sessions start` remembered.
"""

from __future__ import annotations

import typer

from rigway.client import StreamCredentials, Target

from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    JsonOption,
    SessionOption,
    StateDirOption,
)
from ._output import CliError, Column, ExitCode, Output
from .screen import live_session

__all__ = ["register_view_commands"]


def _numbered(targets: list[Target]) -> list[tuple[int, Target]]:
    return list(enumerate(targets, start=1))


# Numbered from 1, as `click --index` counts.
_TARGET_COLUMNS: tuple[Column[tuple[int, Target]], ...] = (
    Column("#", lambda row: str(row[0])),
    Column("ID", lambda row: row[1].id),
    Column("ROLE", lambda row: row[1].role or ""),
    Column("NAME", lambda row: row[1].name or ""),
    Column("BOX", lambda row: f"{row[1].x},{row[1].y} {row[1].w}x{row[1].h}"),
    Column("FOCUSED", lambda row: "yes" if row[1].focused else ""),
)


def targets(
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """List the focused window's click targets, numbered as `click --index` counts."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        found = handle.targets()
    out.data(found)
    out.table("Targets", _TARGET_COLUMNS, _numbered(found.targets))
    if found.truncated:
        out.warn("the host stopped walking the window at its budget: the list is partial")


def dirty(
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Print the rectangles that changed since the last take (this take consumes them)."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        changes = handle.dirty()
    if not changes.available:
        human = "no change data from this capture mode: assume everything changed"
    elif not changes.rects:
        human = "nothing changed"
    else:
        human = "\n".join(f"{x},{y} {w}x{h}" for x, y, w, h in changes.rects)
    out.data(changes, human=human)


def viewer_url(credentials: StreamCredentials) -> str | None:
    """The gateway's viewer page for these credentials, when the gateway sent one."""
    url = credentials.model_dump().get("viewer_url")
    return url if isinstance(url, str) else None


def stream(
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Print a link to watch the rig's desktop live in a browser (one viewer, one hour)."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        credentials = handle.stream()
    url = viewer_url(credentials)
    if url is None:
        raise CliError(
            "the gateway sent no viewer_url: see `rigway stream --json` for the signaling URL",
            ExitCode.UNEXPECTED,
        )
    out.data(credentials, human=url)


def register_view_commands(app: typer.Typer) -> None:
    """Add `targets`, `dirty` and `stream` to the root `rigway` app."""
    app.command("targets")(targets)
    app.command("dirty")(dirty)
    app.command("stream")(stream)
