"""HTTP routes of webhook management (console token; API keys are refused)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rigway.gateway.auth.console import ConsoleCaller
from rigway.gateway.errors_openapi import error_responses
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
    responses=error_responses(401, 409),
)
async def create_webhook(
    request: Request, body: CreateWebhookIn, caller: ConsoleCaller
) -> WebhookCreatedOut:
    """Registers an https URL; the `whsec_` secret appears in this response only."""
    return await services_of(request).webhooks.create(caller.account_id, body)


@router.get("/v1/webhooks", response_model=WebhookListOut, responses=error_responses(401))
async def list_webhooks(request: Request, caller: ConsoleCaller) -> WebhookListOut:
    return WebhookListOut(webhooks=await services_of(request).webhooks.list(caller.account_id))


@router.patch(
    "/v1/webhooks/{webhook_id}", response_model=WebhookOut, responses=error_responses(401, 404)
)
async def update_webhook(
    request: Request, webhook_id: str, body: UpdateWebhookIn, caller: ConsoleCaller
) -> WebhookOut:
    return await services_of(request).webhooks.update(caller.account_id, webhook_id, body)


@router.delete(
    "/v1/webhooks/{webhook_id}", response_model=WebhookOut, responses=error_responses(401, 404)
)
async def delete_webhook(request: Request, webhook_id: str, caller: ConsoleCaller) -> WebhookOut:
    return await services_of(request).webhooks.delete(caller.account_id, webhook_id)
