"""The `reduce_motion` option: the desktop's UI animations off while a session is live.

An agent's step is "act, wait until the screen is still, look". On a stock desktop a
click starts transitions (a focus ring fading in, a pressed button easing back) that
repaint every frame for a fifth of a second or more, and a settle waits them out: pure
waiting for a model, which cares about the end state. Agent platforms turn animations
off; this option lets a rig's owner do the same on their own machine
(`rigway agent run --reduce-motion`), for the time an API session is live only.

The lifecycle, like held input's (`safety.py`): animations go off when a session
starts, and back to what they were on every way out of it: the session's end, a
dropped link (the owner may take the desktop back while it is down; the session's next
input batch after the link returns turns them off again), and the agent's stop. What
"off" means is the backend's (`Desktop.set_reduce_motion`): on X11 the agent becomes
the XSETTINGS manager when the desktop has none, on Windows it clears the UI effects.

Threads: `session_started`, `session_ended` and `needs_engage` on the event loop;
`engage` and `restore` on the input worker, the thread that calls the backend for
input. A session flag set on the loop before the worker is asked keeps an `engage`
queued behind a session's end from turning animations off again.
"""

from __future__ import annotations

import logging
import threading

from rigway.agent.backends.base import Desktop

__all__ = ["MotionReducer"]

_log = logging.getLogger(__name__)


class MotionReducer:
    def __init__(self, desktop: Desktop, *, enabled: bool) -> None:
        self._desktop = desktop
        self.enabled = enabled
        self._lock = threading.Lock()
        self._session_live = False
        self._engaged = False

    # ---- event loop ------------------------------------------------------------------

    def session_started(self) -> None:
        with self._lock:
            self._session_live = True

    def session_ended(self) -> None:
        with self._lock:
            self._session_live = False

    @property
    def needs_engage(self) -> bool:
        """Whether `engage` would turn animations off now (cheap: no backend call)."""
        with self._lock:
            return self.enabled and self._session_live and not self._engaged

    @property
    def engaged(self) -> bool:
        with self._lock:
            return self._engaged

    # ---- input worker ----------------------------------------------------------------

    def engage(self) -> None:
        """Animations off, if the option is on and a session is live; idempotent."""
        with self._lock:
            if not (self.enabled and self._session_live) or self._engaged:
                return
            # Marked before the call: a backend that fails half-way may have turned
            # something off, and a restore that finds nothing to undo is harmless.
            self._engaged = True
        try:
            self._desktop.set_reduce_motion(True)
        except Exception:
            # Animations only cost time: the session goes on with them.
            _log.exception("reduce motion: could not turn the desktop's animations off")

    def restore(self) -> None:
        """Animations back to what they were, if this turned them off; idempotent."""
        with self._lock:
            if not self._engaged:
                return
            self._engaged = False
        try:
            self._desktop.set_reduce_motion(False)
        except Exception:
            _log.exception("reduce motion: could not restore the desktop's animations")
