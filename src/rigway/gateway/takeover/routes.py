"""Human takeover routes.

POST /v1/sessions/{id}/takeover    API key, scope `input`: a one-time takeover link
WS   /v1/takeover/signal?token=…   the person's signaling socket (one per token)
GET  /v1/takeover/view?token=…     the page that watches and drives (does not use it up)
GET  /v1/takeover/static/{name}    the page's script and style

The owner's console takes and hands back control through its own routes
(`console/live_routes.py`), which use the same service.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from fastapi import APIRouter, Request, WebSocket
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.responses import HTMLResponse, Response

from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.services import services_of
from rigway.gateway.static_files import StaticFiles
from rigway.gateway.stream.routes import public_base
from rigway.gateway.stream.service import Refused
from rigway.gateway.stream.tokens import TokenRejectedError
from rigway.gateway.takeover.channel import TakeoverChannel
from rigway.gateway.takeover.schemas import TakeoverOut
from rigway.gateway.takeover.service import signaling_url_for

__all__ = ["router"]

logger = logging.getLogger(__name__)
router = APIRouter(tags=["sessions"])

_PACKAGE = Path(__file__).parent
_PAGES = Environment(
    loader=FileSystemLoader(_PACKAGE / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_REFUSALS = {
    "invalid_token": "This takeover link is not valid.",
    "token_expired": "This takeover link has expired: ask for a new one.",
    "token_used": "This takeover link was already used: ask for a new one.",
}


_STATIC = StaticFiles(_PACKAGE / "static", "/v1/takeover/static")
_PAGES.globals["static_url"] = _STATIC.url


@router.post(
    "/v1/sessions/{session_id}/takeover",
    status_code=201,
    response_model=TakeoverOut,
    summary="Take control of a session (human takeover)",
    responses=error_responses(401, 403, 404, 409, 410, 429),
)
async def take_over(request: Request, session_id: SessionId, caller: ApiCaller) -> TakeoverOut:
    """A one-time link for a person to watch and drive the session's desktop (scope
    `input`). Control passes to them when their page connects (`control: "human"`; API
    input then answers 409 human_in_control) and returns when they hand it back or
    leave. 409 human_in_control while someone holds it already."""
    caller.require("input")
    services = services_of(request)
    live = await services.sessions.require_live(caller.account_id, session_id)
    return services.takeover.credentials(live, public_base(request, services.settings))


@router.websocket("/v1/takeover/signal")
async def signal(
    websocket: WebSocket, token: str | None = None, session_id: str | None = None
) -> None:
    services = services_of(websocket)
    # Accept first: a refusal then carries its close code and reason to the page.
    await websocket.accept()
    try:
        live = services.takeover.admit(token, session_id)
    except Refused as refused:
        logger.info("takeover refused: %s", refused.reason)
        await websocket.close(code=refused.code, reason=refused.reason)
        return
    channel = TakeoverChannel(websocket, services.stream, services.takeover, live, max_width=None)
    services.takeover.claim(channel)
    await channel.run()


@router.get("/v1/takeover/view", include_in_schema=False)
async def view(request: Request, token: str = "") -> Response:
    services = services_of(request)
    try:
        claims = services.takeover.tokens.verify(token)
    except TokenRejectedError as exc:
        return _page(401, message=_REFUSALS.get(exc.reason, _REFUSALS["invalid_token"]))
    live = services.sessions.live.get(claims.session_id)
    if live is None:
        return _page(410, message="The session has ended.")
    base = public_base(request, services.settings)
    config: dict[str, object] = {
        "signaling_url": signaling_url_for(base),
        "session_id": claims.session_id,
        "ice_servers": [
            s.model_dump(exclude_none=True) for s in services.settings.stream_ice_servers
        ],
    }
    return _page(200, config=config, connect_src=signaling_url_for(base))


@router.get("/v1/takeover/static/{name}", include_in_schema=False)
async def static_file(name: str) -> Response:
    return _STATIC.response(name)


def _page(
    status: int,
    *,
    message: str = "",
    config: dict[str, object] | None = None,
    connect_src: str = "",
) -> HTMLResponse:
    html = _PAGES.get_template("take.html").render(
        title="Take control" if config else "Not available",
        subtitle=f"session {config['session_id']}" if config else "",
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
