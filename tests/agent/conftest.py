"""Worker threads for the agent core's tests, one per backend role, always shut down."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest


def _worker(name: str) -> Iterator[ThreadPoolExecutor]:
    executor = ThreadPoolExecutor(1, thread_name_prefix=name)
    yield executor
    executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def screen_worker() -> Iterator[ThreadPoolExecutor]:
    yield from _worker("test-screen")


@pytest.fixture
def a11y_worker() -> Iterator[ThreadPoolExecutor]:
    yield from _worker("test-a11y")


@pytest.fixture
def input_worker() -> Iterator[ThreadPoolExecutor]:
    yield from _worker("test-input")
