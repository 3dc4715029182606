"""Public shapes of the desktop operations. Input events are validated whole here,
strictly (no `true` → 1, no floats for ints), before anything reaches the host."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
# How such an integer is written: decimal digits only, never "85.0", "1_000" or " 85".
DECIMAL_DIGITS = "[0-9]{1,9}"


class _Event(BaseModel):
    model_config = _STRICT
    delay_ms: DelayMs = 0
    # After the event, the host waits up to expect_timeout_ms for the screen to change;
    # if it does not, the batch stops there (409 expectation_failed).
    expect: Literal["change"] | None = None
    expect_timeout_ms: ExpectTimeoutMs = DEFAULT_EXPECT_TIMEOUT_MS

    @model_validator(mode="after")
    def _timeout_with_expect(self) -> _Event:
        if self.expect is None and "expect_timeout_ms" in self.model_fields_set:
            raise ValueError('expect_timeout_ms is given only with "expect": "change"')
        return self


class _PointerEvent(_Event):
    """A pointer event acts at x,y (native pixels, or a frame's image pixels with the
    batch's `"coords": "image"`), or at the centre of the target `target` names as the
    host finds it when the event runs; neither: where the pointer is."""

    x: Coordinate | None = None
    y: Coordinate | None = None
    target: TargetId | None = None

    @model_validator(mode="after")
    def _one_way_to_point(self) -> _PointerEvent:
        if (self.x is None) != (self.y is None):
            raise ValueError("x and y come together or not at all")
        if self.target is not None and self.x is not None:
            raise ValueError("an event gives x,y or a target, not both")
        return self


class MouseMove(_PointerEvent):
    type: Literal["mouse_move"]

    @model_validator(mode="after")
    def _somewhere_to_go(self) -> MouseMove:
        if self.x is None and self.target is None:
            raise ValueError("mouse_move needs x,y or a target")
        return self


class MouseClick(_PointerEvent):
    type: Literal["mouse_click"]
    button: MouseButton = "left"


class MouseDown(_PointerEvent):
    type: Literal["mouse_down"]
    button: MouseButton = "left"


class MouseUp(_PointerEvent):
    type: Literal["mouse_up"]
    button: MouseButton = "left"


class MouseScroll(_PointerEvent):
    type: Literal["mouse_scroll"]
    dx: ScrollNotches = 0
    dy: ScrollNotches = 0


class KeyPress(_Event):
    type: Literal["key_press"]
    key: str = Field(min_length=1, max_length=64)

    @field_validator("key")
    @classmethod
    def _known_chord(cls, key: str) -> str:
        try:
            return "+".join(parse_chord(key))
        except UnknownKeyError as exc:
            raise ValueError(str(exc)) from exc


class _SingleKey(_Event):
    key: str = Field(min_length=1, max_length=32)

    @field_validator("key")
    @classmethod
    def _known_key(cls, key: str) -> str:
        try:
            return canonical_key(key)
        except UnknownKeyError as exc:
            raise ValueError(str(exc)) from exc


class KeyDown(_SingleKey):
    type: Literal["key_down"]


class KeyUp(_SingleKey):
    type: Literal["key_up"]


class TypeText(_Event):
    type: Literal["type_text"]
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)


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
    quiet_ms: Annotated[int, Field(ge=20, le=2000)] = 100
    timeout_ms: Annotated[int, Field(ge=50, le=10000)] = 2000

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
    image: Annotated[int, Field(ge=0, le=1)] = 1
    mark: Annotated[int, Field(ge=0, le=1)] = 0
    max_width: Annotated[int, _screen_bound("max_width")] | None = None
    quality: Annotated[int, _screen_bound("quality")] = DEFAULT_QUALITY
    x: Annotated[int, _screen_bound("x")] | None = None
    y: Annotated[int, _screen_bound("y")] | None = None
    w: Annotated[int, _screen_bound("w")] | None = None
    h: Annotated[int, _screen_bound("h")] | None = None

    @model_validator(mode="after")
    def _whole_region(self) -> ObserveIn:
        given = [v is not None for v in (self.x, self.y, self.w, self.h)]
        if any(given) and not all(given):
            raise ValueError("x, y, w and h come together or not at all")
        return self


class InputBatchIn(BaseModel):
    model_config = _STRICT
    events: list[InputEvent] = Field(min_length=1, max_length=100)
    # A frame a screenshot (X-Frame-Id) or an observe (frame_id) showed the caller.
    frame_id: FrameId | None = None
    # "image": the points are that frame's image pixels, mapped to native ones.
    coords: Literal["native", "image"] = "native"
    # Refuse the batch (409 stale_frame) if the screen changed near its points since
    # the frame.
    require_unchanged: bool = False
    settle: SettleIn | None = None
    observe: ObserveIn | None = None

    @model_validator(mode="after")
    def _frame_when_needed(self) -> InputBatchIn:
        if self.frame_id is None and self.coords == "image":
            raise ValueError('"coords": "image" needs a frame_id')
        if self.frame_id is None and self.require_unchanged:
            raise ValueError('"require_unchanged": true needs a frame_id')
        return self


class AppLaunchIn(BaseModel):
    model_config = _STRICT
    path: str = Field(min_length=1, max_length=4096)
    args: list[Annotated[str, Field(max_length=4096)]] = Field(default_factory=list, max_length=64)


class AppLaunchOut(BaseModel):
    ok: bool
    pid: int


class AppKillIn(BaseModel):
    model_config = _STRICT
    pid: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None


class AppKillOut(BaseModel):
    ok: bool
    killed: list[int]


class DirtyOut(BaseModel):
    width: int
    height: int
    available: bool
    capture_mode: str
    rects: list[tuple[int, int, int, int]]


class TargetOut(BaseModel):
    id: str
    x: int
    y: int
    w: int
    h: int
    role: str
    name: str
    source: Literal["uia", "cv", "grid", "client"]
    focused: bool
    masked: bool
    value: str | None


class TargetsOut(BaseModel):
    width: int
    height: int
    targets: list[TargetOut]
    # The host's walk stopped at its budget (element cap or deadline): the list is
    # partial, so a missing control may just not have been reached.
    truncated: bool


DEFAULT_WAIT_QUIET_MS = 100


class WaitTargetIn(BaseModel):
    """What a `target` wait looks for: a control matching every field given (name: a
    case-insensitive substring; role and id exactly)."""

    model_config = _STRICT
    name: str | None = Field(default=None, min_length=1, max_length=256)
    role: str | None = Field(default=None, min_length=1, max_length=64)
    id: str | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _names_something(self) -> WaitTargetIn:
        if self.name is None and self.role is None and self.id is None:
            raise ValueError("a target names at least one of name, role, id")
        return self


class WaitIn(BaseModel):
    """`change`: any damage after the wait began; `quiet`: still for quiet_ms;
    `target`: a matching control appears in the focused window."""

    model_config = _STRICT
    until: Literal["change", "quiet", "target"]
    timeout_ms: Annotated[int, Field(ge=1, le=30000)]
    quiet_ms: Annotated[int, Field(ge=20, le=10000)] | None = None
    target: WaitTargetIn | None = None

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
    met: bool
    waited_ms: int
    # The control a `target` wait found (null otherwise, and when not met).
    target: TargetOut | None


class ObserveTextOut(BaseModel):
    window_title: str
    window_role: str
    targets: list[str]
    summary: str


class DirtyTakeOut(BaseModel):
    width: int
    height: int
    rects: list[tuple[int, int, int, int]]


class ObserveTimingOut(BaseModel):
    total_ms: int
    screenshot_rtt_ms: int
    dirty_rtt_ms: int
    targets_rtt_ms: int
    host_jpeg_ms: int | None
    host_uia_ms: int | None
    image: bool


class MarkOut(BaseModel):
    """One target drawn with mark=1: `index` is the number on the image and of its
    `text.targets` line; `labelled` is false when the screen was too crowded (or the
    control too small) for its label, so only its box is drawn."""

    index: int
    id: str
    labelled: bool


class TargetsDiffOut(BaseModel):
    """Targets now against those shown with the since frame, by id: `added` and
    `changed` (any public field differs) in full, `removed` as ids."""

    added: list[TargetOut]
    removed: list[str]
    changed: list[TargetOut]


class ObserveOut(BaseModel):
    width: int
    height: int
    native_width: int
    native_height: int
    timestamp: int
    # The frame the image shows (input may point into it); null with image=0.
    frame_id: str | None
    jpeg_base64: str | None = None
    dirty: DirtyTakeOut
    changed: bool
    targets: list[TargetOut]
    truncated: bool
    text: ObserveTextOut
    marked: bool
    # The targets mark=1 drew, in index order; empty when nothing was marked.
    marks: list[MarkOut] = Field(default_factory=list)
    timing: ObserveTimingOut
    # Sampled on the host with the dirty take: input is refused unless "normal".
    desktop_state: DesktopState
    # Only with `since`: the native x, y, w, h the image shows (null: nothing changed,
    # no image), and the targets against the since frame's, in place of `targets`.
    changed_region: tuple[int, int, int, int] | None = None
    targets_diff: TargetsDiffOut | None = None


class EventReceiptOut(BaseModel):
    """What one event did: when it ran (ms after the batch started), the native point
    it used (null for keyboard events), whether the screen changed after it before the
    next event began."""

    index: int
    type: str
    ok: bool
    at_ms: int
    x: int | None
    y: int | None
    changed: bool

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
    settled: bool
    waited_ms: int

    @classmethod
    def of(cls, result: ops.SettleResult) -> SettleOut:
        return cls(settled=result.settled, waited_ms=round(result.waited_ms))


class InputBatchOut(BaseModel):
    ok: bool
    count: int
    events: list[EventReceiptOut]
    # Present when the batch asked for them.
    settle: SettleOut | None = None
    observe: ObserveOut | None = None


class InputConflictOut(BaseModel):
    """A 409 of the input route. `events` and `stopped_at` (target_gone,
    expectation_failed, desktop_unavailable part-way): the receipts of what ran, the
    last one the event that stopped the batch; `rects` (stale_frame): what changed near
    the batch's points since its frame."""

    error: str
    events: list[EventReceiptOut] | None = None
    stopped_at: int | None = None
    rects: list[tuple[int, int, int, int]] | None = None
