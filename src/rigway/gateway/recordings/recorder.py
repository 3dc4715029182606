"""The recorder: what the desktop service hands it of a recorded session (a screenshot,
an observe, an input batch) becomes a step in the store, written by one writer task.

The desktop service calls it only for sessions started with `record: true`. A hook
builds the step's record and copies its JPEG, puts both in a bounded queue and returns:
the caller's answer waits for the store only when the writer is that far behind (the
queue's bound, `QUEUE_STEPS`, is also the memory it may hold). The writer numbers the
steps, applies the caps (`recording_max_bytes`, `recording_max_steps`: a step past
either is dropped and counted) and the redaction of typed text (`redaction.py`), and
writes what it took from the queue in one transaction. `flush` waits until everything
queued is written: before an archive is read and when a session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import Clock
from rigway.gateway.db.models import Recording
from rigway.gateway.desktop.schemas import ObserveOut
from rigway.gateway.errors import ApiError, InputConflict
from rigway.gateway.recordings import repository
from rigway.gateway.recordings.redaction import redact_events
from rigway.gateway.sessions.live import LiveSession
from rigway.protocol import ops

if TYPE_CHECKING:
    from rigway.gateway.desktop.service import ScreenParams, Screenshot

__all__ = ["QUEUE_STEPS", "Recorder", "frame_name"]

logger = logging.getLogger(__name__)

# Steps waiting for the writer at most; a hook waits when the queue is full.
QUEUE_STEPS = 64
# Steps the writer takes from the queue into one transaction at most.
WRITE_BATCH_STEPS = 32


def frame_name(seq: int) -> str:
    """A step's JPEG in the archive."""
    return f"frames/{seq:06d}.jpg"


@dataclass(slots=True)
class _Step:
    session_id: str
    account_id: str
    kind: str
    at: datetime
    record: dict[str, Any]
    jpeg: bytes | None = None


@dataclass(slots=True)
class _Tally:
    """A recording's counts as the store has them, plus the targets last seen."""

    steps: int
    frames: int
    total_bytes: int
    dropped: int
    targets: list[dict[str, Any]] = field(default_factory=list)


