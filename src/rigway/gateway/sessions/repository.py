"""The only SQL of the sessions feature."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, bindparam, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import Session
from rigway.gateway.ids import is_well_formed


async def get(db: DbSession, session_id: str) -> Session | None:
    if not is_well_formed(session_id):
        return None
    return await db.get(Session, session_id)


async def list_active(db: DbSession, account_id: str, api_key_id: str | None) -> list[Session]:
    query = select(Session).where(Session.account_id == account_id, Session.status == "active")
    if api_key_id is not None:
        query = query.where(Session.api_key_id == api_key_id)
    return list(await db.scalars(query.order_by(Session.started_at)))


async def all_active(db: DbSession) -> list[Session]:
    return list(await db.scalars(select(Session).where(Session.status == "active")))


async def active_on_rig(db: DbSession, rig_id: str) -> Session | None:
    query = select(Session).where(Session.rig_id == rig_id, Session.status == "active")
    return await db.scalar(query.limit(1))


async def count_active(db: DbSession, account_id: str) -> int:
    query = select(func.count()).where(Session.account_id == account_id, Session.status == "active")
    return int(await db.scalar(query) or 0)


async def transition(
    db: DbSession,
    session_id: str,
    *,
    to_status: str,
    values: dict[str, Any],
    owner_epoch: int | None = None,
) -> bool:
    """active → to_status, exactly once across every node: True for the one winner.
    With `owner_epoch` (a timer's end), only while no node took the session over since."""
    condition = [Session.id == session_id, Session.status == "active"]
    if owner_epoch is not None:
        condition.append(Session.owner_epoch == owner_epoch)
    result = await db.execute(update(Session).where(*condition).values(status=to_status, **values))
    return bool(getattr(result, "rowcount", 0) == 1)


async def take_over(db: DbSession, session_id: str) -> int | None:
    """This node serves the session from now on: its new owner epoch (None when it is
    no longer active)."""
    result = await db.execute(
        update(Session)
        .where(Session.id == session_id, Session.status == "active")
        .values(owner_epoch=Session.owner_epoch + 1, host_absent_since=None)
        .returning(Session.owner_epoch)
    )
    return result.scalar_one_or_none()


async def lock_active_page(db: DbSession, after_id: str, limit: int) -> list[Session]:
    """Active sessions after `after_id` in id order, locked for this transaction; rows
    another node's sweep holds are skipped (`FOR UPDATE SKIP LOCKED` on PostgreSQL)."""
    query = (
        select(Session)
        .where(Session.status == "active", Session.id > after_id)
        .order_by(Session.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list(await db.scalars(query))


async def set_host_absent_since(
    db: DbSession, session_ids: list[str], since: datetime | None
) -> None:
    """`since` for those not yet marked absent (None: present again, for all of them)."""
    if not session_ids:
        return
    query = update(Session).where(Session.id.in_(session_ids))
    if since is not None:
        query = query.where(Session.host_absent_since.is_(None))
    await db.execute(query.values(host_absent_since=since))


async def set_host_facts(
    db: DbSession, session_id: str, *, native_width: int, native_height: int, capture_mode: str
) -> None:
    await db.execute(
        update(Session)
        .where(Session.id == session_id)
        .values(native_width=native_width, native_height=native_height, capture_mode=capture_mode)
    )


@dataclass(frozen=True, slots=True)
class Activity:
    """A live session's counts, to be written."""

    session_id: str
    last_activity_at: datetime
    action_count: int


# One statement for every session's counts, run once with all their parameters (an
# executemany: one round trip on PostgreSQL whatever the number of sessions).
_FLUSH_ACTIVITY = (
    update(Session)
    .where(Session.id == bindparam("flushed_id"), Session.status == "active")
    .values(
        last_activity_at=case(
            (
                Session.last_activity_at < bindparam("flushed_at", type_=DateTime(timezone=True)),
                bindparam("flushed_at"),
            ),
            else_=Session.last_activity_at,
        ),
        action_count=case(
            (Session.action_count < bindparam("flushed_count"), bindparam("flushed_count")),
            else_=Session.action_count,
        ),
    )
)


async def flush_activity(db: DbSession, activities: Sequence[Activity]) -> None:
    """Write the live counts, never moving either backwards: a flush that arrives after
    a newer one (another node's, or a slow transaction) changes nothing it would lower."""
    if not activities:
        return
    connection = await db.connection()
    await connection.execute(
        _FLUSH_ACTIVITY,
        [
            {
                "flushed_id": activity.session_id,
                "flushed_at": activity.last_activity_at,
                "flushed_count": activity.action_count,
            }
            for activity in activities
        ],
    )
