"""Live parts of the console: one session's page and the JSON the pages poll.

GET /console/sessions/{id}            one session: live screen, kill, the way back;
                                      once ended, how and when it ended
POST /console/sessions/{id}/takeover   take control of a live session: → its takeover
                                      page (409 while a person holds control)
POST /console/sessions/{id}/hand-back  the person's control back to the API
GET /console/live.json[?session=id…]  the live values of the account's rigs and live
                                      sessions, and of each `session` a page shows
                                      (live or not, at most 100), see `console.live`

A live session whose rig another gateway node holds is shown and driven by that node:
the page and its forms are forwarded there (`ForwardToHolder`), the signed-in user with
them. The live values are read where the poll arrives: the store's for sessions other
nodes serve (their activity as last flushed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from rigway.gateway.console.csrf import CheckedUser
from rigway.gateway.console.live import rig_values, session_values
from rigway.gateway.console.rendering import ConsoleRoute, redirect, render
from rigway.gateway.console.session import SignedInUser
from rigway.gateway.errors import NotFound
from rigway.gateway.rigs.schemas import RigOut
from rigway.gateway.services import Services, services_of
from rigway.gateway.stream.link_page import public_base

router = APIRouter(route_class=ConsoleRoute)

# A page shows at most the account's live sessions (a handful) or one session.
MAX_WATCHED_SESSIONS = 100


async def account_live_values(
    services: Services, account_id: str, watched_session_ids: Sequence[str] = ()
) -> dict[str, str]:
    now = services.clock.now()
    values: dict[str, str] = {}
    for rig in await services.rigs.list(account_id):
        values.update(rig_values(rig, now))
    for session in await services.sessions.list_active(account_id, None):
        values.update(session_values(session))
    for session_id in watched_session_ids:
        if f"session:{session_id}:status" in values:
            continue  # live, so already in
        try:
            watched = await services.sessions.get(account_id, session_id)
        except NotFound:
            continue  # another account's or no such session: it adds nothing
        values.update(session_values(watched))
    return values


@router.get("/live.json")
async def live_json(
    request: Request,
    user: SignedInUser,
    session: Annotated[list[str] | None, Query(max_length=MAX_WATCHED_SESSIONS)] = None,
) -> Response:
    values = await account_live_values(services_of(request), user.account_id, session or ())
    return JSONResponse(values)


@router.get("/sessions/{session_id}")
async def session_page(request: Request, session_id: str, user: SignedInUser) -> Response:
    services = services_of(request)
    # 404 if not ours; the node serving it answers when that is another.
    session = await services.sessions.get_anywhere(user.account_id, session_id)
    try:
        rig: RigOut | None = services.rigs.view(
            await services.rigs.get(user.account_id, session.rig_id)
        )
    except NotFound:
        rig = None  # unpaired since: its past sessions still read
    return render(
        request,
        "session.html",
        user=user,
        session=session,
        rig=rig,
        live=session_values(session),
    )


@router.post("/sessions/{session_id}/takeover")
async def take_control(request: Request, session_id: str, user: CheckedUser) -> Response:
    """The owner takes control as an API caller would (`POST /v1/sessions/{id}/takeover`):
    the same one-time link, opened at once."""
    services = services_of(request)
    live = await services.sessions.require_live(user.account_id, session_id)
    taken = services.takeover.credentials(live, public_base(request, services.settings))
    return RedirectResponse(
        taken.viewer_url,
        status_code=303,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


@router.post("/sessions/{session_id}/hand-back")
async def hand_back(request: Request, session_id: str, user: CheckedUser) -> Response:
    """Whoever holds the session's control gives it back to the API (the owner's word
    over any takeover page); nothing happens when nobody holds it."""
    services = services_of(request)
    await services.sessions.require_live(user.account_id, session_id)
    await services.takeover.hand_back(session_id)
    return redirect(f"/console/sessions/{session_id}")
