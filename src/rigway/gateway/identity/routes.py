"""The embedded identity provider's HTTP face: its JWKS and a sign-in endpoint."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection

from rigway.gateway.errors import NotFound
from rigway.gateway.errors_openapi import error_responses
from rigway.gateway.services import services_of
from rigway.gateway.validation import StoredText

router = APIRouter(tags=["console: sign-in"])


class SignInIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    email: StoredText = Field(min_length=3, max_length=320)
    password: StoredText = Field(min_length=1, max_length=1024)


class SignInOut(BaseModel):
    access_token: str
    token_type: str = "Bearer"  # noqa: S105 (the OAuth token type name)
    expires_in: int


@router.get("/.well-known/jwks.json", responses=error_responses(404))
async def jwks(request: Request) -> dict[str, Any]:
    identity = services_of(request).identity
    if identity is None:
        raise NotFound("this gateway uses an external identity provider")
    return identity.jwks()


@router.post(
    "/v1/console/sign-in", response_model=SignInOut, responses=error_responses(401, 404, 429, 503)
)
async def sign_in(request: Request, body: SignInIn) -> SignInOut:
    """Trades a local user's email and password for a console token."""
    services = services_of(request)
    if services.identity is None:
        raise NotFound("this gateway uses an external identity provider")
    token = await services.identity.sign_in(
        body.email, body.password, client_address=client_address(request)
    )
    return SignInOut(access_token=token, expires_in=services.settings.console_token_ttl_s)


def client_address(connection: HTTPConnection) -> str | None:
    """The caller's address as the ASGI server reports it (`scope["client"]`). The
    gateway reads no forwarding header itself: under uvicorn, `X-Forwarded-For` replaces
    the peer's address only when the peer is in uvicorn's `forwarded_allow_ips` (the
    loopback addresses unless set), that is a proxy the operator put there."""
    client = connection.client
    return None if client is None else client.host
