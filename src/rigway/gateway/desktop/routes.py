"""HTTP routes of the session-scoped desktop operations (API key)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BeforeValidator

from rigway.gateway.auth.api_key_auth import ApiPrincipal
from rigway.gateway.auth.dependencies import ApiCaller
from rigway.gateway.desktop import input_batch
from rigway.gateway.desktop.delta import observe_since
from rigway.gateway.desktop.schemas import (
    DECIMAL_DIGITS,
    DEFAULT_QUALITY,
    SCREEN_QUERY_BOUNDS,
    SCREEN_QUERY_DESCRIPTIONS,
    AppKillIn,
    AppKillOut,
    AppLaunchIn,
    AppLaunchOut,
    DirtyOut,
    InputBatchIn,
    InputBatchOut,
    InputConflictOut,
    ObserveOut,
    TargetsOut,
    WaitIn,
    WaitOut,
)
from rigway.gateway.desktop.service import ScreenParams, Screenshot
from rigway.gateway.errors import InvalidRequest
from rigway.gateway.errors_openapi import error_responses, input_error_responses
from rigway.gateway.path_parameters import SessionId
from rigway.gateway.services import services_of
from rigway.gateway.sessions.live import LiveSession

router = APIRouter(tags=["desktop"])


def _decimal_digits(value: object) -> object:
    # Query strings are text, so pydantic parses them leniently ("85.0", "1_000",
    # " 85"); the API takes plain decimal integers only.
    if isinstance(value, str) and re.fullmatch(DECIMAL_DIGITS, value) is None:
        raise ValueError("expected a whole number written in decimal digits")
    return value


DIGITS_ONLY = BeforeValidator(_decimal_digits)

_SCREEN_ERRORS = error_responses(401, 403, 404, 410, 429, 502, 504)
# Observe's 409 is frame_expired (a `since` no longer kept).
_OBSERVE_ERRORS = error_responses(401, 403, 404, 409, 410, 429, 502, 504)
# 409 desktop_unavailable (the desktop is locked, …), owner_active, frame_expired,
# stale_frame, target_gone, expectation_failed: the last three with more than `error`.
_INPUT_ERRORS = input_error_responses(InputConflictOut, 401, 403, 404, 410, 429, 502, 504)
_INPUT_EXAMPLES: dict[str, Any] = {
    "type": {
        "summary": "Click a field and type",
        "value": {
            "events": [
                {"type": "mouse_click", "x": 960, "y": 396},
                {"type": "type_text", "text": "alice"},
            ]
        },
    },
    "act_and_see": {
        "summary": "Press a key, wait for the screen to settle, observe without an image",
        "value": {
            "events": [{"type": "key_press", "key": "tab", "expect": "change"}],
            "settle": {"quiet_ms": 100, "timeout_ms": 2000},
            "observe": {"image": 0},
        },
    },
}
# Server-Timing parameter of the host-jpeg entry when the host served its last JPEG.
_CACHED = ';desc="cached"'


_DIGITS = re.compile(DECIMAL_DIGITS)


def read_screen_query(query: Mapping[str, str]) -> ScreenParams:
    """The screen's query parameters (screenshot and observe), read as the API documents
    them: decimal integers within `SCREEN_QUERY_BOUNDS`, a region whole or not at all.

    Read here rather than declared as six FastAPI query parameters: validating those one
    by one cost about 0.3 ms a call (docs/decisions/0016-one-request-path-on-public-
    apis.md), paid on every screenshot an agent takes. `SCREEN_QUERY_OPENAPI` documents
    them."""
    values: dict[str, int] = {}
    for name, bounds in SCREEN_QUERY_BOUNDS.items():
        raw = query.get(name)
        if raw is None:
            continue
        if _DIGITS.fullmatch(raw) is None:
            raise InvalidRequest(f"query.{name}: expected a whole number written in decimal digits")
        value = int(raw)
        if not bounds.low <= value <= bounds.high:
            raise InvalidRequest(f"query.{name}: must be from {bounds.low} to {bounds.high}")
        values[name] = value
    return ScreenParams.from_query(
        quality=values.get("quality", DEFAULT_QUALITY),
        max_width=values.get("max_width"),
        x=values.get("x"),
        y=values.get("y"),
        w=values.get("w"),
        h=values.get("h"),
    )


async def screen_params(request: Request) -> ScreenParams:
    return read_screen_query(request.query_params)


SCREEN_QUERY_OPENAPI: dict[str, Any] = {
    "parameters": [
        {
            "name": name,
            "in": "query",
            "required": False,
            "description": SCREEN_QUERY_DESCRIPTIONS[name],
            "schema": {
                "type": "integer",
                "minimum": bounds.low,
                "maximum": bounds.high,
                **({"default": DEFAULT_QUALITY} if name == "quality" else {}),
            },
        }
        for name, bounds in SCREEN_QUERY_BOUNDS.items()
    ]
}

Screen = Annotated[ScreenParams, Depends(screen_params)]


async def _live(request: Request, session_id: str, caller: ApiPrincipal, scope: str) -> LiveSession:
    caller.require(scope)
    return await services_of(request).sessions.require_live(caller.account_id, session_id)


def _header(description: str, type_: str = "integer") -> dict[str, Any]:
    return {"description": description, "schema": {"type": type_}}


_SCREENSHOT_HEADERS = {
    "X-Frame-Id": _header(
        "The frame this image shows: input may give points in its pixels (`frame_id`)",
        "string",
    ),
    "X-Screenshot-Width": _header("The returned image's width in pixels"),
    "X-Screenshot-Height": _header("The returned image's height in pixels"),
    "X-Screenshot-Native-Width": _header("The desktop's width in native pixels"),
    "X-Screenshot-Native-Height": _header("The desktop's height in native pixels"),
    "X-App-Window": _header(
        "`app` mode only: the app window the image shows, native `x,y,w,h`", "string"
    ),
    "Server-Timing": _header(
        'host-jpeg;dur=<ms> (the host\'s capture and encode; ;desc="cached" when it '
        "served its last JPEG), link;dur=<ms> (the host link's round trip)",
        "string",
    ),
}


@router.get(
    "/v1/sessions/{session_id}/screenshot",
    response_class=Response,
    summary="Take a screenshot (JPEG)",
    responses={
        200: {
            "description": "The JPEG (baseline, any decoder reads it)",
            "content": {
                # Binary, so no example: the headers' and the body's shapes say it all.
                "image/jpeg": {"schema": {"type": "string", "format": "binary"}}
            },
            "headers": _SCREENSHOT_HEADERS,
        },
        **_SCREEN_ERRORS,
    },
    openapi_extra=SCREEN_QUERY_OPENAPI,
)
async def screenshot(
    request: Request, session_id: SessionId, caller: ApiCaller, screen: Screen
) -> Response:
    """The desktop as a JPEG (scope `sessions`): the whole screen, or the region
    `x`,`y`,`w`,`h` (whole or not at all, inside the native desktop), then scaled down
    to `max_width` when given. When nothing changed since the host's last JPEG and the
    parameters match, the host answers from it without capturing (byte-identical).
    `X-Frame-Id` names the frame it shows, for input in its pixels."""
    live = await _live(request, session_id, caller, "sessions")
    return screenshot_response(await services_of(request).desktop.screenshot(live, screen))


def screenshot_response(shot: Screenshot) -> Response:
    response = Response(content=shot.jpeg, media_type="image/jpeg")
    response.raw_headers += screenshot_headers(shot)
    return response


def screenshot_headers(shot: Screenshot) -> list[tuple[bytes, bytes]]:
    """A screenshot's own headers, beside its content type and length."""
    reply = shot.reply
    # The host's own capture+encode time (desc "cached" when it served its last JPEG
    # without capturing) and the host link round trip, so callers can see the
    # gateway's share.
    timing = (
        f"host-jpeg;dur={reply.host_jpeg_ms:.2f}{_CACHED if reply.cached else ''}"
        f", link;dur={shot.link_ms:.2f}"
    )
    frame = [] if shot.frame is None else [(b"x-frame-id", shot.frame.frame_id.encode())]
    window = reply.app_window
    app_window = [] if window is None else [(b"x-app-window", b"%d,%d,%d,%d" % window)]
    return [
        *frame,
        *app_window,
        (b"x-screenshot-width", b"%d" % reply.width),
        (b"x-screenshot-height", b"%d" % reply.height),
        (b"x-screenshot-native-width", b"%d" % reply.native_width),
        (b"x-screenshot-native-height", b"%d" % reply.native_height),
        (b"cache-control", b"no-store"),
        (b"server-timing", timing.encode()),
    ]


