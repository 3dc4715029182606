"""The only SQL on API keys: the management feature's and the authenticator's."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import ApiKey


async def count_active(db: DbSession, account_id: str) -> int:
    query = select(func.count()).where(ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None))
    return int(await db.scalar(query) or 0)


async def list_active(db: DbSession, account_id: str) -> Sequence[ApiKey]:
    query = (
        select(ApiKey)
        .where(ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None))
        .order_by(ApiKey.created_at)
    )
    return (await db.scalars(query)).all()


async def active_by_prefix(db: DbSession, prefix: str) -> ApiKey | None:
    query = select(ApiKey).where(ApiKey.key_prefix == prefix, ApiKey.revoked_at.is_(None))
    return await db.scalar(query)


async def revoke(db: DbSession, key_id: str, now: datetime) -> None:
    await db.execute(update(ApiKey).where(ApiKey.id == key_id).values(revoked_at=now))


async def set_last_used(db: DbSession, prefix: str, now: datetime) -> None:
    await db.execute(update(ApiKey).where(ApiKey.key_prefix == prefix).values(last_used_at=now))
