"""A person's input from the takeover page: its messages read into host input events,
and what that person holds down.

Page → gateway (JSON text frames on the takeover's signaling socket, docs/api.md):

    {"type":"mouse_move","x","y","width","height"}
    {"type":"mouse_down"|"mouse_up","button","x","y","width","height"}
                                            (a mouse_up may leave out the point)
    {"type":"mouse_scroll","x","y","width","height","dx","dy"}
    {"type":"key_down"|"key_up","key"}      canonical key names (`rigway.protocol.keys`)
    {"type":"type_text","text"}             a character no key name spells (é, ß, …)

Points are pixels of the video as the page shows it (`width` x `height`, the video's own
size): the gateway maps them onto the native desktop, so the page never needs to know
it, and a point off the video is clamped onto its edge.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from rigway.protocol import ops
from rigway.protocol.keys import UnknownKeyError, canonical_key

__all__ = ["HUMAN_EVENT_TYPES", "BadHumanEvent", "HeldInput", "human_event"]

HUMAN_EVENT_TYPES: Final = frozenset(
    {"mouse_move", "mouse_down", "mouse_up", "mouse_scroll", "key_down", "key_up", "type_text"}
)
# One wheel message scrolls at most this many notches either way.
MAX_SCROLL_NOTCHES: Final = 20
# A video wider or taller than this is no video the gateway sent.
_MAX_VIDEO_SIDE: Final = 16384
MAX_TEXT_CHARS: Final = 64


class BadHumanEvent(ValueError):
    """A message the page should never send; the page is told, the channel stays."""


def human_event(message: dict[str, Any], native_width: int, native_height: int) -> ops.InputEvent:
    """The host input event a page message asks for, in native pixels."""
    kind = message.get("type")
    if kind in ("key_down", "key_up"):
        key = message.get("key")
        if not isinstance(key, str):
            raise BadHumanEvent(f"{kind} needs a key name")
        try:
            return ops.InputEvent(type=kind, key=canonical_key(key))
        except UnknownKeyError as exc:
            raise BadHumanEvent(str(exc)) from exc
    if kind == "type_text":
        text = message.get("text")
        if not isinstance(text, str) or not 0 < len(text) <= MAX_TEXT_CHARS:
            raise BadHumanEvent(f"type_text needs 1 to {MAX_TEXT_CHARS} characters")
        return ops.InputEvent(type="type_text", text=text)
    if kind not in ("mouse_move", "mouse_down", "mouse_up", "mouse_scroll"):
        raise BadHumanEvent(f"unknown event type {kind!r}")
    if kind == "mouse_up" and "x" not in message:
        # Let go off the video: released where the pointer is.
        return ops.InputEvent(type="mouse_up", button=_button(message))
    x, y = _native_point(message, native_width, native_height)
    if kind == "mouse_move":
        return ops.InputEvent(type="mouse_move", x=x, y=y)
    if kind == "mouse_scroll":
        dx, dy = _notches(message, "dx"), _notches(message, "dy")
        return ops.InputEvent(type="mouse_scroll", x=x, y=y, dx=dx, dy=dy)
    return ops.InputEvent(type=kind, x=x, y=y, button=_button(message))


def _button(message: dict[str, Any]) -> Literal["left", "right", "middle"]:
    button = message.get("button", "left")
    if button == "left" or button == "right" or button == "middle":
        return button  # type: ignore[no-any-return]
    raise BadHumanEvent(f"unknown button {button!r}")


def _native_point(
    message: dict[str, Any], native_width: int, native_height: int
) -> tuple[int, int]:
    x, y = _whole(message, "x"), _whole(message, "y")
    width, height = _whole(message, "width"), _whole(message, "height")
    if not (0 < width <= _MAX_VIDEO_SIDE and 0 < height <= _MAX_VIDEO_SIDE):
        raise BadHumanEvent(f"a video of {width}x{height} pixels")
    native_x = min(max(x, 0) * native_width // width, native_width - 1)
    native_y = min(max(y, 0) * native_height // height, native_height - 1)
    return native_x, native_y


def _whole(message: dict[str, Any], name: str) -> int:
    value = message.get(name)
    # bool is an int to Python, not to the page.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadHumanEvent(f"{name} must be a number")
    if value != value or abs(value) > 2**31:  # NaN or absurd
        raise BadHumanEvent(f"{name} is out of range")
    return int(value)


def _notches(message: dict[str, Any], name: str) -> int:
    if name not in message:
        return 0
    return max(-MAX_SCROLL_NOTCHES, min(MAX_SCROLL_NOTCHES, _whole(message, name)))


class HeldInput:
    """The keys and buttons a person holds down on the rig, as their events say: what
    a hand back (or their page going away) releases."""

    def __init__(self) -> None:
        self._keys: dict[str, None] = {}
        self._buttons: dict[Literal["left", "right", "middle"], None] = {}

    def note(self, event: ops.InputEvent) -> None:
        if event.type == "key_down" and event.key is not None:
            self._keys[event.key] = None
        elif event.type == "key_up" and event.key is not None:
            self._keys.pop(event.key, None)
        elif event.type == "mouse_down" and event.button is not None:
            self._buttons[event.button] = None
        elif event.type == "mouse_up" and event.button is not None:
            self._buttons.pop(event.button, None)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self._keys)

    @property
    def buttons(self) -> tuple[Literal["left", "right", "middle"], ...]:
        return tuple(self._buttons)

    def take_releases(self) -> list[ops.InputEvent]:
        """The ups of everything held (buttons first, keys in reverse of their presses),
        and nothing is held any more."""
        releases = [ops.InputEvent(type="mouse_up", button=b) for b in self._buttons]
        releases += [ops.InputEvent(type="key_up", key=k) for k in reversed(self._keys)]
        self._keys.clear()
        self._buttons.clear()
        return releases
