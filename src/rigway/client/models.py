"""Typed models of everything the Rigway API returns (and of the input events it takes).

Models accept fields they do not know (`extra="allow"`) so an SDK built today keeps
working against a gateway that adds fields tomorrow; unknown fields stay reachable
through `model_extra`. Enumerations the gateway may grow (session status, end reason,
capture mode, target source) are plain `str` for the same reason; their current values
are listed in each docstring.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ._geometry import Region, image_to_native, native_to_image
from .errors import TargetNotFoundError

__all__ = [
    "AgentRelease",
    "ApiKey",
    "ApiKeyCreated",
    "AppKillResult",
    "AppLaunchResult",
    "DirtyRects",
    "InputEvent",
    "InputEventType",
    "InputResult",
    "MouseButton",
    "ObserveResult",
    "ObserveText",
    "ObserveTiming",
    "PairingCode",
    "Region",
    "Rig",
    "Screenshot",
    "Session",
    "StreamCredentials",
    "Target",
    "TargetList",
    "WakeResult",
    "Webhook",
    "WebhookCreated",
]

MouseButton = Literal["left", "right", "middle"]
InputEventType = Literal[
    "mouse_move",
    "mouse_click",
    "mouse_scroll",
    "key_press",
    "key_down",
    "key_up",
    "type_text",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --------------------------------------------------------------------------- rigs


class Rig(_Model):
    """A remote desktop of the account.

    `native_width`/`native_height`, `agent_version`, `last_seen_at` and
    `active_session_id` are gateway additions (API-DECISIONS); None when unknown.
    `desktop_state` (None while offline) is whether the desktop can be driven now:
    `normal`, `locked`, `secure_desktop` (a UAC or sign-in prompt), `screensaver`,
    `no_display` or `unknown`; input is refused (409 `desktop_unavailable`) unless
    `normal`.
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


class WakeResult(_Model):
    """Answer of `POST /v1/rigs/{id}/wake`.

    `via` is the id of the rig that sent the magic packet on the same LAN, or `gateway`;
    `already_online` is true (and nothing was sent) when the rig was online.
    """

    ok: bool
    rig_id: str | None = None
    via: str | None = None
    already_online: bool = False


class PairingCode(_Model):
    """A one-time code that pairs a new host agent with the account."""

    code: str
    expires_at: datetime | None = None


class AgentRelease(_Model):
    """The latest signed host agent release (`GET /v1/agent/latest`)."""

    version: str
    download_url: str
    sha256_url: str
    sha256: str | None = None


# ----------------------------------------------------------------------- sessions


