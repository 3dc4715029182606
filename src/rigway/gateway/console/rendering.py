"""Pages: the Jinja environment (autoescape on), the console's route class that turns
refusals into pages, and the headers every console response carries."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from rigway.gateway.console.csrf import CsrfRejected, csrf_token_for
from rigway.gateway.console.live import duration_words, when
from rigway.gateway.console.session import SESSION_COOKIE, SignedIn, SignInRequired
from rigway.gateway.console.wording import (
    END_REASON_WORDS,
    control_words,
    end_reason_words,
    session_mode_words,
    session_status_words,
)
from rigway.gateway.errors import ApiError
from rigway.gateway.static_files import StaticFiles

__all__ = [
    "STATIC_DIR",
    "STATIC_FILES",
    "ConsoleRoute",
    "redirect",
    "render",
]

logger = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).parent
TEMPLATES_DIR = PACKAGE_DIR / "templates"
STATIC_DIR = PACKAGE_DIR / "static"
SIGN_IN_PATH = "/console/sign-in"

# Pages hold account data and one-time secrets: never cached, never framed, and only
# our own scripts, styles, images, form targets and fetches (the live values' poll).
SECURITY_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

# Messages a redirect may ask a page to show (`?notice=<name>`); anything else is ignored,
# so a link cannot put words on the page.
NOTICES: Mapping[str, str] = {
    "key_revoked": "The key is revoked: its next request gets 401.",
    "rig_renamed": "The rig is renamed.",
    "rig_settings_saved": "The rig's settings are saved.",
    "api_enabled": "API access is on: agents with a key can start sessions on this rig.",
    "api_disabled": "API access is off: new sessions on this rig are refused.",
    "rig_unpaired": "The rig is unpaired; its token no longer works.",
    "wake_sent": "Wake-on-LAN packet sent.",
    "already_online": "The rig is already online.",
    "session_killed": f"The session is {END_REASON_WORDS['owner_kill']}.",
    "webhook_enabled": "The webhook is enabled.",
    "webhook_disabled": "The webhook is disabled.",
    "webhook_deleted": "The webhook is deleted.",
    "test_event_delivered": "The test event was delivered: the receiver answered 2xx.",
    "test_event_failed": "The test event did not get through: the deliveries below say why.",
    "signed_out": "You are signed out.",
}

_SECTIONS = frozenset({"rigs", "sessions", "history", "keys", "webhooks"})

_STATUS_TITLES: Mapping[int, str] = {
    400: "That did not work",
    403: "Refused",
    404: "Not found",
    409: "Not possible right now",
    410: "Already ended",
}


STATIC_FILES = StaticFiles(STATIC_DIR, "/console/static")


_environment = Environment(
    loader=FileSystemLoader(TEMPLATES_DIR),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.filters["when"] = when
_environment.filters["duration"] = duration_words
_environment.filters["end_reason"] = end_reason_words
_environment.filters["session_status"] = session_status_words
_environment.filters["session_mode"] = session_mode_words
_environment.filters["control"] = control_words
_environment.globals["static_url"] = STATIC_FILES.url


def render(
    request: Request,
    template: str,
    *,
    user: SignedIn | None = None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    notice = NOTICES.get(request.query_params.get("notice", ""))
    html = _environment.get_template(template).render(
        user=user,
        csrf_token=csrf_token_for(user.token) if user is not None else None,
        notice=notice,
        section=_section(request.url.path),
        **context,
    )
    return HTMLResponse(html, status_code=status)


def redirect(path: str, notice: str | None = None) -> RedirectResponse:
    """Post/redirect/get: 303 makes the browser follow with a GET."""
    target = path if notice is None else f"{path}?notice={notice}"
    return RedirectResponse(target, status_code=303)


def _section(path: str) -> str:
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "console" else ""


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    section = _section(request.url.path)
    back = f"/console/{section}" if section in _SECTIONS else None
    title = _STATUS_TITLES.get(status, "Something went wrong")
    return render(request, "error.html", status=status, title=title, message=message, back_url=back)


def _validation_message(exc: RequestValidationError | ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "The form is not valid."
    first = errors[0]
    field = ".".join(str(part) for part in first.get("loc", ()) if part not in {"body", "form"})
    message = str(first.get("msg", "invalid"))
    return f"{field}: {message}" if field else message


def _sign_in_redirect(request: Request) -> Response:
    response = RedirectResponse(SIGN_IN_PATH, status_code=303)
    if SESSION_COOKIE.read(request) is not None:
        SESSION_COOKIE.clear(response, request)  # an expired or forged token: drop it
    return response


async def _answer(
    handler: Callable[[Request], Coroutine[Any, Any, Response]], request: Request
) -> Response:
    try:
        return await handler(request)
    except SignInRequired:
        return _sign_in_redirect(request)
    except CsrfRejected as exc:
        logger.info("console form refused: %s", exc)
        return error_page(
            request,
            403,
            "The form expired or did not come from this console. Reload the page and try again.",
        )
    except ApiError as exc:
        return error_page(request, exc.status, _api_error_message(exc))
    except (RequestValidationError, ValidationError) as exc:
        return error_page(request, 400, _validation_message(exc))


def _api_error_message(exc: ApiError) -> str:
    if exc.status == 404:
        return "It does not exist, or it is not yours."  # never reveal which
    return exc.detail or exc.code.replace("_", " ").capitalize() + "."


class ConsoleRoute(APIRoute):
    """Routes whose refusals are pages: sign-in redirects, 403 for CSRF, error pages
    for the services' ApiErrors, with the security headers on every answer."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def console_handler(request: Request) -> Response:
            response = await _answer(handler, request)
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
            return response

        return console_handler
