"""Screen capture, the last-frame cache and dirty-rectangle accumulation.

One worker thread (the `SerialWorker` passed in) owns every call into the
backend's screen role (`grab`, `poll_damage`, `native_size`) and all of this module's
mutable state, so nothing here needs a lock. The event loop only awaits the worker.

Damage is polled on demand, before every capture, every dirty read and every stream
tick, and fanned out to every consumer: the dirty accumulator (emptied by
`screen/dirty`), the "stale" flag of the cached frame and each live stream's
`StreamWatch` ("changed since my last frame?"), and the strips of the last
whole-desktop JPEG that must be encoded again. A stream never takes the rectangles the
API reads, and the API never hides a change from a stream. Polling before the grab is
conservative: damage that lands between the poll and the grab is reported again at the
next poll, so the cached frame is never served after it. The strips it touched may show
the moment of the poll in this frame while the others show the grab (a millisecond
apart); the next capture encodes them again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rigway.agent.app_scope import (
    AppScope,
    check_region,
    clip_rects,
    intersect,
    scoped_pixels,
    shifted_marks,
)
from rigway.agent.backends.base import Desktop, Pixels, Rect
from rigway.agent.damage_log import DamageLog
from rigway.agent.desktop_state import read_desktop_state
from rigway.agent.imaging import DrawnMark, EncodedImage, Mark, render_jpeg, scaled_size
from rigway.agent.jpeg_strips import StripEncoder, StripJpeg, strips_touched
from rigway.agent.pictures import PictureStore, differing
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops

__all__ = [
    "DAMAGE_POLL_INTERVAL_S",
    "MAX_DIRTY_RECTS",
    "CaptureParams",
    "CapturedFrame",
    "DirtyAccumulator",
    "RegionOutsideDesktopError",
    "ScreenChange",
    "ScreenService",
    "StreamWatch",
    "merge_rects",
]

# Past this many disjoint rectangles a caller gains nothing over one bounding box, and
# the reply stays small whatever the desktop does.
MAX_DIRTY_RECTS = ops.MAX_DIRTY_RECTS

# How often a wait for change or quiet asks the backend for damage: one X round trip
# (or one DXGI acquire with a zero timeout) per tick, on the screen worker.
DAMAGE_POLL_INTERVAL_S = 0.005

_T = TypeVar("_T")


class RegionOutsideDesktopError(ValueError):
    """The requested region does not lie inside the native desktop."""


@dataclass(frozen=True, slots=True)
class CaptureParams:
    quality: int = 85
    max_width: int | None = None
    region: Rect | None = None
    marks: tuple[Mark, ...] = ()
    # A delta's capture: (since frame's mark, delta frame's mark), see `pictures.py`.
    picture_patch: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class ScreenChange:
    """`rects` after a mark (None: cannot be told), the mark now, and whether the rects
    were checked against the pixels of the picture shown at the mark."""

    rects: list[Rect] | None
    damage_mark: int
    compared: bool


@dataclass(frozen=True, slots=True)
class CapturedFrame:
    jpeg: bytes
    width: int
    height: int
    native_width: int
    native_height: int
    host_jpeg_ms: float
    cached: bool
    marked: bool
    # The damage log's mark at the poll just before this frame's pixels were grabbed
    # (or, for a cached frame, before the grab it came from): "changed since this frame"
    # is `damage_since(damage_mark)`, which may over-report, never under-report.
    damage_mark: int = 0
    marks: tuple[DrawnMark, ...] = ()
    # An app session's window, the native rect the image shows (`app_scope.py`).
    app_window: tuple[int, int, int, int] | None = None

    def reply_body(self) -> dict[str, Any]:
        """The `ops.ScreenCaptured` body, built as the dict it dumps to: a model built only
        to be dumped again cost a round trip on the loop after every encode."""
        return {
            "width": self.width,
            "height": self.height,
            "native_width": self.native_width,
            "native_height": self.native_height,
            "host_jpeg_ms": round(self.host_jpeg_ms, 3),
            "cached": self.cached,
            "marked": self.marked,
            "damage_mark": self.damage_mark,
            "marks": [
                {"index": m.index, "id": m.target_id, "labelled": m.labelled} for m in self.marks
            ],
            "app_window": self.app_window,
        }


def merge_rects(rects: Sequence[Rect], width: int, height: int) -> list[Rect]:
    """Clip to the desktop, drop empties, merge overlapping or touching rectangles.

    Past MAX_DIRTY_RECTS the result collapses to one bounding box.
    """
    pending = [r for r in (_clip(r, width, height) for r in rects) if r is not None]
    merged: list[Rect] = []
    while pending:
        current = pending.pop()
        # Growing `current` can make it touch rectangles merged earlier: re-scan them.
        absorbed = True
        while absorbed:
            absorbed = False
            for index, other in enumerate(merged):
                if _touches(current, other):
                    current = _union(current, merged.pop(index))
                    absorbed = True
                    break
        merged.append(current)
    if len(merged) > MAX_DIRTY_RECTS:
        bounds = merged[0]
        for rect in merged[1:]:
            bounds = _union(bounds, rect)
        return [bounds]
    return sorted(merged, key=lambda r: (r.y, r.x))


def _clip(rect: Rect, width: int, height: int) -> Rect | None:
    left, top = max(rect.x, 0), max(rect.y, 0)
    right, bottom = min(rect.x + rect.w, width), min(rect.y + rect.h, height)
    if right <= left or bottom <= top:
        return None
    return Rect(left, top, right - left, bottom - top)


def _touches(a: Rect, b: Rect) -> bool:
    return a.x <= b.x + b.w and b.x <= a.x + a.w and a.y <= b.y + b.h and b.y <= a.y + a.h


def _union(a: Rect, b: Rect) -> Rect:
    left, top = min(a.x, b.x), min(a.y, b.y)
    right, bottom = max(a.x + a.w, b.x + b.w), max(a.y + a.h, b.y + b.h)
    return Rect(left, top, right - left, bottom - top)


class DirtyAccumulator:
    """Damage since the last `take`; kept merged so it stays bounded between reads."""

    def __init__(self) -> None:
        self._rects: list[Rect] = []

    def add(self, rects: Sequence[Rect], width: int, height: int) -> None:
        self._rects = merge_rects([*self._rects, *rects], width, height)

    def take(self) -> list[Rect]:
        rects, self._rects = self._rects, []
        return rects

    def clear(self) -> None:
        self._rects = []


class StreamWatch:
    """One stream's flag in the damage fan-out: set by any poll that saw damage,
    cleared when that stream grabs. Touched on the screen worker only."""

    __slots__ = ("changed",)

    def __init__(self) -> None:
        self.changed = True  # a new stream's first frame is always due


@dataclass(frozen=True, slots=True)
class _CacheKey:
    params: CaptureParams
    native_size: tuple[int, int]


@dataclass(slots=True)
class _CachedFrame:
    key: _CacheKey
    image: EncodedImage
    is_stale: bool = False


class ScreenService:
    """Captures and dirty reads for the dispatcher; all backend work on `worker`, the
    backend's screen thread.

    JPEGs are encoded in strips by `encoder` (by default on the screen worker alone).
    The last full-desktop frame is kept in strips too, with the strips damage touched
    since: the next full-desktop capture of a changed screen re-encodes only those
    (docs/decisions/0011-jpeg-in-strips.md)."""

    def __init__(
        self, desktop: Desktop, worker: SerialWorker, encoder: StripEncoder | None = None
    ) -> None:
        self._desktop = desktop
        self._worker = worker
        self._encoder = StripEncoder(helpers=0) if encoder is None else encoder
        self._dirty = DirtyAccumulator()
        self._damage_log = DamageLog()
        self._cache: _CachedFrame | None = None
        self._strips: StripJpeg | None = None
        self._changed_strips: set[int] = set()
        self._watches: list[StreamWatch] = []
        self._scope: AppScope | None = None
        # What callers were shown, for `changed_since` to compare (`pictures.py`): kept
        # only once the session has asked `changed_since` on a backend with damage (a
        # host never asked, or one that cannot compare, copies no grab).
        self._pictures = PictureStore()
        self._keeping_pictures = False
        # The grab the capture just made, kept once its reply has gone (the copy waits).
        self._to_keep: tuple[int, Pixels] | None = None

    def set_scope(self, scope: AppScope | None) -> None:
        """An app session's scope (None: the whole desktop); captures read it on the
        screen worker, so it is set between captures, at a session's start and end."""
        self._scope = scope

    async def capture(
        self, params: CaptureParams, deliver: Callable[[CapturedFrame], None] | None = None
    ) -> CapturedFrame:
        """The frame for `params`. `deliver`, when given, receives it on the screen worker
        the moment it exists, before the event loop hears of it: the link answers the
        gateway from there (docs/decisions/0008-replies-from-the-screen-worker.md)."""
        return await self.start_capture(params, deliver)

    def start_capture(
        self, params: CaptureParams, deliver: Callable[[CapturedFrame], None] | None = None
    ) -> asyncio.Future[CapturedFrame]:
        """`capture`, queued on the screen worker before this returns."""
        return self._worker.start(self._capture, params, deliver)

    async def take_dirty(self) -> ops.DirtyRects:
        return await self._run(self._take_dirty)

    async def return_dirty(self, rects: Sequence[Rect]) -> None:
        """Put back rectangles a take handed out that never reached the caller; they
        merge with whatever damage arrived since."""
        await self._run(self._return_dirty, rects)

    async def native_size(self) -> tuple[int, int]:
        return await self._run(self._desktop.native_size)

    @property
    def has_damage(self) -> bool:
        return self._desktop.has_damage

    async def damage_mark(self) -> int:
        """A mark to ask `damage_since` about later (damage polled first)."""
        return await self._run(self._polled_mark)

    async def damage_since(self, mark: int) -> list[Rect] | None:
        """What changed after `mark` (damage polled first); None when that cannot be
        told: no damage on this backend, or the mark is older than the log reaches."""
        return await self._run(self._polled_since, mark)

    async def changed_since(self, mark: int) -> ScreenChange:
        """What changed after `mark`, checked against the picture shown at it when one is
        kept (an app session keeps none: its pictures black out other windows)."""
        return await self._run(self._changed_since, mark)

    async def wait_for_change(
        self, mark: int, timeout_s: float, within: Rect | None = None
    ) -> bool | None:
        """Whether the screen changed after `mark` within `timeout_s` (inside `within`
        when given: an app session's window); None when the backend cannot tell (no
        damage). Returns as soon as a poll sees a change."""
        if not self._desktop.has_damage:
            return None
        deadline = time.monotonic() + timeout_s
        while True:
            changed = _inside(await self.damage_since(mark), within)
            if changed is None or changed:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(DAMAGE_POLL_INTERVAL_S, max(0.0, deadline - time.monotonic())))

    async def wait_quiet(
        self, quiet_s: float, timeout_s: float, within: Rect | None = None
    ) -> tuple[bool, float]:
        """Wait until no damage (inside `within`, when given) has arrived for `quiet_s`,
        at most `timeout_s`:
        (settled, seconds waited). Without damage the screen cannot be watched: the
        wait is `quiet_s` (bounded by the timeout) and never counts as settled."""
        started = time.monotonic()
        if not self._desktop.has_damage:
            await asyncio.sleep(min(quiet_s, timeout_s))
            return False, time.monotonic() - started
        mark = await self.damage_mark()
        last_change = started
        while True:
            # One poll answers both: what changed after `mark`, and the mark to watch next.
            changed, latest = await self._run(self._polled_since_and_mark, mark)
            changed = _inside(changed, within)
            now = time.monotonic()
            if changed is None or changed:
                mark = latest
                last_change = now
            if now - last_change >= quiet_s:
                return True, now - started
            if now - started >= timeout_s:
                return False, now - started
            next_check = min(last_change + quiet_s, started + timeout_s)
            await asyncio.sleep(min(DAMAGE_POLL_INTERVAL_S, max(0.0, next_check - now)))

    async def reset(self) -> None:
        """A new session: forget damage and the cached frame from before it."""
        await self._run(self._reset)

    async def session_ended(self) -> None:
        """The session's pictures go with it (a copy of the desktop each), and no more
        are kept until the next session asks `changed_since`."""
        await self._run(self._forget_pictures)

    async def pictures_kept(self) -> int:
        """How many pictures the host holds now (marks two pictures clashed under count)."""
        return await self._run(self._pictures.__len__)

    async def open_watch(self) -> StreamWatch:
        watch = StreamWatch()
        await self._run(self._watches.append, watch)
        return watch

    async def close_watch(self, watch: StreamWatch) -> None:
        await self._run(self._close_watch, watch)

    async def stream_pixels(self, watch: StreamWatch) -> Pixels | None:
        """A fresh grab when the desktop changed since this watch's last one (always
        without damage reporting), else None: the stream holds its frame."""
        return await self._run(self._stream_pixels, watch)

    async def _run(self, fn: Callable[..., _T], *args: object) -> _T:
        return await self._worker.call(fn, *args)

    # Everything below runs on the screen worker.

    def _polled_mark(self) -> int:
        self._poll_damage(*self._desktop.native_size())
        return self._damage_log.mark

    def _polled_since(self, mark: int) -> list[Rect] | None:
        if not self._desktop.has_damage:
            return None
        self._poll_damage(*self._desktop.native_size())
        return self._damage_log.since(mark)

    def _polled_since_and_mark(self, mark: int) -> tuple[list[Rect] | None, int]:
        return self._polled_since(mark), self._damage_log.mark

    def _changed_since(self, mark: int) -> ScreenChange:
        width, height = self._desktop.native_size()
        self._poll_damage(width, height)
        now = self._damage_log.mark
        rects = self._damage_log.since(mark) if self._desktop.has_damage else None
        if self._desktop.has_damage and self._scope is None:
            # The caller compares: from here on the captures keep what they showed.
            self._keeping_pictures = True
        picture = None if self._scope is not None else self._pictures.get(mark)
        if rects is None or picture is None:
            return ScreenChange(rects, now, compared=False)
        damaged = merge_rects(rects, width, height)
        if damaged:
            # After the poll: drawing between the two is in the grab and after `now`.
            current = self._desktop.grab()
            if current.shape != picture.shape:
                return ScreenChange(rects, now, compared=False)
            damaged = differing(damaged, picture, current)
        if not damaged:
            # The caller's picture is still the screen: it is the picture at `now` too.
            self._pictures.keep(now, picture)
        return ScreenChange(damaged, now, compared=True)

    def _poll_damage(self, width: int, height: int) -> None:
        if not self._desktop.has_damage:
            return
        rects = self._desktop.poll_damage()
        if not rects:
            return
        self._damage_log.add(rects)
        self._dirty.add(rects, width, height)
        if self._cache is not None:
            self._cache.is_stale = True
        if self._strips is not None:
            if (width, height) != (self._strips.width, self._strips.height):
                # Damage clipped to another size says nothing about the strips' rows.
                self._forget_strips()
            else:
                for rect in rects:
                    self._changed_strips.update(strips_touched(rect, height))
        for watch in self._watches:
            watch.changed = True

    def _stream_pixels(self, watch: StreamWatch) -> Pixels | None:
        width, height = self._desktop.native_size()
        self._poll_damage(width, height)
        if self._desktop.has_damage and not watch.changed:
            return None
        # Cleared before the grab: damage landing during it sets the flag again, which
        # costs one redundant frame at most and never holds a stale one.
        watch.changed = False
        pixels = self._desktop.grab()
        if pixels.shape[:2] != (height, width):
            self._forget_strips()  # resized: the polls' damage was clipped to the old size
        # A grab may be a view the next grab overwrites; the stream encodes elsewhere.
        return pixels.copy()

    def _close_watch(self, watch: StreamWatch) -> None:
        if watch in self._watches:
            self._watches.remove(watch)

    def _capture(
        self, params: CaptureParams, deliver: Callable[[CapturedFrame], None] | None
    ) -> CapturedFrame:
        self._to_keep = None
        frame = self._capture_frame(params)
        if deliver is not None:
            deliver(frame)
        self._keep_picture(params)
        return frame

    def _keep_picture(self, params: CaptureParams) -> None:
        """The grab just encoded, kept as what its caller was shown; after the reply, so
        the copy (a few ms for 8 MB) costs the caller nothing."""
        if self._to_keep is None:
            return
        damage_mark, grab = self._to_keep
        self._to_keep = None
        if not self._keeping_pictures:
            return
        if params.picture_patch is None:
            self._pictures.keep(damage_mark, grab.copy())
        elif params.region is not None:
            base_mark, mark = params.picture_patch
            self._pictures.patch(base_mark, mark, params.region, grab)

    def _capture_frame(self, params: CaptureParams) -> CapturedFrame:
        started = time.perf_counter()
        if self._scope is not None:
            return self._capture_scoped(params, self._scope, started)
        width, height = self._desktop.native_size()
        _check_region(params.region, width, height)
        self._poll_damage(width, height)
        key = _CacheKey(params, (width, height))
        cache = self._cache
        is_fresh = cache is not None and not cache.is_stale and cache.key == key
        if self._desktop.has_damage and is_fresh:
            assert cache is not None
            return _frame(cache.image, key, started, cached=True, damage_mark=self._damage_log.mark)
        # Read before the grab: damage landing between here and the grab counts as
        # "after this frame" (an over-report, never an under-report).
        damage_mark = self._damage_log.mark
        frame = self._desktop.grab()
        grabbed_h, grabbed_w = frame.shape[:2]
        if (grabbed_w, grabbed_h) != (width, height):
            # The desktop was resized between native_size() and grab(): trust the pixels.
            # The damage just polled was clipped to the old size, so no strip of the last
            # frame can be trusted.
            width, height = grabbed_w, grabbed_h
            self._forget_strips()
            _check_region(params.region, width, height)
            key = _CacheKey(params, (width, height))
        self._to_keep = (damage_mark, frame)
        if _is_whole_desktop(params, width, height):
            image = self._encode_whole_desktop(frame, params.quality)
        else:
            image = render_jpeg(
                frame,
                quality=params.quality,
                max_width=params.max_width,
                region=params.region,
                marks=params.marks,
                encode=self._encoder.encode_whole,
            )
        self._cache = _CachedFrame(key, image)
        return _frame(image, key, started, cached=False, damage_mark=damage_mark)

    def _capture_scoped(
        self, params: CaptureParams, scope: AppScope, started: float
    ) -> CapturedFrame:
        """An app session's frame: its window (or a region inside it), other windows
        blacked out, never cached (the cache knows nothing of windows moving)."""
        width, height = self._desktop.native_size()
        self._poll_damage(width, height)
        damage_mark = self._damage_log.mark
        frame, view = scope.grab(self._desktop.grab)
        check_region(view, params.region)
        area = view.window if params.region is None else params.region
        image = render_jpeg(
            scoped_pixels(frame, view, area),
            quality=params.quality,
            max_width=params.max_width,
            region=None,
            marks=shifted_marks(params.marks, area),
            encode=self._encoder.encode_whole,
        )
        key = _CacheKey(params, (width, height))
        captured = _frame(image, key, started, cached=False, damage_mark=damage_mark)
        return dataclasses.replace(captured, app_window=view.as_list())

    def _encode_whole_desktop(self, frame: Pixels, quality: int) -> EncodedImage:
        """The frame as strips, reusing those of the last whole-desktop frame that no
        damage touched since. Damage that lands between the poll and the grab is not in
        `changed` yet: its strips keep their old bytes in this frame (the screen as the
        poll saw it) and are encoded again by the next capture, whose poll reports it."""
        height, width = frame.shape[:2]
        previous = self._strips if self._desktop.has_damage else None
        strips = self._encoder.encode(frame, quality, reuse=previous, changed=self._changed_strips)
        self._strips = strips
        self._changed_strips = set()
        return EncodedImage(jpeg=strips.join(), width=width, height=height, marked=False)

    def _forget_pictures(self) -> None:
        self._pictures.clear()
        self._keeping_pictures = False
        self._to_keep = None

    def _forget_strips(self) -> None:
        self._strips = None
        self._changed_strips = set()

    def _take_dirty(self) -> ops.DirtyRects:
        # An app session's first: without a window nothing is taken.
        view = None if self._scope is None else self._scope.require_view()
        width, height = self._desktop.native_size()
        available = self._desktop.has_damage
        self._poll_damage(width, height)
        rects = [r.as_list() for r in (self._dirty.take() if available else [])]
        return ops.DirtyRects(
            width=width,
            height=height,
            available=available,
            capture_mode=self._desktop.capture_mode,
            rects=rects if view is None else clip_rects(rects, view),
            desktop_state=read_desktop_state(self._desktop),
            app_window=None if view is None else view.as_list(),
        )

    def _return_dirty(self, rects: Sequence[Rect]) -> None:
        width, height = self._desktop.native_size()
        self._dirty.add(rects, width, height)

    def _reset(self) -> None:
        if self._desktop.has_damage:
            self._desktop.poll_damage()
        self._dirty.clear()
        self._damage_log.clear()
        self._forget_pictures()
        self._cache = None
        self._forget_strips()
        for watch in self._watches:
            watch.changed = True


