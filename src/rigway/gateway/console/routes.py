"""The console's HTTP face, mounted at /console: sign-in and sign-out here, the pages
in `rig_routes`, `account_routes`, `history_routes` and `live_routes`, and the static
files. There is deliberately no catch-all route: other features add their own pages
under /console (the live viewer).

    GET  /console                       → /console/rigs
    GET  /console/sign-in               form (sets the pre-session CSRF cookie)
    POST /console/sign-in               email + password → session cookie → /console/rigs
    POST /console/sign-out              clears the cookie → /console/sign-in
    GET  /console/static/{name}         console.css, console.js
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from rigway.gateway.console import account_routes, history_routes, live_routes, rig_routes
from rigway.gateway.console.csrf import (
    PRE_SESSION_COOKIE,
    PRE_SESSION_TTL_S,
    CheckedUser,
    check_csrf,
    csrf_token_for,
    new_pre_session_secret,
)
from rigway.gateway.console.rendering import (
    STATIC_FILES,
    ConsoleRoute,
    redirect,
    render,
)
from rigway.gateway.console.session import SESSION_COOKIE, SignInRequired, require_signed_in
from rigway.gateway.errors import InvalidConsoleToken, RateLimited
from rigway.gateway.identity.routes import client_address
from rigway.gateway.services import services_of

__all__ = ["router"]

router = APIRouter(prefix="/console", include_in_schema=False, route_class=ConsoleRoute)


@router.get("")
async def index() -> Response:
    return RedirectResponse("/console/rigs", status_code=303)


@router.get("/sign-in")
async def sign_in_page(request: Request) -> Response:
    if await _is_signed_in(request):
        return redirect("/console/rigs")
    return _sign_in_form(request, email="", error=None, status=200)


@router.post("/sign-in")
async def sign_in(
    request: Request,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
) -> Response:
    await check_csrf(request, PRE_SESSION_COOKIE.read(request))
    services = services_of(request)
    if services.identity is None:
        return _sign_in_form(request, email=email, error=None, status=404)
    try:
        token = await services.identity.sign_in(
            email, password, client_address=client_address(request)
        )
    except InvalidConsoleToken:
        # One message for an unknown email and a wrong password.
        return _sign_in_form(request, email=email, error="Wrong email or password.", status=401)
    except RateLimited:
        error = "Too many sign-in attempts; wait a minute and try again."
        return _sign_in_form(request, email=email, error=error, status=429)
    response = redirect("/console/rigs")
    SESSION_COOKIE.set(response, request, token, services.settings.console_token_ttl_s)
    PRE_SESSION_COOKIE.clear(response, request)
    return response


@router.post("/sign-out")
async def sign_out(request: Request, _user: CheckedUser) -> Response:
    response = redirect("/console/sign-in", notice="signed_out")
    SESSION_COOKIE.clear(response, request)
    return response


@router.get("/static/{name}")
async def static_file(name: str) -> Response:
    return STATIC_FILES.response(name)


def _sign_in_form(request: Request, *, email: str, error: str | None, status: int) -> Response:
    """The form, keyed to this browser's pre-session secret (made on first visit)."""
    secret = PRE_SESSION_COOKIE.read(request) or new_pre_session_secret()
    has_identity = services_of(request).identity is not None
    response = render(
        request,
        "sign_in.html",
        status=status,
        email=email,
        error=error,
        sign_in_csrf=csrf_token_for(secret),
        has_identity=has_identity,
    )
    PRE_SESSION_COOKIE.set(response, request, secret, PRE_SESSION_TTL_S)
    return response


async def _is_signed_in(request: Request) -> bool:
    try:
        await require_signed_in(request)
    except SignInRequired:
        return False
    return True


router.include_router(rig_routes.router)
router.include_router(account_routes.router)
router.include_router(history_routes.router)
router.include_router(live_routes.router)
