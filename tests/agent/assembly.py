"""A Dispatcher assembled over a desktop the way the agent's runner does it, for tests
that drive the core through a fake or a real backend, and a session's ops sent to it."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

import pytest

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import Desktop, WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.owner_presence import OwnerPresence
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops

SESSION = "s1"


def dispatcher_over(
    desktop: Desktop,
    apps: AppTracker,
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: Executor | None = None,
    guard: InputGuard | None = None,
    presence: OwnerPresence | None = None,
) -> Dispatcher:
    """`guard`: one the test holds to read its bookkeeping; else a guard of its own.
    `presence`: the owner's presence (else one over `desktop`, as the Dispatcher makes)."""
    return Dispatcher(
        desktop,
        ScreenService(desktop, screen_worker),
        AccessibilityService(desktop, a11y_worker, WalkBudget()),
        InputGuard(desktop) if guard is None else guard,
        apps,
        input_executor=input_worker,
        presence=presence,
    )


class SessionOps:
    """Ops of session SESSION sent straight to `dispatcher` (for a test's rig)."""

    dispatcher: Dispatcher

    async def call(self, op: str, **body: Any) -> dict[str, Any]:
        reply, _ = await self.dispatcher.handle(op, {"session_id": SESSION, **body})
        return reply

    async def refusal(self, **body: Any) -> HostOpError:
        """The refusal of an input batch of `body`."""
        with pytest.raises(HostOpError) as caught:
            await self.call(ops.INPUT_BATCH, **body)
        return caught.value
