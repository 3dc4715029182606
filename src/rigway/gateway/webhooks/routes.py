"""HTTP routes of webhook management (console token; API keys are refused)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rigway.gateway.auth.console import ConsoleCaller
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import WebhookId
from rigway.gateway.services import services_of
from rigway.gateway.webhooks.schemas import (
    CreateWebhookIn,
    UpdateWebhookIn,
    WebhookCreatedOut,
    WebhookListOut,
    WebhookOut,
)

router = APIRouter(tags=["console: webhooks"])


@router.post(
    "/v1/webhooks",
    response_model=WebhookCreatedOut,
    status_code=201,
    summary="Register a webhook",
    responses=error_responses(401, 409),
)
async def create_webhook(
    request: Request, body: CreateWebhookIn, caller: ConsoleCaller
) -> WebhookCreatedOut:
    """Registers an https URL (console token); the `whsec_` secret appears in this
    response only. At most 5 per account (409 `webhook_limit`); a URL that is not https
    or resolves to a non-global address is 400."""
    return await services_of(request).webhooks.create(caller.account_id, body)


@router.get(
    "/v1/webhooks",
    response_model=WebhookListOut,
    summary="List webhooks",
    responses=error_responses(401),
)
async def list_webhooks(request: Request, caller: ConsoleCaller) -> WebhookListOut:
    """The account's webhooks (console token), with their last delivery's outcome."""
    return WebhookListOut(webhooks=await services_of(request).webhooks.list(caller.account_id))


@router.patch(
    "/v1/webhooks/{webhook_id}",
    response_model=WebhookOut,
    summary="Enable, disable or re-scope a webhook",
    responses=error_responses(401, 404),
)
async def update_webhook(
    request: Request, webhook_id: WebhookId, body: UpdateWebhookIn, caller: ConsoleCaller
) -> WebhookOut:
    """Switches deliveries on or off, or changes the events (console token); fields left
    out stay as they are."""
    return await services_of(request).webhooks.update(caller.account_id, webhook_id, body)


@router.delete(
    "/v1/webhooks/{webhook_id}",
    response_model=WebhookOut,
    summary="Delete a webhook",
    responses=error_responses(401, 404),
)
async def delete_webhook(
    request: Request, webhook_id: WebhookId, caller: ConsoleCaller
) -> WebhookOut:
    """Deletes the webhook (console token): no more deliveries; answers with what it
    was."""
    return await services_of(request).webhooks.delete(caller.account_id, webhook_id)
