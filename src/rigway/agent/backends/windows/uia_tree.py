"""The budgeted walk of the foreground window's UI Automation tree.

Pure: the walk runs over a `UiaPort` (implemented by `_uia.py` with comtypes, and by a
fake in the tests), on the thread that owns the port (`uia_walk` runs it on a worker).

1. the foreground window's element (the port skips our own windows and the desktop);
2. breadth first, one `FindAllBuildCache(TreeScope_Children, ControlViewCondition)`
   per parent, so stopping at the element cap or the deadline keeps the top-level
   controls; each element is mapped and collected as soon as it is read;
3. values: one more `FindAllBuildCache(TreeScope_Children)` per parent of a collected
   element with a Value pattern, whose condition excludes password elements
   (`uia_model.VALUE_QUERY`), joined by RuntimeId. So the value reads are bounded like
   the walk (at most one per collected element, never a search of the whole window)
   and each parent's values are kept as they come. A masked element never takes a
   value, whatever the port answers.

Before each call the port's call timeout (UI Automation's connection and transaction
timeouts) is set to the time left to the deadline, so no single call can run past it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rigway.agent.backends.base import AccessibilitySnapshot, AccessibleElement, WalkBudget
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.uia_model import (
    CHILDREN_QUERY,
    MAX_VALUE_CHARS,
    ROOT_QUERY,
    UIA_E_ELEMENTNOTAVAILABLE,
    UIA_E_TIMEOUT,
    VALUE_QUERY,
    CacheQuery,
    UiaNode,
    role_name,
    to_element,
)

__all__ = [
    "MIN_CALL_TIMEOUT_S",
    "WALK_SHARE_OF_DEADLINE",
    "UiaCallError",
    "UiaPort",
    "WalkResults",
    "walk_foreground",
]

logger = logging.getLogger(__name__)

# The breadth-first walk may use this share of the deadline; the rest is kept for the
# value queries, so a large tree does not leave every text field without its text.
WALK_SHARE_OF_DEADLINE = 0.75
# The least call timeout set: UI Automation takes whole milliseconds, and a call made
# with next to no time left should fail fast, not be given none at all.
MIN_CALL_TIMEOUT_S = 0.001

RuntimeId = tuple[int, ...]


class UiaCallError(OSError):
    """A UI Automation call failed. `hresult` is the signed HRESULT comtypes reported,
    None when the failure was not a COM error."""

    def __init__(self, message: str, hresult: int | None = None) -> None:
        super().__init__(message)
        self.hresult = hresult

    @property
    def is_timeout(self) -> bool:
        return self.hresult == UIA_E_TIMEOUT

    @property
    def is_gone(self) -> bool:
        """The element went away between two calls (its subtree is simply skipped)."""
        return self.hresult == UIA_E_ELEMENTNOTAVAILABLE


class UiaPort(Protocol):
    """UI Automation for one thread: created, called and closed on that thread only.

    Handles are the port's own element references; the walk only passes them back.
    Each query is carried out as given (`CacheQuery`): its scope, its condition and no
    property beyond its `property_ids`. Failed calls raise `UiaCallError`."""

    def set_call_timeout(self, timeout_s: float) -> None:
        """Bound each call inside UI Automation (IUIAutomation2's connection and
        transaction timeouts), so a hung provider eventually lets the thread go."""
        ...

    def foreground_root(self, query: CacheQuery) -> UiaNode | None:
        """The element of the foreground window, with `query`'s properties cached;
        None when there is none to walk (no foreground window, one of ours, the
        desktop)."""
        ...

    def children(self, parent: object, query: CacheQuery) -> list[UiaNode]:
        """`parent.FindAllBuildCache(query)`: its children in the control view."""
        ...

    def values(self, root: object, query: CacheQuery) -> dict[RuntimeId, str]:
        """`root.FindAllBuildCache(query)` → each found element's RuntimeId → its
        Value pattern's value."""
        ...

    def close(self) -> None: ...


class WalkResults:
    """What a walk has collected so far, shared by the worker that fills it and the
    caller, which may stop waiting and take it as it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window_title = ""
        self._window_role = ""
        self._window_pid: int | None = None
        self._elements: list[AccessibleElement] = []
        self._index_by_runtime_id: dict[RuntimeId, int] = {}
        self._truncated = False

    def set_window(self, title: str, role: str, pid: int | None = None) -> None:
        with self._lock:
            self._window_title, self._window_role = title, role
            self._window_pid = pid

    def add(self, runtime_id: RuntimeId, element: AccessibleElement) -> int:
        """Collect one element; the number collected so far."""
        with self._lock:
            if runtime_id:
                self._index_by_runtime_id[runtime_id] = len(self._elements)
            self._elements.append(element)
            return len(self._elements)

    def join_values(self, values: dict[RuntimeId, str]) -> None:
        """Give collected elements their values; a masked element keeps None."""
        with self._lock:
            for runtime_id, value in values.items():
                index = self._index_by_runtime_id.get(runtime_id)
                if index is None or self._elements[index].masked:
                    continue
                self._elements[index] = dataclasses.replace(
                    self._elements[index], value=value[:MAX_VALUE_CHARS]
                )

    def mark_truncated(self) -> None:
        with self._lock:
            self._truncated = True

    def count(self) -> int:
        with self._lock:
            return len(self._elements)

    def snapshot(self, *, truncated: bool = False) -> AccessibilitySnapshot:
        with self._lock:
            return AccessibilitySnapshot(
                window_title=self._window_title,
                window_role=self._window_role,
                elements=list(self._elements),
                truncated=self._truncated or truncated,
                window_pid=self._window_pid,
            )


@dataclass(frozen=True, slots=True)
class _Frame:
    """Where the elements are mapped to: the capture's placement and size."""

    placement: OutputPlacement
    capture_size: tuple[int, int]


