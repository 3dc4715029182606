"""Held-input tracking, so a session end or a lost link never leaves a key stuck down.

`InputGuard` wraps the backend's input primitives. Its held-key and held-button
bookkeeping is confined to the input worker thread (every method except `interrupt`,
`epoch` and `wait_interrupted` must run there), which is also the only thread that
calls the backend's input role, so press order and bookkeeping can never disagree.

Interruption crosses threads: the event loop calls `interrupt()` when the link drops
or the session ends. It bumps an epoch that a running batch compares against between
events and while it pauses for `delay_ms`, so a long batch stops at once instead of
typing on after its session is gone; `release_all` then runs next on the worker.

With a `HeldInputJournal`, what is held is also written to a file on every change, so
an agent killed with keys down (Windows keeps them down after their sender dies) can
be followed by one that lets go of them: `release_left_over`, run at start. A release
that fails stays in the journal (and is tried again by the next `release_all`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial

from rigway.agent.backends.base import Desktop, MouseButton
from rigway.agent.held_input_journal import HeldInputJournal, HeldInputs, JournalError

__all__ = ["InputGuard", "button_name"]

_log = logging.getLogger(__name__)


def button_name(button: MouseButton) -> str:
    """How a held button is named in `released_inputs` (keys appear as key names)."""
    return f"mouse_{button}"


class InputGuard:
    def __init__(self, desktop: Desktop, journal: HeldInputJournal | None = None) -> None:
        self._desktop = desktop
        self._journal = journal
        # Insertion-ordered: release_all lets go in the reverse order of pressing.
        self._held_keys: dict[str, None] = {}
        self._held_buttons: dict[MouseButton, None] = {}
        # Releases that failed: possibly still down, so journaled and tried again.
        self._unreleased_keys: dict[str, None] = {}
        self._unreleased_buttons: dict[MouseButton, None] = {}
        self._epoch = 0
        self._epoch_changed = threading.Condition()

    # ---- cross-thread --------------------------------------------------------------

    @property
    def epoch(self) -> int:
        """Read on the event loop when a batch is accepted; see `wait_interrupted`."""
        with self._epoch_changed:
            return self._epoch

    def interrupt(self) -> None:
        """Stop any batch accepted before now (called from the event loop)."""
        with self._epoch_changed:
            self._epoch += 1
            self._epoch_changed.notify_all()

    def is_interrupted(self, epoch: int) -> bool:
        with self._epoch_changed:
            return self._epoch != epoch

    def wait_interrupted(self, timeout_s: float, epoch: int) -> bool:
        """Pause up to `timeout_s`; True as soon as an interrupt lands (the pause ends)."""
        with self._epoch_changed:
            return self._epoch_changed.wait_for(lambda: self._epoch != epoch, timeout_s)

    # ---- input worker only -----------------------------------------------------------

    @property
    def held_keys(self) -> tuple[str, ...]:
        return tuple(self._held_keys)

    @property
    def held_buttons(self) -> tuple[MouseButton, ...]:
        return tuple(self._held_buttons)

    def move_pointer(self, x: int, y: int) -> None:
        self._desktop.move_pointer(x, y)

    def scroll(self, dx: int, dy: int) -> None:
        self._desktop.scroll(dx, dy)

    def type_text(self, text: str) -> None:
        self._desktop.type_text(text)

    def key_down(self, key: str) -> None:
        # Recorded before the call: if the backend fails half-way the key may be down,
        # and a spurious release is harmless where a stuck key is not.
        self._held_keys.pop(key, None)
        self._held_keys[key] = None
        self._journal_held()
        self._desktop.set_key(key, True)

    def key_up(self, key: str) -> None:
        self._desktop.set_key(key, False)
        self._held_keys.pop(key, None)
        self._unreleased_keys.pop(key, None)
        self._journal_held()

    def button_down(self, button: MouseButton) -> None:
        self._held_buttons.pop(button, None)
        self._held_buttons[button] = None
        self._journal_held()
        self._desktop.set_button(button, True)

    def button_up(self, button: MouseButton) -> None:
        self._desktop.set_button(button, False)
        self._held_buttons.pop(button, None)
        self._unreleased_buttons.pop(button, None)
        self._journal_held()

    def release_all(self) -> list[str]:
        """Release every held key (reverse press order), then every held button.

        Best effort: one failing release does not stop the others; it is logged, no
        longer counted as held, and kept in the journal (if any) to be tried again by
        the next `release_all` or the next agent's `release_left_over`.
        """
        keys = {**self._unreleased_keys, **self._held_keys}
        buttons = {**self._unreleased_buttons, **self._held_buttons}
        self._held_keys.clear()
        self._held_buttons.clear()
        self._unreleased_keys.clear()
        self._unreleased_buttons.clear()
        return self._release(HeldInputs(tuple(keys), tuple(buttons)))

    def release_buttons(self) -> list[str]:
        """Release every held button, keys left alone: a batch that stopped half-way
        must not leave a drag going (keys a `key_down` holds stay, as asked). Best
        effort, like `release_all`."""
        buttons = {**self._unreleased_buttons, **self._held_buttons}
        self._held_buttons.clear()
        self._unreleased_buttons.clear()
        return self._release(HeldInputs((), tuple(buttons)))

    def release_left_over(self) -> list[str]:
        """Release what the journal lists, left down by an agent that did not get to
        release it (killed); run once at start, before any input. A journal that
        cannot be read is reported and cleared: it must never stop the agent."""
        if self._journal is None:
            return []
        try:
            left_over = self._journal.read()
        except JournalError as exc:
            _log.warning("ignoring the held-input journal: %s", exc)
            left_over = HeldInputs()
        self._unreleased_keys.clear()
        self._unreleased_buttons.clear()
        if not left_over.is_empty():
            _log.warning(
                "releasing input a previous agent left held: keys %s, buttons %s",
                list(left_over.keys),
                list(left_over.buttons),
            )
        return self._release(left_over)

    def _release(self, held: HeldInputs) -> list[str]:
        """Release `held`; what fails joins the unreleased lists (the caller cleared
        those it hands in)."""
        released: list[str] = []
        for key in reversed(held.keys):
            if _release(partial(self._desktop.set_key, key, False), key):
                released.append(key)
            else:
                self._unreleased_keys[key] = None
        for button in reversed(held.buttons):
            name = button_name(button)
            if _release(partial(self._desktop.set_button, button, False), name):
                released.append(name)
            else:
                self._unreleased_buttons[button] = None
        self._journal_held()
        return released

    def _journal_held(self) -> None:
        if self._journal is None:
            return
        keys = {**self._unreleased_keys, **self._held_keys}
        buttons = {**self._unreleased_buttons, **self._held_buttons}
        try:
            self._journal.write(HeldInputs(tuple(keys), tuple(buttons)))
        except OSError as exc:
            # Input matters more than its journal: go on, and say why a restart may
            # not release what this agent holds.
            _log.warning("cannot update the held-input journal %s: %s", self._journal.path, exc)


def _release(release: Callable[[], None], name: str) -> bool:
    try:
        release()
    except Exception:
        _log.exception("could not release held input %s", name)
        return False
    return True
