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
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [{"email": "owner@example.com", "password": "correct horse battery"}]
        },
    )

    email: StoredText = Field(min_length=3, max_length=320, description="The user's email.")
    password: StoredText = Field(min_length=1, max_length=1024, description="Their password.")


class SignInOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "access_token": "eyJhbGciOiJFZERTQSJ9…",
                    "token_type": "Bearer",
                    "expires_in": 3600,
                }
            ]
        }
    )
    access_token: str = Field(
        description="The console token (a JWT): send it as `Authorization: Bearer <token>`."
    )
    token_type: str = Field(default="Bearer", description="Always `Bearer`.")
    expires_in: int = Field(description="Seconds until the token expires.")


_JWKS_EXAMPLE = {
    "keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS…", "kid": "…", "use": "sig"}]
}


@router.get(
    "/.well-known/jwks.json",
    summary="The console tokens' signing keys (JWKS)",
    responses={
        200: {
            "description": "A JSON Web Key Set",
            "content": {"application/json": {"example": _JWKS_EXAMPLE}},
        },
        **error_responses(404),
    },
)
async def jwks(request: Request) -> dict[str, Any]:
    """The public keys console tokens are signed with, for services that verify them;
    404 when the gateway uses an external identity provider."""
    identity = services_of(request).identity
    if identity is None:
        raise NotFound("this gateway uses an external identity provider")
    return identity.jwks()


@router.post(
    "/v1/console/sign-in",
    response_model=SignInOut,
    summary="Sign in for a console token",
    responses=error_responses(401, 404, 429, 503),
)
async def sign_in(request: Request, body: SignInIn) -> SignInOut:
    """Trades a local user's email and password for a console token (embedded identity
    provider only; 404 otherwise). Attempts are limited per email and per client
    address, then 429 `rate_limited`; 503 when those limits cannot be checked."""
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
