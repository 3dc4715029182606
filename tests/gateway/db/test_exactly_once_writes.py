"""Store writes that several gateway nodes make at once: outbox claims hand each event
to exactly one node, and activity flushes never move a session's counts backwards."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
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


async def _account_with_session(db_sessions: async_sessionmaker[DbSession], number: int = 1) -> str:
    account_id, rig_id, session_id = f"acc_{number}", f"rig_{number}", f"ses_{number}"
    async with db_sessions.begin() as db:
        db.add(Account(id=account_id, name="one", created_at=NOW))
        await db.flush()
        db.add(Rig(id=rig_id, account_id=account_id, name="rig", created_at=NOW))
        await db.flush()
        db.add(
            Session(
                id=session_id, account_id=account_id, rig_id=rig_id, mode="desktop",
                status="active", started_at=NOW, idle_timeout_s=900,
                last_activity_at=NOW, action_count=0,
            )
        )  # fmt: skip
    return session_id


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
        await sessions_repository.flush_activity(
            db, [sessions_repository.Activity(session_id, newer, 9)]
        )
    async with db_sessions.begin() as db:
        await sessions_repository.flush_activity(
            db, [sessions_repository.Activity(session_id, older, 4)]
        )

    async with db_sessions() as db:
        row = await db.get(Session, session_id)
    assert row is not None
    assert (row.last_activity_at, row.action_count) == (newer, 9)


async def test_one_flush_writes_every_sessions_counts_and_lowers_none(
    db_sessions: async_sessionmaker[DbSession],
) -> None:
    raised = await _account_with_session(db_sessions, 1)
    lowered = await _account_with_session(db_sessions, 2)
    later, earlier = NOW + timedelta(seconds=20), NOW + timedelta(seconds=5)
    async with db_sessions.begin() as db:
        await sessions_repository.flush_activity(
            db, [sessions_repository.Activity(lowered, later, 7)]
        )
    async with db_sessions.begin() as db:
        await sessions_repository.flush_activity(
            db,
            [
                sessions_repository.Activity(raised, later, 3),
                sessions_repository.Activity(lowered, earlier, 2),
            ],
        )

    async with db_sessions() as db:
        rows = {row.id: row for row in await db.scalars(select(Session))}
    assert (rows[raised].last_activity_at, rows[raised].action_count) == (later, 3)
    assert (rows[lowered].last_activity_at, rows[lowered].action_count) == (later, 7)
