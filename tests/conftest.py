"""Fixtures shared by the whole suite: a database per test (SQLite file, or a fresh
PostgreSQL database when `RIGWAY_TEST_DATABASE_URL` is set)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.databases import create_postgres_database, drop_postgres_database


@pytest.fixture
async def database_url(tmp_path: Path) -> AsyncIterator[str]:
    server_url = os.environ.get("RIGWAY_TEST_DATABASE_URL")
    if server_url is None:
        yield f"sqlite+aiosqlite:///{tmp_path / 'rigway.db'}"
        return
    name = f"rigway_t_{secrets.token_hex(6)}"
    url = await create_postgres_database(server_url, name)
    try:
        yield url
    finally:
        await drop_postgres_database(server_url, name)
