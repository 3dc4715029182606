"""A Dispatcher assembled over a desktop the way the agent's runner does it, for tests
that drive the core through a fake or a real backend."""

from __future__ import annotations

from concurrent.futures import Executor

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import Desktop, WalkBudget
from rigway.agent.dispatch import Dispatcher
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker


def dispatcher_over(
    desktop: Desktop,
    apps: AppTracker,
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: Executor | None = None,
    guard: InputGuard | None = None,
) -> Dispatcher:
    """`guard`: one the test holds to read its bookkeeping; else a guard of its own."""
    return Dispatcher(
        desktop,
        ScreenService(desktop, screen_worker),
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        InputGuard(desktop) if guard is None else guard,
        apps,
        input_executor=input_worker,
    )
