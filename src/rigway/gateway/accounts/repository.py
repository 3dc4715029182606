"""The only SQL of the accounts feature."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import Account


async def lock_account(db: DbSession, account_id: str) -> None:
    """Serialise this transaction with others that lock the same account, so per-account
    caps (concurrent sessions, webhooks) hold under races. On PostgreSQL a row lock, FOR
    NO KEY UPDATE: it excludes other lockers but not the KEY SHARE that inserts referring
    to the account take (a plain FOR UPDATE deadlocks with a session start's second
    transaction). SQLite drops FOR UPDATE; its BEGIN IMMEDIATE already serialises."""
    query = select(Account.id).where(Account.id == account_id)
    await db.execute(query.with_for_update(key_share=True))


async def first_named(db: DbSession, name: str) -> str | None:
    query = select(Account.id).where(Account.name == name).order_by(Account.created_at)
    return await db.scalar(query.limit(1))
