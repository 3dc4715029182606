"""Public shapes of the desktop operations. Input events are validated whole here,
strictly (no `true` → 1, no floats for ints), before anything reaches the host."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from rigway.protocol import ops
from rigway.protocol.keys import UnknownKeyError, canonical_key, parse_chord
from rigway.protocol.ops import DesktopState

_STRICT = ConfigDict(strict=True, extra="forbid")
Coordinate = Annotated[int, Field(ge=0, le=65535)]
DelayMs = Annotated[int, Field(ge=0, le=5000)]
ScrollNotches = Annotated[int, Field(ge=-100, le=100)]
ExpectTimeoutMs = Annotated[int, Field(ge=1, le=5000)]
DEFAULT_EXPECT_TIMEOUT_MS = 1000
# A target id from targets or observe ("t_" and ten hex digits today); any other id is
# looked for all the same and is gone (409 target_gone).
TargetId = Annotated[str, Field(min_length=1, max_length=64)]
# A frame id from X-Frame-Id or an observe's frame_id; an unknown one is 409 frame_expired.
FrameId = Annotated[str, Field(min_length=1, max_length=64)]
MouseButton = Literal["left", "right", "middle"]
MAX_TEXT_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class QueryBounds:
    low: int
    high: int


# The integer query parameters of screenshot and observe, with their bounds.
SCREEN_QUERY_BOUNDS: dict[str, QueryBounds] = {
    "max_width": QueryBounds(16, 16384),
    "quality": QueryBounds(40, 100),
    "x": QueryBounds(0, 65535),
    "y": QueryBounds(0, 65535),
    "w": QueryBounds(1, 65535),
    "h": QueryBounds(1, 65535),
}
DEFAULT_QUALITY = 85
# Written once for the query parameters of screenshot and observe and for a batch's
# `observe`, which takes the same names.
SCREEN_QUERY_DESCRIPTIONS = {
    "max_width": "Caps the image's long edge, in pixels (never upscales); after the region.",
    "quality": "JPEG quality.",
    "x": "The region's left edge in native pixels; x, y, w and h come together or not at all.",
    "y": "The region's top edge in native pixels.",
    "w": "The region's width in native pixels; the region must lie inside the desktop.",
    "h": "The region's height in native pixels.",
    "image": "1: the answer carries the screenshot (`jpeg_base64`); 0: no image, no frame.",
    "mark": "1: draw each target's box and its 1-based index on the image.",
    "since": (
        "A frame id this session was shown: answer only what changed since that frame "
        "(`changed_region`, `targets_diff`); an unknown one is 409 frame_expired."
    ),
}
# How such an integer is written: decimal digits only, never "85.0", "1_000" or " 85".
DECIMAL_DIGITS = "[0-9]{1,9}"


class _Event(BaseModel):
    model_config = _STRICT
    delay_ms: DelayMs = Field(default=0, description="A pause on the host after the event.")
    # After the event, the host waits up to expect_timeout_ms for the screen to change;
    # if it does not, the batch stops there (409 expectation_failed).
    expect: Literal["change"] | None = Field(
        default=None,
        description=(
            "After the event and its pause, the host waits `expect_timeout_ms` for the "
            "screen to change; if it does not, the batch stops there "
            "(409 expectation_failed)."
        ),
    )
    expect_timeout_ms: ExpectTimeoutMs = Field(
        default=DEFAULT_EXPECT_TIMEOUT_MS,
        description='How long to wait for a change; only with `"expect": "change"`.',
    )

    @model_validator(mode="after")
    def _timeout_with_expect(self) -> _Event:
        if self.expect is None and "expect_timeout_ms" in self.model_fields_set:
            raise ValueError('expect_timeout_ms is given only with "expect": "change"')
        return self


class _PointerEvent(_Event):
    """A pointer event acts at x,y (native pixels, or a frame's image pixels with the
    batch's `"coords": "image"`), or at the centre of the target `target` names as the
    host finds it when the event runs; neither: where the pointer is."""

    x: Coordinate | None = Field(
        default=None,
        description=(
            "Where the event acts: native pixels, or the frame's image pixels with "
            '`"coords": "image"`; with `y`, or neither.'
        ),
    )
    y: Coordinate | None = Field(default=None, description="The point's y, with `x`.")
    target: TargetId | None = Field(
        default=None,
        description=(
            "A target id from targets or observe, instead of x,y: the host acts at the "
            "centre of that control's current bounds (409 target_gone when it is not there)."
        ),
    )

    @model_validator(mode="after")
    def _one_way_to_point(self) -> _PointerEvent:
        if (self.x is None) != (self.y is None):
            raise ValueError("x and y come together or not at all")
        if self.target is not None and self.x is not None:
            raise ValueError("an event gives x,y or a target, not both")
        return self


class MouseMove(_PointerEvent):
    type: Literal["mouse_move"] = Field(description="Moves the pointer to x,y or to a target.")

    @model_validator(mode="after")
    def _somewhere_to_go(self) -> MouseMove:
        if self.x is None and self.target is None:
            raise ValueError("mouse_move needs x,y or a target")
        return self


class MouseClick(_PointerEvent):
    type: Literal["mouse_click"] = Field(
        description="Clicks a button, moving first when x,y or a target is given."
    )
    button: MouseButton = Field(default="left", description="The mouse button.")


class MouseDown(_PointerEvent):
    type: Literal["mouse_down"] = Field(
        description="Presses a button (a drag: down, moves, up), moving first to a point given."
    )
    button: MouseButton = Field(default="left", description="The mouse button.")


class MouseUp(_PointerEvent):
    type: Literal["mouse_up"] = Field(
        description="Releases a button, moving first when a point is given."
    )
    button: MouseButton = Field(default="left", description="The mouse button.")


class MouseScroll(_PointerEvent):
    type: Literal["mouse_scroll"] = Field(
        description="Scrolls by notches, at the point given or where the pointer is."
    )
    dx: ScrollNotches = Field(default=0, description="Notches to scroll sideways.")
    dy: ScrollNotches = Field(default=0, description="Notches to scroll; below 0 scrolls down.")


class KeyPress(_Event):
    type: Literal["key_press"] = Field(
        description="Presses and releases a key or a chord such as `ctrl+shift+s`."
    )
    key: str = Field(
        min_length=1,
        max_length=64,
        description="A key name, or a chord of them joined by `+` (`ctrl+shift+s`).",
    )

    @field_validator("key")
    @classmethod
    def _known_chord(cls, key: str) -> str:
        try:
            return "+".join(parse_chord(key))
        except UnknownKeyError as exc:
            raise ValueError(str(exc)) from exc


class _SingleKey(_Event):
    key: str = Field(min_length=1, max_length=32, description="One key name (`shift`, `a`).")

    @field_validator("key")
    @classmethod
    def _known_key(cls, key: str) -> str:
        try:
            return canonical_key(key)
        except UnknownKeyError as exc:
            raise ValueError(str(exc)) from exc


class KeyDown(_SingleKey):
    type: Literal["key_down"] = Field(
        description="Presses a key and holds it (released at the session's end at the latest)."
    )


class KeyUp(_SingleKey):
    type: Literal["key_up"] = Field(description="Releases a held key.")


class TypeText(_Event):
    type: Literal["type_text"] = Field(description="Types text, any Unicode, as text.")
    text: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="The text to type, any Unicode."
    )


PointerEvent = MouseMove | MouseClick | MouseDown | MouseUp | MouseScroll
InputEvent = Annotated[
    MouseMove
    | MouseClick
    | MouseDown
    | MouseUp
    | MouseScroll
    | KeyPress
    | KeyDown
    | KeyUp
    | TypeText,
    Field(discriminator="type"),
]


class SettleIn(BaseModel):
    """After the last event, answer once the screen was still for quiet_ms (or after
    timeout_ms, not settled)."""

    model_config = _STRICT
    quiet_ms: Annotated[int, Field(ge=20, le=2000)] = Field(
        default=100, description="How long the screen must be still; at most `timeout_ms`."
    )
    timeout_ms: Annotated[int, Field(ge=50, le=10000)] = Field(
        default=2000, description="The longest the host waits for the screen to settle."
    )

    @model_validator(mode="after")
    def _quiet_within_timeout(self) -> SettleIn:
        if self.quiet_ms > self.timeout_ms:
            raise ValueError("quiet_ms cannot exceed timeout_ms")
        return self


def _screen_bound(name: str) -> Any:
    bounds = SCREEN_QUERY_BOUNDS[name]
    return Field(ge=bounds.low, le=bounds.high)


class ObserveIn(BaseModel):
    """The query parameters of `GET /observe`, as a batch's `observe`: the same names,
    bounds and defaults (`image` and `mark` 0 or 1)."""

    model_config = _STRICT
    image: Annotated[int, Field(ge=0, le=1)] = Field(
        default=1, description=SCREEN_QUERY_DESCRIPTIONS["image"]
    )
    mark: Annotated[int, Field(ge=0, le=1)] = Field(
        default=0, description=SCREEN_QUERY_DESCRIPTIONS["mark"]
    )
    max_width: Annotated[int, _screen_bound("max_width")] | None = Field(
        default=None, description=SCREEN_QUERY_DESCRIPTIONS["max_width"]
    )
    quality: Annotated[int, _screen_bound("quality")] = Field(
        default=DEFAULT_QUALITY, description=SCREEN_QUERY_DESCRIPTIONS["quality"]
    )
    x: Annotated[int, _screen_bound("x")] | None = Field(
        default=None, description=SCREEN_QUERY_DESCRIPTIONS["x"]
    )
    y: Annotated[int, _screen_bound("y")] | None = Field(
        default=None, description=SCREEN_QUERY_DESCRIPTIONS["y"]
    )
    w: Annotated[int, _screen_bound("w")] | None = Field(
        default=None, description=SCREEN_QUERY_DESCRIPTIONS["w"]
    )
    h: Annotated[int, _screen_bound("h")] | None = Field(
        default=None, description=SCREEN_QUERY_DESCRIPTIONS["h"]
    )

    @model_validator(mode="after")
    def _whole_region(self) -> ObserveIn:
        given = [v is not None for v in (self.x, self.y, self.w, self.h)]
        if any(given) and not all(given):
            raise ValueError("x, y, w and h come together or not at all")
        return self


class InputBatchIn(BaseModel):
    model_config = _STRICT
    events: list[InputEvent] = Field(
        min_length=1, max_length=100, description="The events, run in order."
    )
    frame_id: FrameId | None = Field(
        default=None,
        description=(
            "A frame the caller was shown (a screenshot's `X-Frame-Id`, an observe's "
            "`frame_id`); an unknown or forgotten one is 409 frame_expired."
        ),
    )
    coords: Literal["native", "image"] = Field(
        default="native",
        description=(
            '"image": every point is in that frame\'s image pixels, mapped to native ones '
            '(needs `frame_id`); "native": the desktop\'s own pixels.'
        ),
    )
    require_unchanged: bool = Field(
        default=False,
        description=(
            "If the screen changed within 24 native pixels of a point of the batch since "
            "`frame_id`, nothing runs: 409 stale_frame with the changed rectangles."
        ),
    )
    settle: SettleIn | None = Field(
        default=None, description="After the last event, wait for the screen to be still."
    )
    observe: ObserveIn | None = Field(
        default=None,
        description="After the batch and its settle, answer with an observe of these parameters.",
    )

    @model_validator(mode="after")
    def _frame_when_needed(self) -> InputBatchIn:
        if self.frame_id is None and self.coords == "image":
            raise ValueError('"coords": "image" needs a frame_id')
        if self.frame_id is None and self.require_unchanged:
            raise ValueError('"require_unchanged": true needs a frame_id')
        return self


class AppLaunchIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"examples": [{"path": "gnome-calculator", "args": []}]},
    )
    path: str = Field(
        min_length=1,
        max_length=4096,
        description="An absolute path, or a name on the host's PATH.",
    )
    args: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=64, description="Its arguments."
    )


class AppLaunchOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"ok": True, "pid": 4242}]})
    ok: bool = Field(description="Always true: a launch that fails is an error.")
    pid: int = Field(description="The launched app's process id on the host.")


class AppKillIn(BaseModel):
    model_config = ConfigDict(
        strict=True, extra="forbid", json_schema_extra={"examples": [{"pid": 4242}]}
    )
    pid: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = Field(
        default=None,
        description=(
            "One app this session launched (another pid is 404 app_not_found); absent: all of them."
        ),
    )


class AppKillOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"ok": True, "killed": [4242]}]})
    ok: bool = Field(description="Always true.")
    killed: list[int] = Field(
        description="The pids killed; each one's whole process tree died with it."
    )


_RECTS = "Changed rectangles, each `[x, y, w, h]` in native pixels."


class DirtyOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "width": 1280,
                    "height": 800,
                    "available": True,
                    "capture_mode": "sim",
                    "rects": [[0, 0, 1280, 32]],
                }
            ]
        }
    )
    width: int = Field(description="The native desktop's width in pixels.")
    height: int = Field(description="The native desktop's height in pixels.")
    available: bool = Field(
        description="Whether the host reports damage; false: treat everything as changed."
    )
    capture_mode: str = Field(description="How the host captures: `sim`, `x11-damage`, `dxgi`…")
    rects: list[tuple[int, int, int, int]] = Field(description=f"{_RECTS} Each read consumes them.")


class TargetOut(BaseModel):
    id: str = Field(description="The target's id: name it in input events and waits.")
    x: int = Field(description="Its bounds' left edge in native pixels.")
    y: int = Field(description="Its bounds' top edge in native pixels.")
    w: int = Field(description="Its bounds' width in native pixels.")
    h: int = Field(description="Its bounds' height in native pixels.")
    role: str = Field(description="Its accessibility role (`button`, `text`, …).")
    name: str = Field(description="Its accessible name.")
    source: Literal["uia", "cv", "grid", "client"] = Field(
        description="Where it was found: the accessibility tree (`uia`) or another way."
    )
    focused: bool = Field(description="Whether it has the keyboard focus.")
    masked: bool = Field(description="A password-like field: its value is never sent.")
    value: str | None = Field(
        description="Its value, `[redacted]` when masked; null when it has none."
    )


_TARGET_EXAMPLE: JsonDict = {
    "id": "t_3f9a01c2de",
    "x": 880,
    "y": 380,
    "w": 160,
    "h": 32,
    "role": "text",
    "name": "Username",
    "source": "uia",
    "focused": False,
    "masked": False,
    "value": "",
}


class TargetsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"width": 1280, "height": 800, "targets": [_TARGET_EXAMPLE], "truncated": False}
            ]
        }
    )
    width: int = Field(description="The native desktop's width in pixels.")
    height: int = Field(description="The native desktop's height in pixels.")
    targets: list[TargetOut] = Field(
        description="The focused window's controls, from its accessibility tree."
    )
    truncated: bool = Field(
        description=(
            "The host's walk stopped at its budget (element cap or deadline): the list is "
            "partial, so a missing control may just not have been reached."
        )
    )


DEFAULT_WAIT_QUIET_MS = 100


class WaitTargetIn(BaseModel):
    """What a `target` wait looks for: a control matching every field given (name: a
    case-insensitive substring; role and id exactly)."""

    model_config = _STRICT
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="A case-insensitive substring of the control's name.",
    )
    role: str | None = Field(
        default=None, min_length=1, max_length=64, description="The control's role, exactly."
    )
    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="A target id from targets or observe, exactly.",
    )

    @model_validator(mode="after")
    def _names_something(self) -> WaitTargetIn:
        if self.name is None and self.role is None and self.id is None:
            raise ValueError("a target names at least one of name, role, id")
        return self


class WaitIn(BaseModel):
    """`change`: any damage after the wait began; `quiet`: still for quiet_ms;
    `target`: a matching control appears in the focused window."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"until": "target", "timeout_ms": 5000, "target": {"name": "Sign in"}},
                {"until": "quiet", "timeout_ms": 2000, "quiet_ms": 200},
            ]
        },
    )
    until: Literal["change", "quiet", "target"] = Field(
        description=(
            "`change`: any damage after the wait began; `quiet`: the screen still for "
            "`quiet_ms`; `target`: a control matching `target` in the focused window."
        )
    )
    timeout_ms: Annotated[int, Field(ge=1, le=30000)] = Field(
        description="The longest the wait lasts; not met by then is a 200 with `met: false`."
    )
    quiet_ms: Annotated[int, Field(ge=20, le=10000)] | None = Field(
        default=None,
        description="With `quiet` only: how long the screen must be still (default 100).",
    )
    target: WaitTargetIn | None = Field(
        default=None,
        description="With `target` only (and required there): what to look for.",
    )

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> WaitIn:
        # A field another kind of wait would read is a mistake the caller should see,
        # not something quietly ignored.
        if (self.until == "target") != (self.target is not None):
            raise ValueError('"target" comes with "until": "target", and only with it')
        if self.quiet_ms is not None and self.until != "quiet":
            raise ValueError('"quiet_ms" comes only with "until": "quiet"')
        if self.until == "quiet" and self.effective_quiet_ms > self.timeout_ms:
            raise ValueError(
                f"quiet_ms ({self.effective_quiet_ms}) cannot exceed timeout_ms "
                f"({self.timeout_ms}): the wait could never be met"
            )
        return self

    @property
    def effective_quiet_ms(self) -> int:
        return DEFAULT_WAIT_QUIET_MS if self.quiet_ms is None else self.quiet_ms


class WaitOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"met": True, "waited_ms": 340, "target": _TARGET_EXAMPLE}]}
    )
    met: bool = Field(description="Whether the condition held before `timeout_ms` passed.")
    waited_ms: int = Field(description="How long the host waited, from the start to its answer.")
    target: TargetOut | None = Field(
        description="The control a `target` wait found; null otherwise, and when not met."
    )


class ObserveTextOut(BaseModel):
    window_title: str = Field(description="The focused window's title.")
    window_role: str = Field(description="The focused window's role.")
    targets: list[str] = Field(
        description="One line per target, `[n] name (role) id=…`, numbered from 1."
    )
    summary: str = Field(
        description="A short summary for a model to read; says when targets failed or were cut."
    )


class DirtyTakeOut(BaseModel):
    width: int = Field(description="The native desktop's width in pixels.")
    height: int = Field(description="The native desktop's height in pixels.")
    rects: list[tuple[int, int, int, int]] = Field(description=f"{_RECTS} Taken by this observe.")


class ObserveTimingOut(BaseModel):
    total_ms: int = Field(description="The whole observe, measured on the gateway.")
    screenshot_rtt_ms: int = Field(description="The screenshot leg's round trip.")
    dirty_rtt_ms: int = Field(description="The dirty leg's round trip.")
    targets_rtt_ms: int = Field(description="The targets leg's round trip.")
    host_jpeg_ms: int | None = Field(
        description="The host's own capture and encode time, as it reported it."
    )
    host_uia_ms: int | None = Field(
        description="The host's accessibility walk time, as it reported it."
    )
    image: bool = Field(description="Whether an image was taken.")


