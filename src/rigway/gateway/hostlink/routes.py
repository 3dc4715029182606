"""`/v1/agent/connect`: the WebSocket a host agent dials with its rig token."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, TypeVar

from fastapi import APIRouter, WebSocket
from pydantic import BaseModel, ValidationError
from starlette.websockets import WebSocketDisconnect

from rigway.gateway.errors import ApiError
from rigway.gateway.hostlink.connection import HostConnection, HostOpError
from rigway.gateway.services import Services, services_of
from rigway.protocol import PROTOCOL_VERSION, Hello, Welcome, decode_frame, encode_text, ops
from rigway.protocol.framing import FramingError

logger = logging.getLogger(__name__)
router = APIRouter()

CLOSE_BAD_TOKEN = 4401
CLOSE_PROTOCOL = 4400
_HELLO_TIMEOUT_S = 10.0
_BodyT = TypeVar("_BodyT", bound=BaseModel)


@router.websocket("/v1/agent/connect")
async def agent_connect(websocket: WebSocket) -> None:
    services = services_of(websocket)
    authorization = websocket.headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    rig_token = token if scheme.lower() == "bearer" else None
    rig = await services.rigs.authenticate_rig_token(rig_token)
    await websocket.accept()
    if rig is None:
        await websocket.close(code=CLOSE_BAD_TOKEN, reason="invalid_rig_token")
        return
    hello = await _receive_hello(websocket)
    if hello is None:
        return
    # Before any other await: a host-gone timer firing now would end a session whose
    # host is back, and skip its safety restore.
    services.timers.host_connected(rig.id)
    account_id = rig.account_id
    connection = HostConnection(
        rig.id,
        websocket,
        hello,
        heartbeat_interval_s=services.settings.heartbeat_interval_s,
        monotonic=services.clock.monotonic,
        on_agent_request=lambda op, conn, body: _on_agent_request(
            services, account_id, op, conn, body
        ),
        on_op_done=services.metrics.observe_host_op,
    )
    try:
        await services.rigs.record_hello(rig.id, hello)
        await services.sessions.adopt_reported(rig.id, hello.open_session_ids)
        ended = await services.sessions.ended_among(rig.id, hello.open_session_ids)
        await services.sessions.end_sessions_the_host_lost(rig.id, hello.open_session_ids)
        welcome = Welcome(
            rig_id=rig.id,
            heartbeat_interval_s=services.settings.heartbeat_interval_s,
            ended_session_ids=ended,
        )
        await websocket.send_text(encode_text(welcome.model_dump()))
        await services.registry.attach(connection)
        await services.ownership.claim(rig.id)
    except BaseException:
        # The handshake failed after the host-gone timer was stopped: start it again
        # unless another link of this rig is up, or the session would bill until idle.
        if not services.registry.is_online(rig.id):
            services.timers.host_disconnected(rig.id)
        raise
    services.timers.host_connected(rig.id)
    if await services.rigs.authenticate_rig_token(rig_token) is None:
        # Unpaired while this link was connecting: the unpair found nothing to close.
        await services.registry.disconnect(rig.id, CLOSE_BAD_TOKEN, "invalid_rig_token")
        return
    # Sessions that ended between the hello and the attach missed the welcome.
    services.sessions.pay_restores_owed(rig.id)
    logger.info("host %s connected (%s)", rig.id, hello.backend)
    try:
        await connection.serve()
    finally:
        # Taken in the tick the link closed: "last seen" while the rig is offline.
        closed_at = services.clock.now()
        try:
            await services.rigs.record_seen(rig.id, closed_at)
        finally:
            if services.registry.detach(connection):
                await services.ownership.release(rig.id)
                services.timers.host_disconnected(rig.id)
                logger.info("host %s disconnected", rig.id)


async def _receive_hello(websocket: WebSocket) -> Hello | None:
    try:
        async with asyncio.timeout(_HELLO_TIMEOUT_S):
            message = await websocket.receive()
        raw = message.get("text") or message.get("bytes")
        if raw is None:
            return None
        header, _ = decode_frame(raw)
        hello = Hello.model_validate(header)
    except (TimeoutError, FramingError, ValidationError, WebSocketDisconnect, RuntimeError):
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            # 1008, not 4400: a late or garbled hello is worth a retry; 4400 stops agents.
            await websocket.close(code=1008, reason="expected_hello")
        return None
    if hello.protocol != PROTOCOL_VERSION:
        await websocket.close(code=CLOSE_PROTOCOL, reason="protocol_unsupported")
        return None
    return hello


async def _on_agent_request(
    services: Services, account_id: str, op: str, connection: HostConnection, body: dict[str, Any]
) -> dict[str, Any]:
    if op == ops.SESSION_OWNER_KILL:
        return await _owner_kill(services, connection.rig_id, _parse(ops.OwnerKill, body))
    if op == ops.RIG_API_ACCESS:
        request = _parse(ops.RigApiAccess, body)
        return await _api_access(services, account_id, connection.rig_id, request)
    raise HostOpError(ops.ERROR_UNKNOWN_OP, f"the gateway has no operation {op!r}")


def _parse(model: type[_BodyT], body: dict[str, Any]) -> _BodyT:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise HostOpError(ops.ERROR_INVALID_REQUEST, str(exc)) from exc


async def _owner_kill(services: Services, rig_id: str, request: ops.OwnerKill) -> dict[str, Any]:
    live = services.sessions.live.for_rig(rig_id)
    if live is None or (request.session_id is not None and request.session_id != live.id):
        return {"ended": False}
    await services.sessions.end(live.id, "owner_kill", wait_for_host=False)
    return {"ended": True}


async def _api_access(
    services: Services, account_id: str, rig_id: str, request: ops.RigApiAccess
) -> dict[str, Any]:
    """The console's own toggle (`rig_owner.update`), for the rig's tray."""
    try:
        if request.enabled is None:
            enabled = (await services.rigs.get(account_id, rig_id)).api_access_enabled
        else:
            rig = await services.rig_owner.update(
                account_id, rig_id, name=None, api_access_enabled=request.enabled
            )
            enabled = rig.api_access_enabled
    except ApiError as exc:  # e.g. unpaired meanwhile: rig_not_found
        raise HostOpError(exc.code, exc.detail) from exc
    return ops.RigApiAccessState(api_access_enabled=enabled).model_dump()
