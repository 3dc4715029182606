"""Whether the rig's owner is using its own keyboard or mouse now ("owner active").

The backend records when local input last happened (`Desktop.last_local_input`; what
the agent injects itself never counts). The owner is active while that was less than
the session's `owner_idle_s` ago, and API input is refused meanwhile: the input worker
checks before each batch sends anything (`require_owner_idle`; 409 `owner_active` at
the gateway). Screenshots, observes and waits go on.

The check reads the latest recorded time when the batch reaches the worker, so a batch
is refused as soon as the backend has read the owner's event (a listener thread reads
it within milliseconds). Three readers, all cheap: the input worker, the dispatcher
with each dirty take (so every observe reports it fresh), and `OwnerPresenceReporter`
a few times a second while connected, which sends changes as `owner/presence` notes.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence

from rigway.agent.backends.base import Desktop
from rigway.agent.polled_reporter import PolledReporter
from rigway.agent.safety import InputGuard

__all__ = [
    "DEFAULT_OWNER_IDLE_S",
    "PRESENCE_SAMPLE_INTERVAL_S",
    "OwnerActiveError",
    "OwnerPresence",
    "OwnerPresenceReporter",
    "require_owner_idle",
]

_log = logging.getLogger(__name__)

# The owner's delay when no session said otherwise (`ops.SessionStart.owner_idle_s`).
DEFAULT_OWNER_IDLE_S = 10.0
# How often the reporter samples: the Session view lags a change by at most this.
PRESENCE_SAMPLE_INTERVAL_S = 0.25


class OwnerActiveError(RuntimeError):
    """Input refused: the owner used the rig's own input `since_s` ago, less than
    `idle_s` (nothing of the batch ran; held input was released)."""

    def __init__(self, since_s: float, idle_s: float, released: Sequence[str]) -> None:
        self.since_s = since_s
        self.idle_s = idle_s
        self.released = list(released)
        self.detail = (
            f"the rig's owner used its keyboard or mouse {since_s:.1f} s ago; API input "
            f"resumes after {idle_s:g} s without local input"
        )
        held = f"; released held {', '.join(released)}" if released else ""
        super().__init__(self.detail + held)


class OwnerPresence:
    """The owner's presence for the current session's delay; safe from any thread.

    `idle_s` is set at each session start (a float assignment, atomic); the clock is
    the one the backend records in (`time.monotonic`), replaceable in tests."""

    def __init__(
        self,
        desktop: Desktop,
        *,
        idle_s: float = DEFAULT_OWNER_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._desktop = desktop
        self._clock = clock
        self._reported_failure = False
        self.idle_s = idle_s

    def since_local_input_s(self) -> float | None:
        """Seconds since the owner's last input; None when there was none (or the
        backend cannot tell, which must not lock the API out)."""
        try:
            last = self._desktop.last_local_input()
        except Exception:
            if not self._reported_failure:
                self._reported_failure = True
                _log.exception("the backend failed to tell the last local input")
            return None
        if last is None or not math.isfinite(last):
            return None
        # A time ahead of the clock (a backend rounding up) is input happening now.
        return max(0.0, self._clock() - last)

    def is_active(self) -> bool:
        since = self.since_local_input_s()
        return since is not None and since < self.idle_s


def require_owner_idle(presence: OwnerPresence, guard: InputGuard) -> None:
    """On the input worker, before a batch sends anything: `OwnerActiveError` while
    the owner is active, after releasing every held key and button (a modifier the
    API holds would change what the owner types)."""
    since = presence.since_local_input_s()
    if since is not None and since < presence.idle_s:
        raise OwnerActiveError(since, presence.idle_s, guard.release_all())


class OwnerPresenceReporter(PolledReporter[bool]):
    """Samples `is_active` every `interval_s` and reports changes (`owner/presence`)."""

    def __init__(
        self, presence: OwnerPresence, *, interval_s: float = PRESENCE_SAMPLE_INTERVAL_S
    ) -> None:
        super().__init__(interval_s=interval_s)
        self._presence = presence

    def _read(self) -> bool:
        return self._presence.is_active()