class MarkOut(BaseModel):
    """One target drawn with mark=1: `index` is the number on the image and of its
    `text.targets` line; `labelled` is false when the screen was too crowded (or the
    control too small) for its label, so only its box is drawn."""

    index: int = Field(description="The number drawn, 1-based, as in `text.targets`.")
    id: str = Field(description="The target's id.")
    labelled: bool = Field(description="False: only its box is drawn (no room for a label).")


class TargetsDiffOut(BaseModel):
    """Targets now against those shown with the since frame, by id: `added` and
    `changed` (any public field differs) in full, `removed` as ids."""

    added: list[TargetOut] = Field(description="Targets not shown with the frame.")
    removed: list[str] = Field(description="Ids of targets gone since the frame.")
    changed: list[TargetOut] = Field(description="Targets with any field different.")


class ChangedImageOut(BaseModel):
    """One part of the picture that changed since the `since` frame, at the scale of the
    picture: paste it onto that picture at `region` times the scale."""

    region: tuple[int, int, int, int] = Field(
        description="The native `[x, y, w, h]` it shows, on the scale's pixel grid."
    )
    width: int = Field(description="The image's width in pixels.")
    height: int = Field(description="The image's height in pixels.")
    jpeg_base64: str = Field(description="The JPEG, base64.")


class ObserveOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "width": 1280,
                    "height": 800,
                    "native_width": 1280,
                    "native_height": 800,
                    "timestamp": 1764107000000,
                    "frame_id": "f_8c1e2a90b3",
                    "jpeg_base64": "/9j/4AAQSkZJRgABAQ…",
                    "dirty": {"width": 1280, "height": 800, "rects": [[0, 0, 1280, 32]]},
                    "changed": True,
                    "targets": [_TARGET_EXAMPLE],
                    "truncated": False,
                    "text": {
                        "window_title": "Sign in",
                        "window_role": "frame",
                        "targets": ["[1] Username (text) id=t_3f9a01c2de"],
                        "summary": "Sign in: 1 target",
                    },
                    "marked": False,
                    "marks": [],
                    "timing": {
                        "total_ms": 38,
                        "screenshot_rtt_ms": 30,
                        "dirty_rtt_ms": 4,
                        "targets_rtt_ms": 12,
                        "host_jpeg_ms": 21,
                        "host_uia_ms": 9,
                        "image": True,
                    },
                    "desktop_state": "normal",
                    "owner_active": False,
                }
            ]
        }
    )
    width: int = Field(
        description=(
            "The image's width (the region's, scaled), in pixels; with `since` the "
            "picture's the changed images paste onto."
        )
    )
    height: int = Field(description="The image's height in pixels (likewise).")
    native_width: int = Field(description="The native desktop's width in pixels.")
    native_height: int = Field(description="The native desktop's height in pixels.")
    timestamp: int = Field(description="When the observe was taken, Unix milliseconds.")
    frame_id: str | None = Field(
        description=(
            "The frame the image shows (input may point into it); with `since` the "
            "picture with the changed images pasted in; null with image=0."
        )
    )
    jpeg_base64: str | None = Field(
        default=None, description="The JPEG, base64; absent with image=0 or nothing changed."
    )
    dirty: DirtyTakeOut = Field(description="The rectangles this observe took.")
    changed: bool = Field(description="True when rects are non-empty or damage is unavailable.")
    targets: list[TargetOut] = Field(
        description="The focused window's controls (absent with `since`: see `targets_diff`)."
    )
    truncated: bool = Field(
        description="The host's accessibility walk stopped at its budget: `targets` is partial."
    )
    text: ObserveTextOut = Field(description="The screen as text, for a model to read.")
    marked: bool = Field(description="Whether mark=1 drew anything on the image.")
    marks: list[MarkOut] = Field(
        default_factory=list,
        description="The targets mark=1 drew, in index order; empty when nothing was marked.",
    )
    timing: ObserveTimingOut = Field(description="Real measurements, in milliseconds.")
    desktop_state: DesktopState = Field(
        description=(
            "Sampled on the host with the dirty take: input is refused unless `normal` "
            "(`locked`, `secure_desktop`, `screensaver`, `no_display`, `unknown`)."
        )
    )
    owner_active: bool = Field(
        default=False,
        description=(
            "Sampled with the dirty take: the rig's owner used its own keyboard or mouse "
            "within their delay, and input answers `409 owner_active` until it rests."
        ),
    )
    app_window: list[int] | None = Field(
        default=None,
        description=(
            "`app` mode: `[x, y, w, h]` (native pixels) of the session's app window, "
            "which the image, `dirty` and `targets` cover; null in `desktop` mode."
        ),
    )
    changed_region: tuple[int, int, int, int] | None = Field(
        default=None,
        description=(
            "Only with `since`: the native `[x, y, w, h]` bounding box of "
            "`changed_images`' regions; null when nothing changed."
        ),
    )
    frame_region: tuple[int, int, int, int] | None = Field(
        default=None,
        description=(
            "Only with `since`: the native `[x, y, w, h]` the answer's picture covers "
            "(`width` x `height` pixels): the since frame's area, the whole desktop, an "
            "`app` session's window or a region observe's region. Map points of the "
            "picture to native pixels through it."
        ),
    )
    changed_images: list[ChangedImageOut] | None = Field(
        default=None,
        description=(
            "Only with `since` (in place of `jpeg_base64`): the parts of the picture "
            "that changed, each at the full picture's scale; empty when nothing changed "
            "or with image=0."
        ),
    )
    targets_diff: TargetsDiffOut | None = Field(
        default=None,
        description="Only with `since`: the targets against the frame's, in place of `targets`.",
    )


