"""The desktop's state (`Desktop.desktop_state`) for the agent core: read safely, input
refused while it is not "normal", and changes reported to the gateway.

Three readers, all off the event loop: the input worker before each batch (a batch on
a locked desktop would type into the lock screen's password field, or be lost), the
screen worker with each dirty take (so every observe reports it fresh), and
`DesktopStateReporter` about once a second while the link is up, which sends only
changes (`desktop/state` notes; the state at connect rides in the hello). The gateway
keeps the last one per connected rig for its Session and Rig views.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rigway.agent.backends.base import DESKTOP_STATES, Desktop, DesktopState
from rigway.agent.polled_reporter import PolledReporter
from rigway.agent.safety import InputGuard

__all__ = [
    "DEFAULT_SAMPLE_INTERVAL_S",
    "DesktopStateReporter",
    "DesktopUnavailableError",
    "read_desktop_state",
    "require_drivable",
]

_log = logging.getLogger(__name__)

DEFAULT_SAMPLE_INTERVAL_S = 1.0


class DesktopUnavailableError(RuntimeError):
    """Input refused: the desktop is not "normal" (nothing of the batch ran)."""

    def __init__(self, state: DesktopState, released: Sequence[str]) -> None:
        held = f"; released held {', '.join(released)}" if released else ""
        super().__init__(f"the desktop is {state}: input refused{held}")
        self.state = state
        self.released = list(released)


def read_desktop_state(desktop: Desktop) -> DesktopState:
    """`desktop.desktop_state()`, held to its contract: a backend that raises anyway, or
    answers a name outside `DESKTOP_STATES`, reads as "unknown" (input then stays
    refused, which is the safe side)."""
    try:
        state = desktop.desktop_state()
    except Exception:
        _log.exception("the backend failed to tell the desktop state")
        return "unknown"
    if state not in DESKTOP_STATES:
        _log.error("the backend told an unknown desktop state %r", state)
        return "unknown"
    return state


def require_drivable(desktop: Desktop, guard: InputGuard) -> None:
    """On the input worker, before a batch sends anything: `DesktopUnavailableError`
    unless the desktop is "normal", after releasing every held key and button: a
    modifier held through a lock would corrupt the password typed into the lock
    screen, and follow the user back in."""
    state = read_desktop_state(desktop)
    if state != "normal":
        raise DesktopUnavailableError(state, guard.release_all())


class DesktopStateReporter(PolledReporter[DesktopState]):
    """Samples the state on a worker thread every `interval_s` and reports changes."""

    def __init__(self, desktop: Desktop, *, interval_s: float = DEFAULT_SAMPLE_INTERVAL_S) -> None:
        super().__init__(interval_s=interval_s)
        self._desktop = desktop

    def _read(self) -> DesktopState:
        return read_desktop_state(self._desktop)
