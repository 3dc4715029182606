"""Runs one validated `input/batch` on the input worker thread, in order.

Every press goes through the `InputGuard`, so what is held is always known. A chord
(`key_press` of `ctrl+shift+s`) presses in order and releases in reverse, and releases
what it pressed even when a press fails half-way. A failure stops the batch with an
`InputEventError` naming the event's index; keys deliberately held by an earlier
`key_down` stay held (the caller asked for that) until `key_up` or `release_all`.

`run_event` runs one event at a point already resolved (a target's centre): the
act-and-see batch (`rigway.agent.act`) runs its events one at a time, watching the
screen between them from the event loop. `run_batch` runs a whole list at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rigway.agent.backends.base import MouseButton
from rigway.agent.safety import InputGuard
from rigway.protocol import ops
from rigway.protocol.keys import parse_chord

__all__ = [
    "POINTER_EVENTS",
    "TYPE_CHUNK_CHARS",
    "InputEventError",
    "InputInterruptedError",
    "run_batch",
    "run_event",
]

# Events that act at a point (given as x,y or a target), as against keyboard events.
POINTER_EVENTS: frozenset[str] = frozenset(
    {"mouse_move", "mouse_click", "mouse_down", "mouse_up", "mouse_scroll"}
)

# Text is typed this many characters at a time, with an interrupt check between: one
# event may carry 10,000 characters, which a backend can take seconds to type, and a
# session end or a dropped link must stop it at once.
TYPE_CHUNK_CHARS = 64


class InputEventError(RuntimeError):
    def __init__(self, index: int, event_type: str, cause: BaseException) -> None:
        super().__init__(f"event {index} ({event_type}) failed: {cause}")
        self.index = index
        self.event_type = event_type


class InputInterruptedError(RuntimeError):
    """The session ended or the link dropped while the batch ran."""

    def __init__(self, index: int) -> None:
        super().__init__(f"input interrupted before event {index} (session ended or link lost)")
        self.index = index


def run_batch(guard: InputGuard, events: Sequence[ops.InputEvent], *, epoch: int) -> int:
    """Run `events` in order; `epoch` is `guard.epoch` read when the batch was accepted."""
    for index, event in enumerate(events):
        run_event(guard, event, index=index, epoch=epoch)
    return len(events)


def run_event(
    guard: InputGuard,
    event: ops.InputEvent,
    *,
    index: int,
    epoch: int,
    point: tuple[int, int] | None = None,
) -> None:
    """Run one event, then its `delay_ms`.

    `point` replaces the event's x,y (a target resolved to native pixels). Raises
    `InputInterruptedError` when the batch was interrupted before it or during its
    pause, `InputEventError` when the backend failed."""
    if guard.is_interrupted(epoch):
        raise InputInterruptedError(index)
    if point is not None:
        event = event.model_copy(update={"x": point[0], "y": point[1]})
    try:
        if event.type == "type_text":
            _type_text(guard, event.text or "", epoch=epoch, index=index)
        else:
            _HANDLERS[event.type](guard, event)
    except InputInterruptedError:
        raise
    except Exception as exc:
        raise InputEventError(index, event.type, exc) from exc
    # The pause is the host-side delay the caller asked for after this event; it
    # ends early on an interrupt so a dropped link never waits out a long batch.
    if event.delay_ms > 0 and guard.wait_interrupted(event.delay_ms / 1000.0, epoch):
        raise InputInterruptedError(index + 1)


def _move_if_given(guard: InputGuard, event: ops.InputEvent) -> None:
    if event.x is not None and event.y is not None:
        guard.move_pointer(event.x, event.y)


def _mouse_move(guard: InputGuard, event: ops.InputEvent) -> None:
    if event.x is None or event.y is None:
        raise ValueError("mouse_move needs x and y")
    guard.move_pointer(event.x, event.y)


def _mouse_click(guard: InputGuard, event: ops.InputEvent) -> None:
    _move_if_given(guard, event)
    button = _button(event)
    try:
        guard.button_down(button)
    finally:
        # Released even when the press failed half-way: the guard counted it as held.
        guard.button_up(button)


def _mouse_down(guard: InputGuard, event: ops.InputEvent) -> None:
    # Held until a mouse_up, the end of the batch that fails, or release_all: the guard
    # knows it is down from before the call on.
    _move_if_given(guard, event)
    guard.button_down(_button(event))


def _mouse_up(guard: InputGuard, event: ops.InputEvent) -> None:
    _move_if_given(guard, event)
    guard.button_up(_button(event))


def _button(event: ops.InputEvent) -> MouseButton:
    return "left" if event.button is None else event.button


def _mouse_scroll(guard: InputGuard, event: ops.InputEvent) -> None:
    _move_if_given(guard, event)
    dx = 0 if event.dx is None else event.dx
    dy = 0 if event.dy is None else event.dy
    guard.scroll(dx, dy)


def _chord(event: ops.InputEvent) -> list[str]:
    if event.key is None:
        raise ValueError(f"{event.type} needs key")
    return parse_chord(event.key)


def _key_press(guard: InputGuard, event: ops.InputEvent) -> None:
    keys = _chord(event)
    pressed: list[str] = []
    press_error: Exception | None = None
    try:
        for key in keys:
            # Appended first: a press that raised may still have gone down.
            pressed.append(key)
            guard.key_down(key)
    except Exception as exc:
        press_error = exc
    release_error = _release_keys(guard, pressed)
    if press_error is not None:
        raise press_error
    if release_error is not None:
        raise release_error


def _release_keys(guard: InputGuard, keys: list[str]) -> Exception | None:
    """Release in reverse order, every one attempted; the first failure is returned."""
    first_error: Exception | None = None
    for key in reversed(keys):
        try:
            guard.key_up(key)
        except Exception as exc:
            first_error = exc if first_error is None else first_error
    return first_error


def _key_down(guard: InputGuard, event: ops.InputEvent) -> None:
    for key in _chord(event):
        guard.key_down(key)


def _key_up(guard: InputGuard, event: ops.InputEvent) -> None:
    error = _release_keys(guard, _chord(event))
    if error is not None:
        raise error


def _type_text(guard: InputGuard, text: str, *, epoch: int, index: int) -> None:
    for start in range(0, len(text), TYPE_CHUNK_CHARS):
        if start > 0 and guard.is_interrupted(epoch):
            raise InputInterruptedError(index)
        guard.type_text(text[start : start + TYPE_CHUNK_CHARS])


_HANDLERS: dict[str, Callable[[InputGuard, ops.InputEvent], None]] = {
    "mouse_move": _mouse_move,
    "mouse_click": _mouse_click,
    "mouse_down": _mouse_down,
    "mouse_up": _mouse_up,
    "mouse_scroll": _mouse_scroll,
    "key_press": _key_press,
    "key_down": _key_down,
    "key_up": _key_up,
}
