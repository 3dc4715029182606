"""Engine construction and migrations applied at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def create_engine(database_url: str) -> AsyncEngine:
    if database_url.startswith("sqlite"):
        return _create_sqlite_engine(database_url)
    return create_async_engine(database_url, pool_pre_ping=True)


def _create_sqlite_engine(database_url: str) -> AsyncEngine:
    engine = create_async_engine(database_url, connect_args={"timeout": 30})

    # WAL lets readers run beside the writer; BEGIN IMMEDIATE takes the write lock up
    # front so concurrent writers queue instead of failing with "database is locked".
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def session_factory(engine: AsyncEngine) -> async_sessionmaker[DbSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def _alembic_config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


async def apply_migrations(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(lambda sync: command.upgrade(_alembic_config(sync), "head"))
