"""Operation names and bodies carried by `req`/`res` envelopes (and `note`s).

Gateway → agent operations take a `session_id`: the agent refuses a request for a
session it is not running (`session_mismatch`), so a late reply can never act on the
next session of the rig.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

# Gateway → agent
SESSION_START = "session/start"
SESSION_END = "session/end"
SCREEN_CAPTURE = "screen/capture"
SCREEN_DIRTY = "screen/dirty"
SCREEN_DIRTY_RETURN = "screen/dirty_return"
SCREEN_WAIT = "screen/wait"
SCREEN_CHANGED_SINCE = "screen/changed_since"
A11Y_TARGETS = "a11y/targets"
INPUT_BATCH = "input/batch"
APP_LAUNCH = "app/launch"
APP_KILL = "app/kill"
WAKE_SEND = "wake/send"
STREAM_OFFER = "stream/offer"
STREAM_CANDIDATE = "stream/candidate"
STREAM_CLOSE = "stream/close"
SESSION_OWNER_IDLE = "session/owner_idle"
# Agent → gateway
SESSION_OWNER_KILL = "session/owner_kill"
RIG_API_ACCESS = "rig/api_access"
# Agent → gateway notes (one-way, no reply)
DESKTOP_STATE = "desktop/state"
OWNER_PRESENCE = "owner/presence"

# Error codes an agent puts in a failed reply.
ERROR_INVALID_REQUEST = "invalid_request"
ERROR_SESSION_MISMATCH = "session_mismatch"
ERROR_APP_NOT_FOUND = "app_not_found"
ERROR_HOST = "host_error"
ERROR_UNKNOWN_OP = "unknown_op"
# Input refused because the desktop cannot be driven now; the detail is the state.
ERROR_DESKTOP_UNAVAILABLE = "desktop_unavailable"
# Input refused because the rig's owner used its own keyboard or mouse less than the
# session's `owner_idle_s` ago; the detail says when.
ERROR_OWNER_ACTIVE = "owner_active"
# An app session (`mode: "app"`) whose apps have no window on screen: screen reads and
# pointer input have nothing to cover.
ERROR_NO_APP_WINDOW = "no_app_window"
# A batch stopped (or refused) on the host; the failed reply's body says where
# (`InputStopped`: receipts of what ran, the index it stopped at, changed rectangles).
ERROR_TARGET_GONE = "target_gone"
ERROR_EXPECTATION_FAILED = "expectation_failed"
ERROR_STALE_FRAME = "stale_frame"

MASKED_VALUE = "[redacted]"
# Past this many disjoint dirty rectangles a caller gains nothing over one bounding box.
MAX_DIRTY_RECTS = 64

Coordinate = Annotated[int, Field(ge=0, le=65535)]
# A duration a host reports: 1e400 parses as infinity, which no reply may carry on.
Milliseconds = Annotated[float, Field(ge=0, le=3_600_000, allow_inf_nan=False)]
Extent = Annotated[int, Field(ge=1, le=65535)]
# A window's native rectangle, clipped to the capture: x, y, w, h.
AppWindow = tuple[Coordinate, Coordinate, Extent, Extent]

# Whether the desktop can be seen and driven now: "locked" (lock screen),
# "secure_desktop" (a UAC or sign-in prompt), "screensaver", "no_display" (no
# interactive session, or the display is off), "unknown" (cannot be told). The agent
# refuses input while it is not "normal". The backends' `Desktop.desktop_state` returns
# these names (`rigway.agent.backends.base` re-exports them).
DesktopState = Literal["normal", "locked", "secure_desktop", "screensaver", "no_display", "unknown"]
DESKTOP_STATES: tuple[DesktopState, ...] = (
    "normal",
    "locked",
    "secure_desktop",
    "screensaver",
    "no_display",
    "unknown",
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Region(_Body):
    x: Coordinate
    y: Coordinate
    w: Extent
    h: Extent


class SessionStart(_Body):
    session_id: str
    mode: Literal["desktop", "app"] = "desktop"
    # API input waits until the rig's own keyboard and mouse have rested this long.
    owner_idle_s: int = Field(default=10, ge=0, le=3600)


class SessionOwnerIdle(_Body):
    """The owner changed the rig's delay while this session runs: it applies now."""

    session_id: str
    owner_idle_s: int = Field(ge=0, le=3600)


