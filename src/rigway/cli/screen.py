"""Session-scoped commands: `screenshot`, `observe`, `click`, `type`, `key` (`drag` and
`wait` are in `act_commands`).

Each acts on `--session ID`, else on the session `rigway sessions start` remembered.
Coordinates are native desktop pixels; targets come from the rig's accessibility tree,
numbered from 1 in `observe`'s lines as `click --index` counts them. The acting
commands take `--settle`: answer once the screen went still.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal

import typer

from rigway.client import InputEvent, ObserveResult, Region, SessionHandle, Target

from ._acting import SettleOption, act_report
from ._context import (
    DEFAULT_STATE_DIR,
    ApiKeyOption,
    BaseUrlOption,
    Credentials,
    JsonOption,
    SessionOption,
    StateDirOption,
)
from ._output import CliError, ExitCode, Output

__all__ = ["register_screen_commands"]

MaxWidthOption = Annotated[
    int | None,
    typer.Option("--max-width", min=16, max=16384, help="Cap the image's long edge (pixels)."),
]
QualityOption = Annotated[
    int | None, typer.Option("--quality", min=40, max=100, help="JPEG quality (default 85).")
]
RegionOption = Annotated[
    str | None,
    typer.Option("--region", metavar="X,Y,W,H", help="Only this native rectangle."),
]


def parse_region(text: str | None) -> Region | None:
    """`"x,y,w,h"` as a Region; CliError (exit 2) when it is not four integers."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        x, y, w, h = (int(part.strip()) for part in parts)
    except ValueError:
        raise CliError(f"--region takes X,Y,W,H integers, got {text!r}", ExitCode.USAGE) from None
    return Region(x, y, w, h)


@contextmanager
def live_session(
    api_key: str | None, base_url: str | None, state_dir: Path, session: str | None
) -> Iterator[SessionHandle]:
    """A handle on `--session` (or the remembered session), its client closed after."""
    with Credentials(state_dir, api_key, base_url).session_client(session) as (client, session_id):
        yield client.sessions.attach(session_id)


def _write_jpeg(output: Path, jpeg: bytes) -> None:
    if str(output) == "-":
        sys.stdout.buffer.write(jpeg)
        sys.stdout.buffer.flush()
    else:
        output.write_bytes(jpeg)


# ---------------------------------------------------------------------- commands


def screenshot(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="JPEG file to write ('-': stdout).")
    ],
    max_width: MaxWidthOption = None,
    quality: QualityOption = None,
    region: RegionOption = None,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Save a JPEG of the rig's desktop (or of a region of it)."""
    if json_output and str(output) == "-":
        raise CliError("--json and -o - both want stdout: pick one", ExitCode.USAGE)
    out = Output(json_mode=json_output)
    area = parse_region(region)
    with live_session(api_key, base_url, state_dir, session) as handle, out.working("Capturing…"):
        shot = handle.screenshot(max_width=max_width, quality=quality, region=area)
    _write_jpeg(output, shot.jpeg)
    facts = {
        "path": str(output),
        "bytes": len(shot.jpeg),
        "width": shot.width,
        "height": shot.height,
        "native_width": shot.native_width,
        "native_height": shot.native_height,
        "region": None if area is None else area._asdict(),
    }
    if str(output) != "-":
        kib = len(shot.jpeg) / 1024
        out.data(facts, human=f"saved {shot.width}x{shot.height} JPEG ({kib:.0f} KiB) to {output}")


def _observe_lines(result: ObserveResult) -> list[str]:
    lines = [
        f"image {result.width}x{result.height} of a {result.native_width}x"
        f"{result.native_height} desktop; changed: {'yes' if result.changed else 'no'}"
    ]
    if result.text is not None and result.text.summary:
        lines.insert(0, result.text.summary)
    # Numbered here, from 1, as `click --index` counts (the gateway's lines may differ).
    return lines + result.target_lines()


def observe(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Also save the JPEG here.")
    ] = None,
    max_width: MaxWidthOption = None,
    quality: QualityOption = None,
    region: RegionOption = None,
    mark: Annotated[bool, typer.Option("--mark", help="Draw target boxes and ids.")] = False,
    no_image: Annotated[bool, typer.Option("--no-image", help="Skip the JPEG.")] = False,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Print the window's text and click targets (--json: the whole observation)."""
    out = Output(json_mode=json_output)
    area = parse_region(region)
    with live_session(api_key, base_url, state_dir, session) as handle, out.working("Observing…"):
        result = handle.observe(
            max_width=max_width, quality=quality, region=area, mark=mark, image=not no_image
        )
    jpeg = result.jpeg
    if output is not None and jpeg is not None:
        output.write_bytes(jpeg)
    out.data(result, human="\n".join(_observe_lines(result)))


