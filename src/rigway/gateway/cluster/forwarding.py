"""A request for a rig whose link another node holds: authenticated, scoped and
rate-limited where it arrived, then run by the holder and answered from here.

The session routes find out through `SessionService.require_live` (and session create
through its rig check): the session is not live here but a live node holds its rig,
so they raise `ForwardToHolder`. Its handler sends the request over the peer link with
the authenticated caller, and answers with the holder's status, headers and body as
they came (a JPEG crosses once, as bytes). The holder runs it through its own app,
trusting the caller the link names; a forwarded request is never forwarded again: a
holder that has lost the rig since says `421 not_held_here` at once, and the node the
request reached looks the holder up once more before it gives up with a 503.

The caller is an API key's principal, or a console user signed in where the request
arrived (cookie or bearer console token): a console page that shows or changes a live
session is run by the holder too, for the same reason. The holder builds its links
(takeover, viewer) from the address the request arrived at, so the browser or agent
reaches the service the way it came.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message
from starlette.websockets import WebSocket, WebSocketDisconnect

from rigway.gateway.auth.api_key_auth import ApiPrincipal
from rigway.gateway.cluster.ownership import HolderUrlOf
from rigway.gateway.cluster.peer_link import (
    FORWARDED_EXTENSION,
    FORWARDED_REQUEST_HEADERS,
    ForwardedRequest,
    ForwardedResponse,
    PeerClients,
    PeerTimeoutError,
    PeerUnavailableError,
    is_peer_token,
    reply_header,
)
from rigway.gateway.errors import HostTimeout, ServiceUnavailable
from rigway.protocol.framing import FramingError, decode_frame, encode_binary

_log = logging.getLogger(__name__)

NOT_HELD_HERE = 421
# A forwarded request may be a long input batch (its delays, settle and observe): the
# holder bounds each host operation itself; this bounds the wait for its answer.
FORWARD_TIMEOUT_S = 120.0
# Forwarded requests one peer link runs at once on the holder.
_MAX_CONCURRENT_PER_LINK = 256
# Besides the request's own headers: the address and scheme it arrived at, from which
# the holder builds the links it answers with (its own address is no use to the caller).
_ARRIVAL_HEADERS = frozenset({"host", "x-forwarded-proto"})
_CROSSING_HEADERS = FORWARDED_REQUEST_HEADERS | _ARRIVAL_HEADERS
_FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
# `caller["kind"]` of a console user; an API caller has no kind (older nodes send none).
_CONSOLE_CALLER = "console"


class ForwardToHolder(Exception):
    """The request's rig is held by the node at `node_url`; `session_id` names the
    session the request is for, when it is one's (its route is then remembered)."""

    def __init__(self, node_url: str, rig_id: str, session_id: str | None = None) -> None:
        super().__init__(node_url)
        self.node_url = node_url
        self.rig_id = rig_id
        self.session_id = session_id


class HolderUnreachable(ServiceUnavailable):
    """The node holding the rig could not be reached (or dropped the link mid-request):
    it may be dead, its lease not yet run out."""


@dataclass(frozen=True, slots=True)
class ConsoleUser:
    """A console user as the node the request reached verified them; `token` is their
    console token, which keys the CSRF tokens of the forms a page carries."""

    account_id: str
    subject: str
    token: str


def is_forwarded(request: Request) -> bool:
    return FORWARDED_EXTENSION in request.scope.get("extensions", {})


def note_console_user(request: Request, user: ConsoleUser) -> None:
    """Where the request arrived: its console user, for forwarding should its rig be
    held by another node."""
    request.state.console_user = user


def forwarded_console_user(request: Request) -> ConsoleUser | None:
    """The console user the sending node verified, on a request that came over a peer
    link (None for an API caller's, and for a request that did not)."""
    caller = request.scope.get("extensions", {}).get(FORWARDED_EXTENSION)
    if not isinstance(caller, dict) or caller.get("kind") != _CONSOLE_CALLER:
        return None
    return ConsoleUser(
        account_id=str(caller["account_id"]),
        subject=str(caller["subject"]),
        token=str(caller["token"]),
    )


