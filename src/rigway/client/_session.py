"""Live session handles: `SessionHandle` (sync) here, `AsyncSessionHandle` in
`_async_session`.

Both are thin: requests are `_operations` / `_act_ops` builders run by the owning
client; the state they expose (`info`, ids, native size, latest targets) lives in one
shared base, `SessionState`.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Unpack

from . import _act_ops as act_ops
from . import _operations as ops
from ._act_ops import ActOptions, TargetRef, WaitTargetLike
from .errors import NotFoundError, RigwayError, SessionEndedError
from .models import (
    ActResult,
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    InputEvent,
    MouseButton,
    ObserveResult,
    Screenshot,
    Session,
    StreamCredentials,
    Takeover,
    Target,
    TargetList,
    WaitResult,
    WaitUntil,
)

if TYPE_CHECKING:
    from ._sync import SyncAPIClient

__all__ = ["DEFAULT_WAIT_TIMEOUT_MS", "SessionHandle"]

# `wait_for` without a timeout: long enough for a dialog or a page, well inside the
# gateway's 30 s bound.
DEFAULT_WAIT_TIMEOUT_MS = 10_000


def cleanup_note(session_id: str, end_error: RigwayError) -> str:
    return f"rigway: ending session {session_id} also failed: {end_error}"


class SessionState:
    """What both handles know about their session, without I/O."""

    def __init__(self, session: Session) -> None:
        self._session = session
        # The latest snapshot's targets in observe's order: `click(target=3)` counts here.
        self._latest: list[Target] = []

    @property
    def info(self) -> Session:
        """The latest known session record (refreshed by `refresh()` and `end()`)."""
        return self._session

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._session.session_id

    @property
    def id(self) -> str:
        """The session id (same as `session_id`)."""
        return self._session.session_id

    @property
    def rig_id(self) -> str:
        """The rig this session runs on."""
        return self._session.rig_id

    @property
    def status(self) -> str:
        """`active`, `ended` or `failed`, as last seen."""
        return self._session.status

    @property
    def native_width(self) -> int | None:
        """Native desktop width in pixels, when the gateway reported it."""
        return self._session.native_width

    @property
    def native_height(self) -> int | None:
        """Native desktop height in pixels, when the gateway reported it."""
        return self._session.native_height

    @property
    def latest_targets(self) -> list[Target]:
        """Targets of the latest `targets()` or `observe()` (also an `act`'s observe),
        in their order: what `click(target=…)` resolves ids, names and indexes against."""
        return list(self._latest)

    @property
    def _is_over(self) -> bool:
        # `ended` and `failed` are final: a session known to be over needs no end call.
        return self._session.status in ("ended", "failed")

    def _remember_targets(self, targets: list[Target]) -> None:
        self._latest = list(targets)

    def _remember_observe(self, result: ObserveResult) -> None:
        diff = result.targets_diff
        if diff is None:
            self._remember_targets(result.targets)
            return
        # A delta: the remembered targets (those shown with the since frame, as a rule)
        # take the changes in place, so the indexes already given stay valid.
        gone = set(diff.removed)
        latest = {t.id: t for t in diff.changed}
        kept = [latest.get(t.id, t) for t in self._latest if t.id not in gone]
        known = {t.id for t in kept}
        self._latest = kept + [t for t in diff.added if t.id not in known]

    def _remember_act(self, result: ActResult) -> ActResult:
        if result.observe is not None:
            self._remember_targets(result.observe.targets)
        return result

    def _note_target(self, target: Target | None) -> None:
        """A control a wait found: its box replaces the same id's, or joins at the end
        (so the indexes observe gave stay valid)."""
        if target is None:
            return
        for index, known in enumerate(self._latest):
            if known.id == target.id:
                self._latest[index] = target
                return
        self._latest.append(target)

    @staticmethod
    def _check_target_coords(ref: TargetRef | None, options: ActOptions) -> None:
        if ref is not None and options.get("coords") == "image":
            raise ValueError(
                'a target\'s centre is in native pixels: do not combine target with coords="image"'
            )


# ------------------------------------------------------------------------- sync


class SessionHandle(SessionState):
    """A live session: screens, grounding, input and apps, bound to one session id.

    As a context manager it ALWAYS ends the session on exit, also when the body raised;
    a failure to end then never hides the body's exception (it is added as a note).
    Coordinates are native desktop pixels; map image pixels with `Screenshot.to_native`,
    or pass `frame_id=shot, coords="image"` to an acting method.

    Every acting method (`act`, `click`, `drag`, `type_text`, …) takes the options of
    `act`: `settle`, `observe`, `frame_id`, `coords`, `require_unchanged`, and returns
    an `ActResult` (receipts, settle, observe).
    """

    def __init__(self, client: SyncAPIClient, session: Session) -> None:
        super().__init__(session)
        self._client = client

    def refresh(self) -> Session:
        """Re-read the session record (status, action count, billing)."""
        self._session = self._client._request(ops.get_session(self.session_id))
        return self._session

    def end(self) -> Session:
        """End the session (idempotent); returns the final record with `ended_reason`."""
        self._session = self._client._request(ops.end_session(self.session_id))
        return self._session

    def __enter__(self) -> SessionHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._is_over:
            return
        try:
            self.end()
        except (SessionEndedError, NotFoundError):
            pass  # already over (idle timeout, owner kill, …): nothing left to end
        except RigwayError as end_error:
            if exc is None:
                raise
            exc.add_note(cleanup_note(self.session_id, end_error))

    # -- screens

    def screenshot(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
    ) -> Screenshot:
        """A JPEG of the desktop (or of `region`, native x/y/w/h), long edge ≤ `max_width`.

        `quality` is 40…100 (gateway default 85). Map image pixels back with `to_native`,
        or act in them with `frame_id=shot, coords="image"`.
        """
        return self._client._request(
            ops.screenshot(self.session_id, max_width=max_width, quality=quality, region=region)
        )

    def observe(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
        mark: bool = False,
        image: bool = True,
        since: str | None = None,
    ) -> ObserveResult:
        """Frame, change flag, window text and click targets in one round trip.

        `mark=True` draws each target's box and id on the image; `image=False` skips the
        JPEG. Consumes the dirty take like `dirty()`. Remembers the targets for `click`.
        `since=<frame_id>` (an earlier observe's or screenshot's): `changed_images` in
        place of the image, the parts that changed at the picture's scale (empty: nothing
        changed), and `targets_diff` in place of `targets`, applied here to the targets
        remembered for `click`. The frame is then the picture with them pasted in.
        """
        result = self._client._request(
            ops.observe(
                self.session_id,
                max_width=max_width,
                quality=quality,
                region=region,
                mark=mark,
                image=image,
                since=since,
            )
        )
        self._remember_observe(result)
        return result

    def dirty(self) -> DirtyRects:
        """Rectangles changed since the last take (each take consumes them); a session's
        first take is the whole desktop."""
        return self._client._request(ops.dirty(self.session_id))

    def targets(self) -> TargetList:
        """Click targets of the focused window, in native pixels; remembered for `click`."""
        result = self._client._request(ops.targets(self.session_id))
        self._remember_targets(result.targets)
        return result

    def stream(self) -> StreamCredentials:
        """WebRTC signaling credentials for a live view of the desktop."""
        return self._client._request(ops.stream(self.session_id))

    def takeover(self) -> Takeover:
        """A one-time link for a person to take control: open `viewer_url` in a browser.
        While they drive, input raises `ConflictError` (`human_in_control`); `refresh()`
        shows `control` back at `api` once they hand back."""
        return self._client._request(ops.takeover(self.session_id))

    def recording(self) -> bytes:
        """This session's recording as a zip (it was started with `record=True`):
        `steps.jsonl` (one JSON record a step), `frames/<seq>.jpg`, `manifest.json`.
        Readable while it runs and until the gateway's retention after it ended."""
        return self._client._request(ops.recording(self.session_id))

    def wait_for(
        self,
        until: WaitUntil,
        *,
        timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS,
        quiet_ms: int | None = None,
        target: WaitTargetLike = None,
    ) -> WaitResult:
        """Wait on the host: `change` (any damage after the wait began), `quiet` (still
        for `quiet_ms`, gateway default 100) or `target` (a control matching `target`
        appears in the focused window: a name, a `WaitTarget(name, role, id)` or a
        mapping of those). `timeout_ms` is 1…30000; not met in time is `met=False`, not
        an error. A target found is remembered for `click`.
        """
        result = self._client._request(
            act_ops.wait(
                self.session_id, until, timeout_ms=timeout_ms, quiet_ms=quiet_ms, target=target
            )
        )
        self._note_target(result.target)
        return result

    # -- input

    def act(self, events: Sequence[ops.EventLike], **options: Unpack[ActOptions]) -> ActResult:
        """Run a batch of 1…100 events (`InputEvent`s or dicts) and, in the same round
        trip, let the screen settle and look at it.

        - `settle`: True (gateway defaults: still for 100 ms, at most 2000 ms), a
          `Settle(quiet_ms, timeout_ms)`, or a mapping: answer once the screen is still.
        - `observe`: True, an `ObserveOptions`, or a mapping of `observe()`'s arguments:
          the answer carries an `ObserveResult` taken after the settle (its targets are
          remembered for `click`).
        - `frame_id` (an id, a `Screenshot` or an `ObserveResult`) with
          `coords="image"`: the points are pixels of that image; the gateway maps them.
        - `require_unchanged=True` (with `frame_id`): nothing runs if the screen changed
          near the points since that frame (`StaleFrameError` with the rectangles).

        A batch that stops on the host raises an `InputStoppedError` subclass carrying
        the receipts of what ran; a bad batch is a BadRequestError and nothing runs.
        """
        result = self._client._request(act_ops.act(self.session_id, events, **options))
        return self._remember_act(result)

    def input(self, events: Sequence[ops.EventLike]) -> ActResult:
        """Send a raw batch of 1…100 events, run in order (`act` without options)."""
        return self.act(events)

    def _point(
        self, x: int | None, y: int | None, target: TargetRef | None
    ) -> tuple[int | None, int | None]:
        act_ops.check_point_args(x, y, target)
        if target is None:
            return x, y
        found = act_ops.resolve_target(target, self._latest)
        if found is None and isinstance(target, str):
            # The id or name may come from a snapshot newer than ours.
            self.targets()
            found = act_ops.resolve_target(target, self._latest)
        if found is None:
            raise act_ops.target_not_found(target, self._latest)
        return found.center

    def click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: TargetRef | None = None,
        button: MouseButton = "left",
        **options: Unpack[ActOptions],
    ) -> ActResult:
        """Click at (`x`, `y`), at a target's centre, or where the pointer is.

        `target` is a `Target`, an id, a name, or the 1-based index of a target in the
        latest observe. An id or name is looked up in the latest targets (fetched once
        more when unknown); a name matches exactly first, then ignoring case, then as a
        case-insensitive substring, and one matching several targets raises
        AmbiguousTargetError with the candidates. TargetNotFoundError when nothing
        matches.
        """
        self._check_target_coords(target, options)
        px, py = self._point(x, y, target)
        return self.act(act_ops.click_events(px, py, button=button, count=1), **options)

    def double_click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: TargetRef | None = None,
        button: MouseButton = "left",
        **options: Unpack[ActOptions],
    ) -> ActResult:
        """Double-click, with the same arguments as `click`."""
        self._check_target_coords(target, options)
        px, py = self._point(x, y, target)
        return self.act(act_ops.click_events(px, py, button=button, count=2), **options)

    def drag(
        self,
        path: Sequence[tuple[int, int]],
        *,
        button: MouseButton = "left",
        **options: Unpack[ActOptions],
    ) -> ActResult:
        """Drag along `path` ((x, y) points, at least two): press `button` at the first,
        move through the rest, release at the last, in one batch that settles by
        default (`settle=False` to answer at once)."""
        options.setdefault("settle", True)
        return self.act(act_ops.drag_events(path, button=button), **options)

    def move(self, x: int, y: int, **options: Unpack[ActOptions]) -> ActResult:
        """Move the pointer to (`x`, `y`)."""
        return self.act([InputEvent.mouse_move(x, y)], **options)

    def scroll(
        self,
        dx: int = 0,
        dy: int = 0,
        x: int | None = None,
        y: int | None = None,
        **options: Unpack[ActOptions],
    ) -> ActResult:
        """Scroll by wheel notches (`dy` < 0 scrolls down, `dx` > 0 right), at (`x`, `y`)."""
        return self.act([InputEvent.mouse_scroll(dx, dy, x=x, y=y)], **options)

    def key(self, key: str, **options: Unpack[ActOptions]) -> ActResult:
        """Press and release a key or chord: `"enter"`, `"ctrl+s"`, `"ctrl+shift+esc"`."""
        return self.act([InputEvent.key_press(key)], **options)

    def key_down(self, key: str, **options: Unpack[ActOptions]) -> ActResult:
        """Press and hold a key (released by `key_up`, or when the session ends)."""
        return self.act([InputEvent.key_down(key)], **options)

    def key_up(self, key: str, **options: Unpack[ActOptions]) -> ActResult:
        """Release a held key."""
        return self.act([InputEvent.key_up(key)], **options)

    def type_text(self, text: str, **options: Unpack[ActOptions]) -> ActResult:
        """Type Unicode text as text (accents, CJK, emoji arrive as typed)."""
        return self.act([InputEvent.type_text(text)], **options)

    # -- apps

    def launch(self, path: str, args: Sequence[str] | None = None) -> AppLaunchResult:
        """Start a program by absolute path or by name on the rig's PATH; returns its pid."""
        return self._client._request(ops.launch_app(self.session_id, path, args))

    def kill(self, pid: int | None = None) -> AppKillResult:
        """Kill one app this session launched (`pid`), or all of them (no pid)."""
        return self._client._request(ops.kill_app(self.session_id, pid))
