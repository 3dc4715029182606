"""Acting and waiting as `Operation`s: an input batch that may settle and observe
(`POST …/input`), a drag as events, and a wait on the host (`POST …/wait`).

Pure like `_operations`: the session handles run what these build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

import httpx2

from . import _core
from ._core import UNACTED_STATUSES, Operation
from ._geometry import Region
from ._operations import MAX_EVENTS_PER_BATCH, EventLike, event_json, session_path
from ._screen_models import pick_target
from .errors import TargetNotFoundError
from .models import (
    ActResult,
    InputEvent,
    MouseButton,
    ObserveOptions,
    ObserveResult,
    Screenshot,
    Settle,
    Target,
    WaitResult,
    WaitTarget,
    WaitUntil,
)

__all__ = [
    "ActOptions",
    "Coords",
    "FrameLike",
    "ObserveLike",
    "SettleLike",
    "TargetRef",
    "WaitTargetLike",
    "act",
    "check_point_args",
    "click_events",
    "drag_events",
    "resolve_target",
    "target_not_found",
    "wait",
]

Coords = Literal["native", "image"]
SettleLike = Settle | Mapping[str, int] | bool | None
ObserveLike = ObserveOptions | Mapping[str, Any] | bool | None
FrameLike = str | Screenshot | ObserveResult | None
WaitTargetLike = WaitTarget | Target | Mapping[str, str] | str | None
# A target as `click(target=…)` takes it: a Target, an id or a name, or the 1-based
# index of a target in the latest observe (or targets) of the session.
TargetRef = Target | str | int


class ActOptions(TypedDict, total=False):
    """What every acting method of a session takes besides its events (see `act`)."""

    settle: SettleLike
    observe: ObserveLike
    frame_id: FrameLike
    coords: Coords | None
    require_unchanged: bool


# The gateway's own defaults and bounds (docs/api.md, Input and Waiting), used only to
# size the read timeout: what the gateway validates is what counts.
_DEFAULT_SETTLE_TIMEOUT_MS = 2000
_DEFAULT_EXPECT_TIMEOUT_MS = 1000
_OBSERVE_ALLOWANCE_S = 5.0


def _settle_json(settle: SettleLike) -> dict[str, int] | None:
    if settle is None or settle is False:
        return None
    if settle is True:
        return {}
    if isinstance(settle, Settle):
        return settle.to_json()
    return dict(settle)


def _observe_json(observe: ObserveLike) -> dict[str, Any] | None:
    if observe is None or observe is False:
        return None
    if observe is True:
        return {}
    if isinstance(observe, ObserveOptions):
        return observe.to_json()
    # `GET /observe` takes mark and image as 0/1, and so does the batch (strictly).
    return {name: int(v) if isinstance(v, bool) else v for name, v in observe.items()}


def _observe_region(observe: Mapping[str, Any] | None) -> Region | None:
    # The answer does not echo the crop; the SDK keeps it to map image pixels back.
    if observe is None or not all(name in observe for name in ("x", "y", "w", "h")):
        return None
    return Region(int(observe["x"]), int(observe["y"]), int(observe["w"]), int(observe["h"]))


def frame_id_of(frame: FrameLike) -> str | None:
    """The frame id given as such, or read off a screenshot or an observation."""
    if frame is None or isinstance(frame, str):
        return frame
    if frame.frame_id is None:
        raise ValueError("this image carries no frame id (a gateway older than API 1.1)")
    return frame.frame_id


def _server_wait_s(events: list[dict[str, Any]], body: Mapping[str, Any]) -> float:
    """How long the gateway may hold the answer on purpose: delays, expectations, the
    settle and the observe."""
    waited_ms = 0.0
    for event in events:
        waited_ms += float(event.get("delay_ms") or 0)
        if event.get("expect") is not None:
            waited_ms += float(event.get("expect_timeout_ms") or _DEFAULT_EXPECT_TIMEOUT_MS)
    settle = body.get("settle")
    if settle is not None:
        waited_ms += float(settle.get("timeout_ms") or _DEFAULT_SETTLE_TIMEOUT_MS)
    observe_s = _OBSERVE_ALLOWANCE_S if body.get("observe") is not None else 0.0
    return waited_ms / 1000 + observe_s


def _decode_act(response: httpx2.Response, region: Region | None) -> ActResult:
    result = _core.decode_model(response, ActResult)
    if result.observe is not None:
        result.observe._region = region
    return result


def act(
    session_id: str,
    events: Sequence[EventLike],
    *,
    settle: SettleLike = None,
    observe: ObserveLike = None,
    frame_id: FrameLike = None,
    coords: Coords | None = None,
    require_unchanged: bool = False,
) -> Operation[ActResult]:
    """POST /v1/sessions/{id}/input: a batch, optionally settled and observed after.

    Never replayed after an ambiguous failure: the host may have run part of the batch.
    """
    if len(events) == 0:
        raise ValueError("an input batch needs at least one event")
    if len(events) > MAX_EVENTS_PER_BATCH:
        raise ValueError(f"an input batch holds at most {MAX_EVENTS_PER_BATCH} events")
    frame = frame_id_of(frame_id)
    if coords == "image" and frame is None:
        raise ValueError('coords="image" needs the frame_id of the image the points are in')
    if require_unchanged and frame is None:
        raise ValueError("require_unchanged needs the frame_id of the image the caller saw")
    wire_events = [event_json(event) for event in events]
    observe_json = _observe_json(observe)
    body: dict[str, Any] = {"events": wire_events}
    optional = {
        "settle": _settle_json(settle),
        "observe": observe_json,
        "frame_id": frame,
        "coords": coords,
        "require_unchanged": True if require_unchanged else None,
    }
    body.update({name: value for name, value in optional.items() if value is not None})
    region = _observe_region(observe_json)
    return Operation(
        "POST",
        session_path(session_id, "/input"),
        lambda r: _decode_act(r, region),
        json=body,
        is_idempotent=False,
        retry_statuses=UNACTED_STATUSES,
        server_wait_s=_server_wait_s(wire_events, body),
    )


def drag_events(
    path: Sequence[tuple[int, int]], *, button: MouseButton = "left"
) -> list[InputEvent]:
    """A drag along `path`: press at the first point, move through the others, release
    at the last. At least two points; each is `(x, y)`."""
    points = [(int(x), int(y)) for x, y in path]
    if len(points) < 2:
        raise ValueError("a drag path needs at least two points")
    if len(points) > MAX_EVENTS_PER_BATCH - 1:
        raise ValueError(f"a drag path holds at most {MAX_EVENTS_PER_BATCH - 1} points")
    (x0, y0), (xn, yn) = points[0], points[-1]
    moves = [InputEvent.mouse_move(x, y) for x, y in points[1:]]
    return [
        InputEvent.mouse_down(x0, y0, button=button),
        *moves,
        InputEvent.mouse_up(xn, yn, button=button),
    ]


def _wait_target_json(target: WaitTargetLike) -> dict[str, str] | None:
    if target is None:
        return None
    if isinstance(target, str):
        return {"name": target}
    if isinstance(target, Target):
        return {"id": target.id}
    if isinstance(target, WaitTarget):
        return target.to_json()
    return dict(target)


def wait(
    session_id: str,
    until: WaitUntil,
    *,
    timeout_ms: int,
    quiet_ms: int | None,
    target: WaitTargetLike,
) -> Operation[WaitResult]:
    """POST /v1/sessions/{id}/wait: wait on the host for change, quiet or a target.

    Safe to repeat: a wait changes nothing on the rig.
    """
    wanted = _wait_target_json(target)
    if until == "target" and not wanted:
        raise ValueError('until="target" needs a target (a name, role or id)')
    body = _core.body(until=until, timeout_ms=timeout_ms, quiet_ms=quiet_ms, target=wanted)
    return Operation(
        "POST",
        session_path(session_id, "/wait"),
        lambda r: _core.decode_model(r, WaitResult),
        json=body,
        server_wait_s=timeout_ms / 1000,
    )


# ------------------------------------------------------------------------ targets


def check_point_args(x: int | None, y: int | None, target: TargetRef | None) -> None:
    """A pointer action goes to a point (both x and y), to a target, or to the pointer."""
    if target is not None and (x is not None or y is not None):
        raise ValueError("give either x/y or target, not both")
    if (x is None) != (y is None):
        raise ValueError("x and y come together or not at all")
    if isinstance(target, bool):
        raise TypeError("target is a Target, an id, a name or a 1-based index, not a bool")
    if target == "":
        raise ValueError("target is empty")


def resolve_target(ref: TargetRef, latest: Sequence[Target]) -> Target | None:
    """The freshest known box of `ref` among the latest targets (see `pick_target`).

    A `Target` is looked up by its id and used as given when the snapshot lacks it.
    """
    if isinstance(ref, Target):
        return next((target for target in latest if target.id == ref.id), ref)
    return pick_target(ref, latest)


def target_not_found(ref: TargetRef, latest: Sequence[Target]) -> TargetNotFoundError:
    """The error for a target that is still unknown after looking again."""
    if isinstance(ref, int):
        return TargetNotFoundError(
            str(ref),
            message=f"no target number {ref}: the latest observe listed {len(latest)} "
            "(numbered from 1)",
        )
    wanted = ref.id if isinstance(ref, Target) else ref
    return TargetNotFoundError(
        wanted,
        message=f"no target with the id or name {wanted!r} among the latest targets "
        "of this session",
    )


def click_events(
    x: int | None, y: int | None, *, button: MouseButton, count: int
) -> list[InputEvent]:
    """`count` clicks at (`x`, `y`), or where the pointer is when both are None.

    A double click is two clicks in one batch: the host runs them back to back, well
    inside any system double-click interval.
    """
    return [InputEvent.mouse_click(x, y, button=button) for _ in range(count)]
