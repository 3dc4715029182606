"""`rigway launch` and `rigway kill`: start a program on the rig and stop the ones this
session started.

Like the other session-scoped commands they act on `--session ID`, else on the session
`rigway sessions start` remembered. The session's apps are killed anyway when it ends.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    JsonOption,
    SessionOption,
    StateDirOption,
)
from ._output import Output
from .screen import live_session

__all__ = ["register_app_commands"]


def launch(
    program: Annotated[
        str,
        typer.Argument(help="An absolute path, or a name on the rig's PATH.", show_default=False),
    ],
    args: Annotated[
        list[str] | None,
        typer.Argument(help="Its arguments (after `--` when one starts with -)."),
    ] = None,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Start a program on the rig and print its pid."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        launched = handle.launch(program, args or None)
    out.data(launched, human=f"launched {program} (pid {launched.pid})")


def kill(
    pid: Annotated[
        int | None,
        typer.Argument(help="Pid of an app this session launched (default: all of them)."),
    ] = None,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Kill an app this session launched, or every one of them (not the session)."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        result = handle.kill(pid)
    if result.killed:
        human = "killed pid " + ", ".join(str(killed) for killed in result.killed)
    else:
        human = "nothing to kill"
    out.data(result, human=human)


def register_app_commands(app: typer.Typer) -> None:
    """Add `launch` and `kill` to the root `rigway` app."""
    app.command("launch")(launch)
    app.command("kill")(kill)
