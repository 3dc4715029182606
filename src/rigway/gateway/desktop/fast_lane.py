"""The screenshot hot path as a plain ASGI layer in front of the routes.

Agents call `GET /v1/sessions/{id}/screenshot` in a loop, so every fraction of a
millisecond the gateway adds there is paid thousands of times a session. FastAPI's
per-request machinery (routing over every route, dependency solving, the exception
layers) cost about 0.3 ms of gateway CPU per screenshot, more than the link itself
(measured with bench/gateway_sim.py; docs/decisions/0003-screenshot-fast-lane.md).

This layer answers the plainly well-formed call: a GET whose session id and query it
can read without doubt. Anything else (an unknown or repeated query name, a value in
another spelling, a partial region, another method) goes on untouched to the app,
whose route documents the operation and explains every 400. Once the lane has read the
request it answers itself, errors included, with the renderings the app uses: the same
checks in the same order (key, rate limit, scope, session), the same bodies and
headers. It sits in front of every middleware layer, FastAPI's included, so it also
does what those layers would: the request id, and the 500 answer to an unexpected
error (docs/decisions/0004-screen-hot-path.md).
"""

from __future__ import annotations

import logging
import re

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from rigway.gateway.desktop.routes import screenshot_headers, screenshot_response
from rigway.gateway.desktop.schemas import DECIMAL_DIGITS, DEFAULT_QUALITY, SCREEN_QUERY_BOUNDS
from rigway.gateway.desktop.service import ScreenParams, Screenshot
from rigway.gateway.errors import (
    ApiError,
    InvalidRequest,
    api_error_response,
    internal_error_response,
)
from rigway.gateway.http_server import ANSWER_NOW_EXTENSION, AnswerNow
from rigway.gateway.ids import is_well_formed
from rigway.gateway.middleware import new_request_id, with_request_id
from rigway.gateway.services import Services

__all__ = ["ScreenshotFastLane", "parse_screen_query"]

logger = logging.getLogger(__name__)

_SCREENSHOT_PATH = re.compile(r"/v1/sessions/([^/]+)/screenshot")
_DIGITS = re.compile(DECIMAL_DIGITS.encode())


def parse_screen_query(query_string: bytes) -> ScreenParams | None:
    """The screenshot parameters when the query is plainly valid, else None.

    Stricter than the route on purpose: whatever it declines, the route decides."""
    values: dict[str, int] = {}
    if query_string:
        for pair in query_string.split(b"&"):
            raw_name, has_value, raw_value = pair.partition(b"=")
            name = raw_name.decode("latin-1")
            bounds = SCREEN_QUERY_BOUNDS.get(name)
            if bounds is None or not has_value or name in values:
                return None
            if _DIGITS.fullmatch(raw_value) is None:
                return None
            value = int(raw_value)
            if not bounds.low <= value <= bounds.high:
                return None
            values[name] = value
    try:
        return ScreenParams.from_query(
            quality=values.get("quality", DEFAULT_QUALITY),
            max_width=values.get("max_width"),
            x=values.get("x"),
            y=values.get("y"),
            w=values.get("w"),
            h=values.get("h"),
        )
    except InvalidRequest:
        return None  # a partial region: the route explains it


class ScreenshotFastLane:
    """In front of the whole app (`app._put_fast_lane_in_front`), outside every
    middleware: it adds the request id itself and answers 500 for an unexpected error,
    as the layers it skips would."""

    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        path = _SCREENSHOT_PATH.fullmatch(scope["path"])
        # An id that cannot be one (ids.py) is the route's 404, as is anything unread.
        if path is not None and not is_well_formed(path[1]):
            path = None
        params = None if path is None else parse_screen_query(scope["query_string"])
        if path is None or params is None or _has_body(scope):
            await self.app(scope, receive, send)
            return
        request_id = new_request_id()
        early = _EarlyAnswer(scope, request_id)
        try:
            shot = await self._screenshot(scope, path[1], params, early)
            if early.sent:
                return
            response = screenshot_response(shot)
        except ApiError as exc:
            response = api_error_response(exc)
        except Exception:
            # What the app's 500 handler does, when nothing was sent yet.
            logger.exception("unhandled error in the screenshot fast lane")
            if early.sent:
                return
            response = internal_error_response()
        await response(scope, receive, with_request_id(send, request_id))

    async def _screenshot(
        self, scope: Scope, session_id: str, params: ScreenParams, early: _EarlyAnswer
    ) -> Screenshot:
        services = self._services
        principal = await services.api_keys.authenticate(Headers(scope=scope).get("authorization"))
        await services.rate_limits.hit_request(principal.key_id)
        principal.require("sessions")
        live = await services.sessions.require_live(principal.account_id, session_id)
        return await services.desktop.screenshot(live, params, on_shot=early.answer)


class _EarlyAnswer:
    """Answers the screenshot from the host link's reply callback, through the
    server's `rigway.answer_now` (`http_server.py`), before the lane's task wakes: the
    task's way back through the ASGI layers cost a third of the gateway's time between
    the host's reply and the response (docs/decisions/0009-screenshot-answered-from-
    the-reply.md). Under a server without it, or when it declines, the lane answers as
    before."""

    __slots__ = ("_answer_now", "_request_id", "sent")

    def __init__(self, scope: Scope, request_id: bytes) -> None:
        extensions = scope.get("extensions") or {}
        self._answer_now: AnswerNow | None = extensions.get(ANSWER_NOW_EXTENSION)
        self._request_id = request_id
        self.sent = False

    def answer(self, shot: Screenshot) -> None:
        if self._answer_now is None:
            return
        headers = [
            (b"content-type", b"image/jpeg"),
            *screenshot_headers(shot),
            (b"x-request-id", self._request_id),
        ]
        self.sent = self._answer_now(200, headers, shot.jpeg)


def _has_body(scope: Scope) -> bool:
    """A GET that declares a body: the app's body limit and routing decide it."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
            return True
    return False
