"""Webhook rules: at most N per account, SSRF-checked URLs, secrets shown once and
sealed at rest."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.accounts.repository import lock_account
from rigway.gateway.clock import Clock
from rigway.gateway.db.models import Webhook
from rigway.gateway.errors import Conflict, InvalidRequest, NotFound
from rigway.gateway.ids import is_well_formed, new_uuid
from rigway.gateway.secret_box import SecretBox
from rigway.gateway.webhooks import repository
from rigway.gateway.webhooks.schemas import (
    ALL_EVENTS,
    CreateWebhookIn,
    UpdateWebhookIn,
    WebhookCreatedOut,
    WebhookOut,
    WebhookWithSecretOut,
)
from rigway.gateway.webhooks.signing import new_webhook_secret
from rigway.gateway.webhooks.ssrf import Resolver, UnsafeWebhookUrl, check_webhook_url

_WARNING = (
    "Store the secret now: it is shown only once. Verify every delivery's "
    "X-Service-Signature over timestamp + '.' + raw body, and reject timestamps more "
    "than 5 minutes away from your clock."
)


def webhook_view(row: Webhook) -> WebhookOut:
    return WebhookOut(
        id=row.id,
        url=row.url,
        events=list(row.events),  # type: ignore[arg-type]
        enabled=row.enabled,
        created_at=row.created_at,
        last_delivery_at=row.last_delivery_at,
        last_status=row.last_status,
        last_error=row.last_error,
    )


def _not_found() -> NotFound:
    return NotFound(code="webhook_not_found")


async def _owned_row(db: DbSession, account_id: str, webhook_id: str) -> Webhook:
    row = await db.get(Webhook, webhook_id) if is_well_formed(webhook_id) else None
    if row is None or row.account_id != account_id:
        raise _not_found()
    return row


@dataclass(frozen=True, slots=True)
class RecentDelivery:
    """One delivery attempt as the console lists it; `status` is None when no answer
    came back, `error` None when the receiver took it (2xx)."""

    delivery_id: str
    webhook_id: str
    webhook_url: str
    event: str
    delivered_at: datetime
    status: int | None
    error: str | None


class WebhookService:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        clock: Clock,
        box: SecretBox,
        resolver: Resolver,
        *,
        allow_private: bool,
        max_per_account: int,
    ) -> None:
        self._db_sessions = db_sessions
        self._clock = clock
        self._box = box
        self._resolver = resolver
        self._allow_private = allow_private
        self._max_per_account = max_per_account

    async def create(self, account_id: str, request: CreateWebhookIn) -> WebhookCreatedOut:
        try:
            await check_webhook_url(
                request.url, resolver=self._resolver, allow_private=self._allow_private
            )
        except UnsafeWebhookUrl as exc:
            reason = str(exc).removeprefix("webhook url ")
            raise InvalidRequest(f"webhook url {reason}") from exc
        secret = new_webhook_secret()
        events = list(ALL_EVENTS) if request.events is None else sorted(set(request.events))
        row = Webhook(
            id=new_uuid(),
            account_id=account_id,
            url=request.url,
            events=events,
            enabled=True,
            secret_encrypted=self._box.seal(secret),
            created_at=self._clock.now(),
        )
        async with self._db_sessions.begin() as db:
            # Serialise creators of one account so the cap holds under races.
            await lock_account(db, account_id)
            if await repository.count_for_account(db, account_id) >= self._max_per_account:
                raise Conflict(
                    f"an account has at most {self._max_per_account} webhooks",
                    code="webhook_limit",
                )
            db.add(row)
        view = webhook_view(row)
        return WebhookCreatedOut(
            webhook=WebhookWithSecretOut(**view.model_dump(), secret=secret), warning=_WARNING
        )

    async def list(self, account_id: str) -> list[WebhookOut]:
        async with self._db_sessions() as db:
            return [webhook_view(row) for row in await repository.list_for_account(db, account_id)]

    async def owned(self, account_id: str, webhook_id: str) -> Webhook:
        """The account's webhook (404 for another account's or none), e.g. to send a
        test event to."""
        async with self._db_sessions() as db:
            return await _owned_row(db, account_id, webhook_id)

    async def recent_deliveries(self, account_id: str, limit: int) -> builtins.list[RecentDelivery]:
        async with self._db_sessions() as db:
            rows = await repository.recent_deliveries_for_account(db, account_id, limit)
        return [
            RecentDelivery(
                delivery_id=row.id,
                webhook_id=row.webhook_id,
                webhook_url=url,
                event=row.event,
                delivered_at=row.delivered_at,
                status=row.status,
                error=row.error,
            )
            for row, url in rows
        ]

    async def update(
        self, account_id: str, webhook_id: str, request: UpdateWebhookIn
    ) -> WebhookOut:
        async with self._db_sessions.begin() as db:
            row = await _owned_row(db, account_id, webhook_id)
            if request.enabled is not None:
                row.enabled = request.enabled
            if request.events is not None:
                row.events = sorted(set(request.events))
        return webhook_view(row)

    async def delete(self, account_id: str, webhook_id: str) -> WebhookOut:
        async with self._db_sessions.begin() as db:
            row = await _owned_row(db, account_id, webhook_id)
            await repository.delete_webhook(db, webhook_id)
        return webhook_view(row)
