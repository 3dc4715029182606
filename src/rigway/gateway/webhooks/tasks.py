"""The webhook delivery worker: drains the outbox off the request path.

Each outbox event is claimed with a conditional UPDATE (exactly once across gateway
nodes), then delivered to every enabled webhook of its account that subscribes to it,
concurrently, each within the ~5 s deadline of `deliver`. Deliveries are best effort:
no retries (docs/api.md, "Webhook deliveries"); the outcome lands in the webhook's
last_* fields and in its newest deliveries (the console lists them). `send_test_event`
delivers a `webhook.test` event to one webhook on the owner's demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections import Counter
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import Clock
from rigway.gateway.db.models import Webhook, WebhookOutbox
from rigway.gateway.secret_box import SecretBox, SecretBoxError
from rigway.gateway.webhooks import repository
from rigway.gateway.webhooks.delivery import DeliveryResult, deliver
from rigway.gateway.webhooks.signing import delivery_headers, signature_header
from rigway.gateway.webhooks.ssrf import Resolver

logger = logging.getLogger(__name__)
_BATCH = 50
# The console shows the newest 20 of an account; keeping 20 per webhook always covers it.
DELIVERIES_KEPT_PER_WEBHOOK = 20
TEST_EVENT = "webhook.test"
TEST_EVENT_MESSAGE = "A test event from the Rigway console: deliveries reach this receiver."


class WebhookDispatcher:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        clock: Clock,
        box: SecretBox,
        resolver: Resolver,
        *,
        allow_private: bool,
        ca_bundle: str | None,
        poll_interval_s: float,
    ) -> None:
        self._db_sessions = db_sessions
        self._clock = clock
        self._box = box
        self._resolver = resolver
        self._allow_private = allow_private
        self._ca_bundle = ca_bundle
        self._poll_interval_s = poll_interval_s
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self._deliveries: set[asyncio.Task[DeliveryResult]] = set()
        # Deliveries by outcome (the metrics read it at scrape time).
        self.outcomes: Counter[str] = Counter()

    def notify(self) -> None:
        """New events are in the outbox: drain now rather than at the next poll."""
        self._wake.set()

    def start(self) -> None:
        self._loop_task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
        await self.wait_idle()

    async def wait_idle(self) -> None:
        while self._deliveries:
            await asyncio.gather(*self._deliveries, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._poll_interval_s):
                    await self._wake.wait()
            self._wake.clear()
            try:
                while await self.drain_once() == _BATCH:
                    pass
            except Exception:
                logger.exception("webhook outbox drain failed")

    async def drain_once(self) -> int:
        """Claims and schedules up to one batch of events; returns how many it claimed."""
        async with self._db_sessions.begin() as db:
            claimed = await repository.claim_pending_events(db, _BATCH, self._clock.now())
        for event in claimed:
            await self._schedule(event)
        return len(claimed)

    async def _schedule(self, event: WebhookOutbox) -> None:
        async with self._db_sessions() as db:
            hooks = await repository.enabled_for_account(db, event.account_id)
        for hook in hooks:
            if event.event not in hook.events:
                continue
            task = asyncio.create_task(self._deliver(hook, event.event, event.payload))
            self._deliveries.add(task)
            task.add_done_callback(self._deliveries.discard)

    async def send_test_event(self, hook: Webhook) -> DeliveryResult:
        """A `webhook.test` event to this one webhook now, whatever its events and
        whether it is enabled (the owner checks a receiver before relying on it),
        recorded among its deliveries like any other; at most the delivery's deadline."""
        data: dict[str, Any] = {"webhook_id": hook.id, "message": TEST_EVENT_MESSAGE}
        return await self._deliver(hook, TEST_EVENT, data)

    async def _deliver(self, hook: Webhook, event: str, data: dict[str, Any]) -> DeliveryResult:
        delivery_id = f"dlv_{secrets.token_hex(12)}"
        now = self._clock.now()
        body = {
            "type": event,
            "id": delivery_id,
            "created_at": now.isoformat().replace("+00:00", "Z"),
            "data": data,
        }
        raw = json.dumps(body, separators=(",", ":")).encode()
        timestamp = int(now.timestamp())
        try:
            secret = self._box.open(hook.secret_encrypted)
        except SecretBoxError as exc:
            unusable = DeliveryResult(None, f"secret unusable: {exc}", now)
            await self._record(hook.id, delivery_id, event, unusable)
            return unusable
        headers = delivery_headers(
            event, delivery_id, timestamp, signature_header(secret, timestamp, raw)
        )
        result = await deliver(
            hook.url,
            raw,
            headers,
            resolver=self._resolver,
            allow_private=self._allow_private,
            ca_bundle=self._ca_bundle,
        )
        await self._record(hook.id, delivery_id, event, result)
        self.outcomes[_outcome(result)] += 1
        return result

    async def _record(
        self, webhook_id: str, delivery_id: str, event: str, result: DeliveryResult
    ) -> None:
        async with self._db_sessions.begin() as db:
            await repository.record_delivery(
                db,
                webhook_id,
                delivery_id=delivery_id,
                event=event,
                now=self._clock.now(),
                status=result.status,
                error=result.error,
                keep=DELIVERIES_KEPT_PER_WEBHOOK,
            )


def _outcome(result: DeliveryResult) -> str:
    """`delivered` (a 2xx), `refused` (another status) or `failed` (no answer at all)."""
    if result.status is None:
        return "failed"
    return "delivered" if 200 <= result.status < 300 else "refused"