@router.get(
    "/v1/sessions/{session_id}/dirty",
    response_model=DirtyOut,
    summary="Take the changed rectangles",
    responses=_SCREEN_ERRORS,
)
async def dirty(request: Request, session_id: SessionId, caller: ApiCaller) -> DirtyOut:
    """The rectangles of the screen that changed since the last read (scope `sessions`);
    each read consumes them. `available: false`: the host cannot see damage, so treat
    everything as changed."""
    live = await _live(request, session_id, caller, "sessions")
    return await services_of(request).desktop.dirty(live)


@router.get(
    "/v1/sessions/{session_id}/observe",
    response_model=ObserveOut,
    summary="Observe: image, changes, targets and text in one call",
    responses=_OBSERVE_ERRORS,
    openapi_extra=SCREEN_QUERY_OPENAPI,
)
async def observe(
    request: Request,
    session_id: SessionId,
    caller: ApiCaller,
    screen: Screen,
    mark: Annotated[
        int, Query(ge=0, le=1, description=SCREEN_QUERY_DESCRIPTIONS["mark"]), DIGITS_ONLY
    ] = 0,
    image: Annotated[
        int, Query(ge=0, le=1, description=SCREEN_QUERY_DESCRIPTIONS["image"]), DIGITS_ONLY
    ] = 1,
    since: Annotated[
        str | None,
        Query(min_length=1, max_length=64, description=SCREEN_QUERY_DESCRIPTIONS["since"]),
    ] = None,
) -> Response:
    """Three legs run concurrently on the host link (scope `sessions`): the screenshot
    (unless `image=0`), the dirty take and the targets; `changed` is true when rects are
    non-empty or damage is unavailable, and `text` reads the screen for a model. If the
    targets leg fails the observe still answers, with `targets: []`.

    With `since` (a frame id this session was shown): `changed_images` in place of the
    image, the parts of the picture that changed since that frame at its scale (none
    when nothing did; `changed_region` their bounding box), and `targets_diff` in place
    of `targets`. An unknown frame is 409 frame_expired."""
    live = await _live(request, session_id, caller, "sessions")
    desktop = services_of(request).desktop
    marked = mark == 1 and image == 1
    exclude: set[str]
    if since is None:
        result = await desktop.observe(live, screen, image=image == 1, mark=marked)
        exclude = {"frame_region", "changed_region", "changed_images", "targets_diff"}
    else:
        result = await observe_since(desktop, live, since, screen, image=image == 1, mark=marked)
        exclude = {"targets"}
    if result.jpeg_base64 is None:
        exclude.add("jpeg_base64")
    # Straight to JSON bytes by pydantic's own serializer: a dict first and json.dumps
    # after cost 0.3 ms against 0.09 ms on 84 targets.
    return Response(result.model_dump_json(exclude=exclude), media_type="application/json")


