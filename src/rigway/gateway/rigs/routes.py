"""HTTP routes of the rigs API (API key)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.rigs.schemas import PairIn, PairOut, RigListOut, RigOut
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


agent_router = APIRouter(tags=["host agent"])


@agent_router.post(
    "/v1/agent/pair", response_model=PairOut, status_code=201, responses=error_responses(400)
)
async def pair_agent(request: Request, body: PairIn) -> PairOut:
    """A host agent trades a one-time pairing code for its rig id and rig token."""
    return await services_of(request).rigs.pair(body.code, name=body.name, os=body.os, gpu=body.gpu)
