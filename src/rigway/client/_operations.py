"""Every Rigway endpoint as a pure function returning an `Operation`.

The sync and async resource classes are one line per method over these builders, so
paths, query parameters, bodies, decoding and per-endpoint retry rules exist once.
Paths and fields follow docs/api.md exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import quote

import httpx2

from . import _core
from ._core import UNACTED_STATUSES, Operation, body, query
from .errors import AmbiguousRigError, APIResponseValidationError, NoRigAvailableError
from .models import (
    AgentRelease,
    ApiKey,
    ApiKeyCreated,
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    InputEvent,
    ObserveResult,
    PairingCode,
    Region,
    Rig,
    Screenshot,
    Session,
    StreamCredentials,
    Takeover,
    TargetList,
    WakeResult,
    Webhook,
    WebhookCreated,
)

SessionMode = Literal["desktop", "app"]
RegionLike = Region | tuple[int, int, int, int]
EventLike = InputEvent | Mapping[str, Any]

# docs/api.md, Input: a batch holds 1 to 100 events, validated whole.
MAX_EVENTS_PER_BATCH = 100
# Names the image a screenshot answer carries (API 1.1), for input in its pixels.
FRAME_ID_HEADER = "X-Frame-Id"
APP_WINDOW_HEADER = "X-App-Window"


def _segment(value: str) -> str:
    """An id as one path segment: an id with `/` or `?` must not change the route."""
    return quote(value, safe="")


def session_path(session_id: str, tail: str = "") -> str:
    return f"/v1/sessions/{_segment(session_id)}{tail}"


# ------------------------------------------------------------------------- rigs


def list_rigs() -> Operation[list[Rig]]:
    """GET /v1/rigs: all rigs of the account."""
    return Operation("GET", "/v1/rigs", lambda r: _core.decode_list(r, Rig, key="rigs"))


def get_rig(rig_id: str) -> Operation[Rig]:
    """GET /v1/rigs/{id}."""
    return Operation("GET", f"/v1/rigs/{_segment(rig_id)}", lambda r: _core.decode_model(r, Rig))


def wake_rig(rig_id: str) -> Operation[WakeResult]:
    """POST /v1/rigs/{id}/wake (no body); a second magic packet is harmless."""
    return Operation(
        "POST",
        f"/v1/rigs/{_segment(rig_id)}/wake",
        lambda r: _core.decode_model(r, WakeResult),
    )


def update_rig(
    rig_id: str,
    *,
    api_access_enabled: bool | None,
    name: str | None,
    app_mode_only: bool | None = None,
    owner_idle_s: int | None = None,
    recordings_allowed: bool | None = None,
) -> Operation[Rig]:
    """PATCH /v1/rigs/{id} (console): only the fields given."""
    return Operation(
        "PATCH",
        f"/v1/rigs/{_segment(rig_id)}",
        lambda r: _core.decode_model(r, Rig, envelope="rig"),
        json=body(
            api_access_enabled=api_access_enabled,
            name=name,
            app_mode_only=app_mode_only,
            owner_idle_s=owner_idle_s,
            recordings_allowed=recordings_allowed,
        ),
    )


def unpair_rig(rig_id: str) -> Operation[Rig | None]:
    """DELETE /v1/rigs/{id} (console): its active session ends `unpaired`."""
    return Operation(
        "DELETE", f"/v1/rigs/{_segment(rig_id)}", lambda r: _core.decode_optional_model(r, Rig)
    )


def create_pairing_code() -> Operation[PairingCode]:
    """POST /v1/rigs/pairing-codes (console): a one-time code for a host agent."""
    return Operation(
        "POST",
        "/v1/rigs/pairing-codes",
        lambda r: _core.decode_model(r, PairingCode),
        is_idempotent=False,
    )


def agent_latest() -> Operation[AgentRelease]:
    """GET /v1/agent/latest (public)."""
    return Operation("GET", "/v1/agent/latest", lambda r: _core.decode_model(r, AgentRelease))


# --------------------------------------------------------------------- sessions


def create_session(
    rig_id: str,
    *,
    mode: SessionMode | None,
    idle_timeout_seconds: int | None,
    record: bool | None = None,
) -> Operation[Session]:
    """POST /v1/sessions.

    A 502/504 answer stores the session as `failed` (docs/api.md), so those are safe
    to retry; a read timeout is not (the first session may be active and billing).
    """
    return Operation(
        "POST",
        "/v1/sessions",
        lambda r: _core.decode_model(r, Session),
        json=body(
            rig_id=rig_id, mode=mode, idle_timeout_seconds=idle_timeout_seconds, record=record
        ),
        is_idempotent=False,
    )


def only_usable_rig(rigs: list[Rig]) -> str:
    """The id of the one rig a session could start on when the caller named none: online
    with API access enabled. A busy one counts (starting on it then says which session
    holds it). None usable raises `NoRigAvailableError`; several `AmbiguousRigError`.
    """
    usable = [rig for rig in rigs if rig.online and rig.api_access_enabled]
    if not usable:
        raise NoRigAvailableError(rigs)
    if len(usable) > 1:
        raise AmbiguousRigError(usable)
    return usable[0].id


def list_sessions() -> Operation[list[Session]]:
    """GET /v1/sessions: active sessions of this key (of the account, for a console)."""
    return Operation("GET", "/v1/sessions", lambda r: _core.decode_list(r, Session, key="sessions"))


def get_session(session_id: str) -> Operation[Session]:
    """GET /v1/sessions/{id}."""
    return Operation("GET", session_path(session_id), lambda r: _core.decode_model(r, Session))


def end_session(session_id: str) -> Operation[Session]:
    """DELETE /v1/sessions/{id}: idempotent, an ended session answers 200 again."""
    return Operation("DELETE", session_path(session_id), lambda r: _core.decode_model(r, Session))


def kill_session(session_id: str) -> Operation[Session]:
    """POST /v1/sessions/{id}/kill (console): owner kill, reason `owner_kill`."""
    return Operation(
        "POST", session_path(session_id, "/kill"), lambda r: _core.decode_model(r, Session)
    )


# ----------------------------------------------------------------------- screens


def as_region(region: RegionLike | None) -> Region | None:
    """A `Region` from a Region or an `(x, y, w, h)` tuple."""
    if region is None or isinstance(region, Region):
        return region
    x, y, w, h = region
    return Region(x, y, w, h)


def _screen_query(
    max_width: int | None, quality: int | None, region: Region | None
) -> dict[str, str | int]:
    if region is None:
        return query(max_width=max_width, quality=quality)
    return query(
        max_width=max_width, quality=quality, x=region.x, y=region.y, w=region.w, h=region.h
    )


def _int_header(response: httpx2.Response, name: str) -> int:
    value = response.headers.get(name)
    try:
        return int(value) if value is not None else -1
    except ValueError:
        return -1


def _decode_screenshot(response: httpx2.Response, region: Region | None) -> Screenshot:
    sizes = {
        name: _int_header(response, f"X-Screenshot-{header}")
        for name, header in (
            ("width", "Width"),
            ("height", "Height"),
            ("native_width", "Native-Width"),
            ("native_height", "Native-Height"),
        )
    }
    if any(value <= 0 for value in sizes.values()):
        raise APIResponseValidationError(
            "screenshot without valid X-Screenshot-* size headers",
            response=response,
            request_id=_core.request_id_of(response),
        )
    frame_id = response.headers.get(FRAME_ID_HEADER)
    if region is None:
        region = _app_window(response)
    return Screenshot(jpeg=response.content, region=region, frame_id=frame_id, **sizes)


def _app_window(response: httpx2.Response) -> Region | None:
    """An `app` session's screenshot shows its window (`X-App-Window: x,y,w,h`)."""
    value = response.headers.get(APP_WINDOW_HEADER)
    if value is None:
        return None
    try:
        x, y, w, h = (int(part) for part in value.split(","))
    except ValueError:
        return None
    return Region(x, y, w, h) if w > 0 and h > 0 else None


