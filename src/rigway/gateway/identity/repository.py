"""The only SQL of the embedded identity provider."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import User


async def user_by_email(db: DbSession, normalised_email: str) -> User | None:
    return await db.scalar(select(User).where(User.email == normalised_email))


async def has_user_with_email(db: DbSession, normalised_email: str) -> bool:
    found = await db.scalar(select(User.id).where(User.email == normalised_email))
    return found is not None
