"""Account pages: live sessions (owner kill), API keys, webhooks.

    GET  /console/sessions                      the account's active sessions (each one's
                                                page: `live_routes`)
    POST /console/sessions/{id}/kill            end it with `owner_kill`
    GET  /console/keys                          keys by prefix
    POST /console/keys                          name, environment, scopes → the full key, once
    POST /console/keys/{id}/revoke
    GET  /console/webhooks                      with the newest deliveries' status and error
    POST /console/webhooks                      url, events → the whsec_ secret, once
    POST /console/webhooks/{id}/enabled         enabled=true|false
    POST /console/webhooks/{id}/delete
    POST /console/webhooks/{id}/test            a `webhook.test` event, delivered now

One-time secrets are rendered straight into the POST's answer and never stored, so the
usual post/redirect/get does not apply to those two forms.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.console.csrf import CheckedUser
from rigway.gateway.console.live import session_values
from rigway.gateway.console.rendering import ConsoleRoute, redirect, render
from rigway.gateway.console.session import SignedInUser
from rigway.gateway.console.wording import SCOPE_WORDS
from rigway.gateway.errors import InvalidRequest
from rigway.gateway.services import services_of
from rigway.gateway.webhooks.schemas import ALL_EVENTS, CreateWebhookIn, UpdateWebhookIn

router = APIRouter(route_class=ConsoleRoute)

DELIVERIES_SHOWN = 20
PRIVATE_TARGETS_SETTING = "RIGWAY_WEBHOOK_ALLOW_PRIVATE_TARGETS"
PRIVATE_TARGETS_HINT = (
    "For local development, a gateway started with "
    f"{PRIVATE_TARGETS_SETTING}=true also delivers over plain http and to private and "
    "loopback addresses (never in production)"
)


@router.get("/sessions")
async def sessions_page(request: Request, user: SignedInUser) -> Response:
    services = services_of(request)
    sessions = await services.sessions.list_active(user.account_id, None)
    rig_names = {rig.id: rig.name for rig in await services.rigs.list(user.account_id)}
    live = {key: value for session in sessions for key, value in session_values(session).items()}
    return render(
        request, "sessions.html", user=user, sessions=sessions, rig_names=rig_names, live=live
    )


@router.post("/sessions/{session_id}/kill")
async def kill_session(request: Request, session_id: str, user: CheckedUser) -> Response:
    sessions = services_of(request).sessions
    await sessions.end_for_account(user.account_id, session_id, "owner_kill")
    return redirect("/console/sessions", notice="session_killed")


@router.get("/keys")
async def keys_page(request: Request, user: SignedInUser) -> Response:
    keys = await services_of(request).keys.list(user.account_id)
    return render(request, "keys.html", user=user, keys=keys, scope_words=SCOPE_WORDS)


@router.post("/keys")
async def create_key(
    request: Request,
    user: CheckedUser,
    name: Annotated[str, Form(max_length=200)] = "",
    environment: Annotated[str, Form(max_length=8)] = "live",
    scopes: Annotated[list[str] | None, Form()] = None,
) -> Response:
    # Unticking every scope is a mistake, not "all scopes": the schema refuses [].
    body = CreateKeyIn.model_validate(
        {"name": name.strip(), "environment": environment, "scopes": scopes or []}
    )
    created = await services_of(request).keys.create(user.account_id, body)
    return render(request, "key_created.html", user=user, key=created, status=201)


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str, user: CheckedUser) -> Response:
    await services_of(request).keys.revoke(user.account_id, key_id)
    return redirect("/console/keys", notice="key_revoked")


@router.get("/webhooks")
async def webhooks_page(request: Request, user: SignedInUser) -> Response:
    services = services_of(request)
    webhooks = await services.webhooks.list(user.account_id)
    deliveries = await services.webhooks.recent_deliveries(user.account_id, DELIVERIES_SHOWN)
    return render(
        request,
        "webhooks.html",
        user=user,
        webhooks=webhooks,
        deliveries=deliveries,
        all_events=ALL_EVENTS,
        allows_private_targets=services.settings.webhook_allow_private_targets,
        private_targets_setting=PRIVATE_TARGETS_SETTING,
    )


@router.post("/webhooks")
async def create_webhook(
    request: Request,
    user: CheckedUser,
    url: Annotated[str, Form(max_length=2048)] = "",
    events: Annotated[list[str] | None, Form()] = None,
) -> Response:
    # Unticking every event is a mistake, not "all events": the schema refuses [].
    body = CreateWebhookIn.model_validate({"url": url.strip(), "events": events or []})
    services = services_of(request)
    try:
        created = await services.webhooks.create(user.account_id, body)
    except InvalidRequest as refused:
        if services.settings.webhook_allow_private_targets or not _is_private_refusal(refused):
            raise
        # The owner trying a receiver on their own machine: say how to allow it.
        raise InvalidRequest(f"{refused.detail}. {PRIVATE_TARGETS_HINT}") from refused
    return render(request, "webhook_created.html", user=user, created=created, status=201)


@router.post("/webhooks/{webhook_id}/test")
async def send_test_event(request: Request, webhook_id: str, user: CheckedUser) -> Response:
    services = services_of(request)
    hook = await services.webhooks.owned(user.account_id, webhook_id)
    result = await services.webhook_dispatcher.send_test_event(hook)
    notice = "test_event_delivered" if result.is_success else "test_event_failed"
    return redirect("/console/webhooks", notice=notice)


def _is_private_refusal(refused: InvalidRequest) -> bool:
    detail = refused.detail or ""
    return "must use https" in detail or "resolves to" in detail


@router.post("/webhooks/{webhook_id}/enabled")
async def set_webhook_enabled(
    request: Request, webhook_id: str, user: CheckedUser, enabled: Annotated[bool, Form()]
) -> Response:
    webhooks = services_of(request).webhooks
    await webhooks.update(user.account_id, webhook_id, UpdateWebhookIn(enabled=enabled))
    return redirect(
        "/console/webhooks", notice="webhook_enabled" if enabled else "webhook_disabled"
    )


@router.post("/webhooks/{webhook_id}/delete")
async def delete_webhook(request: Request, webhook_id: str, user: CheckedUser) -> Response:
    await services_of(request).webhooks.delete(user.account_id, webhook_id)
    return redirect("/console/webhooks", notice="webhook_deleted")