def screenshot(
    session_id: str,
    *,
    max_width: int | None,
    quality: int | None,
    region: RegionLike | None,
) -> Operation[Screenshot]:
    """GET /v1/sessions/{id}/screenshot: JPEG bytes plus the X-Screenshot-* sizes."""
    area = as_region(region)
    return Operation(
        "GET",
        session_path(session_id, "/screenshot"),
        lambda r: _decode_screenshot(r, area),
        params=_screen_query(max_width, quality, area),
        accept="image/jpeg",
    )


def _decode_observe(response: httpx2.Response, region: Region | None) -> ObserveResult:
    result = _core.decode_model(response, ObserveResult)
    # A delta's frame is the caller's whole picture with the changed images pasted in:
    # points map through the area the answer names (`frame_region`), as through a full
    # observe's region (a delta takes no region of its own).
    result._region = region
    return result


def _observe_retried(result: ObserveResult) -> ObserveResult:
    # The lost attempt may have consumed the dirty take; without it nothing can be said
    # about change, and the documented rule for that case is "assume it changed".
    result.changed = True
    return result


def observe(
    session_id: str,
    *,
    max_width: int | None,
    quality: int | None,
    region: RegionLike | None,
    mark: bool,
    image: bool,
    since: str | None = None,
) -> Operation[ObserveResult]:
    """GET /v1/sessions/{id}/observe; `mark`/`image` are sent only when not the default,
    `since` (a frame id) only when given."""
    area = as_region(region)
    params = _screen_query(max_width, quality, area)
    params.update(query(mark=True if mark else None, image=None if image else False, since=since))
    return Operation(
        "GET",
        session_path(session_id, "/observe"),
        lambda r: _decode_observe(r, area),
        params=params,
        after_retry=_observe_retried,
    )


