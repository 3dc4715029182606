"""The running stack as a fixture: one sim rig, API enabled; and a fake clock for
stacks that move time themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.gateway.clock import FakeClock
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
