"""The running stack as a fixture: one sim rig, API enabled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import Stack, running_stack


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        agent_settings={"heartbeat_interval_s": 1.0, "session_grace_s": 1.0},
    ) as running:
        yield running