def _dirty_retried(result: DirtyRects) -> DirtyRects:
    # As for observe: a lost attempt may have consumed the take, so report the change
    # metadata as unavailable, which tells the caller to assume the screen changed.
    result.available = False
    return result


def dirty(session_id: str) -> Operation[DirtyRects]:
    """GET /v1/sessions/{id}/dirty (each take consumes the rectangles)."""
    return Operation(
        "GET",
        session_path(session_id, "/dirty"),
        lambda r: _core.decode_model(r, DirtyRects),
        after_retry=_dirty_retried,
    )


def targets(session_id: str) -> Operation[TargetList]:
    """GET /v1/sessions/{id}/targets."""
    return Operation(
        "GET", session_path(session_id, "/targets"), lambda r: _core.decode_model(r, TargetList)
    )


def stream(session_id: str) -> Operation[StreamCredentials]:
    """GET /v1/sessions/{id}/stream: fresh signaling credentials."""
    return Operation(
        "GET",
        session_path(session_id, "/stream"),
        lambda r: _core.decode_model(r, StreamCredentials),
    )


def takeover(session_id: str) -> Operation[Takeover]:
    """POST /v1/sessions/{id}/takeover: a one-time link for a person to take control (a
    repeat only issues another link)."""
    return Operation(
        "POST",
        session_path(session_id, "/takeover"),
        lambda r: _core.decode_model(r, Takeover),
    )


def recording(session_id: str) -> Operation[bytes]:
    """GET /v1/sessions/{id}/recording: the zip of a session started with `record`
    (`steps.jsonl`, `frames/<seq>.jpg`, `manifest.json`)."""
    return Operation(
        "GET",
        session_path(session_id, "/recording"),
        lambda r: r.content,
        accept="application/zip",
    )


# ------------------------------------------------------------------ input, apps


def event_json(event: EventLike) -> dict[str, Any]:
    """An event as JSON: models drop their unset fields, mappings go as given."""
    if isinstance(event, InputEvent):
        return event.to_json()
    return dict(event)


