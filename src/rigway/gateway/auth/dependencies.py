"""FastAPI dependencies: the authenticated caller of a request, rate limited."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rigway.gateway.auth.api_key_auth import ApiPrincipal
from rigway.gateway.cluster.forwarding import forwarded_caller
from rigway.gateway.services import services_of

# auto_error=False: a missing header is our 401 invalid_api_key, not FastAPI's 403.
_bearer = HTTPBearer(auto_error=False, description="API key: rgw_(live|test)_sk_<hex>")


async def api_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ApiPrincipal:
    forwarded = forwarded_caller(request)
    if forwarded is not None:
        # Another node of the service authenticated and counted it, and forwarded it
        # here, to the node holding its rig: counted once, where it arrived.
        return forwarded
    services = services_of(request)
    principal = await services.api_keys.authenticate(request.headers.get("authorization"))
    await services.rate_limits.hit_request(key_id=principal.key_id, account_id=principal.account_id)
    # For forwarding, should its rig be held by another node.
    request.state.api_caller = principal
    return principal


ApiCaller = Annotated[ApiPrincipal, Depends(api_principal)]
