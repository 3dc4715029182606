"""Typed models of everything the Rigway API returns (and of the input events it takes).

Models accept fields they do not know (`extra="allow"`) so an SDK built today keeps
working against a gateway that adds fields tomorrow; unknown fields stay reachable
through `model_extra`. Enumerations the gateway may grow (session status, end reason,
capture mode, target source) are plain `str` for the same reason; their current values
are listed in each docstring.

The screen models live in `_screen_models`, the input models in `_input_models`; all
are importable from here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from ._geometry import Region
from ._input_models import (
    ActResult,
    EventReceipt,
    InputEvent,
    InputEventType,
    InputResult,
    ObserveOptions,
    Settle,
    SettleResult,
    WaitResult,
    WaitTarget,
    WaitUntil,
)
from ._model_base import ApiModel, MouseButton
from ._screen_models import (
    DirtyRects,
    ObserveResult,
    ObserveText,
    ObserveTiming,
    Screenshot,
    Target,
    TargetList,
)

__all__ = [
    "ActResult",
    "AgentRelease",
    "ApiKey",
    "ApiKeyCreated",
    "AppKillResult",
    "AppLaunchResult",
    "DirtyRects",
    "Display",
    "EventReceipt",
    "InputEvent",
    "InputEventType",
    "InputResult",
    "MouseButton",
    "ObserveOptions",
    "ObserveResult",
    "ObserveText",
    "ObserveTiming",
    "PairingCode",
    "Region",
    "Rig",
    "Screenshot",
    "Session",
    "Settle",
    "SettleResult",
    "StreamCredentials",
    "Takeover",
    "Target",
    "TargetList",
    "WaitResult",
    "WaitTarget",
    "WaitUntil",
    "WakeResult",
    "Webhook",
    "WebhookCreated",
]


# --------------------------------------------------------------------------- rigs


class Display(ApiModel):
    """One monitor of a rig, in native capture pixels (the screenshot's full-size space).

    `scale` is the display's DPI scale (1.0 = 96 dpi, 1.5 = 144 dpi); `primary` marks
    the rig's primary display."""

    x: int
    y: int
    width: int
    height: int
    scale: float = 1.0
    primary: bool = False


class Rig(ApiModel):
    """A remote desktop of the account.

    `native_width`/`native_height`, `agent_version`, `last_seen_at` and
    `active_session_id` are gateway additions (docs/api.md); None when unknown.
    `desktop_state` (None while offline) is whether the desktop can be driven now:
    `normal`, `locked`, `secure_desktop` (a UAC or sign-in prompt), `screensaver`,
    `no_display` or `unknown`; input is refused (409 `desktop_unavailable`) unless
    `normal`. `displays` are its monitors (`Display`), [] while offline.

    The owner's controls: `app_mode_only` (sessions only in `mode="app"`, else 403
    `mode_not_allowed`), `owner_idle_s` (seconds the rig's own keyboard and mouse must
    rest before API input is accepted again; 0: never paused) and `recordings_allowed`
    (else `record=True` is 403 `recording_not_allowed`); a gateway that predates them
    reads as the defaults.
    """

    id: str
    name: str
    online: bool
    api_access_enabled: bool
    gpu: str | None = None
    os: str | None = None
    native_width: int | None = None
    native_height: int | None = None
    agent_version: str | None = None
    last_seen_at: datetime | None = None
    active_session_id: str | None = None
    desktop_state: str | None = None
    displays: list[Display] = Field(default_factory=list)
    app_mode_only: bool = False
    owner_idle_s: int = 10
    recordings_allowed: bool = True


class WakeResult(ApiModel):
    """Answer of `POST /v1/rigs/{id}/wake`.

    `via` is the id of the rig that sent the magic packet on the same LAN, or `gateway`;
    `already_online` is true (and nothing was sent) when the rig was online.
    """

    ok: bool
    rig_id: str | None = None
    via: str | None = None
    already_online: bool = False


class PairingCode(ApiModel):
    """A one-time code that pairs a new host agent with the account."""

    code: str
    expires_at: datetime | None = None


class AgentRelease(ApiModel):
    """The latest signed host agent release (`GET /v1/agent/latest`).

    `manifest` is the signed manifest whole, `signature` Ed25519 over its canonical JSON
    (sorted keys, no spaces); the fields above repeat the manifest's. Both None
    from a gateway that does not send them.
    """

    version: str
    download_url: str
    sha256_url: str
    sha256: str | None = None
    manifest: dict[str, Any] | None = None
    signature: str | None = None


# ----------------------------------------------------------------------- sessions


class Session(ApiModel):
    """A metered session on a rig (the record; see `SessionHandle` for the live handle).

    `status` is `active`, `ended` or `failed`. `ended_reason` (None while active) is one
    of `client`, `owner_kill`, `idle_timeout`, `max_age`, `timeout`, `host_gone`,
    `unpaired`. `billed_minutes` counts whole wall-clock minutes, rounded up.
    `capture_mode` is `dxgi`, `x11-damage`, `gdi`, `sim`, … `desktop_state` is the rig's
    (see `Rig.desktop_state`) while the session is active and its host connected, else
    None; `displays` likewise (see `Rig.displays`), else [].
    `control` is `api`, or `human` while a person who took control drives the input
    (`SessionHandle.takeover()`): API input then raises `ConflictError` (code
    `human_in_control`) until they hand back; screenshots and observe still work.
    `app_window` (`mode="app"`): the native x, y, w, h of the window of the session's
    apps that its screenshots show, None while there is none.
    `record` is true for a session started with `record=True` (see
    `SessionHandle.recording()`).
    `owner_active` is true while the rig's owner uses its own keyboard or mouse: API
    input then raises `ConflictError` (code `owner_active`) until the rig has rested
    for the owner's delay (`Rig.owner_idle_s`).
    """

    session_id: str
    rig_id: str
    mode: str = "desktop"
    status: str
    started_at: datetime | None = None
    action_count: int = 0
    idle_timeout_seconds: int | None = None
    capture_mode: str | None = None
    ended_at: datetime | None = None
    ended_reason: str | None = None
    billed_minutes: int = 0
    duration_seconds: float | None = None
    last_activity_at: datetime | None = None
    native_width: int | None = None
    native_height: int | None = None
    desktop_state: str | None = None
    displays: list[Display] = Field(default_factory=list)
    control: str = "api"
    record: bool = False
    owner_active: bool = False
    app_window: tuple[int, int, int, int] | None = None

    @property
    def id(self) -> str:
        """The session id (same as `session_id`)."""
        return self.session_id

    @property
    def is_active(self) -> bool:
        """True while the session accepts screen and input operations."""
        return self.status == "active"


class StreamCredentials(ApiModel):
    """WebRTC signaling credentials of a session (`GET /v1/sessions/{id}/stream`).

    `connect_url` is `signaling_url?token=<viewer_token>` and is good for one connection;
    `viewer_url` is a page of the gateway that plays the stream in a browser (the same
    token, so the same single use); `viewer_token` is a JWT valid for one hour.
    """

    signaling_url: str
    viewer_token: str
    rig_id: str
    session_id: str | None = None
    connect_url: str | None = None
    viewer_url: str | None = None
    expires_at: datetime | None = None
    ice_servers: list[dict[str, Any]] = Field(default_factory=list)


class Takeover(ApiModel):
    """A one-time human takeover link (`POST /v1/sessions/{id}/takeover`).

    Give `viewer_url` to a person: the page shows the desktop and sends their mouse and
    keyboard; once it connects (through `connect_url`, good for one connection) the
    session's `control` is `human` and API input raises `ConflictError` with code
    `human_in_control` until they hand control back.
    """

    connect_url: str
    viewer_url: str
    expires_at: datetime | None = None


class AppLaunchResult(ApiModel):
    """Answer of `POST …/app/launch`: the pid of the started process."""

    ok: bool
    pid: int


class AppKillResult(ApiModel):
    """Answer of `POST …/app/kill`: the pids that were terminated."""

    ok: bool
    killed: list[int] = Field(default_factory=list)


# ------------------------------------------------------------------ keys, webhooks


class ApiKey(ApiModel):
    """An API key as listed: its prefix only, never the key itself.

    `environment` is `live` or `test`; `scopes` are among `rigs:read`, `rigs:wake`,
    `sessions`, `input`, `apps`, `stream`.
    """

    id: str
    name: str
    key_prefix: str
    environment: str = "live"
    scopes: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    last_used_at: datetime | None = None


class ApiKeyCreated(ApiKey):
    """A newly created API key: `secret` is the full key, shown this once only."""

    secret: str = Field(repr=False)


class Webhook(ApiModel):
    """A registered webhook for `session.started` / `session.ended` deliveries.

    `secret` (format `whsec_…`) is only present in the create response.
    """

    id: str
    url: str
    events: list[str] = Field(default_factory=list)
    enabled: bool = True
    created_at: datetime | None = None
    last_delivery_at: datetime | None = None
    last_status: int | None = None
    last_error: str | None = None
    secret: str | None = Field(default=None, repr=False)


class WebhookCreated(ApiModel):
    """Answer of `POST /v1/webhooks`: the webhook (with its one-time secret) and a warning."""

    webhook: Webhook
    warning: str | None = None

    @property
    def secret(self) -> str | None:
        """The signing secret (`whsec_…`); store it now, it is never returned again."""
        return self.webhook.secret
