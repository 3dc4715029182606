"""The running stack as a fixture: one sim rig, API enabled (or no rig, for a host
driven by hand); a fake clock for stacks that move time themselves; and the x11 rig (an
Xvfb desktop, its backend, a session on it) for the x11 modules; nodes of one service
(one PostgreSQL store, one Redis, the same key files) for the multi-node modules."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rigway.gateway.clock import FakeClock
from tests.e2e.harness import (
    QUICK_AGENT,
    NodeFactory,
    Stack,
    nodes_of_one_service,
    running_stack,
)
from tests.support.databases import scratch_postgres_database

REDIS_URL = os.environ.get("RIGWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

if TYPE_CHECKING:
    from rigway.agent.backends.x11 import X11Desktop
    from tests.e2e.x11_rig import X11Session
    from tests.support.x_desktop import XDesktop


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
async def bare_stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    """A stack with no rig, for a host paired and driven by hand (`raw_host`)."""
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, reaper_interval_s=3600
    ) as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# -- the x11 rig: imported only when asked for, as the x11 extra and Xlib are optional --


@pytest.fixture(scope="module")
def x_desktop() -> Iterator[XDesktop]:
    from tests.support.x_desktop import desktop_or_skip

    with desktop_or_skip() as desk:
        yield desk


@pytest.fixture(scope="module")
def x11_backend(x_desktop: XDesktop) -> Iterator[X11Desktop]:
    backend = x_desktop.open_backend()
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def app_env(x_desktop: XDesktop, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tests.e2e.x11_rig import app_environment

    return app_environment(x_desktop, tmp_path_factory.mktemp("xdg-config"))


@pytest.fixture
async def x11_session(
    tmp_path: Path,
    database_url: str,
    x_desktop: XDesktop,
    x11_backend: X11Desktop,
    app_env: dict[str, str],
) -> AsyncIterator[X11Session]:
    """A gateway, an agent on the Xvfb desktop and an active session on it."""
    from tests.e2e.x11_rig import x11_session as open_session

    async with open_session(
        tmp_path / "state", database_url, x_desktop, x11_backend, app_env
    ) as session:
        yield session


@pytest.fixture
async def shared_store_url() -> AsyncIterator[str]:
    """A PostgreSQL database of its own, whatever store the rest of the run uses: several
    nodes share one PostgreSQL store (SQLite is refused for them), so the multi-node
    tests run on it always, and once per CI run."""
    async with scratch_postgres_database() as url:
        yield url


@pytest.fixture
def node(tmp_path: Path, shared_store_url: str) -> NodeFactory:
    """Makes nodes of one service (one store, one Redis, the same key files)."""
    return nodes_of_one_service(tmp_path, shared_store_url, REDIS_URL)
