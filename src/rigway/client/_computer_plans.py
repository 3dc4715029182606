"""Pure planners: one computer-use action + a `ScreenGeometry` → an `ActionPlan`.

Public names are re-exported by `rigway.client.computer_use`, which documents the
dialects, the scaling choices and what is unsupported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._computer_keys import OPENAI_KEYS, XDOTOOL_KEYS, anthropic_key, openai_keys, rigway_key
from ._geometry import Region, image_to_native, native_to_image
from .errors import UnsupportedActionError
from .models import InputEvent, MouseButton, WaitResult, WaitUntil

__all__ = [
    "ANTHROPIC_MAX_LONG_EDGE_PX",
    "ANTHROPIC_MAX_PIXELS",
    "SCROLL_PIXELS_PER_NOTCH",
    "ActionPlan",
    "Dialect",
    "HostWait",
    "ScreenGeometry",
    "plan_action",
    "plan_anthropic_action",
    "plan_openai_action",
]

Dialect = Literal["anthropic", "openai"]

ANTHROPIC_MAX_LONG_EDGE_PX = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
# OpenAI scrolls are in pixels, Rigway's in wheel notches. 100 px is one notch in
# Chromium and Edge on Windows (3 lines x ~33 px), the rigs' main platform.
SCROLL_PIXELS_PER_NOTCH = 100
# The input API's per-event delay bound (docs/api.md: delay_ms 0…5000); a key is held
# through the key_down's delay, so longer holds cannot be expressed in one batch.
MAX_HOLD_MS = 5000
# type_text takes up to 10,000 characters per event.
MAX_TYPE_CHARS = 10_000
ANTHROPIC_DEFAULT_SCROLL_AMOUNT = 3
ANTHROPIC_DEFAULT_WAIT_S = 1.0
OPENAI_DEFAULT_WAIT_S = 1.0
# Anthropic's reference tool refuses waits over 100 s; a model asking for more is wrong.
MAX_WAIT_S = 100.0
# One host wait lasts at most this long (the gateway's bound); longer waits take turns.
MAX_HOST_WAIT_MS = 30_000
# A model's wait ends once the screen, having changed, stayed still this long: a page
# that pauses between paints for less than this is still loading.
WAIT_QUIET_MS = 300
# The gateway's least quiet_ms: less time than this left is not worth a quiet wait.
MIN_QUIET_MS = 20


@dataclass(frozen=True)
class ScreenGeometry:
    """The native desktop size and the image size the model works in.

    The model's coordinates are in image space (`image_w`x`image_h`); `to_native` maps
    them onto the desktop for input, `to_image` the other way.
    """

    native_w: int
    native_h: int
    image_w: int
    image_h: int

    @classmethod
    def fit(
        cls,
        native_w: int,
        native_h: int,
        *,
        max_long_edge: int | None = None,
        max_pixels: int | None = None,
    ) -> ScreenGeometry:
        """The largest aspect-preserving image within both limits (never upscaled)."""
        scale = 1.0
        if max_long_edge is not None:
            scale = min(scale, max_long_edge / max(native_w, native_h))
        if max_pixels is not None:
            scale = min(scale, math.sqrt(max_pixels / (native_w * native_h)))
        return cls(
            native_w,
            native_h,
            max(1, math.floor(native_w * scale)),
            max(1, math.floor(native_h * scale)),
        )

    @classmethod
    def for_anthropic(
        cls,
        native_w: int,
        native_h: int,
        *,
        max_long_edge: int = ANTHROPIC_MAX_LONG_EDGE_PX,
        max_pixels: int = ANTHROPIC_MAX_PIXELS,
    ) -> ScreenGeometry:
        """Claude's geometry: ≤ 1568 px long edge and ≤ 1.15 MP (1920x1080 → 1429x804).

        Pass a smaller `max_long_edge` (e.g. 1280) to spend fewer image tokens.
        """
        return cls.fit(native_w, native_h, max_long_edge=max_long_edge, max_pixels=max_pixels)

    @classmethod
    def for_openai(
        cls, native_w: int, native_h: int, display_w: int, display_h: int
    ) -> ScreenGeometry:
        """OpenAI's geometry: the display size declared in the tool definition.

        Declare a size with the desktop's aspect ratio (see `fit`): screenshots keep the
        native aspect, so another ratio would stretch the model's coordinates.
        """
        return cls(native_w, native_h, display_w, display_h)

    @property
    def long_edge(self) -> int:
        """The image's long edge: the `max_width` to ask screenshots for."""
        return max(self.image_w, self.image_h)

    def to_native(self, x: float, y: float) -> tuple[int, int]:
        """Image coordinates → native desktop pixels (clamped onto the desktop)."""
        area = Region(0, 0, self.native_w, self.native_h)
        return image_to_native(x, y, image_w=self.image_w, image_h=self.image_h, area=area)

    def to_image(self, x: float, y: float) -> tuple[int, int]:
        """Native desktop pixels → image coordinates (clamped into the image)."""
        area = Region(0, 0, self.native_w, self.native_h)
        return native_to_image(x, y, image_w=self.image_w, image_h=self.image_h, area=area)


