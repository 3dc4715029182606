"""Live session handles: `SessionHandle` (sync) and `AsyncSessionHandle`.

Both are thin: requests are `_operations` builders run by the owning client; the state
they expose (`info`, ids, native size, latest targets) lives in one shared base.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from . import _operations as ops
from .errors import NotFoundError, RigwayError, SessionEndedError, TargetNotFoundError
from .models import (
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    InputEvent,
    InputResult,
    MouseButton,
    ObserveResult,
    Screenshot,
    Session,
    StreamCredentials,
    Target,
    TargetList,
)

if TYPE_CHECKING:
    from ._async import AsyncAPIClient
    from ._sync import SyncAPIClient

__all__ = ["AsyncSessionHandle", "SessionHandle"]


def _cleanup_note(session_id: str, end_error: RigwayError) -> str:
    return f"rigway: ending session {session_id} also failed: {end_error}"


class _SessionState:
    """What both handles know about their session, without I/O."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._latest_targets: dict[str, Target] = {}

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
        """Targets of the latest `targets()` or `observe()` call, used by `click(target=…)`."""
        return list(self._latest_targets.values())

    @property
    def _is_over(self) -> bool:
        # `ended` and `failed` are final: a session known to be over needs no end call.
        return self._session.status in ("ended", "failed")

    def _remember_targets(self, targets: list[Target]) -> None:
        self._latest_targets = {target.id: target for target in targets}


# ------------------------------------------------------------------------- sync


class SessionHandle(_SessionState):
    """A live session: screens, grounding, input and apps, bound to one session id.

    As a context manager it ALWAYS ends the session on exit, also when the body raised;
    a failure to end then never hides the body's exception (it is added as a note).
    Coordinates are native desktop pixels; map image pixels with `Screenshot.to_native`.
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
            exc.add_note(_cleanup_note(self.session_id, end_error))

    # -- screens

    def screenshot(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
    ) -> Screenshot:
        """A JPEG of the desktop (or of `region`, native x/y/w/h), long edge ≤ `max_width`.

        `quality` is 40…100 (gateway default 85). Map image pixels back with `to_native`.
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
    ) -> ObserveResult:
        """Frame, change flag, window text and click targets in one round trip.

        `mark=True` draws each target's box and id on the image; `image=False` skips the
        JPEG. Consumes the dirty take like `dirty()`. Remembers the targets for `click`.
        """
        result = self._client._request(
            ops.observe(
                self.session_id,
                max_width=max_width,
                quality=quality,
                region=region,
                mark=mark,
                image=image,
            )
        )
        self._remember_targets(result.targets)
        return result

    def dirty(self) -> DirtyRects:
        """Rectangles changed since the last take (each take consumes them)."""
        return self._client._request(ops.dirty(self.session_id))

    def targets(self) -> TargetList:
        """Click targets of the focused window, in native pixels; remembered for `click`."""
        result = self._client._request(ops.targets(self.session_id))
        self._remember_targets(result.targets)
        return result

    def stream(self) -> StreamCredentials:
        """WebRTC signaling credentials for a live view of the desktop."""
        return self._client._request(ops.stream(self.session_id))

    # -- input

    def _point(
        self, x: int | None, y: int | None, target: Target | str | None
    ) -> tuple[int | None, int | None]:
        ops.check_click_args(x, y, target)
        if target is None:
            return x, y
        found = ops.resolve_target(target, self._latest_targets)
        if found is None:
            # The id may come from a snapshot newer than ours (another client, a log).
            self.targets()
            found = ops.resolve_target(target, self._latest_targets)
        if found is None:
            raise TargetNotFoundError(ops.target_id(target))
        return found.center

    def click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: Target | str | None = None,
        button: MouseButton = "left",
    ) -> InputResult:
        """Click at native (`x`, `y`), at a target's centre, or where the pointer is.

        `target` is a `Target` or its id, resolved against the latest targets (fetched
        once more when the id is unknown); TargetNotFoundError if it is still unknown.
        """
        px, py = self._point(x, y, target)
        return self.input(ops.click_events(px, py, button=button, count=1))

    def double_click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: Target | str | None = None,
        button: MouseButton = "left",
    ) -> InputResult:
        """Double-click, with the same arguments as `click`."""
        px, py = self._point(x, y, target)
        return self.input(ops.click_events(px, py, button=button, count=2))

    def move(self, x: int, y: int) -> InputResult:
        """Move the pointer to native (`x`, `y`)."""
        return self.input([InputEvent.mouse_move(x, y)])

    def scroll(
        self, dx: int = 0, dy: int = 0, x: int | None = None, y: int | None = None
    ) -> InputResult:
        """Scroll by wheel notches (`dy` < 0 scrolls down, `dx` > 0 right), at (`x`, `y`)."""
        return self.input([InputEvent.mouse_scroll(dx, dy, x=x, y=y)])

    def key(self, key: str) -> InputResult:
        """Press and release a key or chord: `"enter"`, `"ctrl+s"`, `"ctrl+shift+esc"`."""
        return self.input([InputEvent.key_press(key)])

    def key_down(self, key: str) -> InputResult:
        """Press and hold a key (released by `key_up`, or when the session ends)."""
        return self.input([InputEvent.key_down(key)])

    def key_up(self, key: str) -> InputResult:
        """Release a held key."""
        return self.input([InputEvent.key_up(key)])

    def type_text(self, text: str) -> InputResult:
        """Type Unicode text as text (accents, CJK, emoji arrive as typed)."""
        return self.input([InputEvent.type_text(text)])

    def input(self, events: Sequence[ops.EventLike]) -> InputResult:
        """Send a raw batch of 1…100 events (`InputEvent`s or dicts), run in order.

        The gateway validates the whole batch first: one bad event → BadRequestError and
        nothing runs.
        """
        return self._client._request(ops.send_input(self.session_id, events))

    # -- apps

    def launch(self, path: str, args: Sequence[str] | None = None) -> AppLaunchResult:
        """Start a program by absolute path or by name on the rig's PATH; returns its pid."""
        return self._client._request(ops.launch_app(self.session_id, path, args))

    def kill(self, pid: int | None = None) -> AppKillResult:
        """Kill one app this session launched (`pid`), or all of them (no pid)."""
        return self._client._request(ops.kill_app(self.session_id, pid))