def forwarded_caller(request: Request) -> ApiPrincipal | None:
    """The API caller the sending node authenticated, on a request that came over a
    peer link (None for a console user's: a console token is never an API key)."""
    caller = request.scope.get("extensions", {}).get(FORWARDED_EXTENSION)
    if not isinstance(caller, dict) or "kind" in caller:
        return None
    return ApiPrincipal(
        account_id=str(caller["account_id"]),
        key_id=str(caller["key_id"]),
        environment=str(caller["environment"]),
        scopes=frozenset(caller["scopes"]),
    )


async def forward(
    request: Request,
    signal: ForwardToHolder,
    peers: PeerClients,
    holder_url_of: HolderUrlOf,
    observe: Callable[[float, str], None] = lambda seconds, outcome: None,
) -> Response:
    """Answer `request` with what the node holding its rig answers."""
    if is_forwarded(request):
        return JSONResponse(
            {"error": "not_held_here: this node no longer holds the rig"},
            status_code=NOT_HELD_HERE,
        )
    caller = _caller_of(request)
    if caller is None:
        raise ServiceUnavailable("the rig is held by another node; retry")
    body, content_type = await _body_of(request)
    forwarded = _forwarded(request, caller, content_type, path=request.url.path)
    node_url = signal.node_url
    for attempt in range(2):
        started = time.perf_counter()
        try:
            answer = await peers.to(node_url).request(forwarded, body, FORWARD_TIMEOUT_S)
        except PeerTimeoutError as exc:
            observe(time.perf_counter() - started, "timeout")
            raise HostTimeout("the node holding the rig did not answer in time") from exc
        except PeerUnavailableError as exc:
            observe(time.perf_counter() - started, "unavailable")
            raise HolderUnreachable("the node holding the rig cannot be reached; retry") from exc
        held = answer.status != NOT_HELD_HERE
        observe(time.perf_counter() - started, "ok" if held else "not_held_here")
        if held:
            return Response(
                content=bytes(answer.body),
                status_code=answer.status,
                headers=dict(answer.headers),
            )
        again = await holder_url_of(signal.rig_id)
        if attempt == 1 or again is None or again == node_url:
            break
        node_url = again
    raise ServiceUnavailable("the rig is moving between gateway nodes; retry")


async def ask(
    request: Request, peers: PeerClients, node_url: str, path: str, query: str, timeout_s: float
) -> ForwardedResponse:
    """GET `path?query` of the node at `node_url` as the caller of `request` (for a read
    that gathers what several nodes know); raises `PeerUnavailableError`,
    `PeerTimeoutError`, or `ServiceUnavailable` when the request has no caller to name."""
    caller = _caller_of(request)
    if caller is None:
        raise ServiceUnavailable("no caller to ask another node for")
    asked = _forwarded(request, caller, None, path=path, method="GET", query=query)
    return await peers.to(node_url).request(asked, b"", timeout_s)


def _forwarded(
    request: Request,
    caller: dict[str, Any],
    content_type: str | None,
    *,
    path: str,
    method: str | None = None,
    query: str | None = None,
) -> ForwardedRequest:
    headers = [
        (name, value)
        for name, value in request.headers.items()
        if name in FORWARDED_REQUEST_HEADERS and name != "content-type"
    ]
    if content_type is not None:
        headers.append(("content-type", content_type))
    # Where it arrived, as this node resolved it (its proxy headers, if trusted, applied).
    headers += [("host", request.url.netloc), ("x-forwarded-proto", request.url.scheme)]
    return ForwardedRequest(
        method=request.method if method is None else method,
        path=path,
        query=request.url.query if query is None else query,
        headers=headers,
        caller=caller,
    )


