"""`observe?since=<frame_id>`: only what changed since the caller's frame.

What changed is the damage since the frame's damage mark, clipped to the native area
the frame's picture covers (its `scope`); when the host cannot tell (no damage backend,
its log no longer reaches the mark) that is the whole area. A host that keeps the
pictures it showed checks the damage against them and answers only where pixels differ,
in clusters (`compared`; agent/pictures.py): a window repainted the same is no change,
and a menu opening far from a button's highlight is two small areas, not the window
between them. Areas within MERGE_GAP of each other become one region; past MAX_IMAGES
regions the closest merge. Each region is one image (`changed_images`); nothing
changed: none. The targets come as a diff against those shown with the frame, and
`text.targets` keeps only the lines of the added and changed ones (the caller has read
the others with the frame).

The images are at the scale of the picture a full observe with the same `max_width`
would show of the scope, so a client pastes each onto its picture at `region * scale`.
Where that scale is a ratio of small integers p/q (2/3 for 1920 -> 1280) a region is
widened to multiples of q native pixels from the scope's origin: then it lands on whole
picture pixels, and its image is the very pixels the full picture has there (area
averaging over the same source pixels), up to JPEG. The host caps an image's long edge,
never sizes it exactly, so a region a scale like 640/683 cannot snap to is within a
pixel of it. Each capture tells a comparing host which picture the caller holds now
(`picture_patch`), so the next delta compares against that.

The answer's frame is the caller's picture with the images pasted in: the scope (echoed
as `frame_region`) at the picture's size, with the host's damage mark from before the
change was read (the next delta may over-report, never miss a change), so input points
into the picture the caller holds. With nothing changed it repeats the since frame's
picture geometry.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import time
from fractions import Fraction
from typing import TYPE_CHECKING

from rigway.gateway.desktop.frames import Frame, Region, TargetDigests
from rigway.gateway.desktop.schemas import (
    ChangedImageOut,
    MarkOut,
    ObserveOut,
    TargetOut,
    TargetsDiffOut,
)
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


# Changed areas closer than this (native pixels) share an image: a JPEG's own headers
# cost about what this much of a gap between them does.
MERGE_GAP = 32
# Past this many regions the closest merge: a bound on the captures one delta makes.
MAX_IMAGES = 6


def changed_regions(changed: ops.ScreenChanged, scope: Region) -> list[Region]:
    """The changed areas within `scope`, merged where near each other (all of the
    scope when the host cannot tell), largest first."""
    if not changed.known:
        return [scope]
    sx, sy, sw, sh = scope
    boxes = []
    for x, y, w, h in changed.rects:
        left, top = max(x, sx), max(y, sy)
        right, bottom = min(x + w, sx + sw), min(y + h, sy + sh)
        if right > left and bottom > top:
            boxes.append((left, top, right, bottom))
    boxes = _merge_near(boxes)
    while len(boxes) > MAX_IMAGES:
        boxes = _merge_closest(boxes)
    boxes.sort(key=lambda b: (b[2] - b[0]) * (b[3] - b[1]), reverse=True)
    return [(left, top, right - left, bottom - top) for left, top, right, bottom in boxes]


def bounding_box(regions: list[Region]) -> Region | None:
    if not regions:
        return None
    left = min(r[0] for r in regions)
    top = min(r[1] for r in regions)
    right = max(r[0] + r[2] for r in regions)
    bottom = max(r[1] + r[3] for r in regions)
    return (left, top, right - left, bottom - top)


_Box = tuple[int, int, int, int]  # left, top, right, bottom


def _union(a: _Box, b: _Box) -> _Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _near(a: _Box, b: _Box) -> bool:
    return (
        a[0] <= b[2] + MERGE_GAP
        and b[0] <= a[2] + MERGE_GAP
        and a[1] <= b[3] + MERGE_GAP
        and b[1] <= a[3] + MERGE_GAP
    )


def _merge_near(boxes: list[_Box]) -> list[_Box]:
    merged: list[_Box] = []
    for box in boxes:
        # Growing a box can bring it near boxes merged earlier: take them in again.
        grown = True
        while grown:
            grown = False
            for index, other in enumerate(merged):
                if _near(box, other):
                    box = _union(box, merged.pop(index))
                    grown = True
                    break
        merged.append(box)
    return merged


def _area(box: _Box) -> int:
    return (box[2] - box[0]) * (box[3] - box[1])


def _merge_closest(boxes: list[_Box]) -> list[_Box]:
    """The two boxes whose union adds the least area, merged."""
    pairs = [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))]
    i, j = min(
        pairs,
        key=lambda p: (
            _area(_union(boxes[p[0]], boxes[p[1]])) - _area(boxes[p[0]]) - _area(boxes[p[1]])
        ),
    )
    rest = [box for index, box in enumerate(boxes) if index not in (i, j)]
    return _merge_near([*rest, _union(boxes[i], boxes[j])])


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
    regions = [scaled_region(r, scope, params.max_width) for r in changed_regions(changed, scope)]
    images: list[ChangedImageOut] = []
    drawn: dict[int, MarkOut] = {}
    shots_s, host_jpeg_ms = 0.0, 0
    # The images first: a failed capture leaves the dirty take for the next observe.
    for number, ((x, y, w, h), cap) in enumerate(regions if image else []):
        # A comparing host keeps the caller's picture with this image pasted in.
        base = frame.damage_mark if number == 0 else changed.damage_mark
        patch = (
            ops.PicturePatch(base_mark=base, mark=changed.damage_mark) if changed.compared else None
        )
        shot_params = dataclasses.replace(
            params, region=ops.Region(x=x, y=y, w=w, h=h), max_width=cap, picture_patch=patch
        )
        started = time.perf_counter()
        shot = await desktop.screenshot(live, shot_params, mark=mark, counts_as_activity=False)
        shots_s += time.perf_counter() - started
        host_jpeg_ms += round(shot.reply.host_jpeg_ms)
        encoded = base64.b64encode(shot.jpeg).decode()
        images.append(
            ChangedImageOut(
                region=(x, y, w, h),
                width=shot.reply.width,
                height=shot.reply.height,
                jpeg_base64=encoded,
            )
        )
        drawn.update((m.index, MarkOut.model_validate(m.model_dump())) for m in shot.reply.marks)
    result = await desktop.observe(live, params, image=False, mark=False)
    diff = targets_diff(frame.targets, result.targets)
    news = {target.id for target in (*diff.added, *diff.changed)}
    lines = [
        line
        for target, line in zip(result.targets, result.text.targets, strict=True)
        if target.id in news
    ]
    picture_w, picture_h = picture_size(scope[2], scope[3], params.max_width)
    new_frame = None
    if image:
        new_frame = _next_frame(
            desktop, live, frame, scope, (picture_w, picture_h), changed, regions
        )
        desktop.frames.update(
            live.id,
            new_frame,
            damage_mark=changed.damage_mark,
            scope=scope,
            targets=target_digests(result.targets),
        )
    timing = result.timing.model_copy(
        update={
            "screenshot_rtt_ms": round(shots_s * 1000),
            "host_jpeg_ms": host_jpeg_ms if images else None,
            "image": image,
        }
    )
    return result.model_copy(
        update={
            "width": picture_w,
            "height": picture_h,
            # The SDK maps the picture's points through it (a region frame's too).
            "frame_region": scope,
            "changed_region": bounding_box([region for region, _ in regions]),
            "changed_images": images,
            "marked": bool(drawn),
            "marks": [drawn[index] for index in sorted(drawn)],
            "targets_diff": diff,
            "text": result.text.model_copy(update={"targets": lines}),
            "timing": timing,
            "frame_id": None if new_frame is None else new_frame.frame_id,
        }
    )


def _next_frame(
    desktop: DesktopService,
    live: LiveSession,
    since: Frame,
    scope: Region,
    picture: tuple[int, int],
    changed: ops.ScreenChanged,
    regions: list[tuple[Region, int | None]],
) -> Frame:
    """The caller's picture with the images pasted in: the scope at the picture's size;
    with nothing changed the since frame's picture under a new id."""
    if not regions:
        return desktop.frames.remember(
            live.id,
            region=since.region,
            image_width=since.image_width,
            image_height=since.image_height,
            damage_mark=changed.damage_mark,
        )
    return desktop.frames.remember(
        live.id,
        region=scope,
        image_width=picture[0],
        image_height=picture[1],
        damage_mark=changed.damage_mark,
    )
