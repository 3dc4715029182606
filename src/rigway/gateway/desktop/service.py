"""Desktop operations of an active session, forwarded to its host over the link.

The host refuses input while its desktop is not "normal" (`desktop_unavailable`, 409
here); what a reply shows of the desktop's state (that refusal, a dirty take's sample)
also updates the connection's latest state, which the Session and Rig views show. The
same holds for the owner using the rig (`owner_active`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from rigway.gateway.desktop.delta import target_digests
from rigway.gateway.desktop.frames import Frame, FrameRegistry
from rigway.gateway.desktop.input_stops import INPUT_STOPS, input_conflict
from rigway.gateway.desktop.schemas import (
    DirtyOut,
    DirtyTakeOut,
    MarkOut,
    ObserveOut,
    ObserveTextOut,
    ObserveTimingOut,
    TargetOut,
    TargetsOut,
    WaitIn,
    WaitOut,
)
from rigway.gateway.errors import (
    ApiError,
    Conflict,
    HostError,
    HostTimeout,
    InputConflict,
    InvalidRequest,
    NotFound,
    SessionEnded,
    human_in_control,
)
from rigway.gateway.hostlink.connection import (
    HostConnection,
    HostOpError,
    HostReply,
    HostTimeoutError,
    HostUnavailableError,
)
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.sessions.live import LiveSession
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.settings import GatewaySettings
from rigway.protocol import ops

if TYPE_CHECKING:
    from rigway.gateway.recordings.recorder import Recorder


@dataclass(frozen=True, slots=True)
class ScreenParams:
    quality: int = 85
    max_width: int | None = None
    region: ops.Region | None = None
    # `observe?since=`'s capture, for a host that keeps pictures (`delta.py`).
    picture_patch: ops.PicturePatch | None = None

    @classmethod
    def from_query(
        cls,
        *,
        quality: int,
        max_width: int | None,
        x: int | None,
        y: int | None,
        w: int | None,
        h: int | None,
    ) -> ScreenParams:
        """From query values already within their bounds; a partial region is refused."""
        if x is None and y is None and w is None and h is None:
            return cls(quality=quality, max_width=max_width)
        if x is None or y is None or w is None or h is None:
            raise InvalidRequest("x, y, w and h come together or not at all")
        return cls(quality=quality, max_width=max_width, region=ops.Region(x=x, y=y, w=w, h=h))


@dataclass(frozen=True, slots=True)
class Screenshot:
    jpeg: memoryview  # into the host's frame: written to the response without a copy
    reply: ops.ScreenCaptured
    link_ms: float
    # What the API caller was shown (`X-Frame-Id`); None for the owner's console peek.
    frame: Frame | None = None


def _host_error(exc: Exception, what: str) -> ApiError:
    if isinstance(exc, HostTimeoutError):
        return HostTimeout(f"the host did not answer the {what} in time")
    if isinstance(exc, HostOpError):
        if exc.code == ops.ERROR_INVALID_REQUEST:
            return InvalidRequest(exc.detail)
        if exc.code == ops.ERROR_APP_NOT_FOUND:
            return NotFound(exc.detail, code="app_not_found")
        if exc.code == ops.ERROR_NO_APP_WINDOW:
            return Conflict(exc.detail, code=ops.ERROR_NO_APP_WINDOW)
        if exc.code == ops.ERROR_SESSION_MISMATCH:
            return SessionEnded("the host no longer runs this session")
        if exc.code in INPUT_STOPS:
            return input_conflict(exc, _refused_state(exc))
        if exc.code == ops.ERROR_HOST:
            return HostError(exc.detail or "the host failed the operation")
        return HostError(f"{exc.code}: {exc.detail}" if exc.detail else exc.code)
    return HostError(f"the host is not connected ({exc})")


def _refused_state(exc: HostOpError) -> ops.DesktopState:
    """The state a `desktop_unavailable` names; the host's detail is untrusted text."""
    return next((state for state in ops.DESKTOP_STATES if state == exc.detail), "unknown")


