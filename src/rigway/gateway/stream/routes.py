"""Live video routes.

GET  /v1/sessions/{id}/stream     API key, scope `stream`: viewer credentials
WS   /v1/stream/signal?token=…    signaling (one connection per token)
GET  /v1/stream/view?token=…      the viewer page for a token (does not use it up)
GET  /v1/stream/static/{name}     the page's script and style
GET  /console/stream/{id}         console cookie: fresh token → the viewer page
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request, WebSocket
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.responses import HTMLResponse, RedirectResponse, Response

from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.console.session import SignInRequired, require_signed_in
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.services import services_of
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.static_files import StaticFiles
from rigway.gateway.stream.service import Refused, StreamCredentialsOut, signaling_url_for
from rigway.gateway.stream.signaling import ViewerChannel
from rigway.gateway.stream.tokens import TokenRejectedError

__all__ = ["router"]

logger = logging.getLogger(__name__)
router = APIRouter(tags=["stream"])

_PACKAGE = Path(__file__).parent
_STATIC = StaticFiles(_PACKAGE / "static", "/v1/stream/static")
_PAGES = Environment(
    loader=FileSystemLoader(_PACKAGE / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_PAGES.globals["static_url"] = _STATIC.url
_REFUSALS = {
    "invalid_token": "This viewer link is not valid.",
    "token_expired": "This viewer link has expired: ask for a new one.",
    "token_used": "This viewer link was already used: ask for a new one.",
}


def public_base(request: Request, settings: GatewaySettings) -> str:
    """The configured public base URL when one was set, else the request's own."""
    if "public_base_url" in settings.model_fields_set:
        return settings.public_base_url.rstrip("/")
    return str(request.base_url).rstrip("/")


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
    service = services_of(websocket).stream
    # Accept first: a refusal then carries its close code and reason to the viewer.
    await websocket.accept()
    try:
        live = service.admit(token, session_id)
    except Refused as refused:
        logger.info("viewer refused: %s", refused.reason)
        await websocket.close(code=refused.code, reason=refused.reason)
        return
    channel = ViewerChannel(websocket, service, live, max_width=max_width)
    service.register(channel)
    await channel.run()


@router.get("/v1/stream/view", include_in_schema=False)
async def view(request: Request, token: str = "") -> Response:
    services = services_of(request)
    try:
        claims = services.stream.tokens.verify(token)
    except TokenRejectedError as exc:
        return _page(401, message=_REFUSALS.get(exc.reason, _REFUSALS["invalid_token"]))
    live = services.sessions.live.get(claims.session_id)
    if live is None:
        return _page(410, message="The session has ended.")
    base = public_base(request, services.settings)
    config: dict[str, object] = {
        "signaling_url": signaling_url_for(base),
        "session_id": claims.session_id,
        "rig_id": claims.rig_id,
        "ice_servers": [
            s.model_dump(exclude_none=True) for s in services.settings.stream_ice_servers
        ],
    }
    return _page(200, config=config, connect_src=signaling_url_for(base))


@router.get("/v1/stream/static/{name}", include_in_schema=False)
async def static_file(name: str) -> Response:
    return _STATIC.response(name)


@router.get("/console/stream/{session_id}", include_in_schema=False)
async def console_view(request: Request, session_id: str) -> Response:
    """The console's "watch" link beside a live session: the console cookie (path
    /console, hence this path) stands in for an API key."""
    try:
        user = await require_signed_in(request)
    except SignInRequired:
        return RedirectResponse("/console/sign-in", status_code=303)
    services = services_of(request)
    live = services.sessions.live.get(session_id)
    if live is None or live.account_id != user.account_id:
        return _page(404, message="There is no such live session.")
    issued = services.stream.issue(live)
    return RedirectResponse(
        f"/v1/stream/view?token={issued.token}",
        status_code=303,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def _page(
    status: int,
    *,
    message: str = "",
    config: dict[str, object] | None = None,
    connect_src: str = "",
) -> HTMLResponse:
    html = _PAGES.get_template("view.html").render(
        title="Live view" if config else "Not available",
        subtitle=f"session {config['session_id']}" if config else "",
        state="connecting" if config else "",
        message=message,
        # In an attribute, where autoescape is exactly right for JSON text.
        config_json=json.dumps(config) if config else "",
    )
    return HTMLResponse(html, status_code=status, headers=_page_headers(connect_src))


def _page_headers(connect_src: str) -> dict[str, str]:
    # The token sits in the URL: never cached, never sent on as a referrer, never framed.
    return {
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"media-src 'self' blob: mediastream:; connect-src 'self' {connect_src}; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        ),
    }
