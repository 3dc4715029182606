"""Worker threads for the agent core's tests, one per backend role, always shut down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rigway.agent.worker import SerialWorker


def _worker(name: str) -> Iterator[SerialWorker]:
    worker = SerialWorker(name)
    yield worker
    worker.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def screen_worker() -> Iterator[SerialWorker]:
    yield from _worker("test-screen")


@pytest.fixture
def a11y_worker() -> Iterator[SerialWorker]:
    yield from _worker("test-a11y")


@pytest.fixture
def input_worker() -> Iterator[SerialWorker]:
    yield from _worker("test-input")
