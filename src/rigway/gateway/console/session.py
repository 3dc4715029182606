"""The console's session cookie: the console JWT itself, verified on every request.

After sign-in with the embedded identity provider the console token goes into an
HttpOnly (no script reads it), SameSite=Strict (no other site's page or link sends it)
cookie scoped to /console, with a Max-Age equal to the token's lifetime. Each request
verifies it with `verify_console_token`, exactly like a bearer token on the REST API;
a missing, expired or otherwise invalid token sends the browser to the sign-in page.

`Secure` follows the request's scheme: on plain-http localhost (`rigway up`) browsers
drop a Secure cookie, so forcing it would make sign-in impossible. Behind a TLS proxy
the scheme is https when uvicorn trusts the proxy's X-Forwarded-Proto. A deployment
that wants Secure regardless passes `always_secure=True` (see `SESSION_COOKIE`).

Sign-out deletes the cookie; the token itself stays valid until it expires (JWTs are
not revocable here), which the short token lifetime (1 h by default) bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.responses import Response

from rigway.gateway.auth.console import ConsolePrincipal, verify_console_token
from rigway.gateway.cluster.forwarding import ConsoleUser, forwarded_console_user, note_console_user
from rigway.gateway.errors import InvalidConsoleToken

__all__ = [
    "ALWAYS_SECURE_COOKIES",
    "COOKIE_PATH",
    "SESSION_COOKIE",
    "ConsoleCookie",
    "SignInRequired",
    "SignedIn",
    "SignedInUser",
    "require_signed_in",
]

COOKIE_PATH = "/console"
# Flip to True to mark console cookies Secure even on plain http (a deployment that is
# only ever reached over https, where a downgrade must not leak the cookie).
ALWAYS_SECURE_COOKIES = False


class SignInRequired(Exception):
    """No valid console session: the route answers with a redirect to sign-in."""


@dataclass(frozen=True, slots=True)
class SignedIn:
    principal: ConsolePrincipal
    token: str  # the verified console token; keys this session's CSRF token

    @property
    def account_id(self) -> str:
        return self.principal.account_id


class ConsoleCookie:
    """One HttpOnly, SameSite=Strict cookie under /console."""

    def __init__(self, name: str, *, always_secure: bool = ALWAYS_SECURE_COOKIES) -> None:
        self.name = name
        self._always_secure = always_secure

    def is_secure(self, request: Request) -> bool:
        return self._always_secure or request.url.scheme == "https"

    def read(self, request: Request) -> str | None:
        value = request.cookies.get(self.name)
        return value or None

    def set(self, response: Response, request: Request, value: str, max_age_s: int) -> None:
        response.set_cookie(
            self.name,
            value,
            max_age=max_age_s,
            path=COOKIE_PATH,
            secure=self.is_secure(request),
            httponly=True,
            samesite="strict",
        )

    def clear(self, response: Response, request: Request) -> None:
        response.delete_cookie(
            self.name,
            path=COOKIE_PATH,
            secure=self.is_secure(request),
            httponly=True,
            samesite="strict",
        )


SESSION_COOKIE = ConsoleCookie("rigway_console")


async def require_signed_in(request: Request) -> SignedIn:
    forwarded = forwarded_console_user(request)
    if forwarded is not None:
        # The node the browser reached verified the cookie and forwarded the request
        # here, to the node holding the rig it is about.
        return SignedIn(ConsolePrincipal(forwarded.account_id, forwarded.subject), forwarded.token)
    token = SESSION_COOKIE.read(request)
    if token is None:
        raise SignInRequired("no console session")
    try:
        principal = await verify_console_token(request, token)
    except InvalidConsoleToken as exc:
        raise SignInRequired(str(exc)) from exc
    note_console_user(request, ConsoleUser(principal.account_id, principal.subject, token))
    return SignedIn(principal, token)


SignedInUser = Annotated[SignedIn, Depends(require_signed_in)]
