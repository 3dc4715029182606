"""HTTP routes of API key management (console token)."""

from __future__ import annotations

from fastapi import APIRouter

from rigway.gateway.api_keys.schemas import ApiKeyCreatedOut, ApiKeyListOut, ApiKeyOut, CreateKeyIn
from rigway.gateway.auth.console import ConsoleCaller
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.path_parameters import KeyId
from rigway.gateway.services import KeyServiceDep

router = APIRouter(tags=["console: keys"])


@router.get(
    "/v1/keys",
    response_model=ApiKeyListOut,
    summary="List API keys",
    responses=error_responses(401),
)
async def list_keys(keys: KeyServiceDep, caller: ConsoleCaller) -> ApiKeyListOut:
    """The account's active keys (console token), prefix only: a key's secret is shown
    once, when it is created."""
    return ApiKeyListOut(keys=await keys.list(caller.account_id))


@router.post(
    "/v1/keys",
    response_model=ApiKeyCreatedOut,
    status_code=201,
    summary="Create an API key",
    responses=error_responses(401, 409),
)
async def create_key(
    body: CreateKeyIn, keys: KeyServiceDep, caller: ConsoleCaller
) -> ApiKeyCreatedOut:
    """Creates a key; `secret` (the full key) appears in this response only. At most 50
    active keys per account: past them, 409 `key_limit_reached`."""
    return await keys.create(caller.account_id, body)


@router.delete(
    "/v1/keys/{key_id}",
    response_model=ApiKeyOut,
    summary="Revoke an API key",
    responses=error_responses(401, 404),
)
async def revoke_key(key_id: KeyId, keys: KeyServiceDep, caller: ConsoleCaller) -> ApiKeyOut:
    """Revokes a key (console token): its very next request gets 401."""
    return await keys.revoke(caller.account_id, key_id)
