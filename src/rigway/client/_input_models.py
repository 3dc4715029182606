"""Models of input: the events a batch carries, the options that make it act and see in
one round trip (settle, observe), and what the gateway answers (receipts, waits).

Re-exported by `rigway.client.models`; see there for the conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from ._geometry import Region
from ._model_base import ApiModel, MouseButton
from ._screen_models import ObserveResult, Target

__all__ = [
    "ActResult",
    "EventReceipt",
    "InputEvent",
    "InputEventType",
    "InputResult",
    "ObserveOptions",
    "Settle",
    "SettleResult",
    "WaitResult",
    "WaitTarget",
    "WaitUntil",
]

InputEventType = Literal[
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
WaitUntil = Literal["change", "quiet", "target"]


def _check_point(x: int | None, y: int | None, target: str | None) -> None:
    if (x is None) != (y is None):
        raise ValueError("x and y come together or not at all")
    if target is not None and x is not None:
        raise ValueError("give either x/y or target, not both")


class InputEvent(ApiModel):
    """One input event, in native desktop pixels (or a frame's image pixels, see `act`).

    Build them with the class methods (`InputEvent.mouse_click(10, 20)`) or by fields.
    Fields left None are not sent. `delay_ms` (0…5000) is a host-side pause after the
    event. Scroll deltas are wheel notches: `dy` < 0 scrolls down, `dx` > 0 right.
    A pointer event may name a `target` id instead of x,y: the host finds that control
    when the event runs and acts at the centre of its current bounds (gone: 409
    `target_gone`). `expecting_change()` makes the batch stop (409
    `expectation_failed`) unless the screen changes after the event.
    """

    type: InputEventType
    x: int | None = None
    y: int | None = None
    target: str | None = None
    button: MouseButton | None = None
    dx: int | None = None
    dy: int | None = None
    key: str | None = None
    text: str | None = None
    delay_ms: int | None = None
    expect: Literal["change"] | None = None
    expect_timeout_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The event as the API takes it: only the fields that are set."""
        return self.model_dump(exclude_none=True)

    def expecting_change(self, timeout_ms: int | None = None) -> InputEvent:
        """This event with `expect: "change"`: after it runs, the host waits up to
        `timeout_ms` (gateway default 1000, at most 5000) for the screen to change, and
        stops the batch there if it does not."""
        return self.model_copy(update={"expect": "change", "expect_timeout_ms": timeout_ms})

    @classmethod
    def mouse_move(
        cls,
        x: int | None = None,
        y: int | None = None,
        *,
        target: str | None = None,
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Move the pointer to (`x`, `y`), or to the centre of `target`."""
        _check_point(x, y, target)
        if x is None and target is None:
            raise ValueError("mouse_move needs x and y, or a target")
        return cls(type="mouse_move", x=x, y=y, target=target, delay_ms=delay_ms)

    @classmethod
    def mouse_click(
        cls,
        x: int | None = None,
        y: int | None = None,
        *,
        button: MouseButton = "left",
        target: str | None = None,
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Click `button`, after moving to (`x`, `y`) or to `target` when given."""
        _check_point(x, y, target)
        return cls(type="mouse_click", x=x, y=y, target=target, button=button, delay_ms=delay_ms)

    @classmethod
    def mouse_down(
        cls,
        x: int | None = None,
        y: int | None = None,
        *,
        button: MouseButton = "left",
        target: str | None = None,
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Press and hold `button` (moving first when a point or target is given); it is
        released by `mouse_up`, or when the session ends or the host link drops."""
        _check_point(x, y, target)
        return cls(type="mouse_down", x=x, y=y, target=target, button=button, delay_ms=delay_ms)

    @classmethod
    def mouse_up(
        cls,
        x: int | None = None,
        y: int | None = None,
        *,
        button: MouseButton = "left",
        target: str | None = None,
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Release `button` (moving first when a point or target is given)."""
        _check_point(x, y, target)
        return cls(type="mouse_up", x=x, y=y, target=target, button=button, delay_ms=delay_ms)

    @classmethod
    def mouse_scroll(
        cls,
        dx: int = 0,
        dy: int = 0,
        *,
        x: int | None = None,
        y: int | None = None,
        target: str | None = None,
        delay_ms: int | None = None,
    ) -> InputEvent:
        """Scroll by wheel notches (`dy` < 0 is down), at (`x`, `y`) or `target` if given."""
        _check_point(x, y, target)
        return cls(type="mouse_scroll", dx=dx, dy=dy, x=x, y=y, target=target, delay_ms=delay_ms)

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


# ------------------------------------------------------------------ batch options


@dataclass(frozen=True)
class Settle:
    """Let the screen settle after the batch's last event before the answer: the host
    waits until it has been still for `quiet_ms` (20…2000, gateway default 100), or
    `timeout_ms` passed (50…10000, default 2000; then `settled` is false)."""

    quiet_ms: int | None = None
    timeout_ms: int | None = None

    def to_json(self) -> dict[str, int]:
        """The batch's `settle` object: only the fields given (the gateway's defaults)."""
        values = {"quiet_ms": self.quiet_ms, "timeout_ms": self.timeout_ms}
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class ObserveOptions:
    """What the batch's `observe` takes after the settle: the same as `observe()`'s
    arguments (`image=False` skips the JPEG, `mark` draws the targets' boxes, `region`
    a native x/y/w/h crop, `max_width` caps the long edge, `quality` 40…100)."""

    max_width: int | None = None
    quality: int | None = None
    region: Region | None = None
    mark: bool = False
    image: bool = True

    def to_json(self) -> dict[str, int]:
        """The batch's `observe` object: only what differs from the gateway's defaults,
        with `mark` and `image` as 0/1 like `GET /observe`'s query parameters."""
        values: dict[str, int | None] = {"max_width": self.max_width, "quality": self.quality}
        if self.region is not None:
            values.update(self.region._asdict())
        values["mark"] = 1 if self.mark else None
        values["image"] = None if self.image else 0
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class WaitTarget:
    """A control `wait_for(until="target")` waits for: every given field must match
    (`name` as a case-insensitive substring, `role` and `id` exactly)."""

    name: str | None = None
    role: str | None = None
    id: str | None = None

    def to_json(self) -> dict[str, str]:
        """The wait's `target` object: only the fields given."""
        values = {"name": self.name, "role": self.role, "id": self.id}
        return {name: value for name, value in values.items() if value is not None}


# ------------------------------------------------------------------------ answers


class EventReceipt(ApiModel):
    """What one event of a batch did: `at_ms` after the batch started, the native point
    used (None for keyboard events), whether the screen `changed` after it before the
    next event began. `ok` is false for the event a batch stopped at."""

    index: int
    type: str
    ok: bool
    at_ms: int
    x: int | None = None
    y: int | None = None
    changed: bool = True


class SettleResult(ApiModel):
    """Whether the screen went still (`settled`) and how long the host waited for it."""

    settled: bool
    waited_ms: int


class InputResult(ApiModel):
    """Answer of `POST …/input`: every event of the batch ran; `count` of them.

    `events` holds a receipt per event (empty from a gateway older than API 1.1);
    `settle` is present when the batch asked to settle.
    """

    ok: bool
    count: int
    events: list[EventReceipt] = Field(default_factory=list)
    settle: SettleResult | None = None


class ActResult(InputResult):
    """Answer of an input batch that may also settle and observe (`session.act`).

    `receipts` (the wire's `events`) say what each event did; `settle` whether the
    screen went still; `observe` is the observation taken after the settle, when the
    batch asked for one (exactly what `observe()` would have returned then).
    """

    observe: ObserveResult | None = None

    @property
    def receipts(self) -> list[EventReceipt]:
        """The per-event receipts (the answer's `events`)."""
        return self.events

    @property
    def settled(self) -> bool | None:
        """Whether the screen went still before the answer; None when not asked."""
        return None if self.settle is None else self.settle.settled

    def settle_note(self) -> str:
        """`""`, or what the settle found, to end a sentence: "; the screen settled after
        140 ms" (or "; the screen was still changing after 2000 ms")."""
        if self.settle is None:
            return ""
        if self.settle.settled:
            return f"; the screen settled after {self.settle.waited_ms} ms"
        return f"; the screen was still changing after {self.settle.waited_ms} ms"


class WaitResult(ApiModel):
    """Answer of `POST …/wait`: whether the condition was `met` within the timeout, how
    long the host waited, and for `until="target"` the control that appeared."""

    met: bool
    waited_ms: int
    target: Target | None = None

    def outcome_line(self, until: WaitUntil, timeout_ms: int) -> str:
        """One line on how the wait for `until` ended: "target after 340 ms: Save
        (button) id=…", or "not met: no change within 5000 ms"."""
        if not self.met:
            return f"not met: no {until} within {timeout_ms} ms"
        found = ""
        if self.target is not None:
            target = self.target
            found = f": {target.name or '(unnamed)'} ({target.role}) id={target.id}"
        return f"{until} after {self.waited_ms} ms{found}"
