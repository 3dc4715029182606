"""Fixtures shared by the whole suite: a database per test (SQLite file, or a fresh
PostgreSQL database when `RIGWAY_TEST_DATABASE_URL` is set)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.databases import scratch_database


@pytest.fixture
async def database_url(tmp_path: Path) -> AsyncIterator[str]:
    async with scratch_database(tmp_path) as url:
        yield url
