"""ASGI middleware: a bounded request body, and a request id on every response."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _BodyTooLarge(Exception):
    pass


@dataclass(frozen=True, slots=True)
class RouteBodyLimit:
    """A route whose bodies have a limit of their own: `methods` on a path that
    `path` matches whole.

    `admits`, when given, decides from the request's head whether it may use a limit
    above the general one (the input route: only a caller with a valid API key may
    make the gateway buffer megabytes). It is asked only when the body may be larger
    than the general limit; a request it turns away keeps the general limit."""

    methods: Collection[str]
    path: re.Pattern[str]
    max_bytes: int
    admits: Callable[[Scope], Awaitable[bool]] | None = None


class BodyLimitMiddleware:
    """Refuses bodies over the limit with 413, by Content-Length or while streaming: the
    limit of the first of `routes` that matches the request, else `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int, routes: Sequence[RouteBodyLimit] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.routes = tuple(routes)

    def limit_for(self, method: str, path: str) -> int:
        route = self._route_for(method, path)
        return self.max_bytes if route is None else route.max_bytes

    def _route_for(self, method: str, path: str) -> RouteBodyLimit | None:
        for route in self.routes:
            if method in route.methods and route.path.fullmatch(path):
                return route
        return None

    async def _limit(self, scope: Scope, declared: bytes | None) -> tuple[int, str]:
        """The body limit for this request, and the 413's error text."""
        route = self._route_for(scope["method"], scope["path"])
        limit = self.max_bytes if route is None else route.max_bytes
        too_large = f"invalid_request: body larger than {limit} bytes"
        if route is None or route.admits is None or route.max_bytes <= self.max_bytes:
            return limit, too_large
        small = declared is not None and declared.isdigit() and int(declared) <= self.max_bytes
        if small or await route.admits(scope):
            return limit, too_large
        return self.max_bytes, (
            f"invalid_request: body larger than {self.max_bytes} bytes "
            f"(up to {route.max_bytes} with a valid API key)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        max_bytes, too_large = await self._limit(scope, declared)
        if declared is not None and (not declared.isdigit() or int(declared) > max_bytes):
            await _send_error(send, 413, too_large)
            return
        received = 0
        started = False
        refused = False

        async def limited_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_bytes:
                    # Answer 413 here: the framework would turn any error raised while
                    # it reads the body into its own 400.
                    if not started and not refused:
                        refused = True
                        await _send_error(send, 413, too_large)
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 went out already; the app's own answer is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started and not refused:
                await _send_error(send, 413, too_large)


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, with_request_id(send))


def new_request_id() -> bytes:
    return f"req_{secrets.token_hex(8)}".encode()


def with_request_id(send: Send, request_id: bytes | None = None) -> Send:
    """`send` that adds `X-Request-Id` (`request_id`, else a fresh one) to the response
    it starts."""
    if request_id is None:
        request_id = new_request_id()

    async def send_with_id(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id)]
        await send(message)

    return send_with_id


async def _send_error(send: Send, status: int, error: str) -> None:
    body = json.dumps({"error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