_ReplyT = TypeVar("_ReplyT", bound=BaseModel)


def _parse_reply(model: type[_ReplyT], body: dict[str, Any]) -> _ReplyT:
    """A host's reply is untrusted input: a malformed one is a 502, never a 500."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise HostError(f"the host sent a malformed reply ({exc.error_count()} errors)") from exc


# How long a failed observe waits to hand its dirty take back: the caller already waits
# for an error, and a host too slow for this has bigger problems than one take.
_DIRTY_RETURN_TIMEOUT_S = 1.0


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class DesktopService:
    def __init__(
        self,
        sessions: SessionService,
        registry: HostRegistry,
        settings: GatewaySettings,
        frames: FrameRegistry,
        recorder: Recorder | None = None,
    ) -> None:
        self._sessions = sessions
        self._registry = registry
        self._settings = settings
        # Every image the API caller is shown, by frame id: input maps through these.
        self.frames = frames
        # Keeps the steps of sessions started with `record: true` (recordings/).
        self.recorder = recorder

    async def _call(
        self,
        live: LiveSession,
        op: str,
        body: dict[str, Any],
        timeout_s: float,
        what: str,
    ) -> HostReply:
        connection: HostConnection | None = self._registry.get(live.rig_id)
        if connection is None:
            raise HostError("the host is not connected")
        try:
            return await connection.request(op, {"session_id": live.id, **body}, timeout_s)
        except HostOpError as exc:
            if exc.code == ops.ERROR_SESSION_MISMATCH:
                # The host no longer runs it: make the record agree with the 410.
                await self._sessions.end(live.id, "host_gone", wait_for_host=False)
            if exc.code == ops.ERROR_DESKTOP_UNAVAILABLE:
                # Fresher than the last note, which may be up to a sampling interval old.
                connection.desktop_state = _refused_state(exc)
            if exc.code == ops.ERROR_OWNER_ACTIVE:
                connection.owner_active = True
            raise _host_error(exc, what) from exc
        except (HostTimeoutError, HostUnavailableError) as exc:
            raise _host_error(exc, what) from exc

    def check_region(self, live: LiveSession, region: ops.Region | None) -> None:
        if region is None or live.native_width is None or live.native_height is None:
            return
        if region.x + region.w > live.native_width or region.y + region.h > live.native_height:
            raise InvalidRequest(
                f"region {region.x},{region.y} {region.w}x{region.h} lies outside the "
                f"{live.native_width}x{live.native_height} desktop"
            )

    async def screenshot(
        self,
        live: LiveSession,
        params: ScreenParams,
        *,
        mark: bool = False,
        counts_as_activity: bool = True,
        is_step: bool = True,
    ) -> Screenshot:
        """`counts_as_activity=False` for the owner's console peek: only the API
        caller's own screenshots, observes and input keep a session alive, and only
        those are remembered as frames (`Screenshot.frame`). `is_step=False` for
        observe's leg: a recording keeps the observe as one step."""
        self.check_region(live, params.region)
        body = ops.ScreenCapture(
            session_id=live.id,
            quality=params.quality,
            max_width=params.max_width,
            region=params.region,
            mark=mark,
            picture_patch=params.picture_patch,
        ).model_dump(exclude={"session_id"})
        if params.picture_patch is None:
            del body["picture_patch"]  # only when set: a host that predates it refuses it
        started = time.perf_counter()
        reply = await self._call(
            live, ops.SCREEN_CAPTURE, body, self._settings.screen_timeout_s, "screenshot"
        )
        link_ms = (time.perf_counter() - started) * 1000
        captured = _parse_reply(ops.ScreenCaptured, reply.body)
        live.app_window = captured.app_window
        frame = None
        if counts_as_activity:
            frame = self._remember(live, params, captured)
            self._sessions.record_activity(live)
            if self._sessions.live.get(live.id) is None:
                # It ended while the host answered, after its frames were forgotten:
                # the one just remembered must not outlive it.
                self.frames.forget_session(live.id)
        shot = Screenshot(reply.payload, captured, link_ms, frame)
        if live.record and counts_as_activity and is_step and self.recorder is not None:
            await self.recorder.screenshot(live, params, shot)
        return shot

    def _remember(
        self, live: LiveSession, params: ScreenParams, captured: ops.ScreenCaptured
    ) -> Frame | None:
        """The frame the caller is shown: the region asked for, else an app session's
        window, else the whole desktop as the host measured it when it grabbed."""
        region = params.region
        shown = (
            (0, 0, captured.native_width, captured.native_height)
            if region is None
            else (region.x, region.y, region.w, region.h)
        )
        if region is None and captured.app_window is not None:
            shown = captured.app_window
        try:
            return self.frames.remember(
                live.id,
                region=shown,
                image_width=captured.width,
                image_height=captured.height,
                damage_mark=captured.damage_mark,
            )
        except ValueError:
            return None  # an empty image (a broken host): nothing to point into

    async def changed_since(self, live: LiveSession, damage_mark: int) -> ops.ScreenChanged:
        """What changed after a frame's mark; "not known" from a host without the op."""
        timeout_s = self._settings.screen_timeout_s
        body = {"damage_mark": damage_mark}
        try:
            reply = await self._call(live, ops.SCREEN_CHANGED_SINCE, body, timeout_s, "change read")
        except HostError as exc:
            if not str(exc.detail).startswith(ops.ERROR_UNKNOWN_OP):
                raise
            return ops.ScreenChanged(known=False, damage_mark=damage_mark)
        return _parse_reply(ops.ScreenChanged, reply.body)

    async def dirty(self, live: LiveSession) -> DirtyOut:
        """On its own a dirty read gets the deadline of "other" operations (10 s by
        default, docs/api.md); observe's leg gets its screenshot deadline."""
        taken = _since_session_start(
            live, await self._take_dirty(live, self._settings.host_timeout_s)
        )
        return DirtyOut.model_validate(taken.model_dump(exclude={"desktop_state", "owner_active"}))

    async def _take_dirty(self, live: LiveSession, timeout_s: float) -> ops.DirtyRects:
        reply = await self._call(live, ops.SCREEN_DIRTY, {}, timeout_s, "dirty read")
        taken = _parse_reply(ops.DirtyRects, reply.body)
        live.app_window = taken.app_window
        connection = self._registry.get(live.rig_id)
        if taken.desktop_state is not None and connection is not None:
            connection.desktop_state = taken.desktop_state
        if taken.owner_active is not None and connection is not None:
            connection.owner_active = taken.owner_active
        return taken

    def _desktop_state(self, live: LiveSession, taken: ops.DirtyRects) -> ops.DesktopState:
        """The state a dirty take sampled; from a host too old to sample it, the last one
        it noted ("unknown" once it is gone)."""
        if taken.desktop_state is not None:
            return taken.desktop_state
        noted = self._registry.desktop_state(live.rig_id)
        return "unknown" if noted is None else noted

    def _owner_active(self, live: LiveSession, taken: ops.DirtyRects) -> bool:
        """Whether the owner used the rig as the dirty take sampled it; from a host too
        old to sample it, as last noted."""
        if taken.owner_active is not None:
            return taken.owner_active
        return self._registry.owner_active(live.rig_id) is True

    async def target_snapshot(
        self, live: LiveSession, timeout_s: float | None = None
    ) -> ops.TargetSnapshot:
        """The "other" deadline on its own, observe's as one of its legs (as `dirty`)."""
        timeout_s = self._settings.host_timeout_s if timeout_s is None else timeout_s
        reply = await self._call(live, ops.A11Y_TARGETS, {}, timeout_s, "targets")
        snapshot = _parse_reply(ops.TargetSnapshot, reply.body)
        live.app_window = snapshot.app_window
        return snapshot

    async def targets(self, live: LiveSession) -> TargetsOut:
        """docs/api.md (Screen): the list is empty when the host is unavailable, not an error."""
        try:
            snapshot = await self.target_snapshot(live)
        except (HostError, HostTimeout, InvalidRequest):
            return TargetsOut(
                width=live.native_width or 0,
                height=live.native_height or 0,
                targets=[],
                truncated=False,
            )
        return TargetsOut(
            width=snapshot.width,
            height=snapshot.height,
            targets=_public_targets(snapshot),
            truncated=snapshot.truncated,
        )

    async def wait(self, live: LiveSession, request: WaitIn) -> WaitOut:
        """Waits on the host (`screen/wait`); counts as activity when it begins and
        when it ends, so a wait never idles its session out."""
        target = request.target
        body = ops.ScreenWait(
            session_id=live.id,
            until=request.until,
            timeout_ms=request.timeout_ms,
            quiet_ms=request.effective_quiet_ms,
            target_name=None if target is None else target.name,
            target_role=None if target is None else target.role,
            target_id=None if target is None else target.id,
        ).model_dump(exclude={"session_id"})
        # The host answers when the wait ends; the usual deadline on top covers the
        # link and a walk begun just before the timeout.
        timeout_s = request.timeout_ms / 1000 + self._settings.host_timeout_s
        self._sessions.record_activity(live)
        reply = await self._call(live, ops.SCREEN_WAIT, body, timeout_s, "wait")
        self._sessions.record_activity(live)
        waited = _parse_reply(ops.ScreenWaited, reply.body)
        found = None if waited.target is None else _public_target(waited.target)
        return WaitOut(met=waited.met, waited_ms=round(waited.waited_ms), target=found)

    async def input(
        self,
        live: LiveSession,
        body: dict[str, Any],
        *,
        events: int,
        timeout_s: float,
        by_human: bool = False,
    ) -> ops.InputDone:
        """Runs an `input/batch` body built and checked whole (`input_batch.py`) on the
        host: `events` events, `timeout_s` the deadline that covers the batch's waits.
        While a human holds control only their input (`by_human`, the takeover's
        channel) runs: the API's answers 409 human_in_control."""
        if live.control == "human" and not by_human:
            raise human_in_control()
        self._sessions.record_activity(live)
        live.batches_running += 1
        try:
            reply = await self._call(live, ops.INPUT_BATCH, body, timeout_s, "input batch")
        except InputConflict as exc:
            # Stopped part-way: the events that ran whole count as actions.
            ran = sum(1 for receipt in exc.extra.get("events", ()) if receipt["ok"])
            if ran:
                self._sessions.record_activity(live, actions=ran)
            if live.record and self.recorder is not None:
                await self.recorder.input(live, body, exc)
            raise
        except ApiError as exc:
            if live.record and self.recorder is not None:
                await self.recorder.input(live, body, exc)
            raise
        finally:
            live.batches_running -= 1
        self._sessions.record_activity(live, actions=events)
        done = _parse_reply(ops.InputDone, reply.body)
        if live.record and self.recorder is not None:
            await self.recorder.input(live, body, done)
        return done

    async def launch(self, live: LiveSession, path: str, args: list[str]) -> int:
        reply = await self._call(
            live,
            ops.APP_LAUNCH,
            {"path": path, "args": args},
            self._settings.host_timeout_s,
            "app launch",
        )
        # An action, but not activity: only screenshot, observe and input keep a session
        # from idling out (the session rules in docs/api.md).
        live.count_actions(1)
        pid = _parse_reply(ops.AppLaunched, reply.body).pid
        live.add_launched_app(pid, path)
        return pid

    async def kill(self, live: LiveSession, pid: int | None) -> list[int]:
        reply = await self._call(
            live, ops.APP_KILL, {"pid": pid}, self._settings.host_timeout_s, "app kill"
        )
        live.count_actions(1)  # not activity, as for a launch
        killed = _parse_reply(ops.AppsKilled, reply.body).killed
        # Without a pid the host killed every app of the session, those that had
        # exited by themselves included (they are not in `killed`).
        live.forget_launched_apps(killed if pid is not None else None)
        return killed

    async def observe(
        self, live: LiveSession, params: ScreenParams, *, image: bool, mark: bool
    ) -> ObserveOut:
        """Three legs at once: screenshot (unless image=0), dirty take, targets."""
        self.check_region(live, params.region)
        started = time.perf_counter()
        legs = await asyncio.gather(
            _timed(self.screenshot(live, params, mark=mark, is_step=False)) if image else _none(),
            # Observe as a whole answers within the screenshot deadline, so its other
            # legs get that one too, not the longer one they get on their own.
            _timed(self._take_dirty(live, self._settings.screen_timeout_s)),
            _timed(self.target_snapshot(live, self._settings.screen_timeout_s)),
            return_exceptions=True,
        )
        shot_leg, dirty_leg, targets_leg = legs
        if isinstance(shot_leg, BaseException):
            # The screenshot's error first: a 400 for a bad region must not become a
            # retryable 504 because the dirty leg also timed out.
            if not isinstance(dirty_leg, BaseException):
                await self._return_dirty(live, dirty_leg[0])
            raise shot_leg
        if isinstance(dirty_leg, BaseException):
            raise dirty_leg
        dirty, dirty_s = dirty_leg
        # Only now, with every leg through: a failed observe handed its take back above.
        dirty = _since_session_start(live, dirty)
        snapshot, targets_s = (None, 0.0) if isinstance(targets_leg, BaseException) else targets_leg
        if not image:
            self._sessions.record_activity(live)
        elif snapshot is not None and shot_leg is not None and shot_leg[0].frame is not None:
            # Shown together: a later `observe?since=` diffs the targets against these.
            shown = target_digests(_public_targets(snapshot))
            self.frames.update(live.id, shot_leg[0].frame, targets=shown)
        result = _observe_result(
            shot_leg,
            dirty,
            dirty_s,
            snapshot,
            targets_s,
            image,
            started,
            self._desktop_state(live, dirty),
            owner_active=self._owner_active(live, dirty),
        )
        if live.record and self.recorder is not None:
            jpeg = None if shot_leg is None else shot_leg[0].jpeg
            await self.recorder.observe(live, params, result, jpeg)
        return result

    async def _return_dirty(self, live: LiveSession, dirty: ops.DirtyRects) -> None:
        """Observe failed after its dirty leg took rectangles: hand them back to the
        host, so the caller's next take still reports them. Best effort."""
        connection = self._registry.get(live.rig_id)
        if not dirty.rects or connection is None:
            return
        body = {"session_id": live.id, "rects": [list(rect) for rect in dirty.rects]}
        with contextlib.suppress(HostTimeoutError, HostUnavailableError, HostOpError):
            await connection.request(ops.SCREEN_DIRTY_RETURN, body, _DIRTY_RETURN_TIMEOUT_S)


