"""CSRF protection for every console form.

Each form carries a hidden `csrf_token`; a POST whose token is missing or wrong is
refused (403 page) before the route does anything. The token is an HMAC-SHA256, keyed
with the session's secret, of a fixed label, compared in constant time:

- Signed in, the secret is the console token from the HttpOnly session cookie. Another
  site can neither read that cookie nor the pages that embed the token, so it cannot
  produce the token; the token reveals nothing about the cookie (HMAC is one-way); it
  changes with every sign-in; and any gateway node can check it with no shared state.
- Before sign-in (the sign-in form itself, against login CSRF) the secret is a random
  value in a second HttpOnly, SameSite=Strict cookie: a double submit.

As defence in depth a POST that the browser marks as coming from another origin
(`Sec-Fetch-Site` other than `same-origin`/`none`) is refused even with a token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Annotated

from fastapi import Depends, Request

from rigway.gateway.console.session import ConsoleCookie, SignedIn, require_signed_in

__all__ = [
    "CSRF_FIELD",
    "PRE_SESSION_COOKIE",
    "CheckedUser",
    "CsrfRejected",
    "check_csrf",
    "csrf_token_for",
    "new_pre_session_secret",
    "require_csrf",
]

CSRF_FIELD = "csrf_token"
PRE_SESSION_COOKIE = ConsoleCookie("rigway_console_signin")
PRE_SESSION_TTL_S = 3600
_LABEL = b"rigway-console-csrf-v1"
_ALLOWED_FETCH_SITES = frozenset({"same-origin", "none"})


class CsrfRejected(Exception):
    """The form's CSRF token is missing or wrong: the route answers 403."""


def csrf_token_for(secret: str) -> str:
    return hmac.new(secret.encode(), _LABEL, hashlib.sha256).hexdigest()


def new_pre_session_secret() -> str:
    return secrets.token_urlsafe(32)


async def check_csrf(request: Request, secret: str | None) -> None:
    """Raises CsrfRejected unless the posted form's token matches `secret`'s."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in _ALLOWED_FETCH_SITES:
        raise CsrfRejected(f"cross-origin form post ({fetch_site})")
    submitted = (await request.form()).get(CSRF_FIELD)
    if secret is None or not isinstance(submitted, str):
        raise CsrfRejected("missing CSRF token")
    # Compared as bytes: compare_digest refuses non-ASCII str, and a form may carry any.
    if not hmac.compare_digest(csrf_token_for(secret).encode(), submitted.encode()):
        raise CsrfRejected("wrong CSRF token")


async def require_csrf(
    request: Request, user: Annotated[SignedIn, Depends(require_signed_in)]
) -> SignedIn:
    await check_csrf(request, user.token)
    return user


CheckedUser = Annotated[SignedIn, Depends(require_csrf)]
