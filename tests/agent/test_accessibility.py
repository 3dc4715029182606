from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from rigway.agent.accessibility import AccessibilityService, target_id
from rigway.agent.backends.base import WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.protocol import ops
from tests.agent.fakes import FakeDesktop, element


@pytest.fixture
def desktop() -> FakeDesktop:
    return FakeDesktop()


@pytest.fixture
def service(desktop: FakeDesktop, a11y_worker: ThreadPoolExecutor) -> AccessibilityService:
    return AccessibilityService(desktop, a11y_worker, WalkBudget(max_elements=5, deadline_s=1.0))


async def test_ids_are_stable_across_positions(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element("a"), element("b")]
    first = await service.snapshot()
    desktop.elements = [element("new"), element("b", x=99), element("a")]
    second = await service.snapshot()
    ids_first = {t.name: t.id for t in first.targets}
    ids_second = {t.name: t.id for t in second.targets}
    assert ids_first["a"] == ids_second["a"] == target_id("a")
    assert ids_first["b"] == ids_second["b"]
    assert ids_first["a"].startswith("t_")
    assert len(ids_first["a"]) == 12


async def test_duplicate_keys_get_distinct_ids(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element("same"), element("same")]
    snapshot = await service.snapshot()
    assert len({t.id for t in snapshot.targets}) == 2


async def test_masked_value_is_redacted_even_if_backend_leaks(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element("pw", masked=True, value="hunter2"), element("name", value="bob")]
    snapshot = await service.snapshot()
    password, name = snapshot.targets
    assert password.masked
    assert password.value == ops.MASKED_VALUE
    assert name.value == "bob"
    assert "hunter2" not in snapshot.model_dump_json()


async def test_masked_value_is_redacted_when_backend_gives_none(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element("pw", masked=True)]
    snapshot = await service.snapshot()
    assert snapshot.targets[0].value == ops.MASKED_VALUE


async def test_concurrent_callers_share_one_walk(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element("a")]
    desktop.walk_gate = threading.Event()
    first = asyncio.create_task(service.snapshot())
    await asyncio.to_thread(desktop.walk_started.wait, 5.0)
    second = asyncio.create_task(service.snapshot())
    # One turn of the loop runs the second task's first step, in which snapshot() joins
    # the walk in flight (it waits for nothing before the join); no time needs to pass.
    await asyncio.sleep(0)
    desktop.walk_gate.set()
    one, two = await asyncio.gather(first, second)
    assert desktop.walk_count == 1
    assert one == two


async def test_a_later_caller_gets_a_fresh_walk(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    await service.snapshot()
    await service.snapshot()
    assert desktop.walk_count == 2


async def test_one_caller_cancelled_does_not_cancel_the_shared_walk(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.walk_gate = threading.Event()
    impatient = asyncio.create_task(service.snapshot())
    await asyncio.to_thread(desktop.walk_started.wait, 5.0)
    patient = asyncio.create_task(service.snapshot())
    await asyncio.sleep(0)  # one turn: the patient caller joins the walk (as above)
    impatient.cancel()
    desktop.walk_gate.set()
    snapshot = await patient
    assert snapshot.window_title == "Fake window"
    with pytest.raises(asyncio.CancelledError):
        await impatient


async def test_budget_overrun_is_cut_and_reported(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element(f"e{n}") for n in range(8)]
    snapshot = await service.snapshot()
    assert len(snapshot.targets) == 5
    assert snapshot.truncated


async def test_backend_truncation_is_passed_on(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    desktop.elements = [element("a")]
    desktop.walk_truncated = True
    snapshot = await service.snapshot()
    assert snapshot.truncated


async def test_snapshot_reports_size_title_and_timing(
    service: AccessibilityService, desktop: FakeDesktop
) -> None:
    snapshot = await service.snapshot()
    assert (snapshot.width, snapshot.height) == desktop.size
    assert snapshot.window_title == "Fake window"
    assert snapshot.host_uia_ms >= 0
    assert not snapshot.truncated


async def test_sim_password_is_redacted(a11y_worker: ThreadPoolExecutor) -> None:
    service = AccessibilityService(SimDesktop(), a11y_worker, WalkBudget())
    snapshot = await service.snapshot()
    masked = [t for t in snapshot.targets if t.masked]
    assert len(masked) == 1
    assert masked[0].value == ops.MASKED_VALUE
    assert all(t.source == "uia" for t in snapshot.targets)