def _since_session_start(live: LiveSession, taken: ops.DirtyRects) -> ops.DirtyRects:
    """The take as this session's caller must see it: the first one of a session is the
    whole desktop (its caller has seen nothing yet, whatever the rig's damage says: the
    host's rectangles are since its last take, which may be another session's)."""
    if live.has_taken_dirty:
        return taken
    live.has_taken_dirty = True
    if not taken.available or taken.width <= 0 or taken.height <= 0:
        return taken  # no damage tracking: `changed` is already true, rects mean nothing
    whole = (0, 0, taken.width, taken.height) if taken.app_window is None else taken.app_window
    return taken.model_copy(update={"rects": [whole]})


async def _none() -> None:
    return None


async def _timed(work: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await work
    return result, time.perf_counter() - started


def _public_targets(snapshot: ops.TargetSnapshot) -> list[TargetOut]:
    return [_public_target(target) for target in snapshot.targets]


def _public_target(target: ops.Target) -> TargetOut:
    # Redaction is decided on the host; the gateway enforces it once more.
    masked = {"value": ops.MASKED_VALUE} if target.masked else {}
    return TargetOut.model_validate(target.model_dump() | masked)


def _text_lines(targets: list[TargetOut]) -> list[str]:
    lines = []
    # 1-based, as the SDK, the CLI and the MCP server count a target by its index.
    for index, target in enumerate(targets, start=1):
        focus = " [focused]" if target.focused else ""
        name = target.name or "(unnamed)"
        lines.append(f"[{index}] {name} ({target.role}){focus} id={target.id}")
    return lines


# Said first, as a lock is: a model reading only the text must wait, not type.
_OWNER_ACTIVE_SUMMARY = "owner at the rig: input is refused until they rest; "


def _summary(
    snapshot: ops.TargetSnapshot | None, targets: list[TargetOut], state: ops.DesktopState
) -> str:
    if state != "normal":
        # Said first: a model reading only the text must not try to type into a lock.
        refused = f"desktop {state}: input is refused until it is normal; "
        return refused + _summary(snapshot, targets, "normal")
    if snapshot is None:
        return "targets unavailable: the host did not answer"
    focused = next((t for t in targets if t.focused), None)
    focus = f"focus on {focused.name or focused.role!r} ({focused.role})" if focused else "no focus"
    title = snapshot.window_title or "(untitled)"
    more = ", truncated" if snapshot.truncated else ""
    return f"window {title!r}: {focus}; {len(targets)} targets{more}"


def _marks(shot_leg: tuple[Screenshot, float] | None) -> list[MarkOut]:
    if shot_leg is None or not shot_leg[0].reply.marked:
        return []
    return [MarkOut.model_validate(m.model_dump()) for m in shot_leg[0].reply.marks]


def _observe_result(
    shot_leg: tuple[Screenshot, float] | None,
    dirty: ops.DirtyRects,
    dirty_s: float,
    snapshot: ops.TargetSnapshot | None,
    targets_s: float,
    image: bool,
    started: float,
    desktop_state: ops.DesktopState,
    *,
    owner_active: bool = False,
) -> ObserveOut:
    targets = [] if snapshot is None else _public_targets(snapshot)
    native_w = dirty.width
    native_h = dirty.height
    width, height, marked, jpeg_b64 = native_w, native_h, False, None
    frame_id: str | None = None  # only an image names a frame
    host_jpeg_ms: int | None = None
    screenshot_s = 0.0
    if shot_leg is not None:
        shot, screenshot_s = shot_leg
        width, height, marked = shot.reply.width, shot.reply.height, shot.reply.marked
        host_jpeg_ms = round(shot.reply.host_jpeg_ms)
        jpeg_b64 = base64.b64encode(shot.jpeg).decode()
        frame_id = None if shot.frame is None else shot.frame.frame_id
    return ObserveOut(
        width=width,
        height=height,
        native_width=native_w,
        native_height=native_h,
        timestamp=int(time.time() * 1000),
        frame_id=frame_id,
        jpeg_base64=jpeg_b64,
        dirty=DirtyTakeOut(width=dirty.width, height=dirty.height, rects=dirty.rects),
        changed=bool(dirty.rects) or not dirty.available,
        targets=targets,
        truncated=snapshot is not None and snapshot.truncated,
        text=ObserveTextOut(
            window_title=snapshot.window_title if snapshot is not None else "",
            window_role=snapshot.window_role if snapshot is not None else "",
            targets=_text_lines(targets),
            summary=(_OWNER_ACTIVE_SUMMARY if owner_active else "")
            + _summary(snapshot, targets, desktop_state),
        ),
        marked=marked,
        marks=_marks(shot_leg),
        timing=ObserveTimingOut(
            total_ms=_ms(time.perf_counter() - started),
            screenshot_rtt_ms=_ms(screenshot_s),
            dirty_rtt_ms=_ms(dirty_s),
            targets_rtt_ms=_ms(targets_s),
            host_jpeg_ms=host_jpeg_ms,
            host_uia_ms=None if snapshot is None else round(snapshot.host_uia_ms),
            image=image,
        ),
        desktop_state=desktop_state,
        owner_active=owner_active,
        app_window=None if dirty.app_window is None else list(dirty.app_window),
    )