@dataclass(frozen=True)
class ActionPlan:
    """What one model action turns into.

    `events` (native pixels) go in one input batch; then the model's wait runs: up to
    `wait_s` for the screen to change, then for it to go still in what is left (see
    `HostWait`); then the model gets a screenshot (`wants_screenshot`), of `zoom` (a
    native region) when set, and/or the pointer position (`wants_cursor`). `pointer` is
    where the events leave the pointer, when they say.
    """

    events: tuple[InputEvent, ...] = ()
    wait_s: float = 0.0
    wants_screenshot: bool = True
    wants_cursor: bool = False
    zoom: Region | None = None
    pointer: tuple[int, int] | None = None


# ---------------------------------------------------------------------- helpers


def _number(action: Mapping[str, Any], name: str) -> float:
    value = action.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnsupportedActionError(f"{name} must be a number, got {value!r}")
    return float(value)


def _point(
    action: Mapping[str, Any], geometry: ScreenGeometry, name: str = "coordinate"
) -> tuple[int, int] | None:
    """The native point of an Anthropic `coordinate` ([x, y] in image pixels), if any."""
    coordinate = action.get(name)
    if coordinate is None:
        return None
    if (
        not isinstance(coordinate, list | tuple)
        or len(coordinate) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in coordinate)
    ):
        raise UnsupportedActionError(f"{name} must be [x, y], got {coordinate!r}")
    return geometry.to_native(coordinate[0], coordinate[1])


def _required_point(action: Mapping[str, Any], geometry: ScreenGeometry) -> tuple[int, int]:
    point = _point(action, geometry)
    if point is None:
        raise UnsupportedActionError(f"{action.get('action')}: coordinate is required")
    return point


def _text(action: Mapping[str, Any], name: str = "text") -> str:
    value = action.get(name)
    if not isinstance(value, str):
        raise UnsupportedActionError(f"{name} must be a string, got {value!r}")
    return value


def _with_modifiers(events: list[InputEvent], modifiers: list[str]) -> list[InputEvent]:
    """Hold `modifiers` around `events` (shift-click), released in reverse order."""
    downs = [InputEvent.key_down(key) for key in modifiers]
    ups = [InputEvent.key_up(key) for key in reversed(modifiers)]
    return [*downs, *events, *ups]


def _clicks(
    point: tuple[int, int] | None, button: MouseButton, count: int, modifiers: list[str]
) -> ActionPlan:
    x, y = (None, None) if point is None else point
    clicks = [InputEvent.mouse_click(x, y, button=button) for _ in range(count)]
    return ActionPlan(events=tuple(_with_modifiers(clicks, modifiers)), pointer=point)


def _type_events(text: str) -> tuple[InputEvent, ...]:
    if text == "":
        return ()
    chunks = range(0, len(text), MAX_TYPE_CHARS)
    return tuple(InputEvent.type_text(text[i : i + MAX_TYPE_CHARS]) for i in chunks)


def _drag(start: tuple[int, int] | None, path: list[tuple[int, int]]) -> tuple[InputEvent, ...]:
    """Press the left button at `start` (None: where the pointer is), move through
    `path`, release at its last point: one batch, so nothing else runs in between."""
    x, y = (None, None) if start is None else start
    moves = [InputEvent.mouse_move(px, py) for px, py in path]
    end_x, end_y = path[-1]
    return (InputEvent.mouse_down(x, y), *moves, InputEvent.mouse_up(end_x, end_y))


