"""A throwaway database per test, so each test owns its state: a SQLite file, or a fresh
PostgreSQL database when `RIGWAY_TEST_DATABASE_URL` is set."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from rigway.gateway.db.engine import apply_migrations, create_engine


async def _admin(server_url: str, statement: str) -> None:
    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


async def create_postgres_database(server_url: str, name: str) -> str:
    await _admin(server_url, f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


async def drop_postgres_database(server_url: str, name: str) -> None:
    await _admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.asynccontextmanager
async def scratch_database(directory: Path) -> AsyncIterator[str]:
    """The URL of a database of its own: `directory`/rigway.db, or a PostgreSQL database
    made on the `RIGWAY_TEST_DATABASE_URL` server and dropped after."""
    server_url = os.environ.get("RIGWAY_TEST_DATABASE_URL")
    if server_url is None:
        database = directory / "rigway.db"
        shutil.copyfile(await _migrated_sqlite_template(), database)
        database.chmod(0o600)
        yield f"sqlite+aiosqlite:///{database}"
        return
    name = f"rigway_t_{secrets.token_hex(6)}"
    template = await _migrated_template(server_url)
    await _admin(server_url, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        await drop_postgres_database(server_url, name)


# server URL -> a database of this test process with every migration applied, which each
# test's database copies (CREATE DATABASE … TEMPLATE): quicker than migrating each anew.
_templates: dict[str, str] = {}


async def _migrated_template(server_url: str) -> str:
    name = _templates.get(server_url)
    if name is None:
        name = f"rigway_tmpl_{secrets.token_hex(6)}"
        engine = create_engine(await create_postgres_database(server_url, name))
        try:
            await apply_migrations(engine)
        finally:
            await engine.dispose()  # a template must have no connections to be copied
        _templates[server_url] = name
        atexit.register(_drop_template, server_url, name)
    return name


# A SQLite file of this test process with every migration applied, which each test's
# database copies: the app migrates its store when it starts, and on a copy that finds
# nothing to do (~6 ms) instead of building the schema anew (~60 ms, per test).
_sqlite_template: list[Path] = []


async def _migrated_sqlite_template() -> Path:
    if not _sqlite_template:
        folder = Path(tempfile.mkdtemp(prefix="rigway-template-"))
        atexit.register(shutil.rmtree, folder, True)
        template = folder / "rigway.db"
        engine = create_engine(f"sqlite+aiosqlite:///{template}")
        try:
            await apply_migrations(engine)
        finally:
            await engine.dispose()  # the last connection's close folds the WAL in
        leftovers = [p.name for p in folder.iterdir() if p != template]
        assert not leftovers, f"the template left {leftovers}: a copy of the file would miss them"
        _sqlite_template.append(template)
    return _sqlite_template[0]


def _drop_template(server_url: str, name: str) -> None:
    with contextlib.suppress(Exception):  # leaving: a leftover template harms nothing
        asyncio.run(drop_postgres_database(server_url, name))


# Several gateway nodes share one PostgreSQL store (SQLite is refused for them): the
# multi-node tests use this server whatever RIGWAY_TEST_DATABASE_URL says, and run once.
POSTGRES_SERVER_URL = os.environ.get(
    "RIGWAY_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


@contextlib.asynccontextmanager
async def scratch_postgres_database() -> AsyncIterator[str]:
    """The URL of a fresh PostgreSQL database on `POSTGRES_SERVER_URL`, dropped after."""
    name = f"rigway_t_{secrets.token_hex(6)}"
    url = await create_postgres_database(POSTGRES_SERVER_URL, name)
    try:
        yield url
    finally:
        await drop_postgres_database(POSTGRES_SERVER_URL, name)