def launch_app(
    session_id: str, path: str, args: Sequence[str] | None
) -> Operation[AppLaunchResult]:
    """POST /v1/sessions/{id}/app/launch; never replayed (it would start a second copy)."""
    return Operation(
        "POST",
        session_path(session_id, "/app/launch"),
        lambda r: _core.decode_model(r, AppLaunchResult),
        json=body(path=path, args=None if args is None else list(args)),
        is_idempotent=False,
        retry_statuses=UNACTED_STATUSES,
    )


def kill_app(session_id: str, pid: int | None) -> Operation[AppKillResult]:
    """POST /v1/sessions/{id}/app/kill: one pid, or every app the session launched."""
    return Operation(
        "POST",
        session_path(session_id, "/app/kill"),
        lambda r: _core.decode_model(r, AppKillResult),
        json=body(pid=pid),
    )


# ----------------------------------------------------------------- console side


def list_keys() -> Operation[list[ApiKey]]:
    """GET /v1/keys (console)."""
    return Operation("GET", "/v1/keys", lambda r: _core.decode_list(r, ApiKey, key="keys"))


def create_key(
    name: str, *, environment: Literal["live", "test"] | None, scopes: Sequence[str] | None
) -> Operation[ApiKeyCreated]:
    """POST /v1/keys (console); the answer holds the full key once, as `secret`."""
    return Operation(
        "POST",
        "/v1/keys",
        lambda r: _core.decode_model(r, ApiKeyCreated, envelope="key"),
        json=body(name=name, environment=environment, scopes=_list_or_none(scopes)),
        is_idempotent=False,
        retry_statuses=UNACTED_STATUSES,
    )


def revoke_key(key_id: str) -> Operation[ApiKey | None]:
    """DELETE /v1/keys/{id} (console)."""
    return Operation(
        "DELETE",
        f"/v1/keys/{_segment(key_id)}",
        lambda r: _core.decode_optional_model(r, ApiKey),
    )


def list_webhooks() -> Operation[list[Webhook]]:
    """GET /v1/webhooks (console)."""
    return Operation("GET", "/v1/webhooks", lambda r: _core.decode_list(r, Webhook, key="webhooks"))


def _decode_webhook_created(response: httpx2.Response) -> WebhookCreated:
    data = _core.json_of(response)
    if isinstance(data, dict) and "webhook" not in data:
        # Tolerate a flat Webhook answer: docs/api.md names the envelope, but a flat one
        # carries the same information.
        warning = data.pop("warning", None)
        data = {"webhook": data, "warning": warning}
    try:
        return WebhookCreated.model_validate(data)
    except ValueError as exc:
        raise APIResponseValidationError(
            f"unexpected WebhookCreated body: {exc}",
            response=response,
            request_id=_core.request_id_of(response),
        ) from exc


def create_webhook(url: str, *, events: Sequence[str] | None) -> Operation[WebhookCreated]:
    """POST /v1/webhooks (console); `events` defaults to both on the gateway."""
    return Operation(
        "POST",
        "/v1/webhooks",
        _decode_webhook_created,
        json=body(url=url, events=_list_or_none(events)),
        is_idempotent=False,
        retry_statuses=UNACTED_STATUSES,
    )


def update_webhook(
    webhook_id: str, *, enabled: bool | None, events: Sequence[str] | None
) -> Operation[Webhook]:
    """PATCH /v1/webhooks/{id} (console): only the fields given."""
    return Operation(
        "PATCH",
        f"/v1/webhooks/{_segment(webhook_id)}",
        lambda r: _core.decode_model(r, Webhook, envelope="webhook"),
        json=body(enabled=enabled, events=_list_or_none(events)),
    )


def delete_webhook(webhook_id: str) -> Operation[Webhook | None]:
    """DELETE /v1/webhooks/{id} (console)."""
    return Operation(
        "DELETE",
        f"/v1/webhooks/{_segment(webhook_id)}",
        lambda r: _core.decode_optional_model(r, Webhook),
    )


def _list_or_none(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)
