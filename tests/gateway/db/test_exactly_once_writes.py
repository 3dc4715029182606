"""Store writes that several gateway nodes make at once: outbox claims hand each event
to exactly one node, and activity flushes never move a session's counts backwards."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.db.engine import apply_migrations, create_engine, session_factory
from rigway.gateway.db.models import Account, Rig, Session
from rigway.gateway.sessions import repository as sessions_repository
from rigway.gateway.webhooks import repository as webhooks_repository
from rigway.gateway.webhooks.outbox import enqueue_event

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
EVENTS = 60
BATCH = 7


@pytest.fixture
async def db_sessions(database_url: str) -> AsyncIterator[async_sessionmaker[DbSession]]:
    engine = create_engine(database_url)
    await apply_migrations(engine)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


async def _account_with_session(db_sessions: async_sessionmaker[DbSession]) -> str:
    async with db_sessions.begin() as db:
        db.add(Account(id="acc_1", name="one", created_at=NOW))
        await db.flush()
        db.add(Rig(id="rig_1", account_id="acc_1", name="rig", created_at=NOW))
        await db.flush()
        db.add(
            Session(
                id="ses_1", account_id="acc_1", rig_id="rig_1", mode="desktop",
                status="active", started_at=NOW, idle_timeout_s=900,
                last_activity_at=NOW, action_count=0,
            )
        )  # fmt: skip
    return "ses_1"


async def _drain(db_sessions: async_sessionmaker[DbSession], claimed: list[str]) -> None:
    while True:
        async with db_sessions.begin() as db:
            events = await webhooks_repository.claim_pending_events(db, BATCH, NOW)
        if not events:
            return
        claimed.extend(event.id for event in events)
        await asyncio.sleep(0)  # let the other drainer in between batches


async def test_two_nodes_draining_at_once_claim_every_event_exactly_once(
    db_sessions: async_sessionmaker[DbSession],
) -> None:
    await _account_with_session(db_sessions)
    async with db_sessions.begin() as db:
        for index in range(EVENTS):
            enqueue_event(
                db, account_id="acc_1", event="session.started", data={"n": index},
                now=NOW + timedelta(milliseconds=index),
            )  # fmt: skip
    by_node: tuple[list[str], list[str]] = ([], [])

    await asyncio.gather(_drain(db_sessions, by_node[0]), _drain(db_sessions, by_node[1]))

    everything = by_node[0] + by_node[1]
    assert len(everything) == EVENTS
    assert len(set(everything)) == EVENTS
    async with db_sessions.begin() as db:
        assert await webhooks_repository.claim_pending_events(db, BATCH, NOW) == []


async def test_a_late_flush_never_moves_activity_backwards(
    db_sessions: async_sessionmaker[DbSession],
) -> None:
    session_id = await _account_with_session(db_sessions)
    newer, older = NOW + timedelta(seconds=30), NOW + timedelta(seconds=10)

    async with db_sessions.begin() as db:
        await sessions_repository.flush_activity(db, session_id, newer, 9)
    async with db_sessions.begin() as db:
        await sessions_repository.flush_activity(db, session_id, older, 4)

    async with db_sessions() as db:
        row = await db.get(Session, session_id)
    assert row is not None
    assert (row.last_activity_at, row.action_count) == (newer, 9)