# ------------------------------------------------------------------------ async


class AsyncSessionHandle(_SessionState):
    """A live session (async): screens, grounding, input and apps for one session id.

    As an async context manager it ALWAYS ends the session on exit, also when the body
    raised; a failure to end then never hides the body's exception (added as a note).
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
            exc.add_note(_cleanup_note(self.session_id, end_error))

    # -- screens

    async def screenshot(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
    ) -> Screenshot:
        """A JPEG of the desktop (or of `region`, native x/y/w/h), long edge ≤ `max_width`."""
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
    ) -> ObserveResult:
        """Frame, change flag, window text and click targets in one round trip.

        Same arguments as `SessionHandle.observe`; remembers the targets for `click`.
        """
        result = await self._client._request(
            ops.observe(
                self.session_id,
                max_width=max_width,
                quality=quality,
                region=region,
                mark=mark,
                image=image,
            )
        )
        self._remember_targets(result.targets)
        return result

    async def dirty(self) -> DirtyRects:
        """Rectangles changed since the last take (each take consumes them)."""
        return await self._client._request(ops.dirty(self.session_id))

    async def targets(self) -> TargetList:
        """Click targets of the focused window, in native pixels; remembered for `click`."""
        result = await self._client._request(ops.targets(self.session_id))
        self._remember_targets(result.targets)
        return result

    async def stream(self) -> StreamCredentials:
        """WebRTC signaling credentials for a live view of the desktop."""
        return await self._client._request(ops.stream(self.session_id))

    # -- input

    async def _point(
        self, x: int | None, y: int | None, target: Target | str | None
    ) -> tuple[int | None, int | None]:
        ops.check_click_args(x, y, target)
        if target is None:
            return x, y
        found = ops.resolve_target(target, self._latest_targets)
        if found is None:
            # The id may come from a snapshot newer than ours (another client, a log).
            await self.targets()
            found = ops.resolve_target(target, self._latest_targets)
        if found is None:
            raise TargetNotFoundError(ops.target_id(target))
        return found.center

    async def click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: Target | str | None = None,
        button: MouseButton = "left",
    ) -> InputResult:
        """Click at native (`x`, `y`), at a target's centre, or where the pointer is."""
        px, py = await self._point(x, y, target)
        return await self.input(ops.click_events(px, py, button=button, count=1))

    async def double_click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: Target | str | None = None,
        button: MouseButton = "left",
    ) -> InputResult:
        """Double-click, with the same arguments as `click`."""
        px, py = await self._point(x, y, target)
        return await self.input(ops.click_events(px, py, button=button, count=2))

    async def move(self, x: int, y: int) -> InputResult:
        """Move the pointer to native (`x`, `y`)."""
        return await self.input([InputEvent.mouse_move(x, y)])

    async def scroll(
        self, dx: int = 0, dy: int = 0, x: int | None = None, y: int | None = None
    ) -> InputResult:
        """Scroll by wheel notches (`dy` < 0 scrolls down, `dx` > 0 right), at (`x`, `y`)."""
        return await self.input([InputEvent.mouse_scroll(dx, dy, x=x, y=y)])

    async def key(self, key: str) -> InputResult:
        """Press and release a key or chord: `"enter"`, `"ctrl+s"`."""
        return await self.input([InputEvent.key_press(key)])

    async def key_down(self, key: str) -> InputResult:
        """Press and hold a key (released by `key_up`, or when the session ends)."""
        return await self.input([InputEvent.key_down(key)])

    async def key_up(self, key: str) -> InputResult:
        """Release a held key."""
        return await self.input([InputEvent.key_up(key)])

    async def type_text(self, text: str) -> InputResult:
        """Type Unicode text as text (accents, CJK, emoji arrive as typed)."""
        return await self.input([InputEvent.type_text(text)])

    async def input(self, events: Sequence[ops.EventLike]) -> InputResult:
        """Send a raw batch of 1…100 events (`InputEvent`s or dicts), run in order."""
        return await self._client._request(ops.send_input(self.session_id, events))

    # -- apps

    async def launch(self, path: str, args: Sequence[str] | None = None) -> AppLaunchResult:
        """Start a program by absolute path or by name on the rig's PATH; returns its pid."""
        return await self._client._request(ops.launch_app(self.session_id, path, args))

    async def kill(self, pid: int | None = None) -> AppKillResult:
        """Kill one app this session launched (`pid`), or all of them (no pid)."""
        return await self._client._request(ops.kill_app(self.session_id, pid))
