"""The async live session handle, `AsyncSessionHandle`: `SessionHandle` with `await`.

Same builders, same shared state (`SessionState`); only the awaiting differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Unpack

from . import _act_ops as act_ops
from . import _operations as ops
from ._act_ops import ActOptions, TargetRef, WaitTargetLike
from ._session import DEFAULT_WAIT_TIMEOUT_MS, SessionState, cleanup_note
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
    TargetList,
    WaitResult,
    WaitUntil,
)

if TYPE_CHECKING:
    from ._async import AsyncAPIClient

__all__ = ["AsyncSessionHandle"]


class AsyncSessionHandle(SessionState):
    """A live session (async): the same methods as `SessionHandle`, with `await`.

    As an async context manager it ALWAYS ends the session on exit, also when the body raised;
    a failure to end then never hides the body's exception (it is added as a note).
    Coordinates are native desktop pixels; map image pixels with `Screenshot.to_native`,
    or pass `frame_id=shot, coords="image"` to an acting method.

    Every acting method (`act`, `click`, `drag`, `type_text`, …) takes the options of
    `act`: `settle`, `observe`, `frame_id`, `coords`, `require_unchanged`, and returns
    an `ActResult` (receipts, settle, observe).
    """

    def __init__(self, client: AsyncAPIClient, session: Session) -> None:
        super().__init__(session)
        self._client = client

    async def refresh(self) -> Session:
        """Re-read the session record (status, action count, billing)."""
        self._session = await self._client._request(ops.get_session(self.session_id))
        return self._session

    async def end(self) -> Session:
        """End the session (idempotent); returns the final record with `ended_reason`."""
        self._session = await self._client._request(ops.end_session(self.session_id))
        return self._session

    async def __aenter__(self) -> AsyncSessionHandle:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._is_over:
            return
        try:
            await self.end()
        except (SessionEndedError, NotFoundError):
            pass  # already over (idle timeout, owner kill, …): nothing left to end
        except RigwayError as end_error:
            if exc is None:
                raise
            exc.add_note(cleanup_note(self.session_id, end_error))

    # -- screens

    async def screenshot(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
    ) -> Screenshot:
        """A JPEG of the desktop (or of `region`, native x/y/w/h), long edge ≤ `max_width`.

        `quality` is 40…100 (gateway default 85). Map image pixels back with `to_native`,
        or act in them with `frame_id=shot, coords="image"`.
        """
        return await self._client._request(
            ops.screenshot(self.session_id, max_width=max_width, quality=quality, region=region)
        )

    async def observe(
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
        result = await self._client._request(
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

    async def dirty(self) -> DirtyRects:
        """Rectangles changed since the last take (each take consumes them); a session's
        first take is the whole desktop."""
        return await self._client._request(ops.dirty(self.session_id))

    async def targets(self) -> TargetList:
        """Click targets of the focused window, in native pixels; remembered for `click`."""
        result = await self._client._request(ops.targets(self.session_id))
        self._remember_targets(result.targets)
        return result

    async def stream(self) -> StreamCredentials:
        """WebRTC signaling credentials for a live view of the desktop."""
        return await self._client._request(ops.stream(self.session_id))

    async def takeover(self) -> Takeover:
        """A one-time link for a person to take control: open `viewer_url` in a browser.
        While they drive, input raises `ConflictError` (`human_in_control`); `refresh()`
        shows `control` back at `api` once they hand back."""
        return await self._client._request(ops.takeover(self.session_id))

    async def recording(self) -> bytes:
        """This session's recording as a zip (see `SessionHandle.recording`)."""
        return await self._client._request(ops.recording(self.session_id))

    async def wait_for(
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
        result = await self._client._request(
            act_ops.wait(
                self.session_id, until, timeout_ms=timeout_ms, quiet_ms=quiet_ms, target=target
            )
        )
        self._note_target(result.target)
        return result

    # -- input

    async def act(
        self, events: Sequence[ops.EventLike], **options: Unpack[ActOptions]
    ) -> ActResult:
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
        result = await self._client._request(act_ops.act(self.session_id, events, **options))
        return self._remember_act(result)

    async def input(self, events: Sequence[ops.EventLike]) -> ActResult:
        """Send a raw batch of 1…100 events, run in order (`act` without options)."""
        return await self.act(events)

    async def _point(
        self, x: int | None, y: int | None, target: TargetRef | None
    ) -> tuple[int | None, int | None]:
        act_ops.check_point_args(x, y, target)
        if target is None:
            return x, y
        found = act_ops.resolve_target(target, self._latest)
        if found is None and isinstance(target, str):
            # The id or name may come from a snapshot newer than ours.
            await self.targets()
            found = act_ops.resolve_target(target, self._latest)
        if found is None:
            raise act_ops.target_not_found(target, self._latest)
        return found.center

    async def click(
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
        px, py = await self._point(x, y, target)
        return await self.act(act_ops.click_events(px, py, button=button, count=1), **options)

    async def double_click(
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
        px, py = await self._point(x, y, target)
        return await self.act(act_ops.click_events(px, py, button=button, count=2), **options)

    async def drag(
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
        return await self.act(act_ops.drag_events(path, button=button), **options)

    async def move(self, x: int, y: int, **options: Unpack[ActOptions]) -> ActResult:
        """Move the pointer to (`x`, `y`)."""
        return await self.act([InputEvent.mouse_move(x, y)], **options)

    async def scroll(
        self,
        dx: int = 0,
        dy: int = 0,
        x: int | None = None,
        y: int | None = None,
        **options: Unpack[ActOptions],
    ) -> ActResult:
        """Scroll by wheel notches (`dy` < 0 scrolls down, `dx` > 0 right), at (`x`, `y`)."""
        return await self.act([InputEvent.mouse_scroll(dx, dy, x=x, y=y)], **options)

    async def key(self, key: str, **options: Unpack[ActOptions]) -> ActResult:
        """Press and release a key or chord: `"enter"`, `"ctrl+s"`, `"ctrl+shift+esc"`."""
        return await self.act([InputEvent.key_press(key)], **options)

    async def key_down(self, key: str, **options: Unpack[ActOptions]) -> ActResult:
        """Press and hold a key (released by `key_up`, or when the session ends)."""
        return await self.act([InputEvent.key_down(key)], **options)

    async def key_up(self, key: str, **options: Unpack[ActOptions]) -> ActResult:
        """Release a held key."""
        return await self.act([InputEvent.key_up(key)], **options)

    async def type_text(self, text: str, **options: Unpack[ActOptions]) -> ActResult:
        """Type Unicode text as text (accents, CJK, emoji arrive as typed)."""
        return await self.act([InputEvent.type_text(text)], **options)

    # -- apps

    async def launch(self, path: str, args: Sequence[str] | None = None) -> AppLaunchResult:
        """Start a program by absolute path or by name on the rig's PATH; returns its pid."""
        return await self._client._request(ops.launch_app(self.session_id, path, args))

    async def kill(self, pid: int | None = None) -> AppKillResult:
        """Kill one app this session launched (`pid`), or all of them (no pid)."""
        return await self._client._request(ops.kill_app(self.session_id, pid))