@router.get(
    "/v1/sessions/{session_id}/targets",
    response_model=TargetsOut,
    summary="List click targets",
    responses=_SCREEN_ERRORS,
)
async def targets(request: Request, session_id: SessionId, caller: ApiCaller) -> TargetsOut:
    """The focused window's controls from its accessibility tree (scope `sessions`):
    name an `id` as an input event's `target` or in a wait. A masked value is
    `[redacted]`; a host that times out answers an empty list."""
    live = await _live(request, session_id, caller, "sessions")
    return await services_of(request).desktop.targets(live)


@router.post(
    "/v1/sessions/{session_id}/wait",
    response_model=WaitOut,
    summary="Wait for a change, quiet, or a control",
    responses=_SCREEN_ERRORS,
)
async def wait_until(
    request: Request, session_id: SessionId, body: WaitIn, caller: ApiCaller
) -> WaitOut:
    """Waits until the screen changes, falls quiet, or a control appears in the focused
    window, at most `timeout_ms`; not met in time is a 200 with `met: false`. A bad body
    is a 400 and nothing waits."""
    live = await _live(request, session_id, caller, "sessions")
    return await services_of(request).desktop.wait(live, body)


@router.post(
    "/v1/sessions/{session_id}/input",
    response_model=InputBatchOut,
    summary="Send a batch of input events",
    responses=_INPUT_ERRORS,
)
async def send_input(
    request: Request,
    session_id: SessionId,
    body: Annotated[InputBatchIn, Body(openapi_examples=_INPUT_EXAMPLES)],
    caller: ApiCaller,
) -> Response:
    """Runs 1 to 100 events in order (scope `input`); answers after the last one ran
    (and the settle and observe the batch asked for), with a receipt per event. Checked
    whole first: a bad event or point is a 400, an unknown frame a 409 `frame_expired`,
    and nothing runs. While the desktop is not "normal" (`desktop_state`) nothing runs: 409
    `desktop_unavailable: <state>`; nor while the rig's owner uses its own keyboard or
    mouse (`owner_active` on the Session): 409 `owner_active`. A batch stopped on the
    host (`target_gone`, `expectation_failed`) is a 409 with the receipts of what ran;
    `stale_frame` (nothing ran) carries the rectangles that changed."""
    live = await _live(request, session_id, caller, "input")
    services = services_of(request)
    # Checked whole before it counts: a refused batch costs no quota.
    prepared = input_batch.prepare(
        live, body, services.desktop.frames, services.settings.host_timeout_s
    )
    await services.rate_limits.hit_input_events(caller.key_id, len(body.events))
    answer = await input_batch.run(live, prepared, services.desktop)
    return Response(answer, media_type="application/json")


