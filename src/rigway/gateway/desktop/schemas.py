"""Public shapes of the desktop operations. Input events are validated whole here,
strictly (no `true` → 1, no floats for ints), before anything reaches the host."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rigway.protocol.keys import UnknownKeyError, canonical_key, parse_chord
from rigway.protocol.ops import DesktopState

_STRICT = ConfigDict(strict=True, extra="forbid")
Coordinate = Annotated[int, Field(ge=0, le=65535)]
DelayMs = Annotated[int, Field(ge=0, le=5000)]
ScrollNotches = Annotated[int, Field(ge=-100, le=100)]
MAX_TEXT_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class QueryBounds:
    low: int
    high: int


# The integer query parameters of screenshot and observe, with their bounds: the one
# place both the documented routes and the screenshot fast lane read them from.
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


class _PointEvent(_Event):
    x: Coordinate | None = None
    y: Coordinate | None = None

    @model_validator(mode="after")
    def _x_and_y_together(self) -> _PointEvent:
        if (self.x is None) != (self.y is None):
            raise ValueError("x and y come together or not at all")
        return self


class MouseMove(_PointEvent):
    type: Literal["mouse_move"]
    x: Coordinate
    y: Coordinate


class MouseClick(_PointEvent):
    type: Literal["mouse_click"]
    button: Literal["left", "right", "middle"] = "left"


class MouseScroll(_PointEvent):
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


InputEvent = Annotated[
    MouseMove | MouseClick | MouseScroll | KeyPress | KeyDown | KeyUp | TypeText,
    Field(discriminator="type"),
]


class InputBatchIn(BaseModel):
    model_config = _STRICT
    events: list[InputEvent] = Field(min_length=1, max_length=100)


class InputBatchOut(BaseModel):
    ok: bool
    count: int


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
    timing: ObserveTimingOut
    # Sampled on the host with the dirty take: input is refused unless "normal".
    desktop_state: DesktopState