def walk_foreground(
    port: UiaPort,
    budget: WalkBudget,
    placement: OutputPlacement,
    capture_size: tuple[int, int],
    results: WalkResults,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Walk the foreground window into `results` within `budget` (see the module
    docstring). Returns early, with `results` truncated, at the element cap or the
    deadline; a UI Automation timeout also counts as running out of time."""
    started = clock()
    walk = _Walk(
        port,
        _Frame(placement, capture_size),
        results,
        clock,
        deadline=started + budget.deadline_s,
        walk_deadline=started + budget.deadline_s * WALK_SHARE_OF_DEADLINE,
    )
    walk.bound_next_call()
    try:
        root = port.foreground_root(ROOT_QUERY)
    except UiaCallError as error:
        _note_failure(results, error, "the foreground window")
        return
    if root is None:
        return
    # UI Automation's ProcessId: 0 when it could not be read.
    pid = root.record.pid if root.record.pid > 0 else None
    results.set_window(root.record.name, role_name(root.record), pid)
    if budget.max_elements <= 0:
        results.mark_truncated()
        return
    if walk.breadth_first(root, budget.max_elements):
        walk.read_values()


@dataclass
class _Walk:
    """One walk's state: where it maps to, what it collected, and its deadlines (the
    breadth-first part stops at `walk_deadline`, the values at `deadline`)."""

    port: UiaPort
    frame: _Frame
    results: WalkResults
    clock: Callable[[], float]
    deadline: float
    walk_deadline: float
    # Parents of collected elements that have a Value pattern, in the order walked.
    value_parents: list[object] = field(default_factory=list)

    def bound_next_call(self) -> None:
        """The port's call timeout: the time left, so one call cannot overrun it."""
        self.port.set_call_timeout(max(self.deadline - self.clock(), MIN_CALL_TIMEOUT_S))

    def breadth_first(self, root: UiaNode, max_elements: int) -> bool:
        """Collect the root's descendants level by level. False when a UI Automation
        timeout says the window stopped answering (nothing more is asked of it)."""
        pending: deque[tuple[object, tuple[int, ...]]] = deque([(root.handle, ())])
        while pending:
            if self.clock() >= self.walk_deadline:
                self.results.mark_truncated()
                return True
            handle, path = pending.popleft()
            self.bound_next_call()
            try:
                children = self.port.children(handle, CHILDREN_QUERY)
            except UiaCallError as error:
                _note_failure(self.results, error, "children")
                if error.is_timeout:
                    return False
                continue
            if not self._collect(handle, path, children, pending, max_elements):
                return True
        return True

    def _collect(
        self,
        parent: object,
        path: tuple[int, ...],
        children: list[UiaNode],
        pending: deque[tuple[object, tuple[int, ...]]],
        max_elements: int,
    ) -> bool:
        """Map and collect one parent's children; False once past the element cap."""
        has_values = False
        for index, child in enumerate(children):
            child_path = (*path, index)
            # An offscreen element's subtree is hidden with it (a collapsed menu, a
            # background tab): not worth the budget.
            if not child.record.offscreen:
                pending.append((child.handle, child_path))
            element = to_element(
                child.record, None, self.frame.placement, self.frame.capture_size, child_path
            )
            if element is None:
                continue
            # Past the cap the walk goes on only to learn whether anything was left
            # out: the first element that would be reported ends it, truncated.
            if self.results.count() >= max_elements:
                self.results.mark_truncated()
                self._note_value_parent(parent, has_values)
                return False
            self.results.add(child.record.runtime_id, element)
            has_values = has_values or (child.record.value_available and not element.masked)
        self._note_value_parent(parent, has_values)
        return True

    def _note_value_parent(self, parent: object, has_values: bool) -> None:
        if has_values:
            self.value_parents.append(parent)

    def read_values(self) -> None:
        """One value query per parent of collected elements with values, while time
        is left; each parent's values are joined as they come."""
        for parent in self.value_parents:
            if self.clock() >= self.deadline:
                self.results.mark_truncated()
                return
            self.bound_next_call()
            try:
                values = self.port.values(parent, VALUE_QUERY)
            except UiaCallError as error:
                _note_failure(self.results, error, "values")
                if error.is_timeout:
                    return
                continue
            self.results.join_values(values)


def _note_failure(results: WalkResults, error: UiaCallError, what: str) -> None:
    if error.is_gone:
        logger.debug("UI Automation element gone while reading %s", what)
        return
    if error.is_timeout:
        results.mark_truncated()
    logger.info("UI Automation failed reading %s: %s", what, error)
