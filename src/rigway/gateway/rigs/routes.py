"""HTTP routes of the rigs API (API key)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from rigway.gateway.auth.console import ConsoleCaller
from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.cluster.forwarding import is_forwarded
from rigway.gateway.cluster.node_lists import as_their_nodes_see_them
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import RigId
from rigway.gateway.rigs.schemas import (
    PairIn,
    PairingCodeOut,
    PairOut,
    RigListOut,
    RigOut,
    UpdateRigIn,
    WakeOut,
)
from rigway.gateway.rigs.service import OwnerControls
from rigway.gateway.services import Services, services_of

router = APIRouter(tags=["rigs"])


@router.get(
    "/v1/rigs",
    response_model=RigListOut,
    summary="List the account's rigs",
    responses=error_responses(401, 403, 429),
)
async def list_rigs(request: Request, caller: ApiCaller) -> RigListOut:
    """Every rig of the account, online or not (scope `rigs:read`)."""
    caller.require("rigs:read")
    services = services_of(request)
    rigs = await services.rigs.list(caller.account_id)
    if not is_forwarded(request):  # asked by another node: what this one knows only
        rigs = await _as_their_nodes_see_them(request, services, rigs)
    return RigListOut(rigs=rigs)


async def _as_their_nodes_see_them(
    request: Request, services: Services, rigs: list[RigOut]
) -> list[RigOut]:
    """`rigs`, those online on other nodes as those nodes see them (desktop state,
    displays): one read of each node's list, all at once. A node that does not answer
    in time leaves this node's view of its rigs."""
    return await as_their_nodes_see_them(
        request,
        services.peers,
        "/v1/rigs",
        rigs,
        await services.rigs.held_by_other_nodes(rigs),
        lambda body: RigListOut.model_validate_json(body).rigs,
        lambda rig: rig.id,
    )


@router.get(
    "/v1/rigs/{rig_id}",
    response_model=RigOut,
    summary="Read a rig",
    responses=error_responses(401, 403, 404, 429),
)
async def get_rig(request: Request, rig_id: RigId, caller: ApiCaller) -> RigOut:
    """One rig of the account (scope `rigs:read`); another account's is 404."""
    caller.require("rigs:read")
    rigs = services_of(request).rigs
    return await rigs.view_anywhere(await rigs.get(caller.account_id, rig_id))


@router.post(
    "/v1/rigs/{rig_id}/wake",
    response_model=WakeOut,
    status_code=202,
    summary="Wake a rig (Wake-on-LAN)",
    responses={
        200: {
            "model": WakeOut,
            "description": "The rig is online already: nothing was sent.",
            "content": {
                "application/json": {
                    "example": {
                        "ok": True,
                        "rig_id": "rig_5d2c9e71a0b4c3d2e1f00a9b",
                        "already_online": True,
                    }
                }
            },
        },
        **error_responses(401, 403, 404, 409, 429),
    },
)
async def wake_rig(
    request: Request, rig_id: RigId, caller: ApiCaller, response: Response
) -> WakeOut:
    """Sends a Wake-on-LAN magic packet (scope `rigs:wake`) through an online rig of the
    account last seen on the same LAN (`via` its id), else from the gateway (`via`
    `gateway`): 202. An online rig answers 200 with `already_online`; a rig with no MAC
    known is 409 `wake_unavailable`."""
    caller.require("rigs:wake")
    result = await services_of(request).rig_owner.wake(
        caller.account_id, rig_id, may_forward=not is_forwarded(request)
    )
    if result.already_online:
        response.status_code = 200
    return result


console_router = APIRouter(tags=["console: rigs"])


@console_router.patch(
    "/v1/rigs/{rig_id}",
    response_model=RigOut,
    summary="Rename a rig, switch its API access or set its owner controls",
    responses=error_responses(400, 401, 404),
)
async def update_rig(
    request: Request, rig_id: RigId, body: UpdateRigIn, caller: ConsoleCaller
) -> RigOut:
    """Renames the rig, switches its API access, or sets what API sessions may do on it
    (`app_mode_only`, `owner_idle_s`, `recordings_allowed`) (console token); fields left
    out stay as they are."""
    return await services_of(request).rig_owner.update(
        caller.account_id,
        rig_id,
        name=body.name,
        api_access_enabled=body.api_access_enabled,
        controls=OwnerControls(
            app_mode_only=body.app_mode_only,
            owner_idle_s=body.owner_idle_s,
            recordings_allowed=body.recordings_allowed,
        ),
    )


@console_router.delete(
    "/v1/rigs/{rig_id}",
    response_model=RigOut,
    summary="Unpair a rig",
    responses=error_responses(401, 404),
)
async def unpair_rig(request: Request, rig_id: RigId, caller: ConsoleCaller) -> RigOut:
    """Unpairs the rig (console token): its active session ends `unpaired`, its token
    stops working and its socket closes with 4401."""
    return await services_of(request).rig_owner.unpair(caller.account_id, rig_id)


@console_router.post(
    "/v1/rigs/pairing-codes",
    response_model=PairingCodeOut,
    status_code=201,
    summary="Create a pairing code",
    responses=error_responses(401),
)
async def create_pairing_code(request: Request, caller: ConsoleCaller) -> PairingCodeOut:
    """A one-time code a host agent trades for its rig token (expires in 10 minutes)."""
    return await services_of(request).rigs.create_pairing_code(caller.account_id)


agent_router = APIRouter(tags=["host agent"])


@agent_router.post(
    "/v1/agent/pair",
    response_model=PairOut,
    status_code=201,
    summary="Pair a host agent",
    responses=error_responses(400),
)
async def pair_agent(request: Request, body: PairIn) -> PairOut:
    """A host agent trades a one-time pairing code for its rig id and rig token."""
    return await services_of(request).rigs.pair(body.code, name=body.name, os=body.os, gpu=body.gpu)
