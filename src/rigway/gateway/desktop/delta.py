"""`observe?since=<frame_id>`: only what changed since the caller's frame.

The image is the bounding box of the damage since the frame's damage mark, clipped to
the native area the frame's picture covers (its `scope`); when the host cannot tell
(no damage backend, its log no longer reaches the mark) that is the whole area. A host
that keeps the pictures it showed checks the damage against them and answers only where
pixels differ (`compared`; agent/pictures.py): a window repainted the same is no
change. The capture then tells it which picture the caller holds now (`picture_patch`).
Nothing changed: no image. The targets come as a diff against those shown with the frame, and
`text.targets` keeps only the lines of the added and changed ones (the caller has read
the others with the frame).

The image is at the scale of the picture a full observe with the same `max_width` would
show of the scope, so a client pastes it onto its picture at `changed_region * scale`.
Where that scale is a ratio of small integers p/q (2/3 for 1920 -> 1280) the region is
widened to multiples of q native pixels from the scope's origin: then it lands on whole
picture pixels, and its image is the very pixels the full picture has there (area
averaging over the same source pixels), up to JPEG. The host caps an image's long edge,
never sizes it exactly, so a region a scale like 640/683 cannot snap to is within a
pixel of it.

The answer's frame names the region its image shows (so input maps through it), keeps
the since frame's scope (so the next `since` still watches the whole picture), and the
host's damage mark from before the change was read (the next delta may over-report,
never miss a change). With nothing changed it repeats the since frame's image geometry,
since the caller's picture is still that image.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import TYPE_CHECKING

from rigway.gateway.desktop.frames import Frame, Region, TargetDigests
from rigway.gateway.desktop.schemas import ObserveOut, TargetOut, TargetsDiffOut
from rigway.gateway.errors import InvalidRequest, frame_expired
from rigway.gateway.sessions.live import LiveSession
from rigway.protocol import ops

if TYPE_CHECKING:
    from rigway.gateway.desktop.service import DesktopService, ScreenParams

# Past this denominator a scale's pixel grid is too coarse to snap a region to.
MAX_GRID = 32
# The least `max_width` a capture takes (the API's and the host's bound).
MIN_IMAGE_EDGE = 16


def picture_size(width: int, height: int, max_width: int | None) -> tuple[int, int]:
    """The size of a picture of `width` x `height` native pixels under `max_width`: the
    long edge capped, never upscaled (the host's rule for every screenshot)."""
    long_edge = max(width, height)
    if max_width is None or long_edge <= max_width:
        return width, height
    scale = max_width / long_edge
    return max(1, round(width * scale)), max(1, round(height * scale))


def _snap(start: int, extent: int, origin: int, span: int, scale: Fraction) -> tuple[int, int]:
    """One axis of a region (`start`, `extent`) widened to the scale's grid of q native
    pixels from `origin`, within `origin + span`, and to at least MIN_IMAGE_EDGE
    picture pixels when the scope has that many."""
    grid = scale.denominator if scale.denominator <= MAX_GRID else 1
    wanted = min(span, math.ceil(MIN_IMAGE_EDGE / scale))
    if extent < wanted:
        start = max(origin, min(start - (wanted - extent) // 2, origin + span - wanted))
        extent = wanted
    left = origin + (start - origin) // grid * grid
    right = min(origin + span, origin + -(-(start + extent - origin) // grid) * grid)
    return left, right - left


def scaled_region(
    region: Region, scope: Region, max_width: int | None
) -> tuple[Region, int | None]:
    """The region to capture and the `max_width` that shows it at the scale of the
    scope's full picture: widened to the scale's grid (and to a long edge the host can
    be asked for); no cap when the full picture is native size."""
    _, _, sw, sh = scope
    picture_w, picture_h = picture_size(sw, sh, max_width)
    if (picture_w, picture_h) == (sw, sh):
        return region, None
    scale_x, scale_y = Fraction(picture_w, sw), Fraction(picture_h, sh)
    x, w = _snap(region[0], region[2], scope[0], sw, scale_x)
    y, h = _snap(region[1], region[3], scope[1], sh, scale_y)
    # The host scales by the long edge: that axis's scale, exact where it snapped.
    cap = round(w * scale_x) if w >= h else round(h * scale_y)
    return (x, y, w, h), max(MIN_IMAGE_EDGE, cap)


def target_digests(targets: list[TargetOut]) -> TargetDigests:
    # hash() of the JSON is stable within this process, the only place frames live.
    return tuple((target.id, hash(target.model_dump_json())) for target in targets)


def targets_diff(shown: TargetDigests | None, current: list[TargetOut]) -> TargetsDiffOut:
    """By id: added (full), removed (ids), changed (full, any public field differs).
    A frame shown without targets (a screenshot) makes every current target added."""
    if shown is None:
        return TargetsDiffOut(added=list(current), removed=[], changed=[])
    before = dict(shown)
    now_ids = {target.id for target in current}
    added = [t for t in current if t.id not in before]
    changed = [t for t in current if t.id in before and before[t.id] != hash(t.model_dump_json())]
    removed = [target_id for target_id, _ in shown if target_id not in now_ids]
    return TargetsDiffOut(added=added, removed=removed, changed=changed)


def changed_region(changed: ops.ScreenChanged, scope: Region) -> Region | None:
    """The bounding box of the change within `scope`; all of it when unknown."""
    if not changed.known:
        return scope
    sx, sy, sw, sh = scope
    boxes = []
    for x, y, w, h in changed.rects:
        left, top = max(x, sx), max(y, sy)
        right, bottom = min(x + w, sx + sw), min(y + h, sy + sh)
        if right > left and bottom > top:
            boxes.append((left, top, right, bottom))
    if not boxes:
        return None
    left = min(b[0] for b in boxes)
    top = min(b[1] for b in boxes)
    right = max(b[2] for b in boxes)
    bottom = max(b[3] for b in boxes)
    return (left, top, right - left, bottom - top)


def _within_desktop(scope: Region, live: LiveSession) -> Region:
    """A scope from before the desktop shrank, cut to the desktop as it is now."""
    if live.native_width is None or live.native_height is None:
        return scope
    x, y, w, h = scope
    w = min(w, live.native_width - x)
    h = min(h, live.native_height - y)
    if w < 1 or h < 1:
        return (0, 0, live.native_width, live.native_height)
    return (x, y, w, h)


async def observe_since(
    desktop: DesktopService,
    live: LiveSession,
    since: str,
    params: ScreenParams,
    *,
    image: bool,
    mark: bool,
) -> ObserveOut:
    """An unknown frame (or another session's) is 409 frame_expired, checked first."""
    frame = desktop.frames.get(live.id, since)
    if frame is None:
        raise frame_expired(since)
    if params.region is not None:
        raise InvalidRequest("since takes its area from the frame: no x, y, w or h with it")
    scope = _within_desktop(frame.covers, live)
    changed = await desktop.changed_since(live, frame.damage_mark)
    region = changed_region(changed, scope)
    shows_image = image and region is not None
    shot_params = params
    if region is not None:
        region, cap = scaled_region(region, scope, params.max_width)
        x, y, w, h = region
        # A host that compared pixels keeps the caller's picture with this image in it.
        patch = (
            ops.PicturePatch(base_mark=frame.damage_mark, mark=changed.damage_mark)
            if changed.compared
            else None
        )
        shot_params = dataclasses.replace(
            params, region=ops.Region(x=x, y=y, w=w, h=h), max_width=cap, picture_patch=patch
        )
    result = await desktop.observe(live, shot_params, image=shows_image, mark=mark and shows_image)
    diff = targets_diff(frame.targets, result.targets)
    news = {target.id for target in (*diff.added, *diff.changed)}
    lines = [
        line
        for target, line in zip(result.targets, result.text.targets, strict=True)
        if target.id in news
    ]
    new_frame = _next_frame(desktop, live, frame, result, image=image)
    if new_frame is not None:
        desktop.frames.update(
            live.id,
            new_frame,
            damage_mark=changed.damage_mark,
            scope=scope,
            targets=target_digests(result.targets),
        )
    return result.model_copy(
        update={
            "changed_region": region,
            "targets_diff": diff,
            "text": result.text.model_copy(update={"targets": lines}),
            "frame_id": None if new_frame is None else new_frame.frame_id,
        }
    )


def _next_frame(
    desktop: DesktopService, live: LiveSession, since: Frame, result: ObserveOut, *, image: bool
) -> Frame | None:
    """The region shot's frame; with nothing changed a copy of the since frame's image
    geometry under a new id; none for image=0 (the caller was shown no picture)."""
    if not image:
        return None
    if result.frame_id is not None:
        return desktop.frames.get(live.id, result.frame_id)
    if result.jpeg_base64 is not None:
        return None  # an image the registry would not keep: nothing to point into
    return desktop.frames.remember(
        live.id,
        region=since.region,
        image_width=since.image_width,
        image_height=since.image_height,
        damage_mark=since.damage_mark,
    )