@router.post(
    "/v1/sessions/{session_id}/app/launch",
    response_model=AppLaunchOut,
    summary="Launch an app",
    responses=_SCREEN_ERRORS,
)
async def launch_app(
    request: Request, session_id: SessionId, body: AppLaunchIn, caller: ApiCaller
) -> AppLaunchOut:
    """Starts an app on the rig (scope `apps`); one that cannot start is a 400 naming
    why. The session's end kills it and closes its windows."""
    live = await _live(request, session_id, caller, "apps")
    pid = await services_of(request).desktop.launch(live, body.path, body.args)
    return AppLaunchOut(ok=True, pid=pid)


@router.post(
    "/v1/sessions/{session_id}/app/kill",
    response_model=AppKillOut,
    summary="Kill launched apps",
    responses=_SCREEN_ERRORS,
)
async def kill_app(
    request: Request,
    session_id: SessionId,
    caller: ApiCaller,
    body: Annotated[AppKillIn | None, Body()] = None,
) -> AppKillOut:
    """Kills one app this session launched, by pid, or all of them without a body (scope
    `apps`); the whole process tree dies, children that escaped with `setsid` included."""
    live = await _live(request, session_id, caller, "apps")
    pid = None if body is None else body.pid
    killed = await services_of(request).desktop.kill(live, pid)
    return AppKillOut(ok=True, killed=killed)
