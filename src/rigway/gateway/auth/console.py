"""The console caller: a JWT from the identity provider, sent as a bearer token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rigway.gateway.auth.api_key_auth import KEY_PATTERN, ApiPrincipal
from rigway.gateway.auth.console_tokens import JwksUnavailable
from rigway.gateway.cluster.forwarding import (
    ConsoleUser,
    forwarded_caller,
    forwarded_console_user,
    note_console_user,
)
from rigway.gateway.errors import ApiError, InvalidConsoleToken
from rigway.gateway.services import services_of

_bearer = HTTPBearer(auto_error=False, description="Console token (JWT)")


class IdentityProviderUnavailable(ApiError):
    status = 503
    code = "identity_provider_unavailable"


@dataclass(frozen=True, slots=True)
class ConsolePrincipal:
    account_id: str
    subject: str


async def verify_console_token(request: Request, token: str | None) -> ConsolePrincipal:
    if token is None:
        raise InvalidConsoleToken("missing console token")
    try:
        claims = await services_of(request).console_tokens.verify(token)
    except JwksUnavailable as exc:
        raise IdentityProviderUnavailable("the identity provider's keys are unavailable") from exc
    return ConsolePrincipal(account_id=claims.account_id, subject=claims.subject)


def bearer_token(request: Request) -> str | None:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() or None if scheme.lower() == "bearer" else None


async def console_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ConsolePrincipal:
    forwarded = forwarded_console_user(request)
    if forwarded is not None:
        # Verified by the node the request reached, which forwarded it to the rig's.
        return ConsolePrincipal(account_id=forwarded.account_id, subject=forwarded.subject)
    token = bearer_token(request)
    principal = await verify_console_token(request, token)
    assert token is not None  # verified
    note_console_user(request, ConsoleUser(principal.account_id, principal.subject, token))
    return principal


async def key_or_console_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ApiPrincipal | ConsolePrincipal:
    """For the few operations both callers may use (GET /v1/sessions)."""
    forwarded_key = forwarded_caller(request)
    if forwarded_key is not None:
        return forwarded_key  # counted where it arrived
    forwarded_user = forwarded_console_user(request)
    if forwarded_user is not None:
        return ConsolePrincipal(
            account_id=forwarded_user.account_id, subject=forwarded_user.subject
        )
    token = bearer_token(request)
    if token is None or KEY_PATTERN.fullmatch(token) is not None:
        services = services_of(request)
        principal = await services.api_keys.authenticate(request.headers.get("authorization"))
        await services.rate_limits.hit_request(
            key_id=principal.key_id, account_id=principal.account_id
        )
        # For reading what other nodes of the service know, as this caller.
        request.state.api_caller = principal
        return principal
    user = await verify_console_token(request, token)
    note_console_user(request, ConsoleUser(user.account_id, user.subject, token))
    return user


ConsoleCaller = Annotated[ConsolePrincipal, Depends(console_principal)]
AnyCaller = Annotated[ApiPrincipal | ConsolePrincipal, Depends(key_or_console_principal)]