class Recorder:
    def __init__(
        self,
        db: async_sessionmaker[DbSession],
        clock: Clock,
        *,
        max_bytes: int,
        max_steps: int,
    ) -> None:
        self._db = db
        self._clock = clock
        self._max_bytes = max_bytes
        self._max_steps = max_steps
        self._queue: asyncio.Queue[_Step] = asyncio.Queue(maxsize=QUEUE_STEPS)
        self._tallies: dict[str, _Tally] = {}
        self._writer: asyncio.Task[None] | None = None

    # ---- hooks (the desktop service) ----

    async def screenshot(self, live: LiveSession, params: ScreenParams, shot: Screenshot) -> None:
        reply = shot.reply
        record = {
            "frame_id": None if shot.frame is None else shot.frame.frame_id,
            **_geometry(reply.width, reply.height, reply.native_width, reply.native_height),
            "region": _region(params),
            "quality": params.quality,
            "max_width": params.max_width,
            "timing": {
                "link_ms": round(shot.link_ms, 2),
                "host_jpeg_ms": round(reply.host_jpeg_ms, 2),
                "cached": reply.cached,
            },
        }
        await self._put(live, "screenshot", record, bytes(shot.jpeg))

    async def observe(
        self,
        live: LiveSession,
        params: ScreenParams,
        result: ObserveOut,
        jpeg: memoryview | None,
    ) -> None:
        record = {
            "frame_id": result.frame_id,
            **_geometry(result.width, result.height, result.native_width, result.native_height),
            "region": _region(params),
            "image": jpeg is not None,
            "targets": [target.model_dump() for target in result.targets],
            "truncated": result.truncated,
            "window_title": result.text.window_title,
            "summary": result.text.summary,
            "changed": result.changed,
            "dirty_rects": [list(rect) for rect in result.dirty.rects],
            "desktop_state": result.desktop_state,
            "timing": result.timing.model_dump(),
        }
        await self._put(live, "observe", record, None if jpeg is None else bytes(jpeg))

    async def input(
        self, live: LiveSession, body: Mapping[str, Any], outcome: ops.InputDone | ApiError
    ) -> None:
        """`body` is the batch as the host got it (native points); `outcome` its answer
        or the error it raised (a stopped batch's 409 carries the receipts of what ran)."""
        record: dict[str, Any] = {
            "events": list(body.get("events", [])),
            "settle_asked": body.get("settle"),
        }
        if isinstance(outcome, ops.InputDone):
            record |= {
                "outcome": "done",
                "receipts": [receipt.model_dump() for receipt in outcome.events],
                "settle": None if outcome.settle is None else outcome.settle.model_dump(),
            }
        else:
            extra = outcome.extra if isinstance(outcome, InputConflict) else {}
            stopped = "stopped_at" in extra
            record |= {
                "outcome": "stopped" if stopped else "refused",
                "receipts": list(extra.get("events", [])),
                "settle": None,
                "error": {
                    "status": outcome.status,
                    "code": outcome.code,
                    "detail": outcome.detail,
                    "stopped_at": extra.get("stopped_at"),
                },
            }
        record["timing"] = {"batch_ms": _batch_ms(record)}
        await self._put(live, "input", record, None)

    async def _put(
        self, live: LiveSession, kind: str, record: dict[str, Any], jpeg: bytes | None
    ) -> None:
        now = self._clock.now()
        record = {
            "kind": kind,
            "at": now.isoformat(),
            "t_ms": max(0, round((now - live.started_at).total_seconds() * 1000)),
            **record,
        }
        self._ensure_writer()
        await self._queue.put(_Step(live.id, live.account_id, kind, now, record, jpeg))

    def _ensure_writer(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._run())

    # ---- the writer ----

    async def flush(self) -> None:
        """Returns once every step queued so far is in the store (or failed to get there)."""
        if self._queue.empty() and self._writer is None:
            return
        # A writer cancelled with steps still queued (a shutdown racing a request) would
        # leave the join waiting for ever: one runs again first.
        self._ensure_writer()
        await self._queue.join()

    async def forget(self, session_id: str) -> None:
        """The session ended: its last steps written, its tally dropped from memory."""
        await self.flush()
        self._tallies.pop(session_id, None)

    async def stop(self) -> None:
        await self.flush()
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    async def _run(self) -> None:
        while True:
            steps = [await self._queue.get()]
            while len(steps) < WRITE_BATCH_STEPS and not self._queue.empty():
                steps.append(self._queue.get_nowait())
            try:
                await self._write(steps)
            except Exception:
                # A store hiccup loses these steps (the next ones reload the tally);
                # it must not stop the writer, or every recorded session would stall.
                logger.exception("writing %d recording steps failed", len(steps))
                for step in steps:
                    self._tallies.pop(step.session_id, None)
            finally:
                for _ in steps:
                    self._queue.task_done()

    async def _write(self, steps: list[_Step]) -> None:
        async with self._db.begin() as db:
            touched: dict[str, _Tally] = {}
            for step in steps:
                tally = await self._tally(db, step)
                touched[step.session_id] = tally
                self._keep(db, step, tally)
            for session_id, tally in touched.items():
                await repository.save_tally(
                    db,
                    session_id,
                    steps=tally.steps,
                    frames=tally.frames,
                    total_bytes=tally.total_bytes,
                    dropped=tally.dropped,
                )

    async def _tally(self, db: DbSession, step: _Step) -> _Tally:
        tally = self._tallies.get(step.session_id)
        if tally is not None:
            return tally
        # First step here: the recording may have begun on another node (a rig that
        # reconnected elsewhere), so the store's counts go on.
        row = await repository.get(db, step.session_id)
        if row is None:
            row = Recording(
                session_id=step.session_id,
                account_id=step.account_id,
                created_at=step.at,
                step_count=0,
                frame_count=0,
                total_bytes=0,
                dropped_steps=0,
            )
            db.add(row)
            await db.flush()
        tally = _Tally(row.step_count, row.frame_count, row.total_bytes, row.dropped_steps)
        self._tallies[step.session_id] = tally
        return tally

    def _keep(self, db: DbSession, step: _Step, tally: _Tally) -> None:
        record = step.record
        if step.kind == "input":
            record["events"] = redact_events(record["events"], tally.targets)
        elif step.kind == "observe":
            tally.targets = record["targets"]
        seq = tally.steps + 1
        record = {"seq": seq, **record, "frame": None if step.jpeg is None else frame_name(seq)}
        size = len(json.dumps(record)) + (0 if step.jpeg is None else len(step.jpeg))
        # Once past a cap, every later step is dropped too: a recording that stops is
        # easier to read than one with holes.
        is_over = tally.steps >= self._max_steps or tally.total_bytes + size > self._max_bytes
        if tally.dropped > 0 or is_over:
            tally.dropped += 1
            return
        repository.add_step(
            db, step.session_id, seq, kind=step.kind, at=step.at, step=record, jpeg=step.jpeg
        )
        tally.steps = seq
        tally.frames += step.jpeg is not None
        tally.total_bytes += size


def _geometry(width: int, height: int, native_width: int, native_height: int) -> dict[str, Any]:
    return {
        "width": width,
        "height": height,
        "native_width": native_width,
        "native_height": native_height,
    }


def _region(params: ScreenParams) -> list[int] | None:
    region = params.region
    return None if region is None else [region.x, region.y, region.w, region.h]


def _batch_ms(record: Mapping[str, Any]) -> int | None:
    """How long the batch ran on the host: its last event's start, plus its settle."""
    receipts = record["receipts"]
    if not receipts:
        return None
    settle = record.get("settle") or {}
    return round(float(receipts[-1]["at_ms"]) + float(settle.get("waited_ms", 0)))
