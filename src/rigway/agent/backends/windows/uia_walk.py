"""The accessibility role over UI Automation: a budgeted walk that never hangs its caller.

Pure: the walk and its threads run over a `UiaPort` (implemented by `_uia.py` with
comtypes, and by a fake in the tests).

The walk, on the port's own thread:
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

Hang-proofing: a COM call blocked in a provider cannot be cancelled from Python, and
modal dialogs, sibling walks and `FindAll` have all been seen to block for a long time
or for good. So the walk runs on a worker thread of its own (COM is per thread: the
port is created there), and the caller waits at most the budget's deadline plus a
grace. On overrun the caller returns what was collected, marked truncated, and
abandons that worker (a daemon thread, which exits once its call returns); the next
snapshot starts a fresh worker with a fresh port. Abandoned workers still alive are
capped: past the cap a snapshot is empty and truncated rather than leak another thread.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import queue
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
    "DEFAULT_GRACE_S",
    "DEFAULT_MAX_LEAKED_WORKERS",
    "MIN_CALL_TIMEOUT_S",
    "WALK_SHARE_OF_DEADLINE",
    "UiaAccessibility",
    "UiaCallError",
    "UiaPort",
    "WalkResults",
    "walk_foreground",
]

logger = logging.getLogger(__name__)

# The breadth-first walk may use this share of the deadline; the rest is kept for the
# value query, so a large tree does not leave every text field without its text.
WALK_SHARE_OF_DEADLINE = 0.75
# How long past the budget's deadline the caller waits for the worker.
DEFAULT_GRACE_S = 0.5
# The least call timeout set: UI Automation takes whole milliseconds, and a call made
# with next to no time left should fail fast, not be given none at all.
MIN_CALL_TIMEOUT_S = 0.001
# Abandoned workers (each blocked in a COM call) allowed to be alive at once.
DEFAULT_MAX_LEAKED_WORKERS = 3

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
        self._elements: list[AccessibleElement] = []
        self._index_by_runtime_id: dict[RuntimeId, int] = {}
        self._truncated = False

    def set_window(self, title: str, role: str) -> None:
        with self._lock:
            self._window_title, self._window_role = title, role

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
    results.set_window(root.record.name, role_name(root.record))
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


@dataclass(slots=True)
class _Job:
    budget: WalkBudget
    placement: OutputPlacement
    capture_size: tuple[int, int]
    results: WalkResults = field(default_factory=WalkResults)
    done: threading.Event = field(default_factory=threading.Event)


class _Worker:
    """One daemon thread with its own port, serving one job at a time. Once
    abandoned it finishes the call it is blocked in, closes its port and exits."""

    def __init__(
        self, port_factory: Callable[[], UiaPort], clock: Callable[[], float], name: str
    ) -> None:
        self._port_factory = port_factory
        self._clock = clock
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._abandoned = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def submit(self, job: _Job) -> None:
        self._jobs.put(job)

    def stop(self) -> None:
        self._jobs.put(None)

    def abandon(self) -> None:
        self._abandoned.set()
        self._jobs.put(None)

    def _run(self) -> None:
        port: UiaPort | None = None
        try:
            while (job := self._jobs.get()) is not None:
                port = self._serve(job, port)
                if self._abandoned.is_set():
                    return
        finally:
            if port is not None:
                _close_quietly(port)

    def _serve(self, job: _Job, port: UiaPort | None) -> UiaPort | None:
        try:
            if port is None:
                port = self._create_port()
            if port is not None:
                walk_foreground(
                    port, job.budget, job.placement, job.capture_size, job.results, self._clock
                )
        except Exception:
            # A broken port (a dead COM server, a bug) is replaced for the next job.
            logger.exception("UI Automation walk failed")
            if port is not None:
                _close_quietly(port)
            port = None
        finally:
            job.done.set()
        return port

    def _create_port(self) -> UiaPort | None:
        """A port, or None (tried again at the next job) when UI Automation cannot be
        reached: the snapshot is empty then, not an error."""
        try:
            return self._port_factory()
        except Exception as error:
            logger.warning("UI Automation unavailable: %s", error)
            return None


def _close_quietly(port: UiaPort) -> None:
    try:
        port.close()
    except Exception:
        logger.exception("closing a UI Automation port failed")


class UiaAccessibility:
    """`roles.AccessibilityRole` over UI Automation; never hangs its caller.

    `port_factory` is called on a worker thread (each worker's port belongs to that
    thread). `placement` and `capture_size` are read at each snapshot: element
    rectangles are mapped into the capture as it is then."""

    def __init__(
        self,
        port_factory: Callable[[], UiaPort],
        placement: Callable[[], OutputPlacement],
        capture_size: Callable[[], tuple[int, int]],
        *,
        grace_s: float = DEFAULT_GRACE_S,
        max_leaked_workers: int = DEFAULT_MAX_LEAKED_WORKERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._port_factory = port_factory
        self._placement = placement
        self._capture_size = capture_size
        self._grace_s = grace_s
        self._max_leaked_workers = max_leaked_workers
        self._clock = clock
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._abandoned: list[threading.Thread] = []
        self._worker_numbers = itertools.count(1)
        self._refusing = False
        self._closed = False

    @property
    def leaked_workers(self) -> int:
        """Abandoned workers still blocked in a call."""
        with self._lock:
            return self._prune_abandoned()

    def snapshot(self, budget: WalkBudget) -> AccessibilitySnapshot:
        with self._lock:
            if self._closed:
                return AccessibilitySnapshot("", "", [], truncated=False)
            worker = self._current_worker()
            if worker is None:
                return AccessibilitySnapshot("", "", [], truncated=True)
            job = _Job(budget, self._placement(), self._capture_size())
            worker.submit(job)
            if job.done.wait(max(0.0, budget.deadline_s) + self._grace_s):
                return job.results.snapshot()
            self._abandon(worker)
            return job.results.snapshot(truncated=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
            # Its port is closed on its own thread; a worker still blocked is left.
            worker.thread.join(self._grace_s)

    def _current_worker(self) -> _Worker | None:
        """The live worker, or a fresh one; None past the cap of leaked workers."""
        if self._worker is not None:
            return self._worker
        leaked = self._prune_abandoned()
        if leaked >= self._max_leaked_workers:
            if not self._refusing:
                logger.warning(
                    "UI Automation unavailable: %d workers are stuck in calls that do not "
                    "return; snapshots stay empty until one of them does",
                    leaked,
                )
            self._refusing = True
            return None
        if self._refusing:
            logger.info("UI Automation available again")
            self._refusing = False
        name = f"rigway-uia-{next(self._worker_numbers)}"
        self._worker = _Worker(self._port_factory, self._clock, name)
        return self._worker

    def _abandon(self, worker: _Worker) -> None:
        logger.warning(
            "UI Automation walk overran its deadline: %s abandoned, the next snapshot "
            "starts a fresh one",
            worker.thread.name,
        )
        worker.abandon()
        self._abandoned.append(worker.thread)
        self._worker = None

    def _prune_abandoned(self) -> int:
        self._abandoned = [thread for thread in self._abandoned if thread.is_alive()]
        return len(self._abandoned)
