"""The only SQL of recordings: a recorded session's tally and its steps."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import Recording, RecordingStep, Session


async def get(db: DbSession, session_id: str) -> Recording | None:
    return await db.get(Recording, session_id)


async def save_tally(
    db: DbSession, session_id: str, *, steps: int, frames: int, total_bytes: int, dropped: int
) -> None:
    await db.execute(
        update(Recording)
        .where(Recording.session_id == session_id)
        .values(
            step_count=steps, frame_count=frames, total_bytes=total_bytes, dropped_steps=dropped
        )
    )


def add_step(
    db: DbSession,
    session_id: str,
    seq: int,
    *,
    kind: str,
    at: datetime,
    step: dict[str, Any],
    jpeg: bytes | None,
) -> None:
    db.add(RecordingStep(session_id=session_id, seq=seq, kind=kind, at=at, step=step, jpeg=jpeg))


async def step_records(
    db: DbSession, session_id: str, *, after_seq: int, limit: int
) -> Sequence[tuple[int, dict[str, Any]]]:
    """The step records (no JPEGs) after `after_seq`, in order, at most `limit`."""
    query = (
        select(RecordingStep.seq, RecordingStep.step)
        .where(RecordingStep.session_id == session_id, RecordingStep.seq > after_seq)
        .order_by(RecordingStep.seq)
        .limit(limit)
    )
    return [(seq, step) for seq, step in (await db.execute(query)).all()]


async def step_jpegs(
    db: DbSession, session_id: str, *, after_seq: int, limit: int
) -> Sequence[tuple[int, bytes]]:
    """The JPEGs of the steps after `after_seq` that have one, in order, at most `limit`."""
    query = (
        select(RecordingStep.seq, RecordingStep.jpeg)
        .where(
            RecordingStep.session_id == session_id,
            RecordingStep.seq > after_seq,
            RecordingStep.jpeg.is_not(None),
        )
        .order_by(RecordingStep.seq)
        .limit(limit)
    )
    return [(seq, jpeg) for seq, jpeg in (await db.execute(query)).all() if jpeg is not None]


async def step_jpeg(db: DbSession, session_id: str, seq: int) -> bytes | None:
    query = select(RecordingStep.jpeg).where(
        RecordingStep.session_id == session_id, RecordingStep.seq == seq
    )
    return await db.scalar(query)


async def ended_before(db: DbSession, cutoff: datetime, limit: int) -> Sequence[str]:
    """Recordings whose session ended before `cutoff`: expired."""
    query = (
        select(Recording.session_id)
        .join(Session, Session.id == Recording.session_id)
        .where(Session.ended_at.is_not(None), Session.ended_at < cutoff)
        .limit(limit)
    )
    return (await db.scalars(query)).all()


async def delete_recordings(db: DbSession, session_ids: Sequence[str]) -> None:
    # The steps explicitly too: SQLite enforces ON DELETE CASCADE only when asked to.
    await db.execute(delete(RecordingStep).where(RecordingStep.session_id.in_(session_ids)))
    await db.execute(delete(Recording).where(Recording.session_id.in_(session_ids)))
