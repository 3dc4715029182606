"""HTTP routes of the sessions API (API key)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from rigway.gateway.auth.api_key_auth import ApiPrincipal
from rigway.gateway.auth.console import AnyCaller, ConsoleCaller
from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.cluster.forwarding import (
    ForwardToHolder,
    HolderUnreachable,
    forward,
    is_forwarded,
)
from rigway.gateway.cluster.node_lists import as_their_nodes_see_them
from rigway.gateway.errors_openapi import error_responses, session_start_error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.services import Services, services_of
from rigway.gateway.sessions.schemas import CreateSessionIn, SessionListOut, SessionOut

router = APIRouter(tags=["sessions"])


@router.post(
    "/v1/sessions",
    response_model=SessionOut,
    status_code=201,
    summary="Start a session on a rig",
    responses=session_start_error_responses(401, 403, 404, 429, 502, 504),
)
async def create_session(request: Request, body: CreateSessionIn, caller: ApiCaller) -> SessionOut:
    """Starts a metered session (scope `sessions`). Checks in order: the rig exists in
    the account (404), API access (403), online (409 `rig_offline`), the account's
    concurrency cap (429 `concurrency_limit`), one active session per rig (409
    `rig_busy`). The host then has 10 s to acknowledge; if it does not, the session is
    stored `failed` and the answer is 504 or 502. End it with `DELETE
    /v1/sessions/{session_id}`."""
    caller.require("sessions")
    return await services_of(request).sessions.create(caller.account_id, caller.key_id, body)


@router.get(
    "/v1/sessions",
    response_model=SessionListOut,
    summary="List active sessions",
    responses=error_responses(401, 429),
)
async def list_sessions(request: Request, caller: AnyCaller) -> SessionListOut:
    """With an API key: the active sessions it created. With a console token: all
    active sessions of the account."""
    key_id = None
    if isinstance(caller, ApiPrincipal):
        caller.require("sessions")
        key_id = caller.key_id
    services = services_of(request)
    sessions = await services.sessions.list_active(caller.account_id, key_id)
    if not is_forwarded(request):  # asked by another node: what this one knows only
        sessions = await _as_their_nodes_see_them(request, services, sessions)
    return SessionListOut(sessions=sessions)


async def _as_their_nodes_see_them(
    request: Request, services: Services, sessions: list[SessionOut]
) -> list[SessionOut]:
    """`sessions`, those other nodes serve as those nodes see them (desktop state,
    displays, control, activity not yet written): one read of each node's list, all at
    once. A node that does not answer in time leaves the store's view of its sessions."""
    return await as_their_nodes_see_them(
        request,
        services.peers,
        "/v1/sessions",
        sessions,
        await services.sessions.served_elsewhere(sessions),
        lambda body: SessionListOut.model_validate_json(body).sessions,
        lambda session: session.session_id,
    )


@router.post(
    "/v1/sessions/{session_id}/kill",
    response_model=SessionOut,
    summary="End a session as the rig's owner",
    responses=error_responses(401, 404),
)
async def kill_session(
    request: Request, session_id: SessionId, caller: ConsoleCaller
) -> SessionOut:
    """The rig owner ends a session (console token): the final Session, `ended_reason`
    `owner_kill`."""
    sessions = services_of(request).sessions
    return await sessions.end_for_account(caller.account_id, session_id, "owner_kill")


@router.get(
    "/v1/sessions/{session_id}",
    response_model=SessionOut,
    summary="Read a session",
    responses=error_responses(401, 404, 429),
)
async def get_session(request: Request, session_id: SessionId, caller: ApiCaller) -> SessionOut:
    """The session in any status, active, ended or failed (scope `sessions`)."""
    caller.require("sessions")
    return await services_of(request).sessions.get_anywhere(caller.account_id, session_id)


async def _end(request: Request, session_id: str, caller: ApiCaller) -> SessionOut | Response:
    caller.require("sessions")
    services = services_of(request)
    sessions = services.sessions
    try:
        return await sessions.end_for_account(caller.account_id, session_id, "client")
    except ForwardToHolder as signal:
        try:
            return await forward(
                request,
                signal,
                services.peers,
                services.ownership.holder_url,
                services.metrics.observe_forward,
            )
        except HolderUnreachable:
            # Its holder died and its lease has yet to run out. The end is the store's
            # to make, once, as an unpair's is: the holder, alive after all, hears of it
            # and stops; its host gets the safety restore when it links again.
            return sessions.view(await sessions.end(session_id, "client"))


@router.delete(
    "/v1/sessions/{session_id}",
    response_model=SessionOut,
    summary="End a session",
    responses=error_responses(401, 403, 404, 429),
)
async def delete_session(
    request: Request, session_id: SessionId, caller: ApiCaller
) -> SessionOut | Response:
    """Ends the session (reason `client`) and answers with the final Session, after the
    host's safety restore: held keys and buttons released, launched apps killed, their
    windows closed (bounded by 10 s). Idempotent: an ended session is returned
    unchanged."""
    return await _end(request, session_id, caller)


@router.post(
    "/v1/sessions/{session_id}/end",
    response_model=SessionOut,
    summary="End a session (POST form)",
    responses=error_responses(401, 403, 404, 429),
)
async def end_session(
    request: Request, session_id: SessionId, caller: ApiCaller
) -> SessionOut | Response:
    """The same operation as `DELETE /v1/sessions/{session_id}`, for clients that cannot
    send DELETE."""
    return await _end(request, session_id, caller)
