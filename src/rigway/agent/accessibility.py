"""The focused window's click targets: one walk at a time, stable ids, redaction.

The walk runs on the accessibility worker (the `executor` passed in, one worker).
Concurrent callers share the walk in flight: an observe sends `a11y/targets` and a
`mark: true` capture together, and both must see the same targets (the marks drawn on
the image are the ids the agent will click), for the price of one walk.

Redaction is enforced here again whatever the backend returned: a masked element's
value is always the literal `[redacted]`, so a backend bug cannot leak a password.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from concurrent.futures import Executor

from rigway.agent.app_scope import AppScope
from rigway.agent.backends.base import AccessibilitySnapshot, AccessibleElement, Desktop, WalkBudget
from rigway.protocol import ops

__all__ = ["AccessibilityService", "AccessibilityTimeoutError", "build_snapshot", "target_id"]

_log = logging.getLogger(__name__)

# The backend promises to honour the budget's deadline; past this much more the walk is
# presumed hung and the callers get an error instead of waiting for ever.
_HANG_GRACE_S = 2.0


class AccessibilityTimeoutError(TimeoutError):
    """The backend's walk overran its deadline by far: presumed hung."""


def target_id(key: str) -> str:
    """Public stable id of a control: its runtime identity hashed, so the same control
    keeps its id across snapshots whatever its list position, and no backend-internal
    path (which may name processes or documents) is exposed."""
    return "t_" + hashlib.sha256(key.encode()).hexdigest()[:10]


class AccessibilityService:
    def __init__(self, desktop: Desktop, executor: Executor, budget: WalkBudget) -> None:
        self._desktop = desktop
        self._executor = executor
        self._budget = budget
        self._in_flight: asyncio.Future[ops.TargetSnapshot] | None = None
        self._scope: AppScope | None = None

    def set_scope(self, scope: AppScope | None) -> None:
        """An app session's scope (None: the focused window, wherever it is): walks
        then show only the session's own window (`app_scope.scoped_snapshot`) and
        raise `NoAppWindowError` while it has none."""
        self._scope = scope

    async def snapshot(self) -> ops.TargetSnapshot:
        """The current targets; joins the walk in flight when there is one."""
        walk = self._in_flight
        if walk is None:
            walk = asyncio.ensure_future(self._walk())
            self._in_flight = walk
            walk.add_done_callback(self._forget)
        # Shielded: one caller giving up (its request's deadline) must not cancel the
        # walk the other caller of the same observe is waiting on.
        return await asyncio.shield(walk)

    async def fresh_snapshot(self) -> ops.TargetSnapshot:
        """A walk begun now, never one already in flight: a target-bound input event
        acts where its control is after the events before it ran, and a walk begun
        earlier may show it where it was."""
        return await self._walk()

    def _forget(self, walk: asyncio.Future[ops.TargetSnapshot]) -> None:
        if self._in_flight is walk:
            self._in_flight = None
        if not walk.cancelled():
            # Marks the exception retrieved when every caller gave up before the end.
            walk.exception()

    async def _walk(self) -> ops.TargetSnapshot:
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        work = loop.run_in_executor(self._executor, self._walk_in_worker)
        timeout_s = self._budget.deadline_s * 2 + _HANG_GRACE_S
        try:
            native, snap, app_window = await asyncio.wait_for(work, timeout_s)
        except TimeoutError as exc:
            raise AccessibilityTimeoutError(
                f"accessibility walk still running after {timeout_s:.1f} s"
            ) from exc
        host_uia_ms = (time.perf_counter() - started) * 1000.0
        built = build_snapshot(snap, native, self._budget, host_uia_ms)
        return built if app_window is None else built.model_copy(update={"app_window": app_window})

    def _walk_in_worker(
        self,
    ) -> tuple[tuple[int, int], AccessibilitySnapshot, tuple[int, int, int, int] | None]:
        native = self._desktop.native_size()
        snap = self._desktop.snapshot_accessibility(self._budget)
        scope = self._scope
        if scope is None:
            return native, snap, None
        scoped, view = scope.scope_snapshot(snap)
        return native, scoped, view.as_list()


def build_snapshot(
    snap: AccessibilitySnapshot,
    native_size: tuple[int, int],
    budget: WalkBudget,
    host_uia_ms: float,
) -> ops.TargetSnapshot:
    """Backend snapshot → wire shape: ids hashed, budget and redaction enforced."""
    elements = snap.elements
    truncated = snap.truncated
    if len(elements) > budget.max_elements:
        elements = elements[: max(budget.max_elements, 0)]
        truncated = True
    targets: list[ops.Target] = []
    seen: set[str] = set()
    for element in elements:
        public_id = _unique_id(element.key, seen)
        targets.append(_to_target(element, public_id))
    if any(e.masked and e.value is not None for e in elements):
        _log.warning("backend returned a value for a masked element; redacted")
    return ops.TargetSnapshot(
        width=native_size[0],
        height=native_size[1],
        window_title=snap.window_title,
        window_role=snap.window_role,
        targets=targets,
        truncated=truncated,
        host_uia_ms=round(host_uia_ms, 3),
    )


def _unique_id(key: str, seen: set[str]) -> str:
    # Two controls reporting the same key would otherwise share an id and one could
    # never be clicked by id; the n-th duplicate gets a derived but still stable id.
    candidate, n = target_id(key), 1
    while candidate in seen:
        candidate = target_id(f"{key}#{n}")
        n += 1
    seen.add(candidate)
    return candidate


def _to_target(element: AccessibleElement, public_id: str) -> ops.Target:
    return ops.Target(
        id=public_id,
        x=element.x,
        y=element.y,
        w=element.w,
        h=element.h,
        role=element.role,
        name=element.name,
        source="uia",
        focused=element.focused,
        masked=element.masked,
        value=ops.MASKED_VALUE if element.masked else element.value,
    )
