"""Gateway → agent operations: parse, check the session, run, answer.

`Dispatcher.handle(op, body, responder)` returns `(reply_body, jpeg_or_None)` or raises
`HostOpError(code, detail)`; the link turns either into a `res` frame. A screen capture
also hands its reply to the `Responder` from the screen worker, the moment the encode
ends, before `handle` returns; the link then sends nothing more for it. Errors:

    HostOpError
      invalid_request   the body does not parse, a region outside the desktop, a path
                        that cannot start (LaunchError), a stream request refused
                        (StreamError: no H.264 in the offer, too many viewers, …)
      session_mismatch  the op names a session this agent is not running
      app_not_found     app/kill of a pid this session did not launch
      no_app_window     an app session's screen read or input while its apps have no
                        window on screen (`app_scope`); a region or pointer event off
                        the app window is an invalid_request naming its rect
      desktop_unavailable  an input batch while the desktop is not "normal" (locked, a
                        secure desktop, the screen saver, …): nothing of it ran, held
                        input was released; the detail is the state
      owner_active      an input batch while the rig's owner uses its own keyboard or
                        mouse (`owner_presence`): nothing of it ran, held input was
                        released
      target_gone, expectation_failed, stale_frame  an input batch stopped (or, for
                        stale_frame, refused) on the host (`rigway.agent.act`)
      host_error        anything that failed on the host (an input event, the backend,
                        streaming without the `stream` extra installed)

A stopped input batch's error carries a body (`InputStopped`: the receipts of what ran,
where it stopped, the changed rectangles), which the link sends in the failed reply.
      unknown_op        an op this agent does not know

One session at a time. Session start and end (and the local ends after a lost link)
run as tasks shielded from the caller's cancellation and serialised by a lock: a
safety restore must never stop half-way because a request was abandoned. Ending a
session closes every live stream of it first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.act import ActService, BatchStoppedError
from rigway.agent.app_scope import (
    AppScope,
    NoAppWindowError,
    OutsideAppWindowError,
    check_key_events,
    check_pointer_events,
    clip_rects,
)
from rigway.agent.apps import AppTracker, LaunchError, UnknownAppError
from rigway.agent.backends.base import Desktop, Rect
from rigway.agent.imaging import Mark, index_marks
from rigway.agent.owner_presence import OwnerPresence
from rigway.agent.reduce_motion import MotionReducer
from rigway.agent.safety import InputGuard
from rigway.agent.screen import (
    CapturedFrame,
    CaptureParams,
    RegionOutsideDesktopError,
    ScreenService,
)
from rigway.agent.screen_wait import names_a_target, wait_on_screen
from rigway.agent.stream import StreamControl, StreamError
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from rigway.wol import parse_mac, send_magic_packet

__all__ = ["ORDERED_OPS", "Dispatcher", "HostOpError", "Responder"]

_log = logging.getLogger(__name__)

# Ops of one session that must run one after another in arrival order (the link runs
# them through a per-session lane); everything else may run concurrently.
ORDERED_OPS: frozenset[str] = frozenset({ops.INPUT_BATCH, ops.APP_LAUNCH, ops.APP_KILL})
_STREAM_CLOSE_TIMEOUT_S = 5.0

Reply = tuple[dict[str, Any], bytes | None]
_ModelT = TypeVar("_ModelT", bound=BaseModel)
_T = TypeVar("_T")


class Responder(Protocol):
    """Sends one request's successful reply, from any thread, ahead of `handle`'s return.

    The screen worker calls it right after an encode: the reply leaves without the
    worker-to-loop hand-off and the task steps behind it, which cost about 0.5 ms on
    the way back of every changed-screen screenshot
    (docs/decisions/0008-replies-from-the-screen-worker.md). A responder that cannot
    send drops the reply quietly: the link is gone, and the gateway's call failed with
    it."""

    def answer(self, body: dict[str, Any], payload: bytes) -> None: ...


# An op's handler: the request body, and where a reply may go early (`Responder`).
_Handler = Callable[[dict[str, Any], Responder | None], Awaitable[Reply]]


class HostOpError(Exception):
    """A failed reply: `code`, `detail`, and `body` when the failure has a shape of its
    own (a stopped input batch's `InputStopped`), sent as the reply's "body"."""

    def __init__(self, code: str, detail: str = "", body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail
        self.body = body


@dataclass(frozen=True, slots=True)
class _Session:
    session_id: str
    mode: str
    # Top-level windows open at start; None when they could not be listed, and then
    # the restore closes no window rather than guess.
    window_baseline: frozenset[int] | None


class Dispatcher:
    def __init__(
        self,
        desktop: Desktop,
        screen: ScreenService,
        accessibility: AccessibilityService,
        guard: InputGuard,
        apps: AppTracker,
        *,
        input_executor: Executor | None = None,
        streams: StreamControl | None = None,
        presence: OwnerPresence | None = None,
        motion: MotionReducer | None = None,
    ) -> None:
        """`input_executor` is the backend's input thread (one worker); the guard is
        confined to it. Without one the dispatcher owns a private one (see `close`).
        `streams` is the video publisher; None when aiortc/PyAV are not installed.
        `presence` tells whether the owner uses the rig (one over `desktop` if None);
        each session start sets its delay. `motion` turns the desktop's animations off
        while a session is live (the `reduce_motion` option; None: left alone)."""
        self._desktop = desktop
        self._screen = screen
        self._accessibility = accessibility
        self._guard = guard
        self._apps = apps
        self._streams = streams
        self._owns_input_executor = input_executor is None
        self._input_executor: Executor = (
            SerialWorker("rigway-input") if input_executor is None else input_executor
        )
        self._presence = OwnerPresence(desktop) if presence is None else presence
        self._motion = MotionReducer(desktop, enabled=False) if motion is None else motion
        self._act = ActService(
            desktop, screen, accessibility, guard, self._input_executor, self._presence
        )
        self._session: _Session | None = None
        # An app session's scope, and where its input last put the pointer (native).
        self._scope: AppScope | None = None
        self._last_point: tuple[int, int] | None = None
        self._lifecycle_lock = asyncio.Lock()
        self._lifecycle_tasks: set[asyncio.Task[Any]] = set()
        answers_only_by_returning: dict[str, Callable[[dict[str, Any]], Awaitable[Reply]]] = {
            ops.SESSION_START: self._session_start,
            ops.SESSION_END: self._session_end,
            ops.SESSION_OWNER_IDLE: self._session_owner_idle,
            ops.SCREEN_DIRTY: self._screen_dirty,
            ops.SCREEN_DIRTY_RETURN: self._screen_dirty_return,
            ops.SCREEN_CHANGED_SINCE: self._screen_changed_since,
            ops.A11Y_TARGETS: self._a11y_targets,
            ops.SCREEN_WAIT: self._screen_wait,
            ops.INPUT_BATCH: self._input_batch,
            ops.APP_LAUNCH: self._app_launch,
            ops.APP_KILL: self._app_kill,
            ops.WAKE_SEND: self._wake_send,
            ops.STREAM_OFFER: self._stream_offer,
            ops.STREAM_CANDIDATE: self._stream_candidate,
            ops.STREAM_CLOSE: self._stream_close,
        }
        self._handlers: dict[str, _Handler] = {
            op: _ignoring_responder(handler) for op, handler in answers_only_by_returning.items()
        }
        self._handlers[ops.SCREEN_CAPTURE] = self._screen_capture

    @property
    def active_session_id(self) -> str | None:
        return None if self._session is None else self._session.session_id

    async def handle(
        self, op: str, body: dict[str, Any], responder: Responder | None = None
    ) -> Reply:
        """The reply to `op`. With a `responder`, a screen capture's reply also goes to it
        first, from the screen worker; every other reply and every error only returns."""
        return await self.start(op, body, responder)

    def start(
        self, op: str, body: dict[str, Any], responder: Responder | None = None
    ) -> Awaitable[Reply]:
        """`handle`, begun now as far as it goes without waiting: a screen capture is on
        the screen worker before this returns, so the link starts it from its reader
        instead of a task's first step (docs/decisions/0009-screenshot-answered-from-
        the-reply.md). Never raises: the awaitable raises what `handle` would."""
        try:
            handler = self._handlers.get(op)
            if handler is None:
                raise HostOpError(ops.ERROR_UNKNOWN_OP, f"unknown op {op!r}")
            started = handler(body, responder)
        except Exception as exc:
            started = _failed(exc)
        return self._reply_of(op, started)

    @staticmethod
    async def _reply_of(op: str, started: Awaitable[Reply]) -> Reply:
        try:
            return await started
        except HostOpError:
            raise
        except NoAppWindowError as exc:
            raise HostOpError(ops.ERROR_NO_APP_WINDOW, str(exc)) from exc
        except OutsideAppWindowError as exc:
            raise HostOpError(ops.ERROR_INVALID_REQUEST, str(exc)) from exc
        except Exception as exc:
            _log.exception("%s failed", op)
            raise HostOpError(ops.ERROR_HOST, f"{op} failed: {type(exc).__name__}: {exc}") from exc

    def on_link_lost(self) -> asyncio.Future[list[str]]:
        """Stop any running batch and release held input at once; the session (apps,
        windows) survives until the grace period ends or the gateway says it ended."""
        self._act.interrupt()
        return asyncio.wrap_future(self._input_executor.submit(self._let_go_of_desktop))

    def _let_go_of_desktop(self) -> list[str]:
        """Held input released and animations restored: the owner may take the desktop
        back while the link is down (input worker)."""
        try:
            return self._guard.release_all()
        finally:
            # Even when releasing failed: the owner's animations come back regardless.
            self._motion.restore()

    async def end_local_session(self, reason: str, session_id: str | None = None) -> bool:
        """Safety restore without the gateway (link gone past the grace, or `welcome`
        listed it as ended). Only `session_id` when given; True when one ended."""

        async def end() -> bool:
            async with self._lifecycle_lock:
                session = self._session
                if session is None or session_id not in (None, session.session_id):
                    return False
                await self._end_locked(reason)
                return True

        return await self._shielded(end())

    async def close(self) -> None:
        """Wait for restores in progress, close every stream; shut the input worker
        down if it is ours."""
        if self._lifecycle_tasks:
            await asyncio.gather(*self._lifecycle_tasks, return_exceptions=True)
        # Animations come back with the session's end; this covers a dispatcher closed
        # with a session still live.
        self._motion.session_ended()
        if self._motion.engaged:
            await self._in_input_worker(self._motion.restore)
        if self._streams is not None:
            await self._streams.close_all()
        if self._owns_input_executor:
            self._input_executor.shutdown(wait=True)

    # ---- session lifecycle ---------------------------------------------------------

    async def _session_start(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.SessionStart, body)

        async def start() -> ops.SessionStarted:
            async with self._lifecycle_lock:
                current = self._session
                if current is not None and current.session_id != request.session_id:
                    # The gateway moved on (e.g. our end reply was lost): restore first.
                    await self._end_locked("replaced")
                self._presence.idle_s = request.owner_idle_s
                if self._session is None:
                    baseline = await self._list_windows()
                    await self._screen.reset()
                    self._session = _Session(request.session_id, request.mode, baseline)
                    self._scope_to(request.mode)
                    self._motion.session_started()
                    await self._in_input_worker(self._motion.engage)
                width, height = await self._screen.native_size()
                return ops.SessionStarted(
                    native_width=width,
                    native_height=height,
                    capture_mode=self._desktop.capture_mode,
                )

        return (await self._shielded(start())).model_dump(), None

    async def _session_end(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.SessionEnd, body)

        async def end() -> ops.SessionEnded:
            async with self._lifecycle_lock:
                session = self._session
                # Idempotent: ending a session that is not running is already done.
                if session is None or session.session_id != request.session_id:
                    return ops.SessionEnded()
                return await self._end_locked(request.reason)

        return (await self._shielded(end())).model_dump(), None

    async def _session_owner_idle(self, body: dict[str, Any]) -> Reply:
        """The owner changed the delay during the session: the next batch obeys it."""
        request = _parse(ops.SessionOwnerIdle, body)
        self._require_session(request.session_id)
        self._presence.idle_s = request.owner_idle_s
        return {}, None

    async def _end_locked(self, reason: str) -> ops.SessionEnded:
        session, self._session = self._session, None
        assert session is not None
        self._scope_to(None)
        _log.info("ending session %s (%s)", session.session_id, reason)
        self._act.interrupt()
        self._motion.session_ended()
        # Input and apps first: they are what a stuck stream must never hold up.
        try:
            released = await self._in_input_worker(self._let_go_of_desktop)
        except Exception:
            # Like every restore step: the apps, streams and windows still get theirs.
            _log.exception("session restore: could not release the held input")
            released = []
        # Which windows are the session's is asked before the kill, while their owners
        # still run: a window can outlive its process (see `_session_windows`).
        windows = await self._session_windows(session.window_baseline)
        no_pids: list[int] = []
        killed = await self._best_effort("kill launched apps", self._apps.kill_all, no_pids)
        await self._close_streams(session.session_id)
        await self._close_windows(windows)
        # Last: the screen worker may be mid-capture. The pictures are desktop copies.
        await self._screen.session_ended()
        return ops.SessionEnded(released_inputs=released, killed_pids=killed)

    def _scope_to(self, mode: str | None) -> None:
        """An app session sees and touches only its apps' windows (`app_scope.py`)."""
        scope = AppScope(self._desktop, self._apps) if mode == "app" else None
        self._scope = scope
        self._last_point = None
        self._screen.set_scope(scope)
        self._accessibility.set_scope(scope)

    async def _close_streams(self, session_id: str) -> None:
        if self._streams is None:
            return
        try:
            async with asyncio.timeout(_STREAM_CLOSE_TIMEOUT_S):
                await self._streams.close(session_id)
        except Exception:
            # Like every restore step: a failure (or a hung grab) must not stop the
            # steps after it, nor the next session's start behind the lifecycle lock.
            _log.exception("session restore: could not close the streams")

    async def _list_windows(self) -> frozenset[int] | None:
        return await self._best_effort("list windows", self._desktop.list_windows, None)

    async def _session_windows(self, baseline: frozenset[int] | None) -> frozenset[int]:
        """Windows opened since the start by a process the session launched.

        Only those: a window a local user opened meanwhile is not the session's, and
        closing it would end, if it did not answer, with its owner killed. A window
        whose owner the backend cannot tell (on X11 a remote client, which no launch
        starts) stays open for the same reason. The owners are read while they still
        run; a window can outlive its process (an X client in RetainPermanent mode), and
        once the process is gone nothing ties the window to the session any more.
        """
        if baseline is None:
            return frozenset()
        now = await self._list_windows()
        new = frozenset() if now is None else now - baseline
        if not new:
            return frozenset()

        def attribute() -> frozenset[int]:
            owners = self._desktop.window_owners(new)
            ours = self._apps.owned_pids()
            return frozenset(w for w, pid in owners.items() if pid is not None and pid in ours)

        return await self._best_effort("find the session's windows", attribute, frozenset())

    async def _close_windows(self, windows: frozenset[int]) -> None:
        if windows:
            await self._best_effort(
                "close windows", partial(self._desktop.close_windows, windows), None
            )

    async def _best_effort(self, what: str, fn: Callable[[], _T], default: _T) -> _T:
        # A restore step that fails must not stop the steps after it.
        try:
            return await asyncio.to_thread(fn)
        except Exception:
            _log.exception("session restore: could not %s", what)
            return default

    async def _shielded(self, work: Awaitable[_T]) -> _T:
        task = asyncio.ensure_future(work)
        self._lifecycle_tasks.add(task)
        task.add_done_callback(self._lifecycle_tasks.discard)
        return await asyncio.shield(task)

    def _require_session(self, session_id: str) -> None:
        active = self.active_session_id
        if active is None:
            raise HostOpError(
                ops.ERROR_SESSION_MISMATCH, f"no session is running; got {session_id}"
            )
        if session_id != active:
            raise HostOpError(
                ops.ERROR_SESSION_MISMATCH, f"session {session_id} is not running here"
            )

    # ---- screen and targets ----------------------------------------------------------

    def _screen_capture(
        self, body: dict[str, Any], responder: Responder | None
    ) -> Awaitable[Reply]:
        """Not a coroutine: a capture without marks is queued on the screen worker
        before this returns (`start`)."""
        request = _parse(ops.ScreenCapture, body)
        self._require_session(request.session_id)
        if request.mark:
            return self._marked_capture(request, responder)
        params = _capture_params(request, ())
        return _captured(self._screen.start_capture(params, _deliverer(responder)))

    async def _marked_capture(
        self, request: ops.ScreenCapture, responder: Responder | None
    ) -> Reply:
        params = _capture_params(request, await self._current_marks())
        return await _captured(self._screen.start_capture(params, _deliverer(responder)))

    async def _current_marks(self) -> tuple[Mark, ...]:
        try:
            snapshot = await self._accessibility.snapshot()
        except Exception:
            # An image without marks (`marked: false`) beats no image at all.
            _log.warning("accessibility walk failed; capturing without marks", exc_info=True)
            return ()
        return index_marks(snapshot.targets)

    async def _screen_dirty(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.ScreenDirty, body)
        self._require_session(request.session_id)
        taken = await self._screen.take_dirty()
        # Sampled with the take, as its desktop state is, so every observe shows it fresh.
        owner_active = self._presence.is_active()
        return taken.model_copy(update={"owner_active": owner_active}).model_dump(), None

    async def _screen_dirty_return(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.DirtyReturn, body)
        self._require_session(request.session_id)
        await self._screen.return_dirty([Rect(*rect) for rect in request.rects])
        return {}, None

    async def _screen_changed_since(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.ChangedSince, body)
        self._require_session(request.session_id)
        # One poll gives the mark and the damage: drawing after it is after the mark.
        change = await self._screen.changed_since(request.damage_mark)
        mark = change.damage_mark
        if change.rects is None:
            return ops.ScreenChanged(known=False, damage_mark=mark).model_dump(), None
        listed = [rect.as_list() for rect in change.rects if rect.w > 0 and rect.h > 0]
        if self._scope is not None:
            listed = clip_rects(listed, await asyncio.to_thread(self._scope.require_view))
        if len(listed) > ops.MAX_DIRTY_RECTS:
            listed = [_bounding_box(listed)]
        changed = ops.ScreenChanged(
            known=True, damage_mark=mark, rects=listed, compared=change.compared
        )
        return changed.model_dump(), None

    async def _a11y_targets(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.A11yTargets, body)
        self._require_session(request.session_id)
        return (await self._accessibility.snapshot()).model_dump(), None

    async def _screen_wait(self, body: dict[str, Any]) -> Reply:
        """Until a change, quiet or a control appears (`screen_wait.py`); not met in
        time is a reply too. A session that ended meanwhile gets no answer about it."""
        request = _parse(ops.ScreenWait, body)
        self._require_session(request.session_id)
        if request.until == "target" and not names_a_target(request):
            raise HostOpError(ops.ERROR_INVALID_REQUEST, "until target names no target")
        within = None
        if self._scope is not None and request.until != "target":
            within = (await asyncio.to_thread(self._scope.require_view)).window
        waited = await wait_on_screen(request, self._screen, self._accessibility, within)
        self._require_session(request.session_id)
        return waited.model_dump(), None

    # ---- input and apps --------------------------------------------------------------

    async def _input_batch(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.InputBatch, body)
        self._require_session(request.session_id)
        if self._scope is not None:
            await self._check_app_input(self._scope, request)
        if self._motion.needs_engage:
            # The first batch since the link came back: animations off again.
            await self._in_input_worker(self._motion.engage)
        # Accepted now, on the loop: an interrupt after this point stops this batch even
        # if it has not started on the worker yet.
        accepted = self._act.accept()
        try:
            done = await self._act.run(request, accepted)
        except BatchStoppedError as exc:
            self._last_point = None
            raise HostOpError(exc.code, exc.detail, exc.stopped.model_dump()) from exc
        self._note_last_point(done)
        return done.model_dump(), None

    async def _check_app_input(self, scope: AppScope, request: ops.InputBatch) -> None:
        """An app session's batch, refused whole before anything runs: no app window
        (keys too: they would go to whatever window has the focus), a pointer event off
        the shown part of the window, or keys while another window has the focus."""
        view = await asyncio.to_thread(scope.require_view)
        check_pointer_events(view, request.events, self._last_point)
        check_key_events(view, request.events)

    def _note_last_point(self, done: ops.InputDone) -> None:
        if self._scope is None:
            return
        for receipt in reversed(done.events):
            if receipt.x is not None and receipt.y is not None:
                self._last_point = (receipt.x, receipt.y)
                return

    async def _app_launch(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.AppLaunch, body)
        self._require_session(request.session_id)
        try:
            pid = await asyncio.to_thread(self._apps.launch, request.path, request.args)
        except LaunchError as exc:
            raise HostOpError(ops.ERROR_INVALID_REQUEST, str(exc)) from exc
        if self.active_session_id != request.session_id:
            # The session ended while the process started, after its restore had
            # killed the apps it knew of: this one must not outlive it either.
            no_pids: list[int] = []
            await self._best_effort(
                "kill an app launched as its session ended", partial(self._apps.kill, pid), no_pids
            )
            raise HostOpError(ops.ERROR_SESSION_MISMATCH, "the session ended during the launch")
        return ops.AppLaunched(pid=pid).model_dump(), None

    async def _app_kill(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.AppKill, body)
        self._require_session(request.session_id)
        try:
            killed = await asyncio.to_thread(self._apps.kill, request.pid)
        except UnknownAppError as exc:
            raise HostOpError(ops.ERROR_APP_NOT_FOUND, str(exc)) from exc
        return ops.AppsKilled(killed=killed).model_dump(), None

    async def _in_input_worker(self, fn: Callable[[], _T]) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._input_executor, fn)

    async def _wake_send(self, body: dict[str, Any]) -> Reply:
        """Wakes a sleeping neighbour: the packet must leave from inside its LAN."""
        request = _parse(ops.WakeSend, body)
        await send_magic_packet(parse_mac(request.mac), request.broadcast, request.port)
        return {"sent": True}, None

    # ---- live video ------------------------------------------------------------------

    async def _stream_offer(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.StreamOffer, body)
        self._require_session(request.session_id)
        if self._scope is not None:
            # Live video is the whole desktop; an app session sees only its app window.
            raise HostOpError(
                ops.ERROR_INVALID_REQUEST, "live video is not available in an app session"
            )
        streams = self._require_streams()
        answer = await self._stream_call(streams.offer(request))
        if self.active_session_id != request.session_id:
            # The session ended while we negotiated: its end closed what it found, and
            # this viewer must not outlive it either.
            await streams.close(request.session_id, request.viewer_id)
            self._require_session(request.session_id)
        return answer.model_dump(), None

    async def _stream_candidate(self, body: dict[str, Any]) -> Reply:
        request = _parse(ops.StreamCandidate, body)
        self._require_session(request.session_id)
        await self._stream_call(self._require_streams().add_candidate(request))
        return {}, None

    async def _stream_close(self, body: dict[str, Any]) -> Reply:
        # Idempotent and allowed after the session ended: its streams are gone already.
        request = _parse(ops.StreamClose, body)
        closed = 0
        if self._streams is not None:
            closed = await self._streams.close(request.session_id, request.viewer_id)
        return ops.StreamClosed(closed=closed).model_dump(), None

    def _require_streams(self) -> StreamControl:
        if self._streams is None:
            raise HostOpError(ops.ERROR_HOST, "streaming is not installed on this rig")
        return self._streams

    async def _stream_call(self, work: Awaitable[_T]) -> _T:
        try:
            return await work
        except StreamError as exc:
            raise HostOpError(ops.ERROR_INVALID_REQUEST, str(exc)) from exc