def _frame(
    image: EncodedImage, key: _CacheKey, started: float, *, cached: bool, damage_mark: int
) -> CapturedFrame:
    return CapturedFrame(
        jpeg=image.jpeg,
        width=image.width,
        height=image.height,
        native_width=key.native_size[0],
        native_height=key.native_size[1],
        host_jpeg_ms=(time.perf_counter() - started) * 1000.0,
        cached=cached,
        marked=image.marked,
        damage_mark=damage_mark,
        marks=image.marks,
    )


def _inside(rects: list[Rect] | None, within: Rect | None) -> list[Rect] | None:
    """The rects that touch `within` (all of them without one); None stays None."""
    if rects is None or within is None:
        return rects
    return [r for r in rects if intersect(r, within) is not None]


def _is_whole_desktop(params: CaptureParams, width: int, height: int) -> bool:
    """Is the image the desktop itself, pixel for pixel (no region, scale or marks)?"""
    return (
        params.region is None
        and not params.marks
        and scaled_size(width, height, params.max_width) == (width, height)
    )


def _check_region(region: Rect | None, width: int, height: int) -> None:
    if region is None:
        return
    if region.x + region.w > width or region.y + region.h > height:
        raise RegionOutsideDesktopError(
            f"region {region.x},{region.y} {region.w}x{region.h} lies outside the "
            f"{width}x{height} desktop"
        )
