"""`screen/wait` on the host: until the screen changes, falls quiet, or a control
appears in the focused window, bounded by the request's timeout.

Not met in time is an answer (`met: false`), never an error. A backend without damage
reporting cannot watch the screen: `change` answers `met: false` at once (waiting out
the timeout would tell the caller nothing more), and `quiet` waits `quiet_ms` and answers
`met: false`, as a batch's settle does there. What the change and quiet waits poll still
reaches `/dirty` (`ScreenService`).
"""

from __future__ import annotations

import asyncio
import logging
import time

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import Rect
from rigway.agent.screen import ScreenService
from rigway.protocol import ops

__all__ = ["TARGET_WALK_INTERVAL_S", "matches", "names_a_target", "wait_on_screen"]

_log = logging.getLogger(__name__)

# A walk of the focused window costs the host real work (tens of ms, more on a large
# window): a target wait walks at most this often.
TARGET_WALK_INTERVAL_S = 0.15


async def wait_on_screen(
    request: ops.ScreenWait,
    screen: ScreenService,
    accessibility: AccessibilityService,
    within: Rect | None = None,
) -> ops.ScreenWaited:
    """`within`: an app session's window; changes elsewhere do not count."""
    timeout_s = request.timeout_ms / 1000
    started = time.monotonic()
    if request.until == "change":
        # The mark first: only damage after the wait began counts.
        mark = await screen.damage_mark()
        changed = await screen.wait_for_change(mark, timeout_s, within)
        return _waited(changed is True, started)
    if request.until == "quiet":
        settled, _ = await screen.wait_quiet(request.quiet_ms / 1000, timeout_s, within)
        return _waited(settled, started)
    return await _wait_for_target(request, accessibility, started, started + timeout_s)


def names_a_target(request: ops.ScreenWait) -> bool:
    """A target wait needs something to match: without a field every control would."""
    return any(f is not None for f in (request.target_name, request.target_role, request.target_id))


def matches(target: ops.Target, request: ops.ScreenWait) -> bool:
    """Every field the request gives: the name as a case-insensitive substring, the
    role and the id exactly."""
    if request.target_id is not None and target.id != request.target_id:
        return False
    if request.target_role is not None and target.role != request.target_role:
        return False
    return request.target_name is None or request.target_name.casefold() in target.name.casefold()


async def _wait_for_target(
    request: ops.ScreenWait,
    accessibility: AccessibilityService,
    started: float,
    deadline: float,
) -> ops.ScreenWaited:
    while True:
        walk_started = time.monotonic()
        found = await _find(request, accessibility, deadline - walk_started)
        if found is not None:
            return _waited(True, started, found)
        next_walk = walk_started + TARGET_WALK_INTERVAL_S
        if next_walk >= deadline:
            return _waited(False, started)
        await asyncio.sleep(max(0.0, next_walk - time.monotonic()))


async def _find(
    request: ops.ScreenWait, accessibility: AccessibilityService, budget_s: float
) -> ops.Target | None:
    """The first matching target of a snapshot taken within `budget_s`; None when none
    matches or no snapshot could be had in time (the next walk may do better)."""
    if budget_s <= 0:
        return None
    try:
        # The walk itself is shielded inside `snapshot`: giving up here leaves it to
        # whoever else shares it.
        snapshot = await asyncio.wait_for(accessibility.snapshot(), budget_s)
    except TimeoutError:
        return None
    except Exception:
        _log.warning("accessibility walk failed during a target wait", exc_info=True)
        return None
    return next((t for t in snapshot.targets if matches(t, request)), None)


def _waited(met: bool, started: float, target: ops.Target | None = None) -> ops.ScreenWaited:
    waited_ms = (time.monotonic() - started) * 1000
    return ops.ScreenWaited(met=met, waited_ms=waited_ms, target=target)