async def _body_of(request: Request) -> tuple[bytes, str | None]:
    """The request's body and content type, to send on. A form (a console page's) was
    read as a form already, which leaves no raw body behind: it goes as the same fields,
    URL-encoded (console forms carry no files)."""
    content_type = request.headers.get("content-type")
    media_type = (content_type or "").partition(";")[0].strip().lower()
    if media_type not in _FORM_TYPES:
        return await request.body(), content_type
    form = await request.form()
    fields = [(name, value) for name, value in form.multi_items() if isinstance(value, str)]
    return urlencode(fields).encode(), "application/x-www-form-urlencoded"


def _caller_of(request: Request) -> dict[str, Any] | None:
    """The request's authenticated caller as the peer link carries it."""
    api_caller: ApiPrincipal | None = getattr(request.state, "api_caller", None)
    if api_caller is not None:
        return {
            "account_id": api_caller.account_id,
            "key_id": api_caller.key_id,
            "environment": api_caller.environment,
            "scopes": sorted(api_caller.scopes),
        }
    console_user: ConsoleUser | None = getattr(request.state, "console_user", None)
    if console_user is not None:
        return {
            "kind": _CONSOLE_CALLER,
            "account_id": console_user.account_id,
            "subject": console_user.subject,
            "token": console_user.token,
        }
    return None


async def serve_peer(websocket: WebSocket, app: ASGIApp, secret_key: bytes) -> None:
    """The holder's side of a peer link: run each forwarded request, reply in any order."""
    authorization = websocket.headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not is_peer_token(secret_key, token):
        await websocket.close(code=4401, reason="invalid_peer_token")
        return
    await websocket.accept()
    running: set[asyncio.Task[None]] = set()
    slots = asyncio.Semaphore(_MAX_CONCURRENT_PER_LINK)
    sending = asyncio.Lock()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            frame = message.get("bytes")
            if frame is None:
                continue
            try:
                header, payload = decode_frame(frame)
            except FramingError:
                await websocket.close(code=4400, reason="bad_frame")
                return
            await slots.acquire()
            task = asyncio.create_task(_answer(websocket, app, header, bytes(payload), sending))
            running.add(task)
            task.add_done_callback(running.discard)
            task.add_done_callback(lambda _task: slots.release())
    except WebSocketDisconnect:
        return
    finally:
        for task in running:
            task.cancel()


async def _answer(
    websocket: WebSocket,
    app: ASGIApp,
    header: dict[str, Any],
    body: bytes,
    sending: asyncio.Lock,
) -> None:
    request_id = str(header.get("id"))
    deadline_s = max(0.001, float(header.get("deadline_ms", 1000)) / 1000)
    try:
        async with asyncio.timeout(deadline_s):
            status, headers, content = await run_in_app(app, header, body)
    except TimeoutError:
        return  # the sender has given up already
    except Exception as exc:  # a malformed forwarded request: the sender's 502
        _log.warning("a forwarded request failed: %s", exc)
        status, headers, content = 502, [], b'{"error":"host_error: forwarding failed"}'
    frame = encode_binary(reply_header(request_id, status, headers), content)
    async with sending:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            await websocket.send_bytes(frame)


async def run_in_app(
    app: ASGIApp, header: dict[str, Any], body: bytes
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run one forwarded request through this node's app, in this process."""
    path = str(header["path"])
    headers = [
        (str(name).lower(), str(value))
        for name, value in header.get("headers", [])
        if str(name).lower() in _CROSSING_HEADERS
    ]
    arrived_by = dict(headers).get("x-forwarded-proto")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": str(header["method"]),
        "scheme": arrived_by if arrived_by in ("http", "https") else "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": str(header.get("query", "")).encode(),
        "root_path": "",
        "headers": [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        + [(b"content-length", str(len(body)).encode())],
        "client": ("peer", 0),
        "server": ("peer", 0),
        "extensions": {FORWARDED_EXTENSION: dict(header["caller"])},
    }
    request_read = False
    responded = asyncio.Event()
    status = 500
    response_headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal request_read
        if not request_read:
            request_read = True
            return {"type": "http.request", "body": body, "more_body": False}
        await responded.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, response_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                responded.set()

    await app(scope, receive, send)
    return status, response_headers, b"".join(chunks)
