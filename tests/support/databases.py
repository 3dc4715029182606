"""A throwaway PostgreSQL database per test, so each test owns its state."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine


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
