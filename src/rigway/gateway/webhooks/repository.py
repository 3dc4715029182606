"""The only SQL of the webhooks feature: webhooks, the outbox of their events, and the
record of recent deliveries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import Webhook, WebhookDelivery, WebhookOutbox


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
    # Explicitly too: SQLite enforces the foreign key's ON DELETE CASCADE only when
    # asked to (PRAGMA foreign_keys), PostgreSQL always.
    await db.execute(delete(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id))
    await db.execute(delete(Webhook).where(Webhook.id == webhook_id))


async def record_delivery(
    db: DbSession,
    webhook_id: str,
    *,
    delivery_id: str,
    event: str,
    now: datetime,
    status: int | None,
    error: str | None,
    keep: int,
) -> None:
    """The webhook's last_* fields, a row for this delivery, and only the newest `keep`
    rows of this webhook left."""
    updated = await db.execute(
        update(Webhook)
        .where(Webhook.id == webhook_id)
        .values(last_delivery_at=now, last_status=status, last_error=error)
    )
    if getattr(updated, "rowcount", 0) != 1:
        return  # deleted while its delivery ran: nothing to keep a record for
    db.add(
        WebhookDelivery(
            id=delivery_id,
            webhook_id=webhook_id,
            event=event,
            delivered_at=now,
            status=status,
            error=error,
        )
    )
    await db.flush()
    newest = (
        select(WebhookDelivery.id)
        .where(WebhookDelivery.webhook_id == webhook_id)
        .order_by(WebhookDelivery.delivered_at.desc(), WebhookDelivery.id.desc())
        .limit(keep)
    )
    await db.execute(
        delete(WebhookDelivery).where(
            WebhookDelivery.webhook_id == webhook_id, WebhookDelivery.id.not_in(newest)
        )
    )


async def recent_deliveries_for_account(
    db: DbSession, account_id: str, limit: int
) -> list[tuple[WebhookDelivery, str]]:
    """The account's newest deliveries, each with its webhook's URL."""
    query = (
        select(WebhookDelivery, Webhook.url)
        .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
        .where(Webhook.account_id == account_id)
        .order_by(WebhookDelivery.delivered_at.desc(), WebhookDelivery.id.desc())
        .limit(limit)
    )
    return [(row, url) for row, url in await db.execute(query)]


async def claim_pending_events(db: DbSession, limit: int, now: datetime) -> Sequence[WebhookOutbox]:
    """Up to `limit` undispatched events, oldest first, marked dispatched for this caller
    alone. On PostgreSQL the rows another node is claiming are skipped (`FOR UPDATE SKIP
    LOCKED`), so nodes draining at once share the backlog instead of queueing on it;
    SQLite, one writer at a time, needs no row locks. Commit to make the claim stick."""
    query = (
        select(WebhookOutbox)
        .where(WebhookOutbox.dispatched_at.is_(None))
        .order_by(WebhookOutbox.created_at, WebhookOutbox.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    events = (await db.scalars(query)).all()
    if events:
        await db.execute(
            update(WebhookOutbox)
            .where(WebhookOutbox.id.in_([event.id for event in events]))
            .values(dispatched_at=now)
        )
    return events