# -------------------------------------------------------------------- anthropic

_ANTHROPIC_CLICKS: dict[str, tuple[MouseButton, int]] = {
    "left_click": ("left", 1),
    "right_click": ("right", 1),
    "middle_click": ("middle", 1),
    "double_click": ("left", 2),
    "triple_click": ("left", 3),
}


def _anthropic_modifiers(action: Mapping[str, Any]) -> list[str]:
    # Clicks and scrolls take `text` as modifier keys to hold ("shift", "ctrl+alt").
    text = action.get("text")
    if text is None or text == "":
        return []
    if not isinstance(text, str):
        raise UnsupportedActionError(f"text must be a string, got {text!r}")
    return [rigway_key(part, XDOTOOL_KEYS) for part in text.split("+")]


def _anthropic_scroll(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    direction = action.get("scroll_direction")
    amount = action.get("scroll_amount", ANTHROPIC_DEFAULT_SCROLL_AMOUNT)
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise UnsupportedActionError(f"scroll_amount must be a whole number, got {amount!r}")
    # Rigway: dy < 0 scrolls down, dx > 0 scrolls right (one unit per wheel click).
    deltas = {"up": (0, amount), "down": (0, -amount), "left": (-amount, 0), "right": (amount, 0)}
    if direction not in deltas:
        raise UnsupportedActionError(f"scroll_direction must be up/down/left/right: {direction!r}")
    dx, dy = deltas[direction]
    point = _point(action, geometry)
    x, y = (None, None) if point is None else point
    scroll = [InputEvent.mouse_scroll(dx, dy, x=x, y=y)]
    events = _with_modifiers(scroll, _anthropic_modifiers(action))
    return ActionPlan(events=tuple(events), pointer=point)


def _anthropic_hold(action: Mapping[str, Any]) -> ActionPlan:
    duration_ms = round(_number(action, "duration") * 1000)
    if not 0 <= duration_ms <= MAX_HOLD_MS:
        raise UnsupportedActionError(f"hold_key: duration must be 0 to {MAX_HOLD_MS / 1000} s")
    keys = [rigway_key(part, XDOTOOL_KEYS) for part in _text(action).split("+")]
    # The host pauses `delay_ms` after the last key_down, with every key still held.
    downs = [InputEvent.key_down(key) for key in keys[:-1]]
    downs.append(InputEvent.key_down(keys[-1], delay_ms=duration_ms))
    ups = [InputEvent.key_up(key) for key in reversed(keys)]
    return ActionPlan(events=(*downs, *ups))


def _anthropic_wait(action: Mapping[str, Any]) -> ActionPlan:
    seconds = (
        ANTHROPIC_DEFAULT_WAIT_S if action.get("duration") is None else _number(action, "duration")
    )
    if not 0 <= seconds <= MAX_WAIT_S:
        raise UnsupportedActionError(f"wait: duration must be 0 to {MAX_WAIT_S:g} s")
    return ActionPlan(wait_s=seconds)


def _anthropic_zoom(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    box = action.get("region")
    if (
        not isinstance(box, list | tuple)
        or len(box) != 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in box)
    ):
        raise UnsupportedActionError(f"zoom: region must be [x0, y0, x1, y1], got {box!r}")
    # The box's corners are edges, not pixels: scale them as lengths, outward, so the
    # native region covers at least what the model framed.
    scale_x = geometry.native_w / geometry.image_w
    scale_y = geometry.native_h / geometry.image_h
    left = max(0, math.floor(min(box[0], box[2]) * scale_x))
    top = max(0, math.floor(min(box[1], box[3]) * scale_y))
    right = min(geometry.native_w, math.ceil(max(box[0], box[2]) * scale_x))
    bottom = min(geometry.native_h, math.ceil(max(box[1], box[3]) * scale_y))
    if right <= left or bottom <= top:
        raise UnsupportedActionError(f"zoom: region {box!r} is empty or off the screen")
    return ActionPlan(zoom=Region(left, top, right - left, bottom - top))


def _anthropic_drag(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    # computer_20250124 gives start_coordinate; without it the drag starts at the pointer.
    start = _point(action, geometry, "start_coordinate")
    end = _required_point(action, geometry)
    events = _with_modifiers(list(_drag(start, [end])), _anthropic_modifiers(action))
    return ActionPlan(events=tuple(events), pointer=end)


def _anthropic_button(
    action: Mapping[str, Any], geometry: ScreenGeometry, *, down: bool
) -> ActionPlan:
    # The button stays held between actions (a model moves the pointer in between); the
    # host lets go of it when the session ends.
    point = _point(action, geometry)
    x, y = (None, None) if point is None else point
    event = InputEvent.mouse_down(x, y) if down else InputEvent.mouse_up(x, y)
    return ActionPlan(events=(event,), pointer=point)


def plan_anthropic_action(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    """Plan one Anthropic computer-use action (the tool_use `input`) in native pixels.

    Raises UnsupportedActionError for unknown and malformed actions.
    """
    name = action.get("action")
    if name in _ANTHROPIC_CLICKS:
        button, count = _ANTHROPIC_CLICKS[name]
        return _clicks(_point(action, geometry), button, count, _anthropic_modifiers(action))
    if name == "mouse_move":
        x, y = _required_point(action, geometry)
        return ActionPlan(events=(InputEvent.mouse_move(x, y),), pointer=(x, y))
    if name == "type":
        return ActionPlan(events=_type_events(_text(action)))
    if name == "key":
        return ActionPlan(
            events=tuple(InputEvent.key_press(c) for c in anthropic_key(_text(action)))
        )
    if name == "scroll":
        return _anthropic_scroll(action, geometry)
    if name == "hold_key":
        return _anthropic_hold(action)
    if name == "wait":
        return _anthropic_wait(action)
    if name == "screenshot":
        return ActionPlan()
    if name == "cursor_position":
        return ActionPlan(wants_screenshot=False, wants_cursor=True)
    if name == "zoom":
        return _anthropic_zoom(action, geometry)
    if name == "left_click_drag":
        return _anthropic_drag(action, geometry)
    if name in ("left_mouse_down", "left_mouse_up"):
        return _anthropic_button(action, geometry, down=name == "left_mouse_down")
    raise UnsupportedActionError(f"unknown computer-use action {name!r}")


# ----------------------------------------------------------------------- openai

_OPENAI_BUTTONS: dict[str, MouseButton] = {"left": "left", "right": "right", "wheel": "middle"}
# Windows has no side-button event in the Rigway API; browsers, Explorer and most apps
# treat the back/forward side buttons exactly like alt+left / alt+right.
_OPENAI_SIDE_BUTTONS: dict[str, str] = {"back": "alt+left", "forward": "alt+right"}


def _openai_point(action: Mapping[str, Any], geometry: ScreenGeometry) -> tuple[int, int]:
    return geometry.to_native(_number(action, "x"), _number(action, "y"))


def _openai_modifiers(action: Mapping[str, Any]) -> list[str]:
    keys = action.get("keys")
    if keys is None:
        return []
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise UnsupportedActionError(f"keys must be a list of strings, got {keys!r}")
    return [rigway_key(key, OPENAI_KEYS) for key in keys]


def _openai_click(action: Mapping[str, Any], geometry: ScreenGeometry, count: int) -> ActionPlan:
    button = action.get("button", "left")
    if button in _OPENAI_SIDE_BUTTONS:
        return ActionPlan(events=(InputEvent.key_press(_OPENAI_SIDE_BUTTONS[button]),))
    if button not in _OPENAI_BUTTONS:
        raise UnsupportedActionError(f"click: unknown button {button!r}")
    point = _openai_point(action, geometry)
    return _clicks(point, _OPENAI_BUTTONS[button], count, _openai_modifiers(action))


def _notches(pixels: float) -> int:
    """Pixels → wheel notches, at least one notch for any non-zero scroll."""
    if pixels == 0:
        return 0
    notches = round(abs(pixels) / SCROLL_PIXELS_PER_NOTCH)
    return int(math.copysign(max(1, notches), pixels))


def _openai_scroll(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    x, y = _openai_point(action, geometry)
    # OpenAI: positive scroll_y scrolls down (like a DOM wheel deltaY); Rigway: dy < 0.
    dx = _notches(_number(action, "scroll_x")) if "scroll_x" in action else 0
    dy = -_notches(_number(action, "scroll_y")) if "scroll_y" in action else 0
    scroll = [InputEvent.mouse_scroll(dx, dy, x=x, y=y)]
    events = _with_modifiers(scroll, _openai_modifiers(action))
    return ActionPlan(events=tuple(events), pointer=(x, y))


def _openai_drag(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    path = action.get("path")
    if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, dict) for p in path):
        raise UnsupportedActionError(f"drag: path must be two or more {{x, y}} points: {path!r}")
    points = [_openai_point(point, geometry) for point in path]
    events = _with_modifiers(list(_drag(points[0], points[1:])), _openai_modifiers(action))
    return ActionPlan(events=tuple(events), pointer=points[-1])


def plan_openai_action(action: Mapping[str, Any], geometry: ScreenGeometry) -> ActionPlan:
    """Plan one OpenAI computer-use action (a `computer_call`'s `action`) in native pixels.

    Raises UnsupportedActionError for unknown and malformed actions.
    """
    name = action.get("type")
    if name == "click":
        return _openai_click(action, geometry, 1)
    if name == "double_click":
        return _openai_click(action, geometry, 2)
    if name == "move":
        x, y = _openai_point(action, geometry)
        return ActionPlan(events=(InputEvent.mouse_move(x, y),), pointer=(x, y))
    if name == "scroll":
        return _openai_scroll(action, geometry)
    if name == "type":
        return ActionPlan(events=_type_events(_text(action)))
    if name == "keypress":
        keys = action.get("keys")
        if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise UnsupportedActionError(f"keypress: keys must be a list of strings: {keys!r}")
        return ActionPlan(events=(InputEvent.key_press(openai_keys(keys)),))
    if name == "wait":
        # OpenAI's wait carries no duration; its reference harness waits about a second.
        return ActionPlan(wait_s=OPENAI_DEFAULT_WAIT_S)
    if name == "screenshot":
        return ActionPlan()
    if name == "drag":
        return _openai_drag(action, geometry)
    raise UnsupportedActionError(f"unknown computer-use action {name!r}")


def plan_action(
    action: Mapping[str, Any], geometry: ScreenGeometry, dialect: Dialect
) -> ActionPlan:
    """Plan an action of either dialect."""
    if dialect == "anthropic":
        return plan_anthropic_action(action, geometry)
    return plan_openai_action(action, geometry)


class HostWait:
    """A model's `wait` run on the rig instead of a sleep, as a sequence of host waits.

    It waits up to the duration for the screen to change, then for the screen to stay
    still for WAIT_QUIET_MS in whatever time is left: a page that loads ends the wait as
    soon as it has painted; a screen where nothing happens takes the whole duration, as
    a sleep would. Never longer than the duration. Pure: `next()` says which wait to
    run (`until`, `timeout_ms`, `quiet_ms`), `record()` takes its result.
    """

    def __init__(self, seconds: float) -> None:
        self.remaining_ms = max(0, round(seconds * 1000))
        self._until: WaitUntil | None = "change"

    def next(self) -> tuple[WaitUntil, int, int | None] | None:
        """The next wait to run, or None when the model's wait is over."""
        if self._until is None or self.remaining_ms < 1:
            return None
        timeout_ms = min(self.remaining_ms, MAX_HOST_WAIT_MS)
        if self._until == "change":
            return ("change", timeout_ms, None)
        if timeout_ms < MIN_QUIET_MS:
            return None
        return ("quiet", timeout_ms, min(WAIT_QUIET_MS, timeout_ms))

    def record(self, result: WaitResult) -> None:
        """Account for one wait's result."""
        step = self.next()
        spent = step[1] if step is not None and not result.met else result.waited_ms
        self.remaining_ms = max(0, self.remaining_ms - spent)
        if self._until == "quiet":
            self._until = None  # met or not, the time for it is spent
        elif result.met:
            self._until = "quiet"
