"""Live video routes.

GET  /v1/sessions/{id}/stream     API key, scope `stream`: viewer credentials
WS   /v1/stream/signal?token=…    signaling (one connection per token)
GET  /v1/stream/view?token=…      the viewer page for a token (does not use it up)
GET  /v1/stream/static/{name}     the page's script and style
GET  /console/stream/{id}         console cookie: fresh token → the viewer page
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request, WebSocket
from starlette.responses import RedirectResponse, Response

from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.cluster.socket_relay import is_relayed, relay_socket
from rigway.gateway.console.session import SignInRequired, require_signed_in
from rigway.gateway.errors import NotFound, ServiceUnavailable, SessionEnded
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.services import services_of
from rigway.gateway.stream.link_page import LinkPage, public_base
from rigway.gateway.stream.service import (
    Refused,
    RelayToHolder,
    StreamCredentialsOut,
    signaling_url_for,
)
from rigway.gateway.stream.signaling import ViewerChannel

__all__ = ["router"]

logger = logging.getLogger(__name__)
router = APIRouter(tags=["stream"])

_PAGE = LinkPage(
    Path(__file__).parent,
    template="view.html",
    static_prefix="/v1/stream/static",
    title="Live view",
    link_name="viewer",
    signaling_url_for=signaling_url_for,
)


@router.get(
    "/v1/sessions/{session_id}/stream",
    response_model=StreamCredentialsOut,
    summary="Get live view credentials",
    responses=error_responses(401, 403, 404, 410, 429),
)
async def stream_credentials(
    request: Request, session_id: SessionId, caller: ApiCaller
) -> StreamCredentialsOut:
    """A one-time viewer token for the session's live WebRTC view (scope `stream`), and
    the URLs that use it: `viewer_url` opens the gateway's viewer page, `connect_url`
    is the signaling WebSocket (docs/stream.md)."""
    caller.require("stream")
    services = services_of(request)
    live = await services.sessions.require_live(caller.account_id, session_id)
    services.sessions.record_activity(live)
    return services.stream.credentials(live, public_base(request, services.settings))


@router.websocket("/v1/stream/signal")
async def signal(
    websocket: WebSocket,
    token: str | None = None,
    session_id: str | None = None,
    max_width: Annotated[int | None, Query(ge=16, le=16384)] = None,
) -> None:
    services = services_of(websocket)
    service = services.stream
    secret_key = services.peers.secret_key
    # Accept first: a refusal then carries its close code and reason to the viewer.
    await websocket.accept()
    try:
        live = await service.admit(token, session_id, relayed=is_relayed(websocket, secret_key))
    except Refused as refused:
        logger.info("viewer refused: %s", refused.reason)
        await websocket.close(code=refused.code, reason=refused.reason)
        return
    except RelayToHolder as elsewhere:
        await relay_socket(websocket, elsewhere.node_url, secret_key)
        return
    channel = ViewerChannel(websocket, service, live, max_width=max_width)
    service.register(channel)
    await channel.run()


@router.get("/v1/stream/view", include_in_schema=False)
async def view(request: Request, token: str = "") -> Response:
    tokens = services_of(request).stream.tokens
    return await _PAGE.for_token(request, tokens, token, lambda claims: {"rig_id": claims.rig_id})


@router.get("/v1/stream/static/{name}", include_in_schema=False)
async def static_file(name: str) -> Response:
    return _PAGE.static.response(name)


@router.get("/console/stream/{session_id}", include_in_schema=False)
async def console_view(request: Request, session_id: str) -> Response:
    """The console's "watch" link beside a live session: the console cookie (path
    /console, hence this path) stands in for an API key."""
    try:
        user = await require_signed_in(request)
    except SignInRequired:
        return RedirectResponse("/console/sign-in", status_code=303)
    services = services_of(request)
    try:
        # A session another node serves: that node issues the link (`ForwardToHolder`),
        # which the browser opens here; its signaling socket is relayed there.
        live = await services.sessions.require_live(user.account_id, session_id)
    except (NotFound, SessionEnded):
        return _PAGE.message(404, "There is no such live session.")
    except ServiceUnavailable:
        return _PAGE.message(503, "The session's rig is not linked now: try again shortly.")
    issued = services.stream.issue(live)
    return RedirectResponse(
        f"/v1/stream/view?token={issued.token}",
        status_code=303,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )
