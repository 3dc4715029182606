"""An `input/batch` that acts and watches: run event by event, with the screen between.

Each event runs on the input worker (`run_event`, through the `InputGuard`), one at a
time, from the event loop; between two events the loop asks the screen worker about
damage (`ScreenService`). Per event, in order:

1. a target-bound event finds its control in an accessibility walk begun now, and acts
   at the centre of its bounds; a control that is not there stops the batch
   (`target_gone`);
2. a damage mark is taken, and the previous event's receipt gets its `changed`: damage
   after that event's own mark (taken before it ran, so what it drew counts, and what
   lands between two polls counts for both events: an over-report, never an under-
   report);
3. the event runs, then its `delay_ms`;
4. with `expect: "change"`, the loop waits for damage after this event's mark, and
   stops the batch (`expectation_failed`) when none comes in time.

The last receipt's `changed` is read right after the last event and, when the batch
settles, again after the settle (a redraw the last event caused usually lands then).
Without damage (`has_damage` false) nothing can be watched: `changed` is always true,
an expectation counts as met, and a settle never settles.

Before anything runs, the desktop must be drivable (`require_drivable`, on the input
worker, as ever), its owner not using it (`require_owner_idle`, likewise: 409
`owner_active`; an owner who starts during the batch stops it before its next event,
with the receipts of what ran) and, with `require_unchanged`, the screen must not have changed near
any point the batch gives as x,y since the caller's frame (`stale_frame`).

Interrupts keep their meaning: the guard's epoch, read when the batch is accepted,
stops it on the input worker between and inside events; the loop-side waits (a walk,
an expectation, the settle) end at once on `interrupt`. Any batch that stops early
(an error, a stop, an interrupt, its task cancelled with a dropped link) lets go of
every held mouse button, so no drag is left going; keys an earlier `key_down` holds
stay held, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import Desktop, Rect
from rigway.agent.desktop_state import DesktopUnavailableError, require_drivable
from rigway.agent.input_runner import (
    POINTER_EVENTS,
    InputEventError,
    InputInterruptedError,
    run_event,
)
from rigway.agent.owner_presence import OwnerActiveError, OwnerPresence, require_owner_idle
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService, merge_rects
from rigway.protocol import ops

__all__ = ["Acceptance", "ActService", "BatchStoppedError"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")


class BatchStoppedError(Exception):
    """The batch stopped (or was refused) on the host: `code` is an `ops.ERROR_*`, and
    `stopped` the failed reply's body (receipts of what ran, where it stopped)."""

    def __init__(self, code: str, detail: str, stopped: ops.InputStopped) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.stopped = stopped


@dataclass(frozen=True, slots=True)
class Acceptance:
    """What a batch holds from the moment it was accepted: the guard's epoch (stops it
    on the input worker) and the loop-side event `interrupt` sets (ends its waits)."""

    epoch: int
    interrupted: asyncio.Event


