"""Human takeover routes.

POST /v1/sessions/{id}/takeover    API key, scope `input`: a one-time takeover link
WS   /v1/takeover/signal?token=…   the person's signaling socket (one per token)
GET  /v1/takeover/view?token=…     the page that watches and drives (does not use it up)
GET  /v1/takeover/static/{name}    the page's script and style

The owner's console takes and hands back control through its own routes
(`console/live_routes.py`), which use the same service.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import APIRouter, Request, WebSocket
from starlette.responses import Response

from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.cluster.socket_relay import is_relayed, relay_socket
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.services import services_of
from rigway.gateway.stream.link_page import LinkPage, public_base
from rigway.gateway.stream.service import Refused, RelayToHolder
from rigway.gateway.takeover.channel import TakeoverChannel
from rigway.gateway.takeover.schemas import TakeoverOut
from rigway.gateway.takeover.service import signaling_url_for

__all__ = ["router"]

logger = logging.getLogger(__name__)
router = APIRouter(tags=["sessions"])

_PAGE = LinkPage(
    Path(__file__).parent,
    template="take.html",
    static_prefix="/v1/takeover/static",
    title="Take control",
    link_name="takeover",
    signaling_url_for=signaling_url_for,
)


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
    secret_key = services.peers.secret_key
    # Accept first: a refusal then carries its close code and reason to the page.
    await websocket.accept()
    try:
        live = await services.takeover.admit(
            token, session_id, relayed=is_relayed(websocket, secret_key)
        )
    except Refused as refused:
        logger.info("takeover refused: %s", refused.reason)
        await websocket.close(code=refused.code, reason=refused.reason)
        return
    except RelayToHolder as elsewhere:
        # The person drives the rig through the node holding its link.
        await relay_socket(websocket, elsewhere.node_url, secret_key)
        return
    channel = TakeoverChannel(websocket, services.stream, services.takeover, live, max_width=None)
    services.takeover.claim(channel)
    await channel.run()


@router.get("/v1/takeover/view", include_in_schema=False)
async def view(request: Request, token: str = "") -> Response:
    return await _PAGE.for_token(request, services_of(request).takeover.tokens, token)


@router.get("/v1/takeover/static/{name}", include_in_schema=False)
async def static_file(name: str) -> Response:
    return _PAGE.static.response(name)
