"""An input batch from its public shape to the host and back: act, then see.

`prepare` checks the whole batch before anything runs (its frame known, every point
inside its frame's image and the desktop, the observe's region inside the desktop) and
builds the `input/batch` the host gets: points in native pixels, the frame's damage
mark when nothing near them may have changed since, and a deadline that covers the
waits the batch itself asks for. `run` sends it, then takes the observe the batch asked
for through the same code as `GET /observe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigway.gateway.desktop.frames import Frame, FrameRegistry
from rigway.gateway.desktop.schemas import (
    EventReceiptOut,
    InputBatchIn,
    InputBatchOut,
    InputEvent,
    ObserveIn,
    SettleOut,
)
from rigway.gateway.desktop.service import DesktopService, ScreenParams
from rigway.gateway.errors import InvalidRequest, frame_expired
from rigway.gateway.sessions.live import LiveSession
from rigway.protocol import ops

# The contract's radius: a change this close to a point the batch acts on makes its
# frame stale.
STALE_RADIUS_PX = 24
# What finding one target costs the host at most: a fresh accessibility walk (1.5 s
# deadline by default), with room for the round trip.
TARGET_LOOKUP_S = 2.0


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    body: dict[str, Any]  # `ops.InputBatch` without its session_id
    events: int
    timeout_s: float
    observe: ObserveIn | None
    observe_params: ScreenParams | None


def prepare(
    live: LiveSession, batch: InputBatchIn, frames: FrameRegistry, host_timeout_s: float
) -> PreparedBatch:
    """The batch checked whole and built for the host; raises the 409 or 400 that
    refuses it (nothing has run then). `host_timeout_s` is the margin of the deadline."""
    frame = _frame(live, batch, frames)
    image = frame if batch.coords == "image" else None
    events = [_host_event(live, index, event, image) for index, event in enumerate(batch.events)]
    params = None if batch.observe is None else _screen_params(live, batch.observe)
    settle = None
    if batch.settle is not None:
        settle = ops.Settle(quiet_ms=batch.settle.quiet_ms, timeout_ms=batch.settle.timeout_ms)
    require_unchanged = None
    if batch.require_unchanged and frame is not None:
        require_unchanged = ops.RequireUnchanged(
            damage_mark=frame.damage_mark, radius_px=STALE_RADIUS_PX
        )
    host_batch = ops.InputBatch(
        session_id=live.id, events=events, settle=settle, require_unchanged=require_unchanged
    )
    return PreparedBatch(
        # Defaults left out: an agent that predates a field still takes a batch that
        # does not use it.
        body=host_batch.model_dump(exclude_defaults=True, exclude={"session_id"}),
        events=len(events),
        timeout_s=host_timeout_s + _waits_s(host_batch),
        observe=batch.observe,
        observe_params=params,
    )


async def run(live: LiveSession, prepared: PreparedBatch, desktop: DesktopService) -> str:
    """Runs the batch on the host and answers its JSON: the receipts, the settle and
    the observe taken after it (when asked for). A batch the host stopped raises its
    409 with the receipts of what ran."""
    done = await desktop.input(
        live, prepared.body, events=prepared.events, timeout_s=prepared.timeout_s
    )
    observe = prepared.observe
    observed = None
    exclude: dict[str, Any] = {}
    if observe is not None and prepared.observe_params is not None:
        image = observe.image == 1
        observed = await desktop.observe(
            live, prepared.observe_params, image=image, mark=image and observe.mark == 1
        )
        if not image:  # as GET /observe?image=0 answers
            exclude["observe"] = {"jpeg_base64"}
    else:
        exclude["observe"] = True
    if done.settle is None:
        exclude["settle"] = True
    answer = InputBatchOut(
        ok=True,
        count=done.count,
        events=[EventReceiptOut.of(receipt) for receipt in done.events],
        settle=None if done.settle is None else SettleOut.of(done.settle),
        observe=observed,
    )
    return answer.model_dump_json(exclude=exclude)


def _frame(live: LiveSession, batch: InputBatchIn, frames: FrameRegistry) -> Frame | None:
    if batch.frame_id is None:
        return None
    frame = frames.get(live.id, batch.frame_id)
    if frame is None:
        raise frame_expired(batch.frame_id)
    return frame


def _host_event(
    live: LiveSession, index: int, event: InputEvent, image: Frame | None
) -> ops.InputEvent:
    """The event as the host runs it: its point in native pixels, checked."""
    fields = event.model_dump(exclude_none=True)
    if event.expect is None:
        fields.pop("expect_timeout_ms", None)
    x, y = fields.get("x"), fields.get("y")
    if x is not None and y is not None:
        if image is not None:
            x, y = _image_to_native(index, x, y, image)
        _check_native(live, index, x, y)
        fields |= {"x": x, "y": y}
    return ops.InputEvent.model_validate(fields)


def _image_to_native(index: int, x: int, y: int, frame: Frame) -> tuple[int, int]:
    if x >= frame.image_width or y >= frame.image_height:
        raise InvalidRequest(
            f"event {index}: point {x},{y} lies outside the "
            f"{frame.image_width}x{frame.image_height} image of frame {frame.frame_id}"
        )
    return frame.to_native(x, y)


def _check_native(live: LiveSession, index: int, x: int, y: int) -> None:
    if live.native_width is None or live.native_height is None:
        return
    if x >= live.native_width or y >= live.native_height:
        raise InvalidRequest(
            f"event {index}: point {x},{y} lies outside the "
            f"{live.native_width}x{live.native_height} desktop"
        )


def _screen_params(live: LiveSession, observe: ObserveIn) -> ScreenParams:
    # Checked as `GET /observe` checks them, but before the batch runs: a bad observe
    # must not leave a batch run and unanswered.
    params = ScreenParams.from_query(
        quality=observe.quality,
        max_width=observe.max_width,
        x=observe.x,
        y=observe.y,
        w=observe.w,
        h=observe.h,
    )
    region = params.region
    if region is None or live.native_width is None or live.native_height is None:
        return params
    if region.x + region.w > live.native_width or region.y + region.h > live.native_height:
        raise InvalidRequest(
            f"observe: region {region.x},{region.y} {region.w}x{region.h} lies outside "
            f"the {live.native_width}x{live.native_height} desktop"
        )
    return params


def _waits_s(batch: ops.InputBatch) -> float:
    """How long the batch may wait on purpose: its delays, its expectations, its settle
    and its target lookups. Bounded by the schema's bounds (100 events of at most 5 s
    delay and 5 s expectation, a settle of at most 10 s)."""
    waits_ms = sum(event.delay_ms for event in batch.events)
    waits_ms += sum(event.expect_timeout_ms for event in batch.events if event.expect)
    if batch.settle is not None:
        waits_ms += batch.settle.timeout_ms
    targets = sum(1 for event in batch.events if event.target is not None)
    return waits_ms / 1000 + targets * TARGET_LOOKUP_S