class SessionStarted(_Body):
    native_width: int
    native_height: int
    capture_mode: str


class SessionEnd(_Body):
    session_id: str
    reason: str


class SessionEnded(_Body):
    released_inputs: list[str] = Field(default_factory=list)
    killed_pids: list[int] = Field(default_factory=list)


class PicturePatch(_Body):
    """A delta's capture: its region, pasted onto the picture kept for `base_mark`, is
    the caller's picture now, kept for `mark` (the delta frame's damage mark). Sent only
    to a host whose `screen/changed_since` answered `compared`."""

    base_mark: int = Field(ge=0)
    mark: int = Field(ge=0)


class ScreenCapture(_Body):
    session_id: str
    quality: int = Field(default=85, ge=40, le=100)
    max_width: int | None = Field(default=None, ge=16, le=16384)
    region: Region | None = None
    mark: bool = False
    picture_patch: PicturePatch | None = None


class DrawnMark(_Body):
    index: int = Field(ge=1)
    id: str
    labelled: bool = True


class ScreenCaptured(_Body):
    """Reply body; the JPEG bytes ride in the same binary frame."""

    width: int
    height: int
    native_width: int
    native_height: int
    host_jpeg_ms: Milliseconds
    cached: bool
    marked: bool
    # The host's damage mark when the frame was grabbed: `screen/changed_since` and a
    # batch's `require_unchanged` ask what changed after it. 0 from an older agent.
    damage_mark: int = Field(default=0, ge=0)
    # What `mark` drew: each target's 1-based index in the walk, and whether its label
    # found a free spot. Empty from an older agent.
    marks: list[DrawnMark] = Field(default_factory=list)
    # An app session's window (native x, y, w, h): the image shows it (or the region
    # asked for inside it). None in a desktop session.
    app_window: AppWindow | None = None


class ScreenDirty(_Body):
    session_id: str


class DirtyRects(_Body):
    width: int
    height: int
    available: bool
    capture_mode: str
    rects: list[tuple[int, int, int, int]]
    # Sampled with the take, so an observe reports it fresh; None from an agent that
    # predates the field (the gateway then uses the state last noted).
    desktop_state: DesktopState | None = None
    # An app session's window; its rects lie inside it. None in a desktop session.
    app_window: AppWindow | None = None
    # Whether the owner uses the rig's own keyboard or mouse now (sampled likewise);
    # None from an agent that predates the field.
    owner_active: bool | None = None


class ChangedSince(_Body):
    """What changed on the screen after a damage mark (a frame's `damage_mark`)."""

    session_id: str
    damage_mark: int = Field(ge=0)


class ScreenChanged(_Body):
    """`known: false` when the host cannot tell (no damage on its backend, or the mark
    is older than its log reaches): then treat everything as changed. `damage_mark` is
    the host's mark taken before the answer was read, so a later ask from it may
    over-report, never under-report. Past MAX_DIRTY_RECTS the rects are one bounding box."""

    known: bool
    damage_mark: int = Field(ge=0)
    rects: list[tuple[Coordinate, Coordinate, Extent, Extent]] = Field(
        default_factory=list, max_length=MAX_DIRTY_RECTS
    )
    # The damage was checked against the pixels of the picture shown at the mark: each
    # rect is the bounding box of the pixels that differ (damage whose pixels came out
    # the same is left out). False from a host that kept no picture for the mark, or
    # that predates the check.
    compared: bool = False