class ActService:
    def __init__(
        self,
        desktop: Desktop,
        screen: ScreenService,
        accessibility: AccessibilityService,
        guard: InputGuard,
        input_executor: Executor,
        presence: OwnerPresence | None = None,
    ) -> None:
        """`presence`: None never refuses input for the owner."""
        self._desktop = desktop
        self._presence = presence
        self._screen = screen
        self._accessibility = accessibility
        self._guard = guard
        self._input_executor = input_executor
        self._interrupted: asyncio.Event | None = None

    def accept(self) -> Acceptance:
        """On the event loop, when a batch arrives: an interrupt after this stops it,
        even before it starts on the worker."""
        if self._interrupted is None:
            self._interrupted = asyncio.Event()
        return Acceptance(self._guard.epoch, self._interrupted)

    def interrupt(self) -> None:
        """On the event loop: stop every batch accepted before now (session end, link
        lost), on the worker and in its waits."""
        self._guard.interrupt()
        if self._interrupted is not None:
            self._interrupted.set()
            self._interrupted = None

    async def run(self, batch: ops.InputBatch, accepted: Acceptance) -> ops.InputDone:
        """Run `batch`; `BatchStoppedError` when it stopped or was refused on the host."""
        started = time.monotonic()
        await self._require_drivable()
        if batch.require_unchanged is not None:
            await self._require_unchanged(batch.require_unchanged, batch.events)
        run = _BatchRun(self, batch.events, accepted, started)
        try:
            receipts = await run.run_events()
        except asyncio.CancelledError:
            # The link dropped (its tasks are cancelled): the release is queued behind
            # whatever event is still on the worker, and needs no one to wait for it.
            with contextlib.suppress(RuntimeError):  # the worker is shut down already
                self._input_executor.submit(self._release_buttons)
            raise
        except Exception:
            await self.on_input_worker(self._release_buttons)
            raise
        settle = None
        if batch.settle is not None:
            try:
                settle = await self._settle(batch.settle, accepted, len(batch.events))
            except InputInterruptedError as exc:
                stopped = ops.InputStopped(events=receipts)
                raise BatchStoppedError(ops.ERROR_HOST, str(exc), stopped) from exc
            await run.recheck_last()
        return ops.InputDone(count=len(batch.events), events=receipts, settle=settle)

    async def on_input_worker(self, fn: Callable[[], _T]) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._input_executor, fn)

    async def until_interrupted(self, work: Awaitable[_T], accepted: Acceptance, index: int) -> _T:
        """`work`'s result, or `InputInterruptedError(index)` as soon as an interrupt
        lands (`work` is then cancelled)."""
        if accepted.interrupted.is_set():
            _cancel_quietly(asyncio.ensure_future(work))
            raise InputInterruptedError(index)
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(accepted.interrupted.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not task.done():
                _cancel_quietly(task)
        if task.done() and not task.cancelled():
            return task.result()
        raise InputInterruptedError(index)

    @property
    def presence(self) -> OwnerPresence | None:
        return self._presence

    @property
    def guard(self) -> InputGuard:
        return self._guard

    @property
    def screen(self) -> ScreenService:
        return self._screen

    @property
    def accessibility(self) -> AccessibilityService:
        return self._accessibility

    def _release_buttons(self) -> None:
        released = self._guard.release_buttons()
        if released:
            _log.info("input batch stopped early: released %s", ", ".join(released))

    async def _require_drivable(self) -> None:
        try:
            await self.on_input_worker(partial(require_drivable, self._desktop, self._guard))
        except DesktopUnavailableError as exc:
            _log.info("%s", exc)
            stopped = ops.InputStopped(events=[], stopped_at=0)
            raise BatchStoppedError(ops.ERROR_DESKTOP_UNAVAILABLE, exc.state, stopped) from exc
        if self._presence is None:
            return
        try:
            await self.on_input_worker(partial(require_owner_idle, self._presence, self._guard))
        except OwnerActiveError as exc:
            _log.info("%s", exc)
            stopped = ops.InputStopped(events=[], stopped_at=0)
            raise BatchStoppedError(ops.ERROR_OWNER_ACTIVE, exc.detail, stopped) from exc

    async def _require_unchanged(
        self, rule: ops.RequireUnchanged, events: Sequence[ops.InputEvent]
    ) -> None:
        """`stale_frame`, nothing run, when damage after the caller's frame lies within
        `radius_px` of a point given as x,y (target-bound points are found later, and
        keyboard events act on no point)."""
        points = [
            (event.x, event.y)
            for event in events
            if event.type in POINTER_EVENTS and event.x is not None and event.y is not None
        ]
        if not points:
            return
        width, height = await self._screen.native_size()
        changed = await self._screen.damage_since(rule.damage_mark)
        # Unknown (no damage on this backend, or a mark past the log's horizon): the
        # whole desktop may have changed.
        rects = [Rect(0, 0, width, height)] if changed is None else changed
        near = [r for r in rects if any(_within(r, p, rule.radius_px) for p in points)]
        if not near:
            return
        merged = merge_rects(near, width, height)
        stopped = ops.InputStopped(rects=[r.as_list() for r in merged])
        detail = f"the screen changed within {rule.radius_px} px of the batch's points"
        raise BatchStoppedError(ops.ERROR_STALE_FRAME, detail, stopped)

    async def _settle(
        self, settle: ops.Settle, accepted: Acceptance, index: int
    ) -> ops.SettleResult:
        waiting = self._screen.wait_quiet(settle.quiet_ms / 1000.0, settle.timeout_ms / 1000.0)
        settled, waited_s = await self.until_interrupted(waiting, accepted, index)
        return ops.SettleResult(settled=settled, waited_ms=round(waited_s * 1000.0, 1))


@dataclass(slots=True)
class _Ran:
    """An event that ran, its receipt waiting for `changed`."""

    index: int
    type: str
    at_ms: float
    point: tuple[int, int] | None
    mark: int | None


@dataclass(slots=True)
class _BatchRun:
    """One batch's events, run in order, with the receipts so far."""

    service: ActService
    events: Sequence[ops.InputEvent]
    accepted: Acceptance
    started: float
    receipts: list[ops.EventReceipt] = field(default_factory=list)
    previous: _Ran | None = None
    last: _Ran | None = None

    async def run_events(self) -> list[ops.EventReceipt]:
        for index, event in enumerate(self.events):
            if index > 0:
                await self._require_owner_idle(event, index)
            point = await self._point_of(event, index)
            mark = await self._mark()
            await self._close_previous()
            ran = _Ran(index, event.type, self._now_ms(), point, mark)
            await self._run_one(event, ran)
            if event.expect == "change":
                await self._expect_change(event, ran)
            self.previous = ran
        self.last = self.previous
        await self._close_previous()
        return self.receipts

    async def recheck_last(self) -> None:
        """After a settle, the last event's `changed` covers the settle too: there is
        no next event, and the redraw it caused usually lands during the settle."""
        if self.last is None or not self.receipts or self.receipts[-1].changed:
            return
        if await self._changed_since(self.last.mark):
            self.receipts[-1] = self.receipts[-1].model_copy(update={"changed": True})

    def _now_ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000.0, 1)

    async def _point_of(self, event: ops.InputEvent, index: int) -> tuple[int, int] | None:
        if event.target is None:
            if event.type in POINTER_EVENTS and event.x is not None and event.y is not None:
                return (event.x, event.y)
            return None
        walk = self.service.accessibility.fresh_snapshot()
        try:
            snapshot = await self.service.until_interrupted(walk, self.accepted, index)
        except Exception as exc:
            # Interrupted, or the walk failed or hung: the batch cannot tell where to act.
            await self._close_previous()
            failed = _Ran(index, event.type, self._now_ms(), None, None)
            detail = f"event {index} ({event.type}): {exc}"
            raise self._stop(ops.ERROR_HOST, detail, failed, changed=False) from exc
        for target in snapshot.targets:
            if target.id == event.target:
                return (target.x + target.w // 2, target.y + target.h // 2)
        await self._close_previous()
        failed = _Ran(index, event.type, self._now_ms(), None, None)
        detail = f"event {index} ({event.type}): target {event.target} is not in the focused window"
        raise self._stop(ops.ERROR_TARGET_GONE, detail, failed, changed=False)

    async def _require_owner_idle(self, event: ops.InputEvent, index: int) -> None:
        """The owner took the rig's own keyboard or mouse while the batch ran: it stops
        before its next event (`owner_active`, with the receipts of what ran)."""
        presence = self.service.presence
        if presence is None or not presence.is_active():
            return
        await self._close_previous()
        failed = _Ran(index, event.type, self._now_ms(), None, None)
        detail = (
            f"event {index} ({event.type}): the rig's owner used its keyboard or mouse; "
            f"API input resumes after {presence.idle_s:g} s without local input"
        )
        raise self._stop(ops.ERROR_OWNER_ACTIVE, detail, failed, changed=False)

    async def _run_one(self, event: ops.InputEvent, ran: _Ran) -> None:
        guard = self.service.guard
        step = partial(
            run_event,
            guard,
            event,
            index=ran.index,
            epoch=self.accepted.epoch,
            point=ran.point if event.target is not None else None,
        )
        try:
            await self.service.on_input_worker(step)
        except (InputEventError, InputInterruptedError) as exc:
            changed = await self._changed_since(ran.mark)
            raise self._stop(ops.ERROR_HOST, str(exc), ran, changed=changed) from exc

    async def _expect_change(self, event: ops.InputEvent, ran: _Ran) -> None:
        if ran.mark is None:
            return  # no damage on this backend: nothing to watch, counted as met
        timeout_s = event.expect_timeout_ms / 1000.0
        waiting = self.service.screen.wait_for_change(ran.mark, timeout_s)
        met = await self.service.until_interrupted(waiting, self.accepted, ran.index)
        if met is False:
            detail = (
                f"event {ran.index} ({event.type}): the screen did not change within "
                f"{event.expect_timeout_ms} ms"
            )
            raise self._stop(ops.ERROR_EXPECTATION_FAILED, detail, ran, changed=False)

    async def _mark(self) -> int | None:
        screen = self.service.screen
        return await screen.damage_mark() if screen.has_damage else None

    async def _changed_since(self, mark: int | None) -> bool:
        if mark is None:
            return True
        rects = await self.service.screen.damage_since(mark)
        return rects is None or bool(rects)

    async def _close_previous(self) -> None:
        previous, self.previous = self.previous, None
        if previous is not None:
            changed = await self._changed_since(previous.mark)
            self.receipts.append(_receipt(previous, ok=True, changed=changed))

    def _stop(self, code: str, detail: str, failed: _Ran, *, changed: bool) -> BatchStoppedError:
        receipts = [*self.receipts, _receipt(failed, ok=False, changed=changed)]
        stopped = ops.InputStopped(events=receipts, stopped_at=failed.index)
        return BatchStoppedError(code, detail, stopped)


def _receipt(ran: _Ran, *, ok: bool, changed: bool) -> ops.EventReceipt:
    x, y = (None, None) if ran.point is None else ran.point
    return ops.EventReceipt(
        index=ran.index, type=ran.type, ok=ok, at_ms=ran.at_ms, x=x, y=y, changed=changed
    )


def _within(rect: Rect, point: tuple[int, int], radius: int) -> bool:
    """Whether `point` lies within `radius` of `rect` on both axes (a square around the
    point: a corner may over-report, never under-report)."""
    x, y = point
    return (
        rect.x - radius <= x <= rect.x + rect.w + radius
        and rect.y - radius <= y <= rect.y + rect.h + radius
    )


def _cancel_quietly(task: asyncio.Future[_T]) -> None:
    task.cancel()
    # Its outcome is no longer anyone's: an error it ends with must not be reported
    # as never retrieved.
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
