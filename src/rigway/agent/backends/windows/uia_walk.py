"""The accessibility role over UI Automation: the budgeted walk (`uia_tree`) on worker
threads, so that it never hangs its caller.

Pure: the threads run the walk over a `UiaPort` made by a factory on each worker.

Hang-proofing: a COM call blocked in a provider cannot be cancelled from Python, and
modal dialogs, sibling walks and `FindAll` have all been seen to block for a long time
or for good. So the walk runs on a worker thread of its own (COM is per thread: the
port is created there), and the caller waits at most the budget's deadline plus a
grace. On overrun the caller returns what was collected, marked truncated, and
abandons that worker (a daemon thread, which exits once its call returns); the next
snapshot starts a fresh worker with a fresh port. Abandoned workers still alive are
capped: past the cap a snapshot is empty and truncated rather than leak another thread.

The first port can be slow to make (on Windows, comtypes generates its UI Automation
wrapper on first use): `warm_up` makes it on the worker when the desktop opens, with no
deadline, and a snapshot meanwhile waits for it at most its own deadline, without
abandoning the worker.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.uia_tree import (
    MIN_CALL_TIMEOUT_S,
    WALK_SHARE_OF_DEADLINE,
    UiaCallError,
    UiaPort,
    WalkResults,
    walk_foreground,
)

__all__ = [
    "DEFAULT_GRACE_S",
    "DEFAULT_MAX_LEAKED_WORKERS",
    # The walk's names, for callers that know them from here.
    "MIN_CALL_TIMEOUT_S",
    "WALK_SHARE_OF_DEADLINE",
    "UiaAccessibility",
    "UiaCallError",
    "UiaPort",
    "WalkResults",
    "walk_foreground",
]

logger = logging.getLogger(__name__)

# How long past the budget's deadline the caller waits for the worker.
DEFAULT_GRACE_S = 0.5
# Abandoned workers (each blocked in a COM call) allowed to be alive at once.
DEFAULT_MAX_LEAKED_WORKERS = 3


@dataclass(slots=True)
class _Job:
    budget: WalkBudget
    placement: OutputPlacement
    capture_size: tuple[int, int]
    results: WalkResults = field(default_factory=WalkResults)
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(slots=True)
class _WarmUp:
    """Make the worker's port, with no deadline."""

    done: threading.Event = field(default_factory=threading.Event)


class _Worker:
    """One daemon thread with its own port, serving one job at a time. Once
    abandoned it finishes the call it is blocked in, closes its port and exits.
    `on_exit` runs last on the thread (the binding leaves the COM apartment there)."""

    def __init__(
        self,
        port_factory: Callable[[], UiaPort],
        clock: Callable[[], float],
        name: str,
        on_exit: Callable[[], None] | None,
    ) -> None:
        self._port_factory = port_factory
        self._clock = clock
        self._on_exit = on_exit
        self._jobs: queue.SimpleQueue[_Job | _WarmUp | None] = queue.SimpleQueue()
        self._abandoned = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def submit(self, job: _Job | _WarmUp) -> None:
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
                if isinstance(job, _WarmUp):
                    port = self._warm_up(job, port)
                else:
                    port = self._serve(job, port)
                if self._abandoned.is_set():
                    return
        finally:
            if port is not None:
                _close_quietly(port)
            port = None  # no reference of ours outlives the apartment the hook leaves
            self._exit()

    def _exit(self) -> None:
        if self._on_exit is None:
            return
        try:
            self._on_exit()
        except Exception:
            logger.exception("leaving a UI Automation worker failed")

    def _warm_up(self, job: _WarmUp, port: UiaPort | None) -> UiaPort | None:
        try:
            return port if port is not None else self._create_port()
        finally:
            job.done.set()

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
    thread), and `on_worker_exit`, when given, last thing on each worker thread as it
    ends. `placement` and `capture_size` are read at each snapshot: element
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
        on_worker_exit: Callable[[], None] | None = None,
    ) -> None:
        self._port_factory = port_factory
        self._on_worker_exit = on_worker_exit
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
        self._warming: _WarmUp | None = None

    @property
    def leaked_workers(self) -> int:
        """Abandoned workers still blocked in a call."""
        with self._lock:
            return self._prune_abandoned()

    def warm_up(self) -> None:
        """Make the first port on the worker now, with no deadline (the backend calls
        this when the desktop opens: on Windows the first port generates comtypes'
        wrapper, which can take seconds). Returns at once."""
        with self._lock:
            if self._closed or self._warming is not None:
                return
            worker = self._current_worker()
            if worker is None:
                return
            self._warming = _WarmUp()
            worker.submit(self._warming)

    def snapshot(self, budget: WalkBudget) -> AccessibilitySnapshot:
        with self._lock:
            if self._closed:
                return AccessibilitySnapshot("", "", [], truncated=False)
            worker = self._current_worker()
            if worker is None:
                return AccessibilitySnapshot("", "", [], truncated=True)
            remaining = self._after_warm_up(budget)
            if remaining is None:
                return AccessibilitySnapshot("", "", [], truncated=True)
            budget = remaining
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

    def _after_warm_up(self, budget: WalkBudget) -> WalkBudget | None:
        """The budget left once a warm-up under way is done; None when it is not done
        within the budget's deadline (the worker is left to it, not abandoned: making a
        port has no deadline)."""
        warming = self._warming
        if warming is None:
            return budget
        started_s = time.monotonic()
        if not warming.done.wait(max(0.0, budget.deadline_s)):
            return None
        self._warming = None
        waited_s = time.monotonic() - started_s
        return dataclasses.replace(budget, deadline_s=max(0.0, budget.deadline_s - waited_s))

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
        self._worker = _Worker(self._port_factory, self._clock, name, self._on_worker_exit)
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
        self._warming = None

    def _prune_abandoned(self) -> int:
        self._abandoned = [thread for thread in self._abandoned if thread.is_alive()]
        return len(self._abandoned)