class Session(_Model):
    """A metered session on a rig (the record; see `SessionHandle` for the live handle).

    `status` is `active`, `ended` or `failed`. `ended_reason` (None while active) is one
    of `client`, `owner_kill`, `idle_timeout`, `max_age`, `timeout`, `host_gone`,
    `unpaired`. `billed_minutes` counts whole wall-clock minutes, rounded up.
    `capture_mode` is `dxgi`, `x11-damage`, `gdi`, `sim`, … `desktop_state` is the rig's
    (see `Rig.desktop_state`) while the session is active and its host connected, else
    None.
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

    @property
    def id(self) -> str:
        """The session id (same as `session_id`)."""
        return self.session_id

    @property
    def is_active(self) -> bool:
        """True while the session accepts screen and input operations."""
        return self.status == "active"


class StreamCredentials(_Model):
    """WebRTC signaling credentials of a session (`GET /v1/sessions/{id}/stream`).

    `connect_url` is `signaling_url?token=<viewer_token>` and is good for one connection;
    `viewer_token` is a JWT valid for one hour.
    """

    signaling_url: str
    viewer_token: str
    rig_id: str
    session_id: str | None = None
    connect_url: str | None = None
    expires_at: datetime | None = None
    ice_servers: list[dict[str, Any]] = Field(default_factory=list)


class AppLaunchResult(_Model):
    """Answer of `POST …/app/launch`: the pid of the started process."""

    ok: bool
    pid: int


class AppKillResult(_Model):
    """Answer of `POST …/app/kill`: the pids that were terminated."""

    ok: bool
    killed: list[int] = Field(default_factory=list)


class InputResult(_Model):
    """Answer of `POST …/input`: every event of the batch ran; `count` of them."""

    ok: bool
    count: int


# -------------------------------------------------------------------------- input


class InputEvent(_Model):
    """One input event, in native desktop pixels.

    Build them with the class methods (`InputEvent.mouse_click(10, 20)`) or by fields.
    Fields left None are not sent. `delay_ms` (0…5000) is a host-side pause after the
    event. Scroll deltas are wheel notches: `dy` < 0 scrolls down, `dx` > 0 right.
    """

    type: InputEventType
    x: int | None = None
    y: int | None = None
    button: MouseButton | None = None
    dx: int | None = None
    dy: int | None = None
    key: str | None = None
    text: str | None = None
    delay_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The event as the API takes it: only the fields that are set."""
        return self.model_dump(exclude_none=True)

    @classmethod
    def mouse_move(cls, x: int, y: int, *, delay_ms: int | None = None) -> InputEvent:
        """Move the pointer to (`x`, `y`)."""
        return cls(type="mouse_move", x=x, y=y, delay_ms=delay_ms)

    @classmethod
    def mouse_click(
        cls,
        x: int | None = None,
        y: int | None = None,
        *,
        button: MouseButton = "left",
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Click `button`, after moving to (`x`, `y`) when given (both or neither)."""
        if (x is None) != (y is None):
            raise ValueError("x and y come together or not at all")
        return cls(type="mouse_click", x=x, y=y, button=button, delay_ms=delay_ms)

    @classmethod
    def mouse_scroll(
        cls,
        dx: int = 0,
        dy: int = 0,
        *,
        x: int | None = None,
        y: int | None = None,
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Scroll by wheel notches (`dy` < 0 is down), at (`x`, `y`) when given."""
        if (x is None) != (y is None):
            raise ValueError("x and y come together or not at all")
        return cls(type="mouse_scroll", dx=dx, dy=dy, x=x, y=y, delay_ms=delay_ms)

    @classmethod
    def key_press(cls, key: str, *, delay_ms: int | None = None) -> InputEvent:
        """Press and release a key or a chord such as `ctrl+shift+s`."""
        return cls(type="key_press", key=key, delay_ms=delay_ms)

    @classmethod
    def key_down(cls, key: str, *, delay_ms: int | None = None) -> InputEvent:
        """Press and hold a key (released by `key_up` or when the session ends)."""
        return cls(type="key_down", key=key, delay_ms=delay_ms)

    @classmethod
    def key_up(cls, key: str, *, delay_ms: int | None = None) -> InputEvent:
        """Release a key held by `key_down`."""
        return cls(type="key_up", key=key, delay_ms=delay_ms)

    @classmethod
    def type_text(cls, text: str, *, delay_ms: int | None = None) -> InputEvent:
        """Type Unicode text as text (not as key names); up to 10,000 characters."""
        return cls(type="type_text", text=text, delay_ms=delay_ms)


# ------------------------------------------------------------------------ screens


class Screenshot(_Model):
    """A JPEG of the desktop, with what is needed to map its pixels back to native.

    `width`x`height` is the JPEG's size; `native_width`x`native_height` the desktop's.
    `region` is the native rectangle the image shows (None: the whole desktop).
    """

    jpeg: bytes = Field(repr=False)
    width: int
    height: int
    native_width: int
    native_height: int
    region: Region | None = None

    @property
    def area(self) -> Region:
        """The native rectangle the image shows (the whole desktop without a region)."""
        if self.region is not None:
            return self.region
        return Region(0, 0, self.native_width, self.native_height)

    def to_native(self, x: float, y: float) -> tuple[int, int]:
        """Map image pixel (`x`, `y`) to native desktop coordinates, for clicks."""
        return image_to_native(x, y, image_w=self.width, image_h=self.height, area=self.area)

    def from_native(self, x: float, y: float) -> tuple[int, int]:
        """Map a native desktop point to the image pixel that shows it."""
        return native_to_image(x, y, image_w=self.width, image_h=self.height, area=self.area)

    def base64(self) -> str:
        """The JPEG as base64 text, as LLM image inputs take it."""
        return base64.b64encode(self.jpeg).decode("ascii")


class Target(_Model):
    """A click target (GroundingTarget) in native pixels: a control and its box.

    `id` is stable for the same control across calls. `source` is `uia` (the platform
    accessibility tree), `cv`, `grid` or `client`. When `masked` is true, `value` is the
    literal `[redacted]`.
    """

    id: str
    x: int
    y: int
    w: int
    h: int
    role: str | None = None
    name: str | None = None
    source: str | None = None
    focused: bool = False
    masked: bool = False
    value: str | None = None

    @property
    def center(self) -> tuple[int, int]:
        """The native point at the middle of the target's box (where a click lands)."""
        return (self.x + self.w // 2, self.y + self.h // 2)

    def contains(self, x: int, y: int) -> bool:
        """True when native point (`x`, `y`) lies inside the target's box."""
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h


def _find_target(targets: list[Target], name: str | None, role: str | None) -> Target | None:
    """First target matching `role` (case-insensitive) and `name`.

    An exact (case-insensitive) name match wins over a substring match, so
    `find_target(name="Save")` prefers "Save" to "Save as…".
    """
    wanted_role = None if role is None else role.casefold()
    wanted_name = None if name is None else name.casefold()
    partial: Target | None = None
    for target in targets:
        if wanted_role is not None and (target.role or "").casefold() != wanted_role:
            continue
        if wanted_name is None:
            return target
        target_name = (target.name or "").casefold()
        if target_name == wanted_name:
            return target
        if partial is None and wanted_name in target_name:
            partial = target
    return partial


class TargetList(_Model):
    """Answer of `GET …/targets`: targets in native pixels of a `width`x`height` desktop.

    `truncated` is true when the host's walk stopped at its budget (element cap or
    deadline): the list is partial, and a control missing from it may exist.
    """

    width: int
    height: int
    targets: list[Target] = Field(default_factory=list)
    truncated: bool = False

    def find_target(self, name: str | None = None, role: str | None = None) -> Target | None:
        """The first target whose name matches (exact beats substring) and role equals."""
        return _find_target(self.targets, name, role)

    def require_target(self, name: str | None = None, role: str | None = None) -> Target:
        """Like `find_target`, but raises TargetNotFoundError instead of returning None,
        so `click(target=…)` can never fall back to clicking wherever the pointer is."""
        return _require_target(self.targets, name, role)


class DirtyRects(_Model):
    """Changed rectangles since the last take, `[x, y, w, h]` in native pixels.

    When `available` is false (a fallback capture) there is no change metadata and the
    caller must assume the screen changed.
    """

    width: int
    height: int
    available: bool = True
    capture_mode: str | None = None
    rects: list[tuple[int, int, int, int]] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when something changed, or when nothing can be known."""
        return not self.available or len(self.rects) > 0


class ObserveText(_Model):
    """Structured text of the focused window: one readable line per target, a summary."""

    window_title: str | None = None
    window_role: str | None = None
    targets: list[str] = Field(default_factory=list)
    summary: str | None = None


class ObserveTiming(_Model):
    """Server-side timing of an observe call, in milliseconds.

    `host_jpeg_ms` and `host_uia_ms` are None until the host reports them; `image` says
    whether a JPEG was requested.
    """

    total_ms: float = 0
    screenshot_rtt_ms: float = 0
    dirty_rtt_ms: float = 0
    targets_rtt_ms: float = 0
    host_jpeg_ms: float | None = None
    host_uia_ms: float | None = None
    image: bool = True


class ObserveResult(_Model):
    """Frame, change flag, text and click targets in one round trip.

    `width`x`height` is the image's size (also without an image, the size it would have);
    targets are in native pixels. `jpeg_base64` is None when observed with `image=False`.
    `truncated` is true when the host's walk stopped at its budget: `targets` is partial.
    `desktop_state` is sampled on the host with the observation (see
    `Rig.desktop_state`); None from a gateway that does not report it.
    """

    width: int
    height: int
    native_width: int
    native_height: int
    timestamp: int | None = None
    jpeg_base64: str | None = Field(default=None, repr=False)
    dirty: DirtyRects | None = None
    changed: bool = True
    targets: list[Target] = Field(default_factory=list)
    truncated: bool = False
    text: ObserveText | None = None
    marked: bool = False
    timing: ObserveTiming | None = None
    desktop_state: str | None = None

    # The native region the caller asked for; the response does not echo it, so the SDK
    # records it to map image pixels back to native ones.
    _region: Region | None = PrivateAttr(default=None)

    @property
    def region(self) -> Region | None:
        """The native region this observation was cropped to (None: whole desktop)."""
        return self._region

    @property
    def jpeg(self) -> bytes | None:
        """The decoded JPEG, or None when observed without an image."""
        if self.jpeg_base64 is None:
            return None
        return base64.b64decode(self.jpeg_base64)

    def screenshot(self) -> Screenshot | None:
        """The image as a `Screenshot` (with `to_native`), or None without an image."""
        jpeg = self.jpeg
        if jpeg is None:
            return None
        return Screenshot(
            jpeg=jpeg,
            width=self.width,
            height=self.height,
            native_width=self.native_width,
            native_height=self.native_height,
            region=self._region,
        )

    def to_native(self, x: float, y: float) -> tuple[int, int]:
        """Map a pixel of the returned image to native desktop coordinates."""
        area = self._region or Region(0, 0, self.native_width, self.native_height)
        return image_to_native(x, y, image_w=self.width, image_h=self.height, area=area)

    def find_target(self, name: str | None = None, role: str | None = None) -> Target | None:
        """The first target whose name matches (exact beats substring) and role equals.

        Both comparisons ignore case; None means "any". Returns None when nothing matches.
        """
        return _find_target(self.targets, name, role)

    def require_target(self, name: str | None = None, role: str | None = None) -> Target:
        """Like `find_target`, but raises TargetNotFoundError instead of returning None,
        so `click(target=…)` can never fall back to clicking wherever the pointer is."""
        return _require_target(self.targets, name, role)


# ------------------------------------------------------------------ keys, webhooks


class ApiKey(_Model):
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


class Webhook(_Model):
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


class WebhookCreated(_Model):
    """Answer of `POST /v1/webhooks`: the webhook (with its one-time secret) and a warning."""

    webhook: Webhook
    warning: str | None = None

    @property
    def secret(self) -> str | None:
        """The signing secret (`whsec_…`); store it now, it is never returned again."""
        return self.webhook.secret


def _require_target(targets: list[Target], name: str | None, role: str | None) -> Target:
    found = _find_target(targets, name, role)
    if found is None:
        wanted = " ".join(part for part in (name, role) if part is not None) or "any"
        raise TargetNotFoundError(wanted)
    return found
