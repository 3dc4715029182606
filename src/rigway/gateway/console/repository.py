"""The only SQL of the console: reads the pages need that no API route makes (the
account's ended sessions with the key that ran them, the sessions a usage total sums,
the name of the key running a rig's live session)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import ApiKey, Session


async def ended_sessions_page(
    db: DbSession, account_id: str, *, offset: int, limit: int
) -> list[tuple[Session, str | None, str | None]]:
    """Newest end first, each with its key's name and prefix (None: no key, or a key
    since deleted). Sessions are never deleted, so an offset pages them stably enough
    for a person reading a table."""
    query = (
        select(Session, ApiKey.name, ApiKey.key_prefix)
        .outerjoin(ApiKey, ApiKey.id == Session.api_key_id)
        .where(Session.account_id == account_id, Session.status != "active")
        .order_by(Session.ended_at.desc(), Session.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return [(row, name, prefix) for row, name, prefix in await db.execute(query)]


async def sessions_started_since(
    db: DbSession, account_id: str, since: datetime
) -> list[tuple[datetime, datetime | None, str]]:
    query = select(Session.started_at, Session.ended_at, Session.status).where(
        Session.account_id == account_id, Session.started_at >= since
    )
    return [(started, ended, status) for started, ended, status in await db.execute(query)]


async def api_key_name_and_prefix(
    db: DbSession, api_key_id: str | None
) -> tuple[str | None, str | None]:
    """The key's name and prefix, revoked or not; (None, None) for no key."""
    if api_key_id is None:
        return None, None
    key = await db.get(ApiKey, api_key_id)
    return (None, None) if key is None else (key.name, key.key_prefix)
