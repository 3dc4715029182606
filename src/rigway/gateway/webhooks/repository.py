"""The only SQL of the webhooks feature: webhooks and the outbox of their events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import Webhook, WebhookOutbox


async def count_for_account(db: DbSession, account_id: str) -> int:
    query = select(func.count()).where(Webhook.account_id == account_id)
    return int(await db.scalar(query) or 0)


async def list_for_account(db: DbSession, account_id: str) -> Sequence[Webhook]:
    query = (
        select(Webhook)
        .where(Webhook.account_id == account_id)
        .order_by(Webhook.created_at, Webhook.id)
    )
    return (await db.scalars(query)).all()


async def enabled_for_account(db: DbSession, account_id: str) -> Sequence[Webhook]:
    query = select(Webhook).where(Webhook.account_id == account_id, Webhook.enabled.is_(True))
    return (await db.scalars(query)).all()


async def delete_webhook(db: DbSession, webhook_id: str) -> None:
    await db.execute(delete(Webhook).where(Webhook.id == webhook_id))


async def record_delivery(
    db: DbSession, webhook_id: str, *, now: datetime, status: int | None, error: str | None
) -> None:
    await db.execute(
        update(Webhook)
        .where(Webhook.id == webhook_id)
        .values(last_delivery_at=now, last_status=status, last_error=error)
    )


async def pending_events(db: DbSession, limit: int) -> Sequence[WebhookOutbox]:
    query = (
        select(WebhookOutbox)
        .where(WebhookOutbox.dispatched_at.is_(None))
        .order_by(WebhookOutbox.created_at, WebhookOutbox.id)
        .limit(limit)
    )
    return (await db.scalars(query)).all()


async def claim_event(db: DbSession, event_id: str, now: datetime) -> bool:
    """True for the one caller, across gateway nodes, whose conditional UPDATE won."""
    result = await db.execute(
        update(WebhookOutbox)
        .where(WebhookOutbox.id == event_id, WebhookOutbox.dispatched_at.is_(None))
        .values(dispatched_at=now)
    )
    return bool(getattr(result, "rowcount", 0) == 1)