class EventReceiptOut(BaseModel):
    """What one event did: when it ran (ms after the batch started), the native point
    it used (null for keyboard events), whether the screen changed after it before the
    next event began."""

    index: int = Field(description="The event's index in the batch.")
    type: str = Field(description="The event's type.")
    ok: bool = Field(description="False for the event that stopped the batch.")
    at_ms: int = Field(description="When it began, in whole ms after the host began the batch.")
    x: int | None = Field(
        description="The native x it used; null for keys and for a pointer event without a point."
    )
    y: int | None = Field(description="The native y it used; null like `x`.")
    changed: bool = Field(
        description=(
            "Whether the screen changed after it before the next event began (may "
            "over-report, never under-reports)."
        )
    )

    @classmethod
    def of(cls, receipt: ops.EventReceipt) -> EventReceiptOut:
        return cls(
            index=receipt.index,
            type=receipt.type,
            ok=receipt.ok,
            at_ms=round(receipt.at_ms),
            x=receipt.x,
            y=receipt.y,
            changed=receipt.changed,
        )


class SettleOut(BaseModel):
    settled: bool = Field(description="Whether the screen was still for `quiet_ms` in time.")
    waited_ms: int = Field(description="How long the host waited.")

    @classmethod
    def of(cls, result: ops.SettleResult) -> SettleOut:
        return cls(settled=result.settled, waited_ms=round(result.waited_ms))


class InputBatchOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "ok": True,
                    "count": 2,
                    "events": [
                        {
                            "index": 0,
                            "type": "mouse_click",
                            "ok": True,
                            "at_ms": 0,
                            "x": 960,
                            "y": 396,
                            "changed": True,
                        },
                        {
                            "index": 1,
                            "type": "type_text",
                            "ok": True,
                            "at_ms": 41,
                            "x": None,
                            "y": None,
                            "changed": True,
                        },
                    ],
                }
            ]
        }
    )
    ok: bool = Field(description="Always true: a batch that stopped is a 409.")
    count: int = Field(description="How many events ran.")
    events: list[EventReceiptOut] = Field(description="One receipt per event that ran.")
    settle: SettleOut | None = Field(
        default=None, description="Present when the batch asked to settle."
    )
    observe: ObserveOut | None = Field(
        default=None, description="Present when the batch asked to observe."
    )


class InputConflictOut(BaseModel):
    """A 409 of the input route. `events` and `stopped_at` (target_gone,
    expectation_failed, desktop_unavailable part-way): the receipts of what ran, the
    last one the event that stopped the batch; `rects` (stale_frame): what changed near
    the batch's points since its frame."""

    error: str = Field(description="The code, then `: ` and a detail.")
    events: list[EventReceiptOut] | None = Field(
        default=None, description="The receipts of what ran, the last one `ok: false`."
    )
    stopped_at: int | None = Field(
        default=None, description="The index of the event that stopped the batch."
    )
    rects: list[tuple[int, int, int, int]] | None = Field(
        default=None, description="stale_frame: what changed near the batch's points."
    )
