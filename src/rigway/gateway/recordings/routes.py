"""HTTP routes of recordings: the archive (API key or console token) and the console's
replay page with the JSON and images it reads (console session).

GET /v1/sessions/{id}/recording                          the zip
GET /console/sessions/{id}/recording                     the replay page
GET /console/sessions/{id}/recording.zip                 the zip, for the owner's browser
GET /console/sessions/{id}/recording/steps.json          its steps
GET /console/sessions/{id}/recording/frames/{seq}.jpg    a step's frame

Recordings are in the store, so any node serves them. But the holder of a running
session's rig may still hold its latest steps in its recorder's queue, which only it can
write out before a read: the replay page and its steps of such a session are served by
that node (`ForwardToHolder`, the signed-in user with them), so the owner sees what the
holder does. A frame is in the store once its step is listed; the archives are read
where they are asked for (too large to cross the peer link in one answer), and get
another node's last steps a moment after it queued them.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from rigway.gateway.auth.api_key_auth import ApiPrincipal
from rigway.gateway.auth.console import AnyCaller
from rigway.gateway.console.rendering import ConsoleRoute, render
from rigway.gateway.console.session import SignedInUser
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.recordings.service import RecordingService
from rigway.gateway.services import services_of

__all__ = ["console_router", "router"]

router = APIRouter(tags=["sessions"])
console_router = APIRouter(prefix="/console", include_in_schema=False, route_class=ConsoleRoute)


def _recording_errors() -> dict[int | str, dict[str, Any]]:
    """The shared error declarations, with the 404 this route adds beside them."""
    errors = error_responses(401, 403, 404, 429)
    not_found = copy.deepcopy(errors[404])
    not_found["content"]["application/json"]["examples"]["recording_not_found"] = {
        "summary": "recording_not_found",
        "value": {"error": "recording_not_found: the session was not started with record: true"},
    }
    return {**errors, 404: not_found}


_ERRORS = _recording_errors()


def _recordings(request: Request) -> RecordingService:
    return services_of(request).recordings


@router.get(
    "/v1/sessions/{session_id}/recording",
    response_class=Response,
    summary="Download a session's recording (zip)",
    responses={
        200: {
            "description": (
                "`steps.jsonl` (one JSON record a step, in order), `frames/<seq>.jpg` (the"
                " JPEG a step served) and `manifest.json` (counts, caps, dropped steps)"
            ),
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
        },
        **_ERRORS,
    },
)
async def download_recording(
    request: Request, session_id: SessionId, caller: AnyCaller
) -> Response:
    """The recording of a session started with `record: true` (scope `sessions`, or
    the owner's console token), while it runs and until the retention after it ended
    (7 days by default). A session that did not record, or whose recording expired, is
    404 `recording_not_found` with the reason."""
    if isinstance(caller, ApiPrincipal):
        caller.require("sessions")
    chunks = await _recordings(request).archive(caller.account_id, session_id)
    return _zip_response(session_id, chunks)


def _zip_response(session_id: str, chunks: AsyncIterator[bytes]) -> Response:
    return StreamingResponse(
        chunks,
        media_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="{session_id}-recording.zip"',
            "Cache-Control": "no-store",
        },
    )


@console_router.get("/sessions/{session_id}/recording")
async def replay_page(request: Request, session_id: str, user: SignedInUser) -> Response:
    services = services_of(request)
    # 404 if not ours; the node serving it answers when that is another.
    session = await services.sessions.get_anywhere(user.account_id, session_id)
    steps = await _recordings(request).steps(user.account_id, session_id)
    return render(request, "recording.html", user=user, session=session, step_count=len(steps))


@console_router.get("/sessions/{session_id}/recording.zip")
async def replay_download(request: Request, session_id: str, user: SignedInUser) -> Response:
    chunks = await _recordings(request).archive(user.account_id, session_id)
    return _zip_response(session_id, chunks)


@console_router.get("/sessions/{session_id}/recording/steps.json")
async def replay_steps(request: Request, session_id: str, user: SignedInUser) -> Response:
    # The node serving the session answers when that is another (its queued steps).
    await services_of(request).sessions.get_anywhere(user.account_id, session_id)
    steps = await _recordings(request).steps(user.account_id, session_id)
    return JSONResponse({"session_id": session_id, "steps": steps})


@console_router.get("/sessions/{session_id}/recording/frames/{seq}.jpg")
async def replay_frame(
    request: Request,
    session_id: str,
    seq: Annotated[int, Path(ge=1, le=10_000_000)],
    user: SignedInUser,
) -> Response:
    jpeg = await _recordings(request).frame(user.account_id, session_id, seq)
    return Response(jpeg, media_type="image/jpeg")
