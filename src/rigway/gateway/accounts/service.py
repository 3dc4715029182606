"""Accounts: created by sign-up in a hosted deployment, by `rigway up` locally."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.accounts import repository
from rigway.gateway.clock import Clock
from rigway.gateway.db.models import Account
from rigway.gateway.ids import new_id


class AccountService:
    def __init__(self, db_sessions: async_sessionmaker[DbSession], clock: Clock) -> None:
        self._db_sessions = db_sessions
        self._clock = clock

    async def create(self, name: str) -> str:
        account = Account(id=new_id("acc"), name=name, created_at=self._clock.now())
        async with self._db_sessions.begin() as db:
            db.add(account)
        return account.id

    async def first_named(self, name: str) -> str | None:
        async with self._db_sessions() as db:
            return await repository.first_named(db, name)
