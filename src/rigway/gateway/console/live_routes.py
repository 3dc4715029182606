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
them. The live values' poll gathers those sessions' values from the nodes serving them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from rigway.gateway.cluster.fan_out import ask_nodes
from rigway.gateway.cluster.forwarding import is_forwarded
from rigway.gateway.console.csrf import CheckedUser
from rigway.gateway.console.live import rig_values, session_values
from rigway.gateway.console.rendering import ConsoleRoute, redirect, render
from rigway.gateway.console.session import SignedInUser
from rigway.gateway.errors import NotFound
from rigway.gateway.rigs.schemas import RigOut
from rigway.gateway.services import Services, services_of
from rigway.gateway.sessions.schemas import SessionOut
from rigway.gateway.stream.link_page import public_base

logger = logging.getLogger(__name__)
router = APIRouter(route_class=ConsoleRoute)

# A page shows at most the account's live sessions (a handful) or one session.
MAX_WATCHED_SESSIONS = 100


async def account_live_values(
    services: Services, account_id: str, watched_session_ids: Sequence[str] = ()
) -> tuple[dict[str, str], list[SessionOut]]:
    """The live values as this node knows them, and the account's active sessions."""
    now = services.clock.now()
    values: dict[str, str] = {}
    for rig in await services.rigs.list(account_id):
        values.update(rig_values(rig, now))
    active = await services.sessions.list_active(account_id, None)
    for session in active:
        values.update(session_values(session))
    for session_id in watched_session_ids:
        if f"session:{session_id}:status" in values:
            continue  # live, so already in
        try:
            watched = await services.sessions.get(account_id, session_id)
        except NotFound:
            continue  # another account's or no such session: it adds nothing
        values.update(session_values(watched))
    return values, active


async def values_other_nodes_know(
    request: Request, services: Services, active: Sequence[SessionOut]
) -> dict[str, str]:
    """The live values of the sessions other nodes serve, from those nodes (one read
    each, all at once): their activity and the owner's presence as of now, not as last
    flushed. A node that does not answer in time leaves the store's values."""
    served_by = await services.sessions.served_elsewhere(active)
    queries = {
        node_url: urlencode([("session", session_id) for session_id in session_ids])
        for node_url, session_ids in served_by.items()
    }
    answers = await ask_nodes(request, services.peers, request.url.path, queries)
    values: dict[str, str] = {}
    for node_url, body in answers.items():
        try:
            theirs = json.loads(body)
        except ValueError as exc:
            logger.info("live values of %s stay the store's: %s", node_url, exc)
            continue
        if not isinstance(theirs, dict):
            continue
        prefixes = tuple(f"session:{session_id}:" for session_id in served_by[node_url])
        values.update(
            {
                key: value
                for key, value in theirs.items()
                if key.startswith(prefixes) and isinstance(value, str)
            }
        )
    return values


@router.get("/live.json")
async def live_json(
    request: Request,
    user: SignedInUser,
    session: Annotated[list[str] | None, Query(max_length=MAX_WATCHED_SESSIONS)] = None,
) -> Response:
    services = services_of(request)
    values, active = await account_live_values(services, user.account_id, session or ())
    if not is_forwarded(request):  # asked by another node: what this one knows only
        values.update(await values_other_nodes_know(request, services, active))
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
