"""Rig pages: list with live state, one rig's page with its session and settings,
pairing codes, rename, API access, unpair, wake, and the live session's screenshot.

    GET  /console/rigs                          list
    GET  /console/rigs/{id}                     one rig: its session now (key, mode, apps,
                                                take control, end) and the owner's settings
    POST /console/rigs/{id}/settings            app_mode_only, owner_idle_s,
                                                recordings_allowed (the owner controls)
    POST /console/rigs/pairing-code             a one-time code, shown in this answer only
    POST /console/rigs/{id}/rename              name
    POST /console/rigs/{id}/api-access          enabled=true|false
    GET  /console/rigs/{id}/unpair              confirm page
    POST /console/rigs/{id}/unpair              unpair (its active session ends `unpaired`)
    POST /console/rigs/{id}/wake                Wake-on-LAN (offline rigs)
    GET  /console/rigs/{id}/screenshot          JPEG of the live session, long edge ≤ 640
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from rigway.gateway.cluster.forwarding import is_forwarded
from rigway.gateway.console.csrf import CheckedUser
from rigway.gateway.console.live import rig_values, session_values
from rigway.gateway.console.rendering import ConsoleRoute, redirect, render
from rigway.gateway.console.rig_page import CHECKBOX_ON, current_session, owner_controls_from_form
from rigway.gateway.console.session import SignedInUser
from rigway.gateway.desktop.service import ScreenParams
from rigway.gateway.errors import NotFound
from rigway.gateway.rigs.schemas import OWNER_IDLE_MAX_S, UpdateRigIn
from rigway.gateway.services import services_of
from rigway.gateway.sessions.live import LAUNCHED_APPS_LISTED

router = APIRouter(route_class=ConsoleRoute)

SCREENSHOT_MAX_WIDTH = 640


@router.get("/rigs")
async def rigs_page(request: Request, user: SignedInUser) -> Response:
    services = services_of(request)
    rigs = await services.rigs.list(user.account_id)
    now = services.clock.now()
    live = {key: value for rig in rigs for key, value in rig_values(rig, now).items()}
    return render(request, "rigs.html", user=user, rigs=rigs, live=live)


@router.get("/rigs/{rig_id}")
async def rig_page(request: Request, rig_id: str, user: SignedInUser) -> Response:
    services = services_of(request)
    # 404 when not ours; the node holding its link answers (only it knows the session now).
    rig = await services.rigs.view_anywhere(await services.rigs.get(user.account_id, rig_id))
    current = await current_session(services, user.account_id, rig.id)
    live = rig_values(rig, services.clock.now())
    if current is not None:
        live.update(session_values(current.session))
    return render(
        request,
        "rig.html",
        user=user,
        rig=rig,
        current=current,
        live=live,
        checkbox_on=CHECKBOX_ON,
        owner_idle_max_s=OWNER_IDLE_MAX_S,
        launched_apps_listed=LAUNCHED_APPS_LISTED,
    )


@router.post("/rigs/{rig_id}/settings")
async def save_rig_settings(
    request: Request,
    rig_id: str,
    user: CheckedUser,
    owner_idle_s: Annotated[str, Form(max_length=16)] = "",
    app_mode_only: Annotated[str | None, Form(max_length=16)] = None,
    recordings_allowed: Annotated[str | None, Form(max_length=16)] = None,
) -> Response:
    controls = owner_controls_from_form(
        app_mode_only=app_mode_only,
        owner_idle_s=owner_idle_s,
        recordings_allowed=recordings_allowed,
    )
    await services_of(request).rig_owner.update(
        user.account_id, rig_id, name=None, api_access_enabled=None, controls=controls
    )
    return redirect(f"/console/rigs/{rig_id}", notice="rig_settings_saved")


@router.post("/rigs/pairing-code")
async def create_pairing_code(request: Request, user: CheckedUser) -> Response:
    services = services_of(request)
    code = await services.rigs.create_pairing_code(user.account_id)
    gateway = services.settings.public_base_url
    # Rendered here, never stored: reloading does not show the code again.
    return render(
        request,
        "pairing_code.html",
        user=user,
        status=201,
        code=code,
        # `pair` keeps the token and the gateway in the agent's state directory, where
        # `run` finds them (docs/agent.md).
        pair_command=f"rigway agent pair --gateway {gateway} --code {code.code}",
        run_command="rigway agent run",
    )


@router.post("/rigs/{rig_id}/rename")
async def rename_rig(
    request: Request,
    rig_id: str,
    user: CheckedUser,
    name: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    body = UpdateRigIn(name=name.strip())  # the API's own bounds
    await services_of(request).rig_owner.update(
        user.account_id, rig_id, name=body.name, api_access_enabled=None
    )
    return redirect("/console/rigs", notice="rig_renamed")


@router.post("/rigs/{rig_id}/api-access")
async def set_api_access(
    request: Request, rig_id: str, user: CheckedUser, enabled: Annotated[bool, Form()]
) -> Response:
    # An explicit value, not a toggle: a form sent twice leaves the state the owner chose.
    await services_of(request).rig_owner.update(
        user.account_id, rig_id, name=None, api_access_enabled=enabled
    )
    return redirect("/console/rigs", notice="api_enabled" if enabled else "api_disabled")


@router.get("/rigs/{rig_id}/unpair")
async def unpair_confirm_page(request: Request, rig_id: str, user: SignedInUser) -> Response:
    services = services_of(request)
    rig = services.rigs.view(await services.rigs.get(user.account_id, rig_id))
    return render(request, "unpair_confirm.html", user=user, rig=rig)


@router.post("/rigs/{rig_id}/unpair")
async def unpair_rig(request: Request, rig_id: str, user: CheckedUser) -> Response:
    await services_of(request).rig_owner.unpair(user.account_id, rig_id)
    return redirect("/console/rigs", notice="rig_unpaired")


@router.post("/rigs/{rig_id}/wake")
async def wake_rig(request: Request, rig_id: str, user: CheckedUser) -> Response:
    result = await services_of(request).rig_owner.wake(
        user.account_id, rig_id, may_forward=not is_forwarded(request)
    )
    return redirect(
        "/console/rigs", notice="already_online" if result.already_online else "wake_sent"
    )


@router.get("/rigs/{rig_id}/screenshot")
async def rig_screenshot(request: Request, rig_id: str, user: SignedInUser) -> Response:
    services = services_of(request)
    rig = await services.rigs.get(user.account_id, rig_id)  # 404 for another account's rig
    live = services.sessions.live.for_rig(rig.id)
    if live is None:
        await services.rigs.forward_if_held_elsewhere(rig.id)  # its session lives there
    if live is None or live.account_id != user.account_id:
        raise NotFound("the rig has no live session", code="session_not_found")
    shot = await services.desktop.screenshot(
        live, ScreenParams(max_width=SCREENSHOT_MAX_WIDTH), counts_as_activity=False
    )
    # no-store: a screen is live data and may show anything; never keep it in a cache.
    return Response(shot.jpeg, media_type="image/jpeg", headers={"Cache-Control": "no-store"})
