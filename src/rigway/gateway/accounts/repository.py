"""The only SQL of the accounts feature."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import Account


async def lock_account(db: DbSession, account_id: str) -> None:
    """Serialise this transaction with others that lock the same account, so per-account
    caps (concurrent sessions, webhooks) hold under races. A PostgreSQL row lock; SQLite
    drops FOR UPDATE, where BEGIN IMMEDIATE already serialises writers."""
    await db.execute(select(Account.id).where(Account.id == account_id).with_for_update())
