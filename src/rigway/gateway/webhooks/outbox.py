"""The webhook outbox: session events written in the same transaction as the state
change that caused them; the delivery worker drains it, so an API request never
waits on a receiver and a crash between the two loses nothing."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import WebhookOutbox

SESSION_STARTED = "session.started"
SESSION_ENDED = "session.ended"


def enqueue_event(
    db: DbSession, *, account_id: str, event: str, data: dict[str, Any], now: datetime
) -> None:
    db.add(
        WebhookOutbox(
            id=f"evt_{secrets.token_hex(12)}",
            account_id=account_id,
            event=event,
            payload=data,
            created_at=now,
            dispatched_at=None,
        )
    )