class DirtyReturn(_Body):
    """Rectangles a `screen/dirty` took that never reached the caller (observe's
    screenshot leg failed): the agent adds them back for the next take."""

    session_id: str
    rects: list[tuple[Coordinate, Coordinate, Extent, Extent]] = Field(
        min_length=1, max_length=MAX_DIRTY_RECTS
    )


class A11yTargets(_Body):
    session_id: str


class Target(_Body):
    id: str
    x: int
    y: int
    w: int
    h: int
    role: str
    name: str
    source: Literal["uia", "cv", "grid", "client"] = "uia"
    focused: bool = False
    masked: bool = False
    value: str | None = None


class TargetSnapshot(_Body):
    width: int
    height: int
    window_title: str
    window_role: str
    targets: list[Target]
    truncated: bool
    host_uia_ms: Milliseconds
    # An app session's window; its targets show inside it. None in a desktop session.
    app_window: AppWindow | None = None


class InputEvent(_Body):
    """One validated input event (the gateway validated it whole before sending).

    Points are native pixels (the gateway mapped image coordinates already). `target`
    (pointer events only, never with x,y) names a target id the host finds in a fresh
    accessibility snapshot when the event runs, acting at the centre of its bounds.
    `expect: "change"`: after the event, wait up to `expect_timeout_ms` for damage,
    else stop the batch with `expectation_failed`."""

    type: Literal[
        "mouse_move",
        "mouse_click",
        "mouse_down",
        "mouse_up",
        "mouse_scroll",
        "key_press",
        "key_down",
        "key_up",
        "type_text",
    ]
    x: int | None = None
    y: int | None = None
    target: str | None = Field(default=None, min_length=1, max_length=64)
    button: Literal["left", "right", "middle"] | None = None
    dx: int | None = None
    dy: int | None = None
    key: str | None = None
    text: str | None = None
    delay_ms: int = 0
    expect: Literal["change"] | None = None
    expect_timeout_ms: int = Field(default=1000, ge=1, le=5000)


class Settle(_Body):
    """After the last event, answer once the screen has been still for `quiet_ms`, or
    after `timeout_ms` (not settled)."""

    quiet_ms: int = Field(default=100, ge=20, le=2000)
    timeout_ms: int = Field(default=2000, ge=50, le=10000)


class RequireUnchanged(_Body):
    """Refuse the batch (`stale_frame`, nothing run) when damage after `damage_mark`
    (a frame's, from `ScreenCaptured.damage_mark`) lies within `radius_px` of any
    point the batch acts on (x,y given; target-bound points are resolved later)."""

    damage_mark: int = Field(ge=0)
    radius_px: int = Field(default=24, ge=0, le=4096)


class InputBatch(_Body):
    session_id: str
    events: list[InputEvent] = Field(min_length=1, max_length=100)
    settle: Settle | None = None
    require_unchanged: RequireUnchanged | None = None


class EventReceipt(_Body):
    """What one event did: `at_ms` after the batch started, the native point used
    (None for keyboard events), whether the screen changed after it before the next
    event began (True when the backend cannot tell)."""

    index: int = Field(ge=0)
    type: str
    ok: bool
    at_ms: Milliseconds
    x: int | None = None
    y: int | None = None
    changed: bool


class SettleResult(_Body):
    settled: bool
    waited_ms: Milliseconds


class InputDone(_Body):
    count: int
    events: list[EventReceipt] = Field(default_factory=list)
    settle: SettleResult | None = None


class InputStopped(_Body):
    """The body of a failed `input/batch` reply whose code is target_gone,
    expectation_failed, stale_frame, desktop_unavailable or owner_active: the receipts of
    what ran (the event at `stopped_at` has its own, with ok false), and for stale_frame
    the changed rectangles near the batch's points."""

    events: list[EventReceipt] = Field(default_factory=list)
    stopped_at: int | None = Field(default=None, ge=0)
    rects: list[tuple[int, int, int, int]] = Field(default_factory=list)


