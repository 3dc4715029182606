"""`rigway drag`, `scroll`, `move` and `wait`: press-move-release in one batch, the
wheel, the pointer, and waiting on the rig for the screen to change, go still, or show
a control.

Like the other session-scoped commands they act on `--session ID`, else on the session
`rigway sessions start` remembered.
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from rigway.client import WaitTarget

from ._acting import SettleOption, act_report
from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    JsonOption,
    SessionOption,
    StateDirOption,
)
from ._output import CliError, ExitCode, Output
from .screen import live_session

__all__ = ["register_act_commands"]


def parse_point(text: str) -> tuple[int, int]:
    """`"x,y"` as a point; CliError (exit 2) when it is not two integers."""
    try:
        x, y = (int(part.strip()) for part in text.split(","))
    except ValueError:
        raise CliError(f"a point is X,Y (two integers), got {text!r}", ExitCode.USAGE) from None
    return x, y


def drag(
    points: Annotated[
        list[str],
        typer.Argument(
            metavar="X,Y X,Y…",
            help="Native points: press at the first, move through the rest, release at "
            "the last (two or more).",
            show_default=False,
        ),
    ],
    button: Annotated[
        Literal["left", "right", "middle"], typer.Option("--button", help="Mouse button.")
    ] = "left",
    settle: SettleOption = True,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Drag with a mouse button held along X,Y points, in one batch (settles by default)."""
    path = [parse_point(point) for point in points]
    if len(path) < 2:
        raise CliError("drag takes two or more X,Y points", ExitCode.USAGE)
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        result = handle.drag(path, button=button, settle=settle)
    (x0, y0), (x1, y1) = path[0], path[-1]
    human = f"dragged {button} from {x0},{y0} to {x1},{y1}{result.settle_note()}"
    out.data(act_report(result, path=[list(point) for point in path]), human=human)


# The wheel's sign convention (docs/api.md, Input): dy > 0 is up, dx > 0 is right.
_SCROLL_SIGNS: dict[str, tuple[int, int]] = {
    "up": (0, 1),
    "down": (0, -1),
    "left": (-1, 0),
    "right": (1, 0),
}


def scroll(
    direction: Annotated[
        Literal["up", "down", "left", "right"],
        typer.Argument(help="Which way the content moves into view.", show_default=False),
    ],
    notches: Annotated[
        int, typer.Argument(min=1, max=100, help="Wheel notches (clicks of the wheel).")
    ] = 3,
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="X,Y", help="Scroll with the pointer here (native)."),
    ] = None,
    settle: SettleOption = False,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Turn the mouse wheel NOTCHES times, where the pointer is or at --at X,Y."""
    x, y = (None, None) if at is None else parse_point(at)
    sign_x, sign_y = _SCROLL_SIGNS[direction]
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        result = handle.scroll(sign_x * notches, sign_y * notches, x, y, settle=settle)
    where = "" if at is None else f" at {x},{y}"
    human = f"scrolled {direction} {notches} notch{'es' if notches != 1 else ''}{where}"
    out.data(act_report(result), human=human + result.settle_note())


def move(
    x: Annotated[int, typer.Argument(help="Native x.", show_default=False)],
    y: Annotated[int, typer.Argument(help="Native y.", show_default=False)],
    settle: SettleOption = False,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Move the pointer to X Y (hover) without clicking."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        result = handle.move(x, y, settle=settle)
    out.data(act_report(result), human=f"moved the pointer to {x},{y}{result.settle_note()}")


def wait(
    until: Annotated[
        Literal["change", "quiet", "target"],
        typer.Argument(help="change (anything redrawn), quiet (still), target (a control)."),
    ],
    name: Annotated[
        str | None, typer.Option("--name", help="target: a name (any case, substring).")
    ] = None,
    role: Annotated[str | None, typer.Option("--role", help="target: a role.")] = None,
    target_id: Annotated[str | None, typer.Option("--id", help="target: a target id.")] = None,
    timeout_ms: Annotated[
        int, typer.Option("--timeout-ms", min=1, max=30000, help="Give up after this long.")
    ] = 10_000,
    quiet_ms: Annotated[
        int | None,
        typer.Option("--quiet-ms", min=20, max=10000, help="quiet: still this long (100)."),
    ] = None,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Wait on the rig for the screen to change, to go still, or for a control to appear.

    Exits 9 (the answer still printed) when the condition did not hold in time.
    """
    wanted = WaitTarget(name=name, role=role, id=target_id)
    if (until == "target") != bool(wanted.to_json()):
        raise CliError(
            "wait target takes --name, --role and/or --id; change and quiet take none",
            ExitCode.USAGE,
        )
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle, out.working("Waiting…"):
        result = handle.wait_for(
            until,
            timeout_ms=timeout_ms,
            quiet_ms=quiet_ms,
            target=wanted if until == "target" else None,
        )
    out.data(result, human=result.outcome_line(until, timeout_ms))
    if not result.met:
        raise typer.Exit(ExitCode.NOT_MET)


def register_act_commands(app: typer.Typer) -> None:
    """Add `drag`, `scroll`, `move` and `wait` to the root `rigway` app."""
    app.command("drag")(drag)
    app.command("scroll")(scroll)
    app.command("move")(move)
    app.command("wait")(wait)
