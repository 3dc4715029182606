"""SerialWorker: one thread, calls in order, results and failures back to the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import CancelledError

import pytest

from rigway.agent.worker import SerialWorker


@pytest.fixture
def worker() -> Iterator[SerialWorker]:
    serial = SerialWorker("test-serial")
    yield serial
    serial.shutdown(wait=True, cancel_futures=True)


async def test_calls_run_on_one_thread_in_order(worker: SerialWorker) -> None:
    ran: list[tuple[int, str]] = []

    def record(index: int) -> int:
        ran.append((index, threading.current_thread().name))
        return index * 10

    results = await asyncio.gather(*(worker.call(record, index) for index in range(20)))
    assert results == [index * 10 for index in range(20)]
    assert [index for index, _ in ran] == list(range(20))
    assert {name for _, name in ran} == {"test-serial"}


async def test_a_failure_reaches_the_caller_and_the_worker_goes_on(worker: SerialWorker) -> None:
    def fail() -> None:
        raise ValueError("the backend refused")

    with pytest.raises(ValueError, match="the backend refused"):
        await worker.call(fail)
    assert await worker.call(lambda: "still here") == "still here"


async def test_stop_iteration_does_not_hang_the_caller(worker: SerialWorker) -> None:
    def exhausted() -> int:
        return next(iter([]))

    with pytest.raises(RuntimeError, match="StopIteration"):
        await asyncio.wait_for(worker.call(exhausted), 5)


def _holding(started: threading.Event, gate: threading.Event) -> bool:
    """Holds the worker until `gate` opens (at most 5 s), saying when it began."""
    started.set()
    return gate.wait(5)


async def test_a_caller_that_gives_up_does_not_run_its_queued_call(worker: SerialWorker) -> None:
    started, gate = threading.Event(), threading.Event()
    ran: list[str] = []
    blocker = asyncio.ensure_future(worker.call(_holding, started, gate))
    queued = asyncio.ensure_future(worker.call(ran.append, "queued"))
    # Both tasks queue their calls in their first steps, which run before this wait can
    # end: once the blocker holds the worker, the other call is waiting behind it.
    assert await asyncio.to_thread(started.wait, 5)
    queued.cancel()
    gate.set()
    assert await blocker is True
    with pytest.raises(asyncio.CancelledError):
        await queued
    # Later calls still run, and the cancelled one never did.
    await worker.call(ran.append, "after")
    assert ran == ["after"]


async def test_submit_gives_a_concurrent_future(worker: SerialWorker) -> None:
    future = worker.submit(lambda a, b: a + b, 2, b=3)
    assert await asyncio.wrap_future(future) == 5
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(worker, sum, [1, 2, 3]) == 6


def test_shutdown_cancels_queued_calls_and_refuses_new_ones() -> None:
    serial = SerialWorker("test-shutdown")
    started, gate = threading.Event(), threading.Event()

    def hold() -> bool:
        started.set()
        return gate.wait(5)

    running = serial.submit(hold)
    assert started.wait(5)
    queued = serial.submit(lambda: "never")
    serial.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert running.result(timeout=5) is True
    with pytest.raises(CancelledError):
        queued.result(timeout=5)
    with pytest.raises(RuntimeError, match="after shutdown"):
        serial.submit(lambda: None)
    serial.shutdown(wait=True)


async def test_a_loop_call_cancelled_by_shutdown_raises_in_its_caller() -> None:
    serial = SerialWorker("test-shutdown-loop")
    started, gate = threading.Event(), threading.Event()
    blocker = asyncio.ensure_future(serial.call(_holding, started, gate))
    queued = asyncio.ensure_future(serial.call(lambda: "never"))
    assert await asyncio.to_thread(started.wait, 5)  # the other call waits behind it
    serial.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert await blocker is True
    with pytest.raises(asyncio.CancelledError):
        await queued
    serial.shutdown(wait=True)