def _find_target(
    handle: SessionHandle, target_id: str | None, name: str | None, index: int | None
) -> Target:
    """The target an option names, in a fresh snapshot (an ambiguous name raises
    AmbiguousTargetError, exit 2, with the candidates)."""
    targets = handle.targets()
    if target_id is not None:
        found = next((t for t in targets.targets if t.id == target_id), None)
        wanted = f"id {target_id!r}"
    elif name is not None:
        found = targets.lookup(name)
        wanted = f"name {name!r}"
    else:
        found = None if index is None else targets.lookup(index)
        wanted = f"index {index} (numbered from 1, of {len(targets.targets)})"
    if found is None:
        raise CliError(f"no target with {wanted}: see `rigway observe`", ExitCode.NOT_FOUND)
    return found


def _check_click_args(
    x: int | None, y: int | None, target: str | None, name: str | None, index: int | None
) -> None:
    given = [x is not None or y is not None, target is not None, name is not None]
    given.append(index is not None)
    if given.count(True) != 1 or (x is None) != (y is None):
        raise CliError(
            "click takes X Y, or --target ID, --name TEXT or --index N (one of them)",
            ExitCode.USAGE,
        )


def click(
    x: Annotated[int | None, typer.Argument(help="Native x.", show_default=False)] = None,
    y: Annotated[int | None, typer.Argument(help="Native y.", show_default=False)] = None,
    target: Annotated[str | None, typer.Option("--target", help="Target id.")] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="Target name (exact, then any case, then substring)."),
    ] = None,
    index: Annotated[
        int | None, typer.Option("--index", min=1, help="Target number, as observe lists it.")
    ] = None,
    button: Annotated[
        Literal["left", "right", "middle"], typer.Option("--button", help="Mouse button.")
    ] = "left",
    double: Annotated[bool, typer.Option("--double", help="Double-click.")] = False,
    settle: SettleOption = False,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Click at X Y, or on a target by id (--target), name (--name) or number (--index)."""
    _check_click_args(x, y, target, name, index)
    out = Output(json_mode=json_output)
    chosen: Target | None = None
    with live_session(api_key, base_url, state_dir, session) as handle:
        if x is None or y is None:
            chosen = _find_target(handle, target, name, index)
            x, y = chosen.center
        press = handle.double_click if double else handle.click
        result = press(x, y, button=button, settle=settle)
    what = f" on {chosen.name or chosen.id!r} ({chosen.role})" if chosen is not None else ""
    out.data(
        act_report(result, x=x, y=y, target=chosen),
        human=f"clicked {button} at {x},{y}{what}{result.settle_note()}",
    )


def type_text(
    text: Annotated[str, typer.Argument(help="Text to type (any Unicode).", show_default=False)],
    enter: Annotated[bool, typer.Option("--enter", help="Press enter afterwards.")] = False,
    settle: SettleOption = False,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Type text into the focused control."""
    out = Output(json_mode=json_output)
    events = [InputEvent.type_text(text)]
    if enter:
        events.append(InputEvent.key_press("enter"))
    with live_session(api_key, base_url, state_dir, session) as handle:
        result = handle.act(events, settle=settle)
    typed = f"typed {len(text)} characters" + (" and enter" if enter else "")
    out.data(act_report(result), human=typed + result.settle_note())


def key(
    keys: Annotated[
        list[str],
        typer.Argument(help="Keys or chords, pressed in order: enter, tab, ctrl+s…"),
    ],
    settle: SettleOption = False,
    session: SessionOption = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Press keys or chords (one batch, in order)."""
    out = Output(json_mode=json_output)
    with live_session(api_key, base_url, state_dir, session) as handle:
        result = handle.act([InputEvent.key_press(name) for name in keys], settle=settle)
    out.data(act_report(result), human=f"pressed {' '.join(keys)}{result.settle_note()}")


def register_screen_commands(app: typer.Typer) -> None:
    """Add the session-scoped commands to the root `rigway` app."""
    app.command("screenshot")(screenshot)
    app.command("observe")(observe)
    app.command("click")(click)
    app.command("type")(type_text)
    app.command("key")(key)