def _parse(model: type[_ModelT], body: dict[str, Any]) -> _ModelT:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise HostOpError(ops.ERROR_INVALID_REQUEST, problems) from exc


def _ignoring_responder(handler: Callable[[dict[str, Any]], Awaitable[Reply]]) -> _Handler:
    """A handler whose reply only ever returns, in the table's shape."""

    def handle(body: dict[str, Any], _responder: Responder | None) -> Awaitable[Reply]:
        return handler(body)

    return handle


async def _failed(exc: Exception) -> Reply:
    raise exc


def _capture_params(request: ops.ScreenCapture, marks: tuple[Mark, ...]) -> CaptureParams:
    region, patch = request.region, request.picture_patch
    return CaptureParams(
        quality=request.quality,
        max_width=request.max_width,
        region=None if region is None else Rect(region.x, region.y, region.w, region.h),
        marks=marks,
        picture_patch=None if patch is None else (patch.base_mark, patch.mark),
    )


async def _captured(started: Awaitable[CapturedFrame]) -> Reply:
    try:
        frame = await started
    except RegionOutsideDesktopError as exc:
        raise HostOpError(ops.ERROR_INVALID_REQUEST, str(exc)) from exc
    return frame.reply_body(), frame.jpeg


def _deliverer(responder: Responder | None) -> Callable[[CapturedFrame], None] | None:
    return None if responder is None else partial(_answer_with_frame, responder)


def _answer_with_frame(responder: Responder, frame: CapturedFrame) -> None:
    # Runs on the screen worker, right after the encode.
    responder.answer(frame.reply_body(), frame.jpeg)


def _bounding_box(rects: list[tuple[int, int, int, int]]) -> tuple[int, int, int, int]:
    left = min(x for x, _, _, _ in rects)
    top = min(y for _, y, _, _ in rects)
    right = max(x + w for x, _, w, _ in rects)
    bottom = max(y + h for _, y, _, h in rects)
    return (left, top, right - left, bottom - top)
