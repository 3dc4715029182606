"""The console's page tests: a gateway with a sim rig and OWNER, OWNER signed in, and
INTRUDER (of another account) signed in. A test module that needs another stack defines
its own `stack`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.console.pages import INTRUDER, OWNER, ConsolePages, add_owner


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as running:
        await add_owner(running, OWNER)
        yield running


@pytest.fixture
async def owner(stack: Stack) -> AsyncIterator[ConsolePages]:
    async with ConsolePages(stack) as pages:
        yield await pages.signed_in(OWNER)


@pytest.fixture
async def intruder(stack: Stack) -> AsyncIterator[ConsolePages]:
    other_account = await stack.services.accounts.create("other account")
    await add_owner(stack, INTRUDER, other_account)
    async with ConsolePages(stack) as pages:
        yield await pages.signed_in(INTRUDER)
