"""HTTP routes of the rigs API (API key)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from rigway.gateway.auth.console import ConsoleCaller
from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.rigs.schemas import (
    PairIn,
    PairingCodeOut,
    PairOut,
    RigListOut,
    RigOut,
    UpdateRigIn,
    WakeOut,
)
from rigway.gateway.services import services_of

router = APIRouter(tags=["rigs"])


@router.get("/v1/rigs", response_model=RigListOut, responses=error_responses(401, 403, 429))
async def list_rigs(request: Request, caller: ApiCaller) -> RigListOut:
    caller.require("rigs:read")
    return RigListOut(rigs=await services_of(request).rigs.list(caller.account_id))


@router.get(
    "/v1/rigs/{rig_id}", response_model=RigOut, responses=error_responses(401, 403, 404, 429)
)
async def get_rig(request: Request, rig_id: str, caller: ApiCaller) -> RigOut:
    caller.require("rigs:read")
    rigs = services_of(request).rigs
    return rigs.view(await rigs.get(caller.account_id, rig_id))


@router.post(
    "/v1/rigs/{rig_id}/wake",
    response_model=WakeOut,
    status_code=202,
    responses={200: {"model": WakeOut}, **error_responses(401, 403, 404, 409, 429)},
)
async def wake_rig(request: Request, rig_id: str, caller: ApiCaller, response: Response) -> WakeOut:
    """Sends a Wake-on-LAN packet through an online rig on the same LAN, else from the
    gateway; 200 with `already_online` when the rig is online."""
    caller.require("rigs:wake")
    result = await services_of(request).rig_owner.wake(caller.account_id, rig_id)
    if result.already_online:
        response.status_code = 200
    return result


console_router = APIRouter(tags=["console: rigs"])


@console_router.patch(
    "/v1/rigs/{rig_id}", response_model=RigOut, responses=error_responses(401, 404)
)
async def update_rig(
    request: Request, rig_id: str, body: UpdateRigIn, caller: ConsoleCaller
) -> RigOut:
    """Renames the rig or switches its API access."""
    return await services_of(request).rig_owner.update(
        caller.account_id, rig_id, name=body.name, api_access_enabled=body.api_access_enabled
    )


@console_router.delete(
    "/v1/rigs/{rig_id}", response_model=RigOut, responses=error_responses(401, 404)
)
async def unpair_rig(request: Request, rig_id: str, caller: ConsoleCaller) -> RigOut:
    """Unpairs the rig: its active session ends `unpaired` and its token stops working."""
    return await services_of(request).rig_owner.unpair(caller.account_id, rig_id)


@console_router.post(
    "/v1/rigs/pairing-codes",
    response_model=PairingCodeOut,
    status_code=201,
    responses=error_responses(401),
)
async def create_pairing_code(request: Request, caller: ConsoleCaller) -> PairingCodeOut:
    """A one-time code a host agent trades for its rig token (expires in 10 minutes)."""
    return await services_of(request).rigs.create_pairing_code(caller.account_id)


agent_router = APIRouter(tags=["host agent"])


@agent_router.post(
    "/v1/agent/pair", response_model=PairOut, status_code=201, responses=error_responses(400)
)
async def pair_agent(request: Request, body: PairIn) -> PairOut:
    """A host agent trades a one-time pairing code for its rig id and rig token."""
    return await services_of(request).rigs.pair(body.code, name=body.name, os=body.os, gpu=body.gpu)