class ScreenWait(_Body):
    """Wait on the host: `change` (any damage after the wait began), `quiet` (still
    for `quiet_ms`) or `target` (a control matching every given field appears in the
    focused window; snapshots at most every 150 ms). Bounded by `timeout_ms`."""

    session_id: str
    until: Literal["change", "quiet", "target"]
    timeout_ms: int = Field(ge=1, le=30000)
    quiet_ms: int = Field(default=100, ge=20, le=10000)
    target_name: str | None = Field(default=None, min_length=1, max_length=256)
    target_role: str | None = Field(default=None, min_length=1, max_length=64)
    target_id: str | None = Field(default=None, min_length=1, max_length=64)


class ScreenWaited(_Body):
    met: bool
    waited_ms: Milliseconds
    target: Target | None = None


class AppLaunch(_Body):
    session_id: str
    path: str = Field(min_length=1, max_length=4096)
    args: list[str] = Field(default_factory=list, max_length=64)


class AppLaunched(_Body):
    pid: int


class AppKill(_Body):
    session_id: str
    pid: int | None = None


class AppsKilled(_Body):
    killed: list[int]


class OwnerKill(_Body):
    session_id: str | None = None


class RigApiAccess(_Body):
    """The owner, at the rig (its tray), turns the rig's API access off or on, as the
    console's toggle does; None only reads it. A live session is not ended by it."""

    enabled: bool | None = None


class RigApiAccessState(_Body):
    api_access_enabled: bool


class DesktopStateNote(_Body):
    """The desktop's state changed (`desktop/state` note): sent on each change while
    connected; the state at connect travels in `hello.desktop_state`."""

    state: DesktopState


class OwnerPresenceNote(_Body):
    """The owner started or stopped using the rig's own keyboard or mouse (`owner/presence`
    note, sent on each change while connected; a connection starts with "not active")."""

    active: bool


class WakeSend(_Body):
    """Ask a rig to send a Wake-on-LAN magic packet to a sleeping neighbour on its LAN."""

    mac: str = Field(pattern=r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
    broadcast: str = "255.255.255.255"
    port: int = Field(default=9, ge=1, le=65535)


# ---- live video (WebRTC signaling relayed over the link; media flows peer to peer) ----

ViewerId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class IceServer(_Body):
    """One STUN/TURN server, as in the browser's RTCIceServer."""

    urls: list[str] = Field(
        min_length=1, max_length=8, description="The server's URLs (`stun:…`, `turn:…`)."
    )
    username: str | None = Field(
        default=None, max_length=512, description="A TURN server's user name."
    )
    credential: str | None = Field(
        default=None, max_length=512, description="A TURN server's password."
    )


class StreamOffer(_Body):
    """A viewer's SDP offer: the agent answers with its own peer connection."""

    session_id: str
    viewer_id: ViewerId
    sdp: str = Field(min_length=1, max_length=65536)
    # The viewer's cap on the picture width; the agent's own cap applies too.
    max_width: int | None = Field(default=None, ge=16, le=16384)
    ice_servers: list[IceServer] = Field(default_factory=list, max_length=8)


class StreamAnswer(_Body):
    sdp: str
    encoder: str
    width: int
    height: int


class StreamCandidate(_Body):
    """A trickled ICE candidate of the viewer; `candidate` None: end of candidates."""

    session_id: str
    viewer_id: ViewerId
    candidate: str | None = Field(default=None, max_length=1024)
    sdp_mid: str | None = Field(default=None, max_length=64)
    sdp_mline_index: int | None = Field(default=None, ge=0, le=64)


class StreamClose(_Body):
    """Stop one viewer's stream, or (viewer_id None) every stream of the session."""

    session_id: str
    viewer_id: ViewerId | None = None


class StreamClosed(_Body):
    closed: int
